use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "orders", shard_key(hashed(customer), region))]
struct Order {
    #[odm(id)]
    id: i64,
    customer: String,
    region: String,
}

fn main() {}
