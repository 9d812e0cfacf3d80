use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items", schema(level = "lenient"))]
struct Item {
    #[odm(id)]
    id: i64,
}

fn main() {}
