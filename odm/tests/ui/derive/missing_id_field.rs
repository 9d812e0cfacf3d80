use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "books")]
struct Book {
    title: String,
}

fn main() {}
