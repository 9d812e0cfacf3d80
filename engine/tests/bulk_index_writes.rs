//! Law: an index holds exactly the entries its documents compute, and a query through it
//! returns what a scan returns, whichever way a transaction's changes reach it.
//!
//! An index keeps a main table and a small delta table (`index_store`). A transaction with few
//! changes to an index writes them to the delta; a bulk one (hundreds of changes, at least an
//! eighth of the main table) writes them straight into the main table. Transactions here mix
//! both sizes, with merges of the delta made frequent or rare, and inserts, updates that move
//! entries and deletes in bulk, on a plain index and a multikey one.

use bson::{Bson, Document, doc};
use odm_engine::query::FindOptions;
use odm_engine::update::UpdateOptions;
use odm_engine::{Database, IndexSpec};
use proptest::prelude::*;

const C: &str = "c";

#[derive(Debug, Clone)]
enum Txn {
    /// Inserts this many documents; the seed draws their keys.
    Insert(usize, u64),
    /// Sets `k` to a new value on every document whose `k` is in `[lo, hi)`.
    Rekey(i32, i32, i32),
    /// Pushes a tag onto every document whose `k` is below the bound.
    Tag(i32, i32),
    /// Deletes every document whose `k` is in `[lo, hi)`.
    Delete(i32, i32),
}

fn txn() -> impl Strategy<Value = Txn> {
    prop_oneof![
        3 => (prop_oneof![1usize..6, 250usize..700], any::<u64>()).prop_map(|(n, s)| Txn::Insert(n, s)),
        2 => (0..40i32, 0..40i32, 0..40i32).prop_map(|(a, b, k)| Txn::Rekey(a.min(b), a.max(b), k)),
        1 => (0..40i32, 0..8i32).prop_map(|(k, t)| Txn::Tag(k, t)),
        1 => (0..40i32, 0..40i32).prop_map(|(a, b)| Txn::Delete(a.min(b), a.max(b))),
    ]
}

/// A small generator (xorshift), so a transaction of hundreds of documents is one draw.
fn keys(seed: u64, n: usize) -> Vec<(i32, Vec<i32>)> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|_| {
            let k = (next() % 40) as i32;
            let tags = (0..next() % 3).map(|_| (next() % 8) as i32).collect();
            (k, tags)
        })
        .collect()
}

fn apply(db: &Database, txn: &Txn, next_id: &mut i64) {
    let many = UpdateOptions::default();
    db.write(|w| {
        match txn {
            Txn::Insert(n, seed) => {
                let docs: Vec<Document> = keys(*seed, *n)
                    .into_iter()
                    .map(|(k, tags)| {
                        *next_id += 1;
                        doc! {"_id": *next_id, "k": k, "tags": tags}
                    })
                    .collect();
                w.insert_many(C, docs, true)?;
            }
            Txn::Rekey(lo, hi, k) => {
                let filter = doc! {"k": {"$gte": lo, "$lt": hi}};
                w.update_many(C, &filter, doc! {"$set": {"k": k}}, &many)?;
            }
            Txn::Tag(below, tag) => {
                let filter = doc! {"k": {"$lt": below}};
                w.update_many(C, &filter, doc! {"$push": {"tags": tag}}, &many)?;
            }
            Txn::Delete(lo, hi) => {
                w.delete_many(C, &doc! {"k": {"$gte": lo, "$lt": hi}})?;
            }
        }
        Ok::<(), odm_engine::Error>(())
    })
    .expect("the transaction commits");
}

/// The ids `filter` finds, in order.
fn ids(db: &Database, filter: &Document, hint: Option<Bson>) -> Vec<i64> {
    let read = db.read().expect("read");
    let Some(coll) = read.collection(C).expect("open") else {
        return Vec::new();
    };
    let options = FindOptions {
        hint,
        ..FindOptions::default()
    };
    let mut ids: Vec<i64> = coll
        .find(filter, &options)
        .expect("find")
        .map(|d| d.expect("row").get_i64("_id").expect("an id"))
        .collect();
    ids.sort_unstable();
    ids
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn indexes_match_their_documents_after_bulk_and_small_transactions(
        txns in prop::collection::vec(txn(), 1..7),
        merge_threshold in prop_oneof![Just(16u64), Just(4096)],
    ) {
        let db = Database::in_memory().unwrap();
        db.set_index_merge_threshold(merge_threshold);
        let coll = db.collection(C);
        coll.create_index(IndexSpec::ascending("k").unwrap()).unwrap();
        coll.create_index(IndexSpec::ascending("tags").unwrap()).unwrap();
        let mut next_id = 0;
        for txn in &txns {
            apply(&db, txn, &mut next_id);
            let report = db.verify().unwrap();
            prop_assert!(report.is_clean(), "after {:?}: {:?}", txn, report.problems);
            for filter in [
                doc! {"k": 7},
                doc! {"k": {"$gte": 10, "$lt": 30}},
                doc! {"tags": 3},
            ] {
                let field = filter.keys().next().unwrap().clone();
                let through = ids(&db, &filter, Some(Bson::Document(doc! {field: 1})));
                let scanned = ids(&db, &filter, Some(Bson::Document(doc! {"$natural": 1})));
                prop_assert_eq!(through, scanned, "after {:?}, filter {}", txn, filter);
            }
        }
    }
}
