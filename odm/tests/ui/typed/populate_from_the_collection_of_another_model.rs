use odm::{Database, Document, Embedded, Ref};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "parts")]
struct Part {
    #[odm(id)]
    sku: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "suppliers")]
struct Supplier {
    #[odm(id)]
    name: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "products")]
struct Product {
    #[odm(id)]
    id: i64,
    parts: Vec<Ref<Part>>,
}

#[derive(Serialize, Deserialize, Embedded)]
struct Assembled {
    parts: Vec<Supplier>,
}

fn main() -> odm::Result<()> {
    let db = Database::in_memory()?;
    let suppliers = db.collection::<Supplier>()?;
    let products = db.collection::<Product>()?;
    let (f, a) = (Product::fields(), Assembled::fields());
    products.aggregate().populate(&suppliers, &f.parts, &a.parts).to_vec()?;
    Ok(())
}
