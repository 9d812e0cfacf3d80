//! Typed expressions (`Expr`): field-to-field comparisons in `$expr` filters, arithmetic and
//! conditionals, arrays filtered and mapped through their elements' handles, and pipeline
//! updates computed from the document. The law compares each typed expression's answer with
//! the same computation in Rust over random documents; the other test runs on the back end
//! `odm::testing::database()` chooses.

use odm::{Document, Element, Embedded, Expr, Filter, Group};
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
    let literal = Filter::expr(Expr::<Order, String>::value("$spent").eq(Expr::value("$spent")));
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "sheets")]
struct Sheet {
    #[odm(id)]
    id: i64,
    cells: Vec<i64>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
struct Cells {
    n: i64,
}

/// Arrays whose elements have no handles of their own (`Vec<i64>`, or a type parameter
/// reached through handles rooted in it): `Element` reads the element, and the expressions
/// feed a `$set` stage and a `$group` accumulator.
#[test]
fn elements_without_handles_filter_map_and_feed_stages() {
    let db = odm::testing::database().unwrap();
    let sheets = db.collection::<Sheet>().unwrap();
    let sheet = |id, cells: &[i64]| Sheet {
        id,
        cells: cells.to_vec(),
    };
    sheets
        .insert_many(&[sheet(1, &[1, 5, 3]), sheet(2, &[]), sheet(3, &[4, 4])])
        .unwrap();
    let s = Sheet::fields();
    let big = s
        .cells
        .expr()
        .filter_where(Element::itself().gt(Expr::value(3)));
    let with_two_big = Filter::expr(big.clone().size().eq(Expr::value(2)));
    assert_eq!(
        sheets.find(with_two_big).to_vec().unwrap(),
        [sheet(3, &[4, 4])]
    );
    // `$set` in a pipeline: each sheet's big cells, times ten.
    let tens = big.map_each(Element::itself() * Expr::value(10));
    let shown = sheets
        .aggregate()
        .sort(odm::Sort::asc(&s.id))
        .set_expr(&s.cells, tens)
        .to_vec()
        .unwrap();
    assert_eq!(shown, [sheet(1, &[50]), sheet(2, &[]), sheet(3, &[40, 40])]);
    // A `$group` summing an expression: every cell of every sheet.
    let total = sheets
        .aggregate()
        .group(Group::all().sum_expr(&Cells::fields().n, s.cells.expr().size()))
        .first()
        .unwrap();
    assert_eq!(total, Some(Cells { n: 5 }));
    // Handles rooted in the element's type read the same field as the element's own handles.
    let orders = db.collection::<Order>().unwrap();
    orders
        .insert_many(&[order(1, 0, 0, &[(2, 1), (1, 1)]), order(2, 0, 0, &[(1, 1)])])
        .unwrap();
    let f = Order::fields();
    let qty = Line::fields().qty;
    let by_element = f
        .lines
        .expr()
        .filter_where(Element::field(&qty).gte(Expr::value(2)));
    let by_handles = f.lines.expr().filter(|l| l.qty.expr().gte(Expr::value(2)));
    let count = |lines: Expr<Order, Vec<Line>>| {
        orders
            .count(Filter::expr(lines.size().gt(Expr::value(0))))
            .unwrap()
    };
    assert_eq!((count(by_element), count(by_handles)), (1, 1));
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
