use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts", index(keys(tags = 1), text(body)))]
struct Post {
    #[odm(id)]
    id: i64,
    tags: Vec<String>,
    body: String,
}

fn main() {}
