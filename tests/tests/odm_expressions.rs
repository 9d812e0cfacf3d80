//! Typed expressions (`Expr`): field-to-field comparisons in `$expr` filters, arithmetic and
//! conditionals, arrays filtered and mapped through their elements' handles, and pipeline
//! updates computed from the document. The law compares each typed expression's answer with
//! the same computation in Rust over random documents; the other test runs on the back end
//! `odm::testing::database()` chooses.

use odm::{Document, Embedded, Expr, Filter};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Line {
    qty: i64,
    price: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "orders")]
struct Order {
    #[odm(id)]
    id: i64,
    budget: i64,
    spent: i64,
    #[odm(embedded)]
    lines: Vec<Line>,
}

fn order(id: i64, budget: i64, spent: i64, lines: &[(i64, i64)]) -> Order {
    Order {
        id,
        budget,
        spent,
        lines: lines
            .iter()
            .map(|&(qty, price)| Line { qty, price })
            .collect(),
    }
}

#[test]
fn expressions_compare_fields_compute_and_update_on_both_back_ends() {
    let db = odm::testing::database().unwrap();
    let orders = db.collection::<Order>().unwrap();
    orders
        .insert_many(&[
            order(1, 10, 12, &[(1, 12)]),
            order(2, 50, 20, &[(2, 5), (1, 10)]),
            order(3, 5, 5, &[]),
        ])
        .unwrap();
    let f = Order::fields();
    let over = orders
        .find(Filter::expr(f.spent.expr().gt(f.budget.expr())))
        .to_vec()
        .unwrap();
    assert_eq!(over.iter().map(|o| o.id).collect::<Vec<_>>(), [1]);
    // `$cond`: the headroom, or zero when over budget; at least 5 of it.
    let headroom = Expr::cond(
        f.budget.expr().gte(f.spent.expr()),
        f.budget.expr() - f.spent.expr(),
        Expr::value(0),
    );
    assert_eq!(
        orders
            .count(Filter::expr(headroom.gte(Expr::value(5))))
            .unwrap(),
        1
    );
    // A string that looks like a field path is compared as a string.
    let literal = Filter::expr(
        Expr::<Order, String>::value("$spent".into()).eq(Expr::value("$spent".into())),
    );
    assert_eq!(orders.count(literal).unwrap(), 3);
    // spent := sum of qty * price over the lines, computed by the server.
    let totals = f.lines.expr().map(|l| l.qty.expr() * l.price.expr());
    orders
        .update_many(Filter::all(), f.spent.set_expr(totals.sum()))
        .unwrap();
    let spent: Vec<i64> = orders
        .find(Filter::all())
        .sort(odm::Sort::asc(&f.id))
        .to_vec()
        .unwrap()
        .iter()
        .map(|o| o.spent)
        .collect();
    assert_eq!(spent, [12, 20, 0]);
}

fn orders() -> impl Strategy<Value = Vec<Order>> {
    let line = (-3..4_i64, -20..20_i64);
    proptest::collection::vec(
        (
            -50..50_i64,
            -50..50_i64,
            proptest::collection::vec(line, 0..5),
        ),
        0..25,
    )
    .prop_map(|rows| {
        rows.into_iter()
            .zip(0..)
            .map(|((budget, spent, lines), id)| order(id, budget, spent, &lines))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// Each typed expression selects exactly the documents its Rust counterpart selects.
    #[test]
    fn typed_expressions_answer_as_rust_computes(all in orders(), k in -10..10_i64) {
        let db = odm::Database::in_memory().unwrap();
        let orders = db.collection::<Order>().unwrap();
        if !all.is_empty() {
            orders.insert_many(&all).unwrap();
        }
        let f = Order::fields();
        let ids = |filter: Filter<Order>| -> Vec<i64> {
            let mut ids: Vec<i64> = orders.find(filter).to_vec().unwrap().iter().map(|o| o.id).collect();
            ids.sort_unstable();
            ids
        };
        let expect = |keep: &dyn Fn(&Order) -> bool| -> Vec<i64> {
            all.iter().filter(|o| keep(o)).map(|o| o.id).collect()
        };
        // Field against field, and arithmetic against a constant.
        prop_assert_eq!(
            ids(Filter::expr(f.spent.expr().lt(f.budget.expr()))),
            expect(&|o| o.spent < o.budget)
        );
        prop_assert_eq!(
            ids(Filter::expr((f.spent.expr() + Expr::value(k)).gte(f.budget.expr()).or(f.spent.expr().eq(Expr::value(k))))),
            expect(&|o| o.spent + k >= o.budget || o.spent == k)
        );
        // Arrays: lines of positive quantity, their count and the sum of their values.
        let positive = f.lines.expr().filter(|l| l.qty.expr().gt(Expr::value(0)));
        prop_assert_eq!(
            ids(Filter::expr(positive.clone().size().gte(Expr::value(2)))),
            expect(&|o| o.lines.iter().filter(|l| l.qty > 0).count() >= 2)
        );
        let value = f.lines.expr().map(|l| l.qty.expr() * l.price.expr()).sum();
        prop_assert_eq!(
            ids(Filter::expr(!value.gt(Expr::value(k)))),
            expect(&|o| o.lines.iter().map(|l| l.qty * l.price).sum::<i64>() <= k)
        );
    }
}
