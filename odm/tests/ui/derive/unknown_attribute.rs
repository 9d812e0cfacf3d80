use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "books", capped = true)]
struct Book {
    #[odm(id)]
    id: i64,
    #[odm(indexed)]
    title: String,
}

fn main() {}
