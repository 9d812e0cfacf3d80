use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts", index(keys(title = 1), text(title, body)))]
struct Post {
    #[odm(id)]
    id: i64,
    title: String,
    body: String,
}

fn main() {}
