use odm::{Document, GeoPoint};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "shops")]
struct Shop {
    #[odm(id)]
    id: i64,
    // A `2d` index reads legacy pairs only: a GeoJSON point would be refused on insert.
    #[odm(index(flat))]
    at: GeoPoint,
}

fn main() {}
