//! `StoredDocument::decode` (the engine's own BSON deserializer) must give exactly what the bson
//! crate's deserializer gives, for `Document`, for typed structs with every common field kind,
//! for structs that ignore fields, and for documents holding types it leaves to the bson crate.

mod common;

use std::collections::BTreeMap;

use bson::{Bson, DateTime, Document, oid::ObjectId};
use odm_engine::Database;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Shape {
    Point,
    Circle(f64),
    Rect { w: i32, h: i32 },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Inner {
    x: i32,
    tags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Rich {
    #[serde(rename = "_id")]
    id: i64,
    s: String,
    i: i32,
    l: i64,
    u: u32,
    f: f64,
    b: bool,
    o: Option<String>,
    v: Vec<i32>,
    inner: Inner,
    oid: ObjectId,
    when: DateTime,
    shape: Shape,
    map: BTreeMap<String, i64>,
    any: Bson,
    #[serde(default)]
    missing: Option<i32>,
}

/// A view that ignores most fields, so the decoder must skip them.
#[derive(Debug, PartialEq, Deserialize)]
struct Narrow {
    #[serde(rename = "_id")]
    id: i64,
    when: DateTime,
    map: BTreeMap<String, i64>,
}

fn rich() -> impl Strategy<Value = Rich> {
    let shape = prop_oneof![
        Just(Shape::Point),
        any::<f64>().prop_map(Shape::Circle),
        (any::<i32>(), any::<i32>()).prop_map(|(w, h)| Shape::Rect { w, h }),
    ];
    (
        (
            any::<i64>(),
            common::string(),
            any::<i32>(),
            any::<i64>(),
            any::<u32>(),
            any::<f64>(),
            any::<bool>(),
        ),
        (
            prop::option::of(common::string()),
            prop::collection::vec(any::<i32>(), 0..4),
            (any::<i32>(), prop::collection::vec(common::string(), 0..3)),
            prop::array::uniform12(any::<u8>()),
            any::<i64>(),
            shape,
            prop::collection::btree_map(common::key(), any::<i64>(), 0..3),
            common::value(),
        ),
    )
        .prop_map(
            |((id, s, i, l, u, f, b), (o, v, (x, tags), oid, when, shape, map, any))| Rich {
                id,
                s,
                i,
                l,
                u,
                f,
                b,
                o,
                v,
                inner: Inner { x, tags },
                oid: ObjectId::from_bytes(oid),
                when: DateTime::from_millis(when),
                shape,
                map,
                any,
                missing: None,
            },
        )
}

fn stored(doc: &Document) -> (Database, Bson) {
    let db = Database::in_memory().unwrap();
    let id = db.collection("c").insert_one(doc).unwrap();
    (db, id)
}

fn same_f64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn documents_decode_as_the_bson_crate_does(fields in prop::collection::vec((common::key(), common::value()), 0..6)) {
        let doc: Document = fields.into_iter().collect();
        let (db, id) = stored(&doc);
        let txn = db.read().unwrap();
        let c = txn.collection("c").unwrap().unwrap();
        let found = c.get(&id).unwrap().unwrap();
        let ours: Document = found.decode().unwrap();
        let theirs: Document = bson::deserialize_from_slice(found.bytes()).unwrap();
        prop_assert_eq!(ours.to_vec().unwrap(), theirs.to_vec().unwrap());
        let as_bson: Bson = found.decode().unwrap();
        prop_assert_eq!(bson::serialize_to_vec(&as_bson).unwrap(), bson::serialize_to_vec(&Bson::Document(theirs)).unwrap());
    }

    #[test]
    fn typed_structs_decode_as_the_bson_crate_does(value in rich()) {
        let doc = bson::serialize_to_document(&value).unwrap();
        let (db, id) = stored(&doc);
        let txn = db.read().unwrap();
        let c = txn.collection("c").unwrap().unwrap();
        let found = c.get(&id).unwrap().unwrap();
        let ours: Rich = found.decode().unwrap();
        let theirs: Rich = bson::deserialize_from_slice(found.bytes()).unwrap();
        prop_assert!(same_f64(ours.f, theirs.f));
        prop_assert_eq!(bson::serialize_to_vec(&ours).unwrap(), bson::serialize_to_vec(&theirs).unwrap());
        let narrow: Narrow = found.decode().unwrap();
        prop_assert_eq!(narrow, bson::deserialize_from_slice::<Narrow>(found.bytes()).unwrap());
    }
}

#[test]
fn wrong_types_are_errors_in_both_decoders() {
    let (db, id) = stored(&bson::doc! { "_id": 1_i64, "when": "not a date", "map": {} });
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let found = c.get(&id).unwrap().unwrap();
    assert!(found.decode::<Narrow>().is_err());
    assert!(bson::deserialize_from_slice::<Narrow>(found.bytes()).is_err());
    assert!(found.decode::<i32>().is_err());
}

/// Field names that look like extended JSON (`$symbol`, `$number`) inside a stored document:
/// the engine's decoder gives what the bson crate's deserializer gives. (Both read
/// `{$number, $symbol}` as a symbol, as bson's visitor of maps does; the engine's reads into
/// `bson::Document` convert the raw bytes instead, and keep the document as stored. Found by
/// the `decode` fuzz target.)
#[test]
fn dollar_field_names_decode_as_the_bson_crate_decodes_them() {
    let bytes: &[u8] = &[
        99, 0, 0, 0, 2, 31, 105, 100, 0, 5, 0, 0, 0, 69, 49, 50, 51, 0, 3, 97, 100, 100, 114, 101,
        115, 115, 0, 40, 0, 0, 0, 16, 36, 110, 117, 109, 98, 101, 114, 0, 123, 0, 0, 0, 2, 36, 115,
        121, 109, 98, 111, 108, 0, 9, 0, 0, 0, 69, 108, 109, 32, 82, 111, 97, 100, 0, 0, 3, 36,
        114, 111, 111, 109, 115, 0, 23, 0, 0, 0, 16, 98, 114, 0, 2, 0, 0, 0, 16, 98, 97, 116, 104,
        0, 1, 0, 0, 0, 0, 0,
    ];
    let ours = odm_engine::decode::from_slice_with_id::<Document>(bytes, None).unwrap();
    let theirs = bson::deserialize_from_slice::<Document>(bytes).unwrap();
    assert_eq!(ours, theirs);
}
