use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts")]
struct Post {
    #[odm(id, version)]
    id: i64,
    title: String,
}

fn main() {}
