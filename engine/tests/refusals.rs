//! Nothing accepted and ignored: options the engine cannot honour are refused with the reason,
//! and change nothing.

use bson::doc;
use odm_engine::aggregate::AggregateOptions;
use odm_engine::query::FindOptions;
use odm_engine::update::UpdateOptions;
use odm_engine::{Database, Error};

#[test]
fn an_unknown_collation_locale_is_refused_as_mongodb_refuses_it() {
    let db = Database::in_memory().unwrap();
    db.collection("c").insert_one(doc! { "a": "x" }).unwrap();
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let find = |locale: &str| {
        let options = FindOptions {
            collation: Some(doc! { "locale": locale }),
            ..FindOptions::default()
        };
        c.find(&doc! {}, &options).map(Iterator::count)
    };
    for supported in [
        "en",
        "en_US",
        "de@collation=phonebook",
        "zh_Hant",
        "fr_CA",
        "simple",
    ] {
        assert!(find(supported).is_ok(), "{supported}");
    }
    for unknown in ["xx", "tlh", "en_XX_YY", "klingon"] {
        let err = find(unknown).unwrap_err();
        assert!(
            matches!(err, Error::InvalidCollation(_)),
            "{unknown}: {err}"
        );
        assert_eq!(err.code(), 2, "{unknown}");
        assert!(err.to_string().contains(unknown), "{err}");
    }
}

#[test]
fn sort_is_refused_on_update_many() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! { "_id": 1, "a": 1 }).unwrap();
    let options = UpdateOptions {
        sort: Some(doc! { "a": 1 }),
        ..UpdateOptions::default()
    };
    let err = c
        .update_many(&doc! {}, doc! { "$set": { "b": 1 } }, &options)
        .unwrap_err();
    assert!(err.to_string().contains("sort"), "{err}");
    let stored = |id: i32| -> bson::Document {
        bson::Document::try_from(c.get(&bson::Bson::Int32(id)).unwrap().unwrap().as_ref()).unwrap()
    };
    assert_eq!(stored(1), doc! { "_id": 1, "a": 1 });
    // One document: `sort` picks which.
    c.insert_one(doc! { "_id": 2, "a": 0 }).unwrap();
    c.update_one(&doc! {}, doc! { "$set": { "b": 1 } }, &options)
        .unwrap();
    assert_eq!(stored(2), doc! { "_id": 2, "a": 0, "b": 1 });
}

#[test]
fn merge_let_without_a_pipeline_is_refused() {
    let db = Database::in_memory().unwrap();
    db.collection("c").insert_one(doc! { "_id": 1 }).unwrap();
    let err = db
        .aggregate(
            "c",
            &[doc! { "$merge": { "into": "out", "let": { "x": 1 } } }],
            &AggregateOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), 51199, "{err}");
    assert!(db.read().unwrap().collection("out").unwrap().is_none());
}

#[test]
fn a_parsed_update_refuses_a_replacement_and_array_filters_beside_it() {
    use odm_engine::update::Update;
    let db = Database::in_memory().unwrap();
    db.collection("c")
        .insert_one(doc! { "_id": 1, "a": 1, "xs": [1, 2] })
        .unwrap();
    let none = UpdateOptions::default();
    // A document without operators parses as a replacement; an update call never replaces.
    let replacement = Update::parse(&doc! { "a": 5 }, &[]).unwrap();
    let with_filters = UpdateOptions {
        array_filters: vec![doc! { "x": { "$gt": 1 } }],
        ..UpdateOptions::default()
    };
    let operators = Update::parse(&doc! { "$set": { "a": 2 } }, &[]).unwrap();
    let err = db
        .write(|t| t.update_one_parsed("c", &doc! {}, &replacement, &none))
        .unwrap_err();
    assert!(err.to_string().contains("only operators"), "{err}");
    let err = db
        .write(|t| t.update_many_parsed("c", &doc! {}, &replacement, &none))
        .unwrap_err();
    assert!(err.to_string().contains("only operators"), "{err}");
    let err = db
        .write(|t| t.update_one_parsed("c", &doc! {}, &operators, &with_filters))
        .unwrap_err();
    assert!(err.to_string().contains("arrayFilters"), "{err}");
    let stored = || {
        let raw = db
            .collection("c")
            .get(&bson::Bson::Int32(1))
            .unwrap()
            .unwrap();
        bson::Document::try_from(raw.as_ref()).unwrap()
    };
    assert_eq!(stored(), doc! { "_id": 1, "a": 1, "xs": [1, 2] });
    // The same parsed update, applied twice, as a fresh parse would be.
    for _ in 0..2 {
        db.write(|t| t.update_one_parsed("c", &doc! { "_id": 1 }, &operators, &none))
            .unwrap();
    }
    assert_eq!(stored(), doc! { "_id": 1, "a": 2, "xs": [1, 2] });
}
