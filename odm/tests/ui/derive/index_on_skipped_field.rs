use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users", index(keys(cache = 1)))]
struct User {
    #[odm(id)]
    id: i64,
    name: String,
    #[serde(skip)]
    cache: Option<String>,
}

fn main() {}
