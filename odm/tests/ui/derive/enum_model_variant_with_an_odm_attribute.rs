use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Book {
    #[odm(id)]
    id: i64,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
#[serde(tag = "type")]
enum Item {
    #[odm(index)]
    Book(Book),
}

fn main() {}
