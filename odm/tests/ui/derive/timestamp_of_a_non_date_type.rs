use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts")]
struct Post {
    #[odm(id)]
    id: i64,
    #[odm(created_at)]
    created: String,
}

fn main() {}
