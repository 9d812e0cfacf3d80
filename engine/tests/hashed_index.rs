//! Hashed indexes (`{a: "hashed"}`): keys are MongoDB's hashes of the values, equality and `$in`
//! use them, ranges and sorts cannot, arrays are refused, and key patterns MongoDB refuses or
//! this engine does not build are errors rather than ascending indexes.

use bson::{Bson, doc};
use odm_engine::query::{Access, FindOptions};
use odm_engine::{Database, Error, IndexSpec, IndexSpecError};

fn db_with_hashed() -> Database {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    for (id, a) in [
        (1, Bson::Int32(2)),
        (2, Bson::Double(2.5)),
        (3, Bson::Int64(2)),
        (4, Bson::String("x".into())),
        (5, Bson::Null),
    ] {
        c.insert_one(doc! { "_id": id, "a": a }).unwrap();
    }
    c.insert_one(doc! { "_id": 6 }).unwrap();
    c.create_index(IndexSpec::hashed("a").unwrap()).unwrap();
    db
}

fn ids(db: &Database, filter: bson::Document) -> (Vec<i32>, String) {
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let explain = c.explain(&filter, &FindOptions::default()).unwrap();
    let index = match &explain.winning.access {
        Access::IndexScan(scan) => scan.index.clone(),
        Access::CollectionScan => "COLLSCAN".into(),
        other => format!("{other:?}"),
    };
    let mut found: Vec<i32> = c
        .find(&filter, &FindOptions::default())
        .unwrap()
        .map(|d| d.unwrap().get_i32("_id").unwrap())
        .collect();
    found.sort_unstable();
    (found, index)
}

#[test]
fn equality_and_in_use_the_hashes_and_the_matcher_removes_collisions() {
    let db = db_with_hashed();
    // 2.5 hashes as 2 (MongoDB truncates doubles): the index returns it, the matcher does not.
    assert_eq!(ids(&db, doc! { "a": 2 }), (vec![1, 3], "a_hashed".into()));
    assert_eq!(
        ids(&db, doc! { "a": { "$in": [2.5, "x"] } }),
        (vec![2, 4], "a_hashed".into())
    );
    // Missing is indexed as null.
    assert_eq!(
        ids(&db, doc! { "a": null }),
        (vec![5, 6], "a_hashed".into())
    );
}

#[test]
fn ranges_and_sorts_do_not_use_a_hashed_index() {
    let db = db_with_hashed();
    assert_eq!(ids(&db, doc! { "a": { "$gt": 1 } }).1, "COLLSCAN");
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let options = FindOptions {
        sort: Some(doc! { "a": 1 }),
        ..FindOptions::default()
    };
    let explain = c.explain(&doc! {}, &options).unwrap();
    assert!(explain.in_memory_sort);
}

#[test]
fn stored_keys_are_mongodb_hashes_and_survive_verify() {
    let db = db_with_hashed();
    assert!(db.verify().unwrap().is_clean());
    // The index holds hash(5) for a: 5, the value MongoDB documents for its zone example.
    db.collection("c")
        .insert_one(doc! { "_id": 7, "a": 5 })
        .unwrap();
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let hits: Vec<_> = c
        .index_prefix("a_hashed", &[Bson::Int64(4_470_791_281_878_691_347)])
        .unwrap()
        .collect();
    assert_eq!(hits.len(), 1);
}

#[test]
fn arrays_are_refused_on_any_field_of_a_hashed_index() {
    let db = db_with_hashed();
    let c = db.collection("c");
    let err = c.insert_one(doc! { "_id": 10, "a": [1, 2] }).unwrap_err();
    assert!(
        matches!(err, Error::HashedIndexArray { ref path, .. } if path == "a"),
        "{err}"
    );
    assert_eq!(err.code(), 16766);
    assert_eq!(err.code_name(), "Location16766");
    assert!(c.get(&Bson::Int32(10)).unwrap().is_none());
    // A compound hashed index refuses arrays on its other fields too.
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(IndexSpec::from_keys_document(&doc! { "b": 1, "a": "hashed" }).unwrap())
        .unwrap();
    assert!(c.insert_one(doc! { "b": [1], "a": 1 }).is_err());
    // Building over an array fails whole.
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! { "a": { "b": [1] } }).unwrap();
    assert!(c.create_index(IndexSpec::hashed("a.b").unwrap()).is_err());
    assert!(c.list_indexes().unwrap().len() == 1);
}

#[test]
fn key_patterns_are_parsed_as_mongodb_parses_them() {
    let spec = IndexSpec::from_keys_document(&doc! { "a": 1, "b": "hashed" }).unwrap();
    assert_eq!(spec.name(), "a_1_b_hashed");
    assert_eq!(spec.keys_document(), doc! { "a": 1, "b": "hashed" });
    for kind in ["geoHaystack", "wildcard"] {
        let err = IndexSpec::from_keys_document(&doc! { "a": kind }).unwrap_err();
        assert!(
            matches!(err, IndexSpecError::UnsupportedKind { .. }),
            "{kind}: {err}"
        );
        assert!(err.to_string().contains(kind), "{err}");
    }
    for bad in [
        Bson::Int32(0),
        Bson::Double(0.0),
        Bson::Boolean(true),
        Bson::String("text2".into()),
        Bson::String(String::new()),
        Bson::Null,
        Bson::Document(doc! {}),
        Bson::Double(f64::NAN),
    ] {
        let err = IndexSpec::from_keys_document(&doc! { "a": bad.clone() }).unwrap_err();
        assert!(
            matches!(err, IndexSpecError::BadKeyValue { .. }),
            "{bad}: {err}"
        );
        assert_eq!(Error::from(err).code(), 67);
    }
    assert!(IndexSpec::from_keys_document(&doc! { "$**": 1 }).is_err());
    let err = IndexSpec::from_keys_document(&doc! { "a": "hashed", "b": "hashed" }).unwrap_err();
    assert_eq!(Error::from(err).code(), 31303);
    let db = Database::in_memory().unwrap();
    let err = db
        .collection("c")
        .create_index(IndexSpec::hashed("a").unwrap().unique())
        .unwrap_err();
    assert_eq!(err.code(), 16764, "{err}");
    assert!(
        db.collection("c")
            .list_indexes()
            .unwrap()
            .iter()
            .all(|s| s.name() != "a_hashed")
    );
}

#[test]
fn a_hashed_index_survives_reopening() {
    let dir = std::env::temp_dir().join(format!("odm-hashed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("h.odm");
    let _ = std::fs::remove_file(&path);
    {
        let db = Database::open(&path).unwrap();
        db.collection("c")
            .insert_one(doc! { "_id": 1, "a": "v" })
            .unwrap();
        db.collection("c")
            .create_index(IndexSpec::hashed("a").unwrap())
            .unwrap();
    }
    let db = Database::open(&path).unwrap();
    let specs = db.collection("c").list_indexes().unwrap();
    assert!(
        specs
            .iter()
            .any(|s| s.name() == "a_hashed" && s.hashed_field() == Some(0))
    );
    assert_eq!(ids(&db, doc! { "a": "v" }), (vec![1], "a_hashed".into()));
    assert!(db.verify().unwrap().is_clean());
    let _ = std::fs::remove_dir_all(&dir);
}
