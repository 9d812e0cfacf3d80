use odm::{Document, Embedded};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Audit {
    at: bson::DateTime,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts")]
struct Post {
    #[odm(id)]
    id: i64,
    #[odm(embedded, updated_at)]
    audit: Audit,
}

fn main() {}
