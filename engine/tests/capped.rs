//! Capped collections: their limits, insertion order, tailing and conversion, checked against a
//! model of MongoDB's rules (the oldest documents go first, past `size` bytes or `max`
//! documents).

use std::collections::VecDeque;

use bson::{Bson, Document, doc};
use odm_engine::capped::{Capped, CappedError};
use odm_engine::query::{FindOptions, Tail};
use odm_engine::update::UpdateOptions;
use odm_engine::{CollectionOptions, Database, Error, ErrorCode};
use proptest::prelude::*;

fn capped_db(size: i64, max: Option<i64>) -> Database {
    let db = Database::in_memory().unwrap();
    let limits = Capped::new(size, max).unwrap();
    db.write(|w| w.create_collection_with("c", CollectionOptions::default().with_capped(limits)))
        .unwrap();
    db
}

fn ids(db: &Database, options: &FindOptions) -> Vec<i64> {
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    c.find(&doc! {}, options)
        .unwrap()
        .map(|d| d.unwrap().get_i64("_id").unwrap())
        .collect()
}

fn natural(direction: i32) -> FindOptions {
    FindOptions {
        sort: Some(doc! { "$natural": direction }),
        ..FindOptions::default()
    }
}

/// A write of the law's sequences.
#[derive(Debug, Clone)]
enum Op {
    Insert { id: i64, pad: usize },
    Update { id: i64, pad: usize },
    Delete { id: i64 },
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (0..40i64, 0..600usize).prop_map(|(id, pad)| Op::Insert { id, pad }),
        2 => (0..40i64, 0..600usize).prop_map(|(id, pad)| Op::Update { id, pad }),
        1 => (0..40i64).prop_map(|id| Op::Delete { id }),
    ];
    prop::collection::vec(op, 1..80)
}

fn padded(id: i64, pad: usize) -> Document {
    doc! { "_id": id, "pad": "x".repeat(pad) }
}

fn size_of(d: &Document) -> u64 {
    bson::RawDocumentBuf::try_from(d).unwrap().as_bytes().len() as u64
}

/// The model: documents in insertion order with their sizes.
#[derive(Default)]
struct Model {
    docs: VecDeque<(i64, u64)>,
}

impl Model {
    fn bytes(&self) -> u64 {
        self.docs.iter().map(|(_, s)| s).sum()
    }

