use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items", schema)]
struct Item {
    #[odm(id)]
    id: i64,
    #[odm(schema(max_length = 10))]
    price: i64,
}

fn main() {}
