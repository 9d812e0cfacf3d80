use odm::{Document, Embedded};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Audit {
    created: bson::DateTime,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "sessions", index(keys("audit.created" = 1), ttl = "1d"))]
struct Session {
    #[odm(id)]
    id: i64,
    #[odm(embedded)]
    audit: Audit,
}

fn main() {}
