use odm::{Database, Document, Embedded, Ref};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "parts")]
struct Part {
    #[odm(id)]
    sku: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "products")]
struct Product {
    #[odm(id)]
    id: i64,
    parts: Vec<Ref<Part>>,
}

#[derive(Serialize, Deserialize, Embedded)]
struct WithOne {
    part: Option<Part>,
}

fn main() -> odm::Result<()> {
    let db = Database::in_memory()?;
    let parts = db.collection::<Part>()?;
    let products = db.collection::<Product>()?;
    let (f, w) = (Product::fields(), WithOne::fields());
    products.aggregate().populate_one(&parts, &f.parts, &w.part).to_vec()?;
    Ok(())
}
