use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "identities", shard_key(hashed(identifier), unique))]
struct Identity {
    #[odm(id)]
    id: i64,
    identifier: String,
}

fn main() {}
