use odm::{Document, Filter};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "orders")]
struct Order {
    #[odm(id)]
    id: i64,
    spent: i64,
    note: String,
}

fn main() {
    let f = Order::fields();
    let _ = Filter::expr(f.spent.expr().gt(f.note.expr()));
}
