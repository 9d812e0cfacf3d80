use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users", version = 0)]
struct User {
    #[odm(id)]
    id: i64,
    name: String,
}

fn main() {}
