use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Money {
    cents: i64,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items", schema)]
struct Item {
    #[odm(id)]
    id: i64,
    price: Money,
}

fn main() {}
