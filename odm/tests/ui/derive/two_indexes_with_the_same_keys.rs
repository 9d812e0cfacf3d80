use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "books", index(keys(slug = 1), unique))]
struct Book {
    #[odm(id)]
    id: i64,
    #[odm(index)]
    slug: String,
}

fn main() {}
