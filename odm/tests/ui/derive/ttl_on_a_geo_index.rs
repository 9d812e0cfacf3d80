use odm::{Document, GeoPoint};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "sightings", index(keys(seen = 1, at = "2dsphere"), ttl = "30d"))]
struct Sighting {
    #[odm(id)]
    id: i64,
    seen: bson::DateTime,
    at: GeoPoint,
}

fn main() {}
