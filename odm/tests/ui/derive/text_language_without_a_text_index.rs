use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts", index(keys(title = 1), default_language = Spanish))]
struct Post {
    #[odm(id)]
    id: i64,
    title: String,
}

fn main() {}