    fn insert(&mut self, limits: Capped, id: i64, size: u64) -> bool {
        if size > limits.size || self.docs.iter().any(|(i, _)| *i == id) {
            return false;
        }
        self.docs.push_back((id, size));
        while (self.bytes() > limits.size || limits.max.is_some_and(|m| self.docs.len() as u64 > m))
            && self.docs.len() > 1
        {
            self.docs.pop_front();
        }
        true
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Law: after any inserts, updates and deletes, a capped collection holds what the model
    /// holds, in insertion order forward and backward, and `verify` finds its order tables
    /// in step with its documents.
    #[test]
    fn a_capped_collection_keeps_the_newest_documents_in_insertion_order(
        size in 256i64..4_000,
        max in prop::option::of(-1i64..12),
        ops in ops(),
    ) {
        let limits = Capped::new(size, max).unwrap();
        let db = capped_db(size, max);
        let c = db.collection("c");
        let mut model = Model::default();
        for op in ops {
            match op {
                Op::Insert { id, pad } => {
                    let d = padded(id, pad);
                    let accepted = model.insert(limits, id, size_of(&d));
                    prop_assert_eq!(c.insert_one(d).is_ok(), accepted);
                }
                Op::Update { id, pad } => {
                    let d = padded(id, pad);
                    let fits = size_of(&d) <= limits.size;
                    let held = model.docs.iter().position(|(i, _)| *i == id);
                    let result = c.replace_one(&doc! { "_id": id }, &d, &UpdateOptions::default());
                    match held {
                        Some(at) if fits => {
                            prop_assert!(result.is_ok(), "{result:?}");
                            model.docs[at].1 = size_of(&d);
                        }
                        Some(_) => prop_assert!(result.is_err()),
                        None => prop_assert!(result.is_ok()),
                    }
                }
                Op::Delete { id } => {
                    c.delete_one(&doc! { "_id": id }).unwrap();
                    model.docs.retain(|(i, _)| *i != id);
                }
            }
        }
        let expected: Vec<i64> = model.docs.iter().map(|(i, _)| *i).collect();
        prop_assert_eq!(ids(&db, &FindOptions::default()), expected.clone());
        prop_assert_eq!(ids(&db, &natural(1)), expected.clone());
        let mut reversed = expected.clone();
        reversed.reverse();
        prop_assert_eq!(ids(&db, &natural(-1)), reversed);
        let hinted = FindOptions { hint: Some(Bson::Document(doc! { "$natural": -1 })), ..FindOptions::default() };
        let mut reversed = expected;
        reversed.reverse();
        prop_assert_eq!(ids(&db, &hinted), reversed);
        let report = db.verify().unwrap();
        prop_assert!(report.is_clean(), "{:?}", report.problems);
    }
}

#[test]
fn max_keeps_the_newest_documents_and_a_sort_still_sorts() {
    let db = capped_db(100_000, Some(3));
    for id in [5_i64, 1, 4, 2, 3] {
        db.collection("c").insert_one(doc! { "_id": id }).unwrap();
    }
    assert_eq!(ids(&db, &FindOptions::default()), [4, 2, 3]);
    let by_id = FindOptions {
        sort: Some(doc! { "_id": 1 }),
        ..FindOptions::default()
    };
    assert_eq!(ids(&db, &by_id), [2, 3, 4]);
}

#[test]
fn a_document_larger_than_the_collection_is_refused_and_changes_nothing() {
    let db = capped_db(1_000, None);
    let c = db.collection("c");
    c.insert_one(doc! { "_id": 1_i64 }).unwrap();
    let err = c.insert_one(padded(2, 2_000)).unwrap_err();
    assert!(
        matches!(err, Error::Capped(CappedError::DocumentTooLarge { .. })),
        "{err}"
    );
    assert_eq!(err.error_code(), ErrorCode::BAD_VALUE);
    assert_eq!(ids(&db, &FindOptions::default()), [1]);
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn insertion_order_survives_reopening_the_file() {
    let dir = std::env::temp_dir().join(format!("odm-capped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("capped.odm");
    {
        let db = Database::open(&path).unwrap();
        let limits = Capped::new(10_000, Some(4)).unwrap();
        db.write(|w| {
            w.create_collection_with("c", CollectionOptions::default().with_capped(limits))
        })
        .unwrap();
        for id in [9_i64, 3, 7, 1, 8] {
            db.collection("c").insert_one(doc! { "_id": id }).unwrap();
        }
    }
    let db = Database::open(&path).unwrap();
    assert_eq!(ids(&db, &FindOptions::default()), [3, 7, 1, 8]);
    db.collection("c")
        .insert_one(doc! { "_id": 0_i64 })
        .unwrap();
    assert_eq!(ids(&db, &FindOptions::default()), [7, 1, 8, 0]);
    let options = db.read().unwrap().collection_options("c").unwrap();
    assert_eq!(
        options.capped,
        Some(Capped {
            size: 10_240,
            max: Some(4)
        })
    );
    assert!(db.verify().unwrap().is_clean());
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tail_batch(db: &Database, tail: &mut Tail, max: usize) -> Result<Vec<i64>, Error> {
    let txn = db.read()?;
    Ok(tail
        .next_batch(&txn, max, &mut |_| true)?
        .into_iter()
        .map(|d| d.get_i64("_id").unwrap())
        .collect())
}

#[test]
fn a_tail_reads_each_new_document_once_and_loses_its_place_when_it_is_removed() {
    let db = capped_db(100_000, Some(5));
    let c = db.collection("c");
    for id in 0..3_i64 {
        c.insert_one(doc! { "_id": id, "even": id % 2 == 0 })
            .unwrap();
    }
    let mut tail = Tail::new("c", &doc! { "even": true }, None, 0, None).unwrap();
    assert_eq!(tail_batch(&db, &mut tail, 10).unwrap(), [0, 2]);
    assert!(tail_batch(&db, &mut tail, 10).unwrap().is_empty());
    for id in 3..6_i64 {
        c.insert_one(doc! { "_id": id, "even": id % 2 == 0 })
            .unwrap();
    }
    assert_eq!(tail_batch(&db, &mut tail, 10).unwrap(), [4]);
    // Its place is document 5 (examined, not matched); six more inserts remove it.
    for id in 6..12_i64 {
        c.insert_one(doc! { "_id": id, "even": true }).unwrap();
    }
    let lost = tail_batch(&db, &mut tail, 10).unwrap_err();
    assert_eq!(lost.error_code(), ErrorCode::CAPPED_POSITION_LOST, "{lost}");
}

#[test]
fn a_tail_counts_skip_and_limit_across_batches_and_projects() {
    let db = capped_db(100_000, None);
    let c = db.collection("c");
    for id in 0..10_i64 {
        c.insert_one(doc! { "_id": id, "n": id }).unwrap();
    }
    let projection = doc! { "_id": 0, "n": 1 };
    let mut tail = Tail::new("c", &doc! {}, Some(&projection), 2, Some(5)).unwrap();
    let txn = db.read().unwrap();
    let first = tail.next_batch(&txn, 2, &mut |_| true).unwrap();
    assert_eq!(
        first,
        [bson::rawdoc! { "n": 2_i64 }, bson::rawdoc! { "n": 3_i64 }]
    );
    let rest = tail.next_batch(&txn, 10, &mut |_| true).unwrap();
    assert_eq!(rest.len(), 3);
    assert!(tail.is_done());
}

#[test]
fn a_tail_of_a_collection_that_is_not_capped_is_refused() {
    let db = Database::in_memory().unwrap();
    db.collection("c").insert_one(doc! { "_id": 1 }).unwrap();
    let mut tail = Tail::new("c", &doc! {}, None, 0, None).unwrap();
    let err = tail_batch(&db, &mut tail, 10).unwrap_err();
    assert!(
        matches!(err, Error::Capped(CappedError::NotCapped(_))),
        "{err}"
    );
}

#[test]
fn converting_to_capped_keeps_the_newest_by_natural_order_and_only_the_id_index() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    for id in 0..20_i64 {
        c.insert_one(doc! { "_id": id, "pad": "x".repeat(100) })
            .unwrap();
    }
    c.create_index(odm_engine::IndexSpec::ascending("pad").unwrap())
        .unwrap();
    // Each document is 128 bytes; 1,000 rounds up to 1,024, room for 8.
    let limits = Capped::new(1_000, None).unwrap();
    db.write(|w| w.convert_to_capped("c", limits)).unwrap();
    let held = ids(&db, &FindOptions::default());
    assert_eq!(held, (12..20).collect::<Vec<_>>());
    assert_eq!(c.list_indexes().unwrap().len(), 1);
    // Converting again with a smaller size (512) keeps the newest in the same order.
    db.write(|w| w.convert_to_capped("c", Capped::new(300, None).unwrap()))
        .unwrap();
    assert_eq!(ids(&db, &FindOptions::default()), [16, 17, 18, 19]);
    assert!(db.verify().unwrap().is_clean());
    let missing = db
        .write(|w| w.convert_to_capped("nothing", limits))
        .unwrap_err();
    assert_eq!(missing.error_code(), ErrorCode::NAMESPACE_NOT_FOUND);
}

#[test]
fn dropping_a_capped_collection_drops_its_order_and_a_new_one_starts_empty() {
    let db = capped_db(10_000, None);
    db.collection("c")
        .insert_one(doc! { "_id": 1_i64 })
        .unwrap();
    db.write(|w| w.drop_collection("c")).unwrap();
    db.collection("c")
        .insert_one(doc! { "_id": 2_i64 })
        .unwrap();
    assert_eq!(ids(&db, &FindOptions::default()), [2]);
    assert!(db.verify().unwrap().is_clean());
}
