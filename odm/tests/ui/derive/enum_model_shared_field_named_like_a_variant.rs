use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Book {
    #[odm(id)]
    id: i64,
    book: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items", shared(book: String))]
#[serde(tag = "type")]
enum Item {
    Book(Book),
}

fn main() {}
