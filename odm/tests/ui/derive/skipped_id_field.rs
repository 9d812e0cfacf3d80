use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users")]
struct User {
    #[odm(id)]
    #[serde(skip)]
    id: i64,
    name: String,
}

fn main() {}
