use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "members", hooks)]
struct Member {
    #[odm(id)]
    id: i64,
    name: String,
}

fn main() {}
