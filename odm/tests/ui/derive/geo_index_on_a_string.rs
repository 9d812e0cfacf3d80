use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "shops")]
struct Shop {
    #[odm(id)]
    id: i64,
    #[odm(index(geo))]
    address: String,
}

fn main() {}
