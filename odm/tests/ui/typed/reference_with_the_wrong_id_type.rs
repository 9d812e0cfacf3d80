use odm::{Document, Ref};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "hosts")]
struct Host {
    #[odm(id)]
    name: String,
}

fn main() {
    let _web: Ref<Host> = Ref::new(7_i64);
}
