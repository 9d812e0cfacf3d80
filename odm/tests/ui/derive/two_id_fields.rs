use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "books")]
struct Book {
    #[odm(id)]
    id: i64,
    #[odm(id)]
    isbn: String,
}

fn main() {}
