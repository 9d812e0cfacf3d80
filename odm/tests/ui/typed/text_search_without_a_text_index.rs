use odm::{Database, Document, text};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts")]
struct Post {
    #[odm(id)]
    id: i64,
    title: String,
}

fn main() -> odm::Result<()> {
    let db = Database::in_memory()?;
    let posts = db.collection::<Post>()?;
    posts.find(text("coffee")).to_vec()?;
    Ok(())
}
