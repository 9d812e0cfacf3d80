use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users")]
struct User {
    #[odm(id)]
    id: i64,
    name: String,
}

fn main() {
    let _ = User::fields().name.set(42);
}
