use odm::Document;
use serde::{Deserialize, Serialize};

fn one_word(slug: &str) -> Result<(), String> {
    if slug.contains(' ') { Err("two words".into()) } else { Ok(()) }
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "pages", schema)]
struct Page {
    #[odm(id)]
    id: i64,
    #[odm(schema(check = one_word, check = one_word))]
    slug: String,
}

fn main() {}
