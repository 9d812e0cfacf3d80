use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "books", version = 1)]
struct BookV1 {
    #[odm(id)]
    id: i64,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "books", from = BookV1)]
struct Book {
    #[odm(id)]
    id: i64,
}

impl From<BookV1> for Book {
    fn from(old: BookV1) -> Self {
        Book { id: old.id }
    }
}

fn main() {}
