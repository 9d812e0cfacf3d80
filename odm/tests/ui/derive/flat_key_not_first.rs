use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "pins", index(keys(board = 1, at = "2d")))]
struct Pin {
    #[odm(id)]
    id: i64,
    board: String,
    at: [f64; 2],
}

fn main() {}
