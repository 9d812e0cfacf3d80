//! Collations and the planner: indexes hold binary strings, so under a collation a string
//! condition never bounds an index scan and a sort on strings is done in memory, while
//! conditions without strings still use their index. Results equal those without indexes.

use bson::{Document, doc};
use odm_engine::query::FindOptions;
use odm_engine::{Database, Error, IndexSpec};

fn ids(db: &Database, filter: &Document, options: &FindOptions) -> Vec<i32> {
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    coll.find(filter, options)
        .unwrap()
        .map(|d| d.unwrap().get_i32("_id").unwrap())
        .collect()
}

fn database(indexed: bool) -> Database {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    let words = ["cafe", "Café", "CAFE", "b", "A", "a", "B"];
    for (i, w) in words.iter().enumerate() {
        let i = i32::try_from(i).unwrap() + 1;
        c.insert_one(&doc! { "_id": i, "s": *w, "n": i % 3 })
            .unwrap();
    }
    if indexed {
        c.create_index(IndexSpec::ascending("s").unwrap()).unwrap();
        c.create_index(IndexSpec::ascending("n").unwrap()).unwrap();
    }
    db
}

fn collated(sort: Option<Document>) -> FindOptions {
    FindOptions {
        sort,
        collation: Some(doc! { "locale": "en", "strength": 2 }),
        ..FindOptions::default()
    }
}

#[test]
fn string_conditions_under_a_collation_do_not_bound_an_index() {
    let db = database(true);
    let options = collated(None);
    let filter = doc! { "s": "cafe" };
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    let explain = coll.explain(&filter, &options).unwrap();
    assert_eq!(explain.index_used(), None, "{explain}");
    assert_eq!(explain.returned, 2);
    // Without the collation the same query is an index scan of one key.
    let plain = coll.explain(&filter, &FindOptions::default()).unwrap();
    assert_eq!(plain.index_used(), Some("s_1"), "{plain}");
    assert_eq!(plain.returned, 1);
}

#[test]
fn conditions_without_strings_still_use_their_index_under_a_collation() {
    let db = database(true);
    let filter = doc! { "n": 1, "s": "b" };
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    let explain = coll.explain(&filter, &collated(None)).unwrap();
    assert_eq!(explain.index_used(), Some("n_1"), "{explain}");
    assert_eq!(ids(&db, &filter, &collated(None)), [4, 7]);
}

#[test]
fn a_collated_sort_is_done_in_memory_and_equals_the_unindexed_result() {
    let indexed = database(true);
    let plain = database(false);
    let options = collated(Some(doc! { "s": 1, "_id": 1 }));
    let txn = indexed.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    let explain = coll.explain(&doc! {}, &options).unwrap();
    assert!(explain.in_memory_sort, "{explain}");
    let expected = [5, 6, 4, 7, 1, 3, 2];
    assert_eq!(ids(&indexed, &doc! {}, &options), expected);
    assert_eq!(ids(&plain, &doc! {}, &options), expected);
}

#[test]
fn a_malformed_collation_is_refused_by_name() {
    let db = database(false);
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    for (collation, field) in [
        (doc! { "strength": 2 }, "locale"),
        (doc! { "locale": "en", "strength": 9 }, "strength"),
        (
            doc! { "locale": "en", "caseFirst": "sideways" },
            "caseFirst",
        ),
        (doc! { "locale": "en", "colour": 1 }, "colour"),
        (doc! { "locale": "not a locale!" }, "locale"),
    ] {
        let options = FindOptions {
            collation: Some(collation),
            ..FindOptions::default()
        };
        match coll.find(&doc! {}, &options) {
            Err(Error::InvalidCollation(e)) => assert_eq!(e.field, field),
            other => panic!("expected an invalid collation, got {other:?}"),
        }
    }
}

#[test]
fn icu_style_locale_variants_are_understood() {
    let db = database(false);
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    for locale in [
        "de@collation=phonebook",
        "en_US",
        "es@collation=search",
        "simple",
    ] {
        let options = FindOptions {
            collation: Some(doc! { "locale": locale }),
            ..FindOptions::default()
        };
        assert!(coll.find(&doc! {}, &options).is_ok(), "{locale}");
    }
}
