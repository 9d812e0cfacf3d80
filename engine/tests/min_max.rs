//! find's `min`, `max`, `returnKey` and `showRecordId`.
//!
//! The law: a find with `min` and `max` over a hinted compound index `{a: 1, b: -1}` returns
//! exactly the documents with an index key `k` where `min <= k < max`, keys compared field by
//! field in MongoDB's order, the descending field reversed; a document's keys are the product
//! of its fields' values (each element of an array, `null` for a missing field). With
//! `returnKey` each result is one such key. Values reach every type bracket the generator
//! holds (numbers of three types, strings, `null`, missing fields, arrays).

use std::cmp::Ordering;

use bson::{Bson, Document, doc};
use odm_engine::query::{FindOptions, KeyOptions};
use odm_engine::{Database, Direction, IndexSpec, order};
use proptest::prelude::*;

fn scalar() -> impl Strategy<Value = Bson> {
    prop_oneof![
        (-3i32..4).prop_map(Bson::Int32),
        (-3i64..4).prop_map(Bson::Int64),
        (-3.0f64..4.0).prop_map(|x| Bson::Double((x * 2.0).round() / 2.0)),
        prop::sample::select(vec!["", "a", "b", "ab"]).prop_map(|s| Bson::String(s.into())),
        Just(Bson::Null),
    ]
}

/// A field: missing, a scalar, or an array of one to three scalars.
fn field() -> impl Strategy<Value = Option<Bson>> {
    prop_oneof![
        2 => Just(None),
        6 => scalar().prop_map(Some),
        2 => prop::collection::vec(scalar(), 1..4).prop_map(|v| Some(Bson::Array(v))),
    ]
}

fn documents() -> impl Strategy<Value = Vec<Document>> {
    prop::collection::vec((field(), field()), 0..25).prop_map(|fields| {
        fields
            .into_iter()
            .enumerate()
            .map(|(i, (a, b))| {
                let mut doc = doc! { "_id": i as i32 };
                // Arrays in both fields would be parallel arrays, which the index refuses.
                let b = if matches!(a, Some(Bson::Array(_))) {
                    b.filter(|b| !matches!(b, Bson::Array(_)))
                } else {
                    b
                };
                doc.extend(a.map(|a| ("a".to_owned(), a)));
                doc.extend(b.map(|b| ("b".to_owned(), b)));
                doc
            })
            .collect()
    })
}

fn values(doc: &Document, name: &str) -> Vec<Bson> {
    match doc.get(name) {
        None => vec![Bson::Null],
        Some(Bson::Array(items)) => items.clone(),
        Some(v) => vec![v.clone()],
    }
}

fn cmp(a: &Bson, b: &Bson) -> Ordering {
    let (a, b) = (
        bson::RawBson::try_from(a.clone()).unwrap(),
        bson::RawBson::try_from(b.clone()).unwrap(),
    );
    order::compare(a.as_raw_bson_ref(), b.as_raw_bson_ref())
}

/// Index order of `{a: 1, b: -1}` keys.
fn key_cmp(x: &(Bson, Bson), y: &(Bson, Bson)) -> Ordering {
    cmp(&x.0, &y.0).then_with(|| cmp(&y.1, &x.1))
}

fn keys(doc: &Document) -> Vec<(Bson, Bson)> {
    let mut out = Vec::new();
    for a in values(doc, "a") {
        for b in values(doc, "b") {
            out.push((a.clone(), b));
        }
    }
    out
}

fn inside(key: &(Bson, Bson), min: Option<&(Bson, Bson)>, max: Option<&(Bson, Bson)>) -> bool {
    min.is_none_or(|m| key_cmp(key, m) != Ordering::Less)
        && max.is_none_or(|m| key_cmp(key, m) == Ordering::Less)
}

fn bound(key: &(Bson, Bson)) -> Document {
    doc! { "a": key.0.clone(), "b": key.1.clone() }
}

fn database(docs: &[Document]) -> Database {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(
        IndexSpec::new([("a", Direction::Ascending), ("b", Direction::Descending)]).unwrap(),
    )
    .unwrap();
    if !docs.is_empty() {
        c.insert_many(docs.iter().cloned(), true).unwrap();
    }
    db
}

fn find(db: &Database, keys: KeyOptions) -> odm_engine::Result<Vec<Document>> {
    let options = FindOptions {
        hint: Some(Bson::String("a_1_b_-1".into())),
        keys,
        ..FindOptions::default()
    };
    let txn = db.read()?;
    let c = txn.collection("c")?.unwrap();
    c.find(&doc! {}, &options)?.collect()
}

