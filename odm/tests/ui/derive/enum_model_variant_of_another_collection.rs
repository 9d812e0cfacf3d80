use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Book {
    #[odm(id)]
    id: i64,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "films")]
struct Film {
    #[odm(id)]
    id: i64,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
#[serde(tag = "type")]
enum Item {
    Book(Book),
    Film(Film),
}

fn main() {}
