use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users", shard_key(region, name))]
struct User {
    #[odm(id)]
    id: i64,
    region: String,
    name: String,
    #[odm(index(unique))]
    email: String,
}

fn main() {}