fn bounds() -> impl Strategy<Value = Option<(Bson, Bson)>> {
    prop::option::weighted(0.8, (scalar(), scalar()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn min_and_max_return_the_documents_with_a_key_between_them(
        docs in documents(),
        min in bounds(),
        max in bounds(),
        return_key in any::<bool>(),
    ) {
        let db = database(&docs);
        let found = find(&db, KeyOptions {
            min: min.as_ref().map(bound),
            max: max.as_ref().map(bound),
            return_key,
            show_record_id: false,
        }).unwrap();
        let mut expected: Vec<i32> = docs
            .iter()
            .filter(|d| keys(d).iter().any(|k| inside(k, min.as_ref(), max.as_ref())))
            .map(|d| d.get_i32("_id").unwrap())
            .collect();
        expected.sort_unstable();
        if return_key {
            prop_assert_eq!(found.len(), expected.len());
            for key in &found {
                let k = (key.get("a").unwrap().clone(), key.get("b").unwrap().clone());
                prop_assert_eq!(key.len(), 2);
                prop_assert!(inside(&k, min.as_ref(), max.as_ref()), "key {} outside", key);
                prop_assert!(docs.iter().any(|d| keys(d).iter().any(|dk| key_cmp(dk, &k).is_eq())));
            }
        } else {
            let mut ids: Vec<i32> = found.iter().map(|d| d.get_i32("_id").unwrap()).collect();
            ids.sort_unstable();
            prop_assert_eq!(ids, expected);
        }
    }
}

fn code(db: &Database, hint: Option<Bson>, keys: KeyOptions) -> i32 {
    let options = FindOptions {
        hint,
        keys,
        ..FindOptions::default()
    };
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    c.find(&doc! {}, &options)
        .and_then(Iterator::collect::<odm_engine::Result<Vec<Document>>>)
        .unwrap_err()
        .code()
}

fn min(d: Document) -> KeyOptions {
    KeyOptions {
        min: Some(d),
        ..KeyOptions::default()
    }
}

#[test]
fn min_and_max_are_refused_as_mongodb_refuses_them() {
    let db = database(&[doc! { "_id": 1, "a": 1, "b": 1 }]);
    db.collection("c")
        .create_index(IndexSpec::hashed("h").unwrap())
        .unwrap();
    let hint = |h: &str| Some(Bson::String(h.into()));
    // No hint.
    assert_eq!(code(&db, None, min(doc! { "a": 1, "b": 1 })), 51173);
    // Fields other than the index's, fewer of them, or in another order.
    for bound in [
        doc! { "a": 1 },
        doc! { "b": 1, "a": 1 },
        doc! { "x": 1, "b": 1 },
    ] {
        assert_eq!(code(&db, hint("a_1_b_-1"), min(bound)), 51174);
    }
    // A hashed index holds hashes, not the values a bound names.
    assert_eq!(code(&db, hint("h_hashed"), min(doc! { "h": 1 })), 51174);
    // `min` and `max` on different fields.
    let keys = KeyOptions {
        min: Some(doc! { "a": 1, "b": 1 }),
        max: Some(doc! { "b": 1, "a": 1 }),
        ..KeyOptions::default()
    };
    assert_eq!(code(&db, hint("a_1_b_-1"), keys), 51176);
}

#[test]
fn return_key_without_an_index_returns_empty_documents_and_a_record_id_is_the_stored_key() {
    let db = database(&[doc! { "_id": 1, "a": 1 }, doc! { "_id": 2, "a": 2 }]);
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let run = |filter: Document, hint: Option<Bson>, keys: KeyOptions| -> Vec<Document> {
        let options = FindOptions {
            hint,
            keys,
            sort: Some(doc! { "_id": 1 }),
            ..FindOptions::default()
        };
        c.find(&filter, &options)
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let both = KeyOptions {
        return_key: true,
        show_record_id: true,
        ..KeyOptions::default()
    };
    // A collection scan: `{}` for each, and no record id beside a key.
    let scanned = run(doc! {}, Some(doc! { "$natural": 1 }.into()), both);
    assert_eq!(scanned, [doc! {}, doc! {}]);
    // Through the `_id` index and by `_id`: the `_id` key.
    let by_id = run(
        doc! { "_id": 2 },
        None,
        KeyOptions {
            return_key: true,
            ..KeyOptions::default()
        },
    );
    assert_eq!(by_id, [doc! { "_id": 2 }]);
    let ranged = run(
        doc! { "a": { "$gte": 2 } },
        None,
        KeyOptions {
            return_key: true,
            ..KeyOptions::default()
        },
    );
    assert_eq!(ranged, [doc! { "a": 2, "b": null }]);
    // showRecordId alone keeps the document and adds its stored key last.
    let shown = run(
        doc! { "_id": 1 },
        None,
        KeyOptions {
            show_record_id: true,
            ..KeyOptions::default()
        },
    );
    assert_eq!(
        shown[0].keys().collect::<Vec<_>>(),
        ["_id", "a", "$recordId"]
    );
    let Some(Bson::Binary(record)) = shown[0].get("$recordId") else {
        panic!("{}", shown[0]);
    };
    assert_eq!(
        record.bytes,
        odm_engine::keys::encode(bson::RawBsonRef::Int32(1))
    );
}
