use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
#[serde(tag = "type")]
enum Item {
    Book { id: i64, title: String },
}

fn main() {}
