use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users")]
struct User {
    #[odm(id)]
    id: i64,
    age: u32,
}

fn main() {
    let _ = User::fields().age.gt("thirty");
}
