use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts", index(text(title = 10, likes)))]
struct Post {
    #[odm(id)]
    id: i64,
    title: String,
    likes: i64,
}

fn main() {}
