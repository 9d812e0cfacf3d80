use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "orders", shard_key())]
struct Order {
    #[odm(id)]
    id: i64,
    customer: String,
}

fn main() {}
