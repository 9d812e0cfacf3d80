use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "books", index(keys(titel = 1)))]
struct Book {
    #[odm(id)]
    id: i64,
    title: String,
}

fn main() {}
