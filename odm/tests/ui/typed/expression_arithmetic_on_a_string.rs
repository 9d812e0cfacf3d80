use odm::{Document, Expr};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "orders")]
struct Order {
    #[odm(id)]
    id: i64,
    note: String,
}

fn main() {
    let f = Order::fields();
    let _ = f.note.expr() + Expr::value("!".to_owned());
}
