use odm::{Document, Filter};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "buckets")]
struct Bucket<M> {
    #[odm(id)]
    id: i64,
    owner: String,
    messages: Vec<M>,
}

fn main() {
    // A handle of `Bucket<String>` does not filter `Bucket<i64>`: each instantiation is its
    // own model.
    let _filter: Filter<Bucket<i64>> = Bucket::<String>::fields().owner.eq("ann");
}
