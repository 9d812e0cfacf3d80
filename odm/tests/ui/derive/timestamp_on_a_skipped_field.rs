use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts")]
struct Post {
    #[odm(id)]
    id: i64,
    #[odm(updated_at)]
    #[serde(skip)]
    edited: Option<bson::DateTime>,
}

fn main() {}
