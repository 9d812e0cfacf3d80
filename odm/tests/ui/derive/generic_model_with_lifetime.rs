use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "notes")]
struct Note<'a> {
    #[odm(id)]
    id: i64,
    text: &'a str,
}

fn main() {}
