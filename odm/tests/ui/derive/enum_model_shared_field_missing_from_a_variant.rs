use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Book {
    #[odm(id)]
    id: i64,
    title: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Film {
    #[odm(id)]
    id: i64,
    name: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items", shared(title: String))]
#[serde(tag = "type")]
enum Item {
    Book(Book),
    Film(Film),
}

fn main() {}
