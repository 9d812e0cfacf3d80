use odm::{Database, Document};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Book {
    #[odm(id)]
    id: i64,
    title: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "items")]
#[serde(tag = "type")]
enum Item {
    Book(Book),
}

fn main() -> odm::Result<()> {
    let db = Database::in_memory()?;
    let items = db.collection::<Item>()?;
    // A variant's filter goes through its view, which adds the discriminator.
    items.count(Item::fields().book.title.eq("Dune"))?;
    Ok(())
}
