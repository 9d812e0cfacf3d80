//! The projection law: for random documents and random top-level projections that include or
//! exclude `_id` alone or beside other fields, a find returns what a model of MongoDB's
//! projection rules says, in `find` and in find-and-modify's `fields`.
//!
//! The model, from MongoDB's manual: a projection is an inclusion when it includes a field other
//! than `_id`, or includes `_id` and nothing else; it is an exclusion when it excludes a field
//! other than `_id`, or excludes `_id` and nothing else. `_id` is returned unless excluded, in
//! either kind. Including one field other than `_id` and excluding another is an error. An
//! empty projection returns the whole document.

use bson::{Bson, Document, doc};
use odm_engine::Database;
use odm_engine::query::FindOptions;
use odm_engine::update::{FindAndModify, ReturnDocument};
use proptest::prelude::*;

const FIELDS: [&str; 4] = ["a", "b", "c", "d"];

fn document() -> impl Strategy<Value = Document> {
    prop::collection::vec((prop::sample::select(FIELDS.to_vec()), 0i32..5), 0..4).prop_map(
        |fields| {
            let mut doc = doc! { "_id": 1 };
            for (name, v) in fields {
                doc.insert(name, v);
            }
            doc
        },
    )
}

/// A flag as projections spell one: 1, 0, true or false.
fn flag() -> impl Strategy<Value = (bool, Bson)> {
    prop_oneof![
        Just((true, Bson::Int32(1))),
        Just((false, Bson::Int32(0))),
        Just((true, Bson::Boolean(true))),
        Just((false, Bson::Boolean(false))),
    ]
}

/// `_id` alone, other fields alone, or both, in any order.
fn projection() -> impl Strategy<Value = Vec<(String, bool, Bson)>> {
    let id = prop::option::weighted(0.7, flag());
    let others = prop::collection::vec((prop::sample::select(FIELDS.to_vec()), flag()), 0..3);
    (id, others, any::<bool>()).prop_map(|(id, others, id_first)| {
        let mut out: Vec<(String, bool, Bson)> = Vec::new();
        for (name, (on, v)) in others {
            if !out.iter().any(|(n, ..)| n == name) {
                out.push((name.to_owned(), on, v));
            }
        }
        if let Some((on, v)) = id {
            let entry = ("_id".to_owned(), on, v);
            if id_first {
                out.insert(0, entry);
            } else {
                out.push(entry);
            }
        }
        out
    })
}

/// What MongoDB returns for `doc` under `projection`; `None` for a projection it refuses.
fn model(doc: &Document, projection: &[(String, bool, Bson)]) -> Option<Document> {
    let others: Vec<&(String, bool, Bson)> =
        projection.iter().filter(|(n, ..)| n != "_id").collect();
    let id = projection
        .iter()
        .find(|(n, ..)| n == "_id")
        .map(|(_, on, _)| *on);
    let includes = others.iter().any(|(_, on, _)| *on);
    let excludes = others.iter().any(|(_, on, _)| !*on);
    if includes && excludes {
        return None;
    }
    let inclusive = includes || (!excludes && id == Some(true));
    let keep = |name: &str| {
        if name == "_id" {
            return id != Some(false);
        }
        let named = others.iter().any(|(n, ..)| n == name);
        if inclusive { named } else { !named }
    };
    Some(
        doc.iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

fn spec(projection: &[(String, bool, Bson)]) -> Document {
    projection
        .iter()
        .map(|(n, _, v)| (n.clone(), v.clone()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn find_projects_as_mongodb_projects(doc in document(), projection in projection()) {
        let db = Database::in_memory().unwrap();
        db.collection("c").insert_one(&doc).unwrap();
        let options = FindOptions { projection: Some(spec(&projection)), ..FindOptions::default() };
        let txn = db.read().unwrap();
        let found = txn.collection("c").unwrap().unwrap().find(&doc! {}, &options)
            .and_then(Iterator::collect::<Result<Vec<Document>, _>>);
        match (model(&doc, &projection), found) {
            (Some(expected), Ok(found)) => prop_assert_eq!(found, vec![expected]),
            (None, Err(_)) => {}
            (expected, found) => prop_assert!(false, "{:?} projected by {}: expected {:?}, got {:?}", doc, spec(&projection), expected, found),
        }
    }

    #[test]
    fn find_and_modify_fields_project_as_mongodb_projects(doc in document(), projection in projection()) {
        let db = Database::in_memory().unwrap();
        db.collection("c").insert_one(&doc).unwrap();
        let options = FindAndModify {
            projection: Some(spec(&projection)),
            return_document: ReturnDocument::Before,
            ..FindAndModify::default()
        };
        let returned = db.collection("c").find_one_and_update(&doc! {}, doc! { "$set": { "z": 1 } }, &options);
        match (model(&doc, &projection), returned) {
            (Some(expected), Ok(found)) => prop_assert_eq!(found, Some(expected)),
            (None, Err(_)) => {}
            (expected, found) => prop_assert!(false, "{:?} projected by {}: expected {:?}, got {:?}", doc, spec(&projection), expected, found),
        }
    }
}
