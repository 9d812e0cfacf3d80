use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts")]
struct Post {
    #[odm(id)]
    id: i64,
    #[odm(updated_at)]
    edited: bson::DateTime,
    #[odm(updated_at)]
    touched: bson::DateTime,
}

fn main() {}
