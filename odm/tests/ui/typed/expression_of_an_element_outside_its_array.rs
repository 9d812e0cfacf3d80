use odm::{Document, Embedded, Expr, Filter};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Line {
    qty: i64,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "orders")]
struct Order {
    #[odm(id)]
    id: i64,
    #[odm(embedded)]
    lines: Vec<Line>,
}

fn main() {
    // An element's handles are rooted in the element, not the document: no `$$this` outside.
    let element = Line::fields();
    let _: Filter<Order> = Filter::expr(element.qty.expr().gt(Expr::value(1)));
}
