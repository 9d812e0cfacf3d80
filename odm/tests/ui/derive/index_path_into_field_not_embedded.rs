use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Publisher {
    name: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "books", index(keys("publisher.name" = 1)))]
struct Book {
    #[odm(id)]
    id: i64,
    publisher: Publisher,
}

fn main() {}
