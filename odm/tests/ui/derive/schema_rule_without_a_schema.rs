use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Item {
    #[odm(id)]
    id: i64,
    #[odm(schema(minimum = 0))]
    price: i64,
}

fn main() {}
