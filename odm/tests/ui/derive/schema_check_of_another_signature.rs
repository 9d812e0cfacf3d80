use odm::Document;
use serde::{Deserialize, Serialize};

fn positive(n: &i64) -> Result<(), String> {
    if *n > 0 { Ok(()) } else { Err("not positive".into()) }
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "pages", schema)]
struct Page {
    #[odm(id)]
    id: i64,
    #[odm(schema(check = positive))]
    slug: String,
}

fn main() {}
