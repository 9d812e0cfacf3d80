use odm::{Document, Filter, GeoPoint};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "shops")]
struct Shop {
    #[odm(id)]
    id: i64,
    address: String,
}

fn main() {
    let f = Shop::fields();
    let _: Filter<Shop> = f.address.near(GeoPoint::new(0.0, 0.0)).into();
}
