use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items", schema)]
struct Item {
    #[odm(id)]
    id: i64,
    #[odm(schema(pattern = 5))]
    code: String,
}

fn main() {}
