use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "messages", shard_key(recipent, sent))]
struct Message {
    #[odm(id)]
    id: i64,
    recipient: String,
    sent: i64,
}

fn main() {}
