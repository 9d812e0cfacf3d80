use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct UserV1 {
    id: i64,
    name: String,
}

fn rename_fields(doc: bson::Document, _from: u32) -> Result<bson::Document, String> {
    Ok(doc)
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users", version = 2, from = UserV1, migrate = rename_fields)]
struct User {
    #[odm(id)]
    id: i64,
    full_name: String,
}

impl From<UserV1> for User {
    fn from(v1: UserV1) -> User {
        User { id: v1.id, full_name: v1.name }
    }
}

fn main() {}
