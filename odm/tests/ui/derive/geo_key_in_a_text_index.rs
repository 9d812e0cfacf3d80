use odm::{Document, GeoPoint};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "shops", index(keys(at = "2dsphere"), text(name)))]
struct Shop {
    #[odm(id)]
    id: i64,
    name: String,
    at: GeoPoint,
}

fn main() {}
