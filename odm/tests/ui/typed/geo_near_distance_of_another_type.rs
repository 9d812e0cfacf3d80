use odm::{Database, Document, Embedded, GeoNear, GeoPoint};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "shops")]
struct Shop {
    #[odm(id)]
    id: i64,
    #[odm(index(geo))]
    at: GeoPoint,
}

#[derive(Serialize, Deserialize, Embedded)]
struct Nearby {
    #[serde(rename = "_id")]
    id: i64,
    distance: String,
}

fn main() -> odm::Result<()> {
    let db = Database::in_memory()?;
    let shops = db.collection::<Shop>()?;
    let (f, n) = (Shop::fields(), Nearby::fields());
    let near = f.at.near(GeoPoint::new(0.0, 0.0));
    let _: Vec<Nearby> = shops.aggregate().geo_near(GeoNear::new(near, &n.distance)).to_vec()?;
    Ok(())
}
