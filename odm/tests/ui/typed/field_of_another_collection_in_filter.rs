use odm::{Database, Document};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users")]
struct User {
    #[odm(id)]
    id: i64,
    name: String,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts")]
struct Post {
    #[odm(id)]
    id: i64,
    author: String,
}

fn main() -> odm::Result<()> {
    let db = Database::in_memory()?;
    let users = db.collection::<User>()?;
    let _ = users.find_one(Post::fields().author.eq("ann"))?;
    Ok(())
}
