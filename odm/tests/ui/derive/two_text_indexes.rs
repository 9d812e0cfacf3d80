use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts", index(text(title)), index(text(body)))]
struct Post {
    #[odm(id)]
    id: i64,
    title: String,
    body: String,
}

fn main() {}
