use odm::{Database, Document, Embedded};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "buckets")]
struct Bucket<M> {
    #[odm(id)]
    id: i64,
    #[odm(embedded)]
    messages: Vec<M>,
}

#[derive(Serialize, Deserialize, Embedded)]
struct Msg {
    body: String,
}

fn main() {
    let db = Database::in_memory().unwrap();
    // Fine: `Msg` is embedded, so `messages.body` has a handle.
    let _ok = db.collection::<Bucket<Msg>>().unwrap();
    // A parameter marked embedded needs a type that derives Embedded.
    let _wrong = db.collection::<Bucket<String>>().unwrap();
}
