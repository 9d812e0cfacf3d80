//! Law: operations run one after another inside one write transaction give the same results
//! and leave the same database as each run in a transaction of its own.
//!
//! One transaction keeps its documents and index tables open between operations (the engine's
//! table pool): this checks that doing so is invisible, across inserts, updates, deletes,
//! reads, index merges, schema changes that delete tables, failed operations, and more
//! collections than the pool keeps open at once.

use bson::{Bson, Document, doc};
use odm_engine::update::UpdateOptions;
use odm_engine::{Database, IndexSpec, WriteTxn};
use proptest::prelude::*;

/// More collections, each with up to two indexes, than the pool keeps idle tables (32).
const COLLECTIONS: [&str; 9] = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];

#[derive(Debug, Clone)]
enum Op {
    Insert(usize, i32, i32),
    Inc(usize, i32),
    SetMany(usize, i32),
    Delete(usize, i32),
    Find(usize, i32),
    /// A find, then an update, whose `$or` uses the `x` index in both branches.
    FindOr(usize, i32, i32),
    SetOr(usize, i32, i32),
    Get(usize, i32),
    Count(usize),
    IndexX(usize),
    UniqueU(usize),
    DropIndex(usize, &'static str),
    Drop(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let c = 0..COLLECTIONS.len();
    prop_oneof![
        6 => (c.clone(), 0..10i32, 0..5i32).prop_map(|(c, id, x)| Op::Insert(c, id, x)),
        3 => (c.clone(), 0..10i32).prop_map(|(c, id)| Op::Inc(c, id)),
        1 => (c.clone(), 0..5i32).prop_map(|(c, x)| Op::SetMany(c, x)),
        2 => (c.clone(), 0..10i32).prop_map(|(c, id)| Op::Delete(c, id)),
        2 => (c.clone(), 0..5i32).prop_map(|(c, x)| Op::Find(c, x)),
        1 => (c.clone(), 0..5i32, 0..5i32).prop_map(|(c, a, b)| Op::FindOr(c, a, b)),
        1 => (c.clone(), 0..5i32, 0..5i32).prop_map(|(c, a, b)| Op::SetOr(c, a, b)),
        1 => (c.clone(), 0..10i32).prop_map(|(c, id)| Op::Get(c, id)),
        1 => c.clone().prop_map(Op::Count),
        2 => c.clone().prop_map(Op::IndexX),
        1 => c.clone().prop_map(Op::UniqueU),
        1 => (c.clone(), prop::sample::select(vec!["x_1", "u_1"])).prop_map(|(c, n)| Op::DropIndex(c, n)),
        1 => c.prop_map(Op::Drop),
    ]
}

/// Runs one operation; what it returned, or its error, as text.
fn run(w: &mut WriteTxn<'_>, op: &Op) -> String {
    let name = |c: &usize| COLLECTIONS[*c];
    let outcome = match op {
        Op::Insert(c, id, x) => w
            .insert_one(name(c), doc! {"_id": id, "x": x, "u": id % 7})
            .map(|id| format!("{id:?}")),
        Op::Inc(c, id) => w
            .update_one(
                name(c),
                &doc! {"_id": id},
                doc! {"$inc": {"x": 1}},
                &UpdateOptions::default(),
            )
            .map(|r| format!("{} {}", r.matched, r.modified)),
        Op::SetMany(c, x) => w
            .update_many(
                name(c),
                &doc! {"x": {"$gte": x}},
                doc! {"$set": {"y": x}},
                &UpdateOptions::default(),
            )
            .map(|r| format!("{} {}", r.matched, r.modified)),
        Op::Delete(c, id) => w
            .delete_one(name(c), &doc! {"_id": id})
            .map(|n| n.to_string()),
        Op::Find(c, x) => w
            .find(
                name(c),
                &doc! {"x": {"$gt": x}},
                Some(&doc! {"_id": 1}),
                None,
            )
            .map(|found| format!("{found:?}")),
        Op::FindOr(c, a, b) => w
            .find(
                name(c),
                &doc! {"$or": [{"x": a}, {"x": b}]},
                Some(&doc! {"_id": 1}),
                None,
            )
            .map(|found| format!("{found:?}")),
        Op::SetOr(c, a, b) => w
            .update_many(
                name(c),
                &doc! {"$or": [{"x": a}, {"x": b}]},
                doc! {"$set": {"y": a}},
                &UpdateOptions::default(),
            )
            .map(|r| format!("{} {}", r.matched, r.modified)),
        Op::Get(c, id) => w
            .get(name(c), &Bson::Int32(*id))
            .map(|found| format!("{found:?}")),
        Op::Count(c) => w.count(name(c)).map(|n| n.to_string()),
        Op::IndexX(c) => w.create_index(name(c), IndexSpec::ascending("x").unwrap()),
        Op::UniqueU(c) => w.create_index(name(c), IndexSpec::ascending("u").unwrap().unique()),
        Op::DropIndex(c, index) => w.drop_index(name(c), index).map(|()| String::new()),
        Op::Drop(c) => w.drop_collection(name(c)).map(|d| d.to_string()),
    };
    match outcome {
        Ok(text) => text,
        Err(e) => format!("error: {e}"),
    }
}

/// Every collection's documents in `_id` order and its indexes.
fn contents(db: &Database) -> Vec<(String, Vec<Document>, Vec<String>)> {
    let snapshot = db.read().unwrap();
    COLLECTIONS
        .iter()
        .map(|name| {
            let docs = match snapshot.collection(name).unwrap() {
                Some(c) => c
                    .scan()
                    .unwrap()
                    .map(|d| d.unwrap().decode::<Document>().unwrap())
                    .collect(),
                None => Vec::new(),
            };
            let indexes = snapshot
                .list_indexes(name)
                .iter()
                .map(|i| i.name().to_owned())
                .collect();
            (name.to_string(), docs, indexes)
        })
        .collect()
}

fn database(merge_threshold: u64) -> Database {
    let db = Database::in_memory().unwrap();
    db.set_index_merge_threshold(merge_threshold);
    db
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn one_transaction_equals_one_per_operation(
        ops in prop::collection::vec(op(), 1..80),
        merge_threshold in 0u64..4,
    ) {
        let apart = database(merge_threshold);
        let mut apart_out = Vec::new();
        for op in &ops {
            // A failed operation aborts its own transaction; in the shared one it is
            // skipped. Either way it changed nothing.
            let mut text = String::new();
            let _ = apart.write(|w| {
                text = run(w, op);
                if text.starts_with("error: ") {
                    Err(odm_engine::Error::NestedWrite)
                } else {
                    Ok(())
                }
            });
            apart_out.push(text);
        }
        let together = database(merge_threshold);
        let together_out = together
            .write(|w| Ok::<_, odm_engine::Error>(ops.iter().map(|op| run(w, op)).collect::<Vec<_>>()))
            .unwrap();
        prop_assert_eq!(&together_out, &apart_out);
        prop_assert_eq!(contents(&together), contents(&apart));
        let report = together.verify().unwrap();
        prop_assert!(report.is_clean(), "{report:?}");
    }
}

/// An `$or` whose branches use one index: the update's view of the collection opens that
/// index's tables once (a second open of an open table is refused by redb).
#[test]
fn an_or_using_one_index_twice_updates_inside_a_transaction() {
    let db = Database::in_memory().unwrap();
    db.write(|w| {
        w.create_index("c", IndexSpec::ascending("x").unwrap())?;
        for id in 0..4 {
            w.insert_one("c", doc! {"_id": id, "x": id})?;
        }
        let filter = doc! {"$or": [{"x": 1}, {"x": 2}]};
        let explained = w.find("c", &filter, None, None)?;
        assert_eq!(explained.len(), 2);
        let r = w.update_many(
            "c",
            &filter,
            doc! {"$set": {"y": 1}},
            &UpdateOptions::default(),
        )?;
        assert_eq!((r.matched, r.modified), (2, 2));
        Ok::<(), odm_engine::Error>(())
    })
    .unwrap();
    assert!(db.verify().unwrap().is_clean());
}

/// A count inside a transaction sees the transaction's own writes and honours skip and limit,
/// counting as it finds (it holds no document).
#[test]
fn a_count_inside_a_transaction_sees_its_own_writes() {
    let db = Database::in_memory().unwrap();
    db.collection("c")
        .insert_many(
            (0..10)
                .map(|i| doc! { "_id": i, "a": i % 2 })
                .collect::<Vec<_>>(),
            true,
        )
        .unwrap();
    db.write(|w| {
        w.insert_one("c", doc! { "_id": 10, "a": 0 })?;
        let find = |skip, limit| odm_engine::query::FindOptions {
            skip,
            limit,
            ..odm_engine::query::FindOptions::default()
        };
        assert_eq!(w.count_with("c", &doc! { "a": 0 }, &find(0, None))?, 6);
        assert_eq!(w.count_with("c", &doc! { "a": 0 }, &find(2, None))?, 4);
        assert_eq!(w.count_with("c", &doc! { "a": 0 }, &find(1, Some(3)))?, 3);
        assert_eq!(w.count_with("none", &doc! {}, &find(0, None))?, 0);
        Ok::<_, odm_engine::Error>(())
    })
    .unwrap();
}

/// A find inside a transaction gathers its results within a bound, and past it stops with
/// MongoDB's 146 rather than holding every match.
#[test]
fn a_find_inside_a_transaction_gathers_within_a_bound() {
    let db = Database::in_memory().unwrap();
    db.collection("c")
        .insert_many(
            (0..100)
                .map(|i| doc! { "_id": i, "pad": "x".repeat(100) })
                .collect::<Vec<_>>(),
            true,
        )
        .unwrap();
    db.write(|w| {
        let all = odm_engine::query::FindOptions::default();
        assert_eq!(w.find_within("c", &doc! {}, &all, 1 << 20)?.len(), 100);
        let err = w.find_within("c", &doc! {}, &all, 1000).unwrap_err();
        assert_eq!(err.code(), 146, "{err}");
        Ok::<_, odm_engine::Error>(())
    })
    .unwrap();
}
