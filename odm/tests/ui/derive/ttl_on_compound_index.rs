use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "sessions", index(keys(user = 1, created = 1), ttl = "1d"))]
struct Session {
    #[odm(id)]
    id: i64,
    user: String,
    created: bson::DateTime,
}

fn main() {}
