use odm::{Document, GeoPoint};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "shops")]
struct Shop {
    #[odm(id)]
    id: i64,
    #[odm(index(geo, desc))]
    at: GeoPoint,
}

fn main() {}
