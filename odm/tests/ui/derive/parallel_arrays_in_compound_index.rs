use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts", index(keys(tags = 1, voters = 1)))]
struct Post {
    #[odm(id)]
    id: i64,
    tags: Vec<String>,
    voters: Vec<String>,
}

fn main() {}
