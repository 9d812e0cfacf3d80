use odm::{Document, Embedded};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Publisher {
    name: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "books", index(keys("publisher.nmae" = 1)))]
struct Book {
    #[odm(id)]
    id: i64,
    #[odm(embedded)]
    publisher: Publisher,
}

fn main() {}
