use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "sessions")]
struct Session {
    #[odm(id)]
    id: i64,
    #[odm(index(ttl = "1d"))]
    created: String,
}

fn main() {}
