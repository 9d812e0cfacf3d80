use odm::Embedded;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Comment {
    text: String,
    #[odm(created_at)]
    written: bson::DateTime,
}

fn main() {}
