use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "buckets", index(keys("messages.sent_at" = -1)))]
struct Bucket<M> {
    #[odm(id)]
    id: i64,
    #[odm(embedded)]
    messages: Vec<M>,
}

fn main() {}
