use odm::{Database, Document, Embedded, GeoNear, GeoPoint};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "zips")]
struct Zip {
    #[odm(id)]
    id: String,
    #[odm(index(geo))]
    loc: [f64; 2],
}

#[derive(Serialize, Deserialize, Embedded)]
struct Nearby {
    #[serde(rename = "_id")]
    id: String,
    metres: f64,
    // `includeLocs` returns the stored pair, which does not decode as a GeoJSON point.
    at: GeoPoint,
}

fn main() -> odm::Result<()> {
    let db = Database::in_memory()?;
    let zips = db.collection::<Zip>()?;
    let (f, n) = (Zip::fields(), Nearby::fields());
    let stage = GeoNear::new(f.loc.near(GeoPoint::new(0.0, 0.0)), &n.metres).include_locations(&n.at);
    let _: Vec<Nearby> = zips.aggregate().geo_near(stage).to_vec()?;
    Ok(())
}
