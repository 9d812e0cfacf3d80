use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts", index(text(title), unique))]
struct Post {
    #[odm(id)]
    id: i64,
    title: String,
}

fn main() {}
