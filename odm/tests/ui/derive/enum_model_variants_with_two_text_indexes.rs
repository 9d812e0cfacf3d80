use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items", index(text(title)))]
struct Book {
    #[odm(id)]
    id: i64,
    title: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items", index(text(summary)))]
struct Film {
    #[odm(id)]
    id: i64,
    summary: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
#[serde(tag = "type")]
enum Item {
    Book(Book),
    Film(Film),
}

fn main() {}
