//! Collations and the planner: an index holds binary strings unless created with a collation,
//! so under a collation a string condition never bounds a binary index scan and a sort on
//! strings is done in memory, while conditions without strings still use their index. An index
//! created with a collation holds sort keys: it serves string conditions and sorts of queries
//! under that collation, and its unique keys are unique under it. Results equal those without
//! indexes.

mod common;

use bson::{Document, doc};
use odm_engine::query::FindOptions;
use odm_engine::{CollectionOptions, Database, Error, IndexSpec};

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

fn with_collated_index() -> Database {
    let db = database(false);
    let spec = IndexSpec::ascending("s")
        .unwrap()
        .named("s_en2")
        .collated(&doc! { "locale": "en", "strength": 2 })
        .unwrap();
    db.collection("c").create_index(spec).unwrap();
    db
}

#[test]
fn a_collated_index_serves_string_conditions_and_sorts_under_its_collation_only() {
    let db = with_collated_index();
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    let filter = doc! { "s": "cafe" };
    let explain = coll.explain(&filter, &collated(None)).unwrap();
    assert_eq!(explain.index_used(), Some("s_en2"), "{explain}");
    assert_eq!(ids(&db, &filter, &collated(None)), [1, 3]);
    // A range, and a sort on strings, from the index.
    let range = doc! { "s": { "$gte": "a", "$lt": "C" } };
    let sorted = collated(Some(doc! { "s": 1 }));
    let explain = coll.explain(&range, &sorted).unwrap();
    assert_eq!(explain.index_used(), Some("s_en2"), "{explain}");
    assert!(!explain.in_memory_sort, "{explain}");
    assert_eq!(ids(&db, &range, &sorted), [5, 6, 4, 7]);
    // Without the collation (binary strings), or under another, strings do not bound it.
    let plain = coll.explain(&filter, &FindOptions::default()).unwrap();
    assert_eq!(plain.index_used(), None, "{plain}");
    assert_eq!(ids(&db, &filter, &FindOptions::default()), [1]);
    let primary = FindOptions {
        collation: Some(doc! { "locale": "en", "strength": 1 }),
        ..FindOptions::default()
    };
    assert_eq!(coll.explain(&filter, &primary).unwrap().index_used(), None);
    assert_eq!(ids(&db, &filter, &primary), [1, 2, 3]);
    // A regex reads bytes, which the index's sort keys are not in order of.
    let regex = doc! { "s": { "$regex": "^ca" } };
    assert_eq!(
        coll.explain(&regex, &collated(None)).unwrap().index_used(),
        None
    );
    assert_eq!(ids(&db, &regex, &collated(None)), [1]);
}

#[test]
fn a_unique_collated_index_refuses_strings_equal_under_its_collation() {
    let db = database(false);
    let spec = IndexSpec::ascending("s")
        .unwrap()
        .unique()
        .collated(&doc! { "locale": "en", "strength": 2 })
        .unwrap();
    // "cafe" and "CAFE" are one key at strength 2: the index cannot be built.
    let err = db.collection("c").create_index(spec).unwrap_err();
    assert!(matches!(err, Error::DuplicateKey { .. }), "{err}");
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(
        IndexSpec::ascending("s")
            .unwrap()
            .unique()
            .collated(&doc! { "locale": "en", "strength": 2 })
            .unwrap(),
    )
    .unwrap();
    c.insert_one(&doc! { "_id": 1, "s": "cafe" }).unwrap();
    let err = c.insert_one(&doc! { "_id": 2, "s": "CAFE" }).unwrap_err();
    assert!(matches!(err, Error::DuplicateKey { .. }), "{err}");
    // An accent is a secondary difference: another key at strength 2.
    c.insert_one(&doc! { "_id": 3, "s": "café" }).unwrap();
}

#[test]
fn indexes_on_one_key_under_two_collations_are_two_indexes_and_survive_a_reopen() {
    let path = common::temp_path("collated-indexes");
    {
        let db = Database::open(&path).unwrap();
        let c = db.collection("c");
        c.create_index(IndexSpec::ascending("s").unwrap()).unwrap();
        c.create_index(with_locale("fr")).unwrap();
        // The same definition again changes nothing; the same name under another collation
        // conflicts.
        c.create_index(with_locale("fr")).unwrap();
        let other = IndexSpec::ascending("s")
            .unwrap()
            .named("s_fr")
            .collated(&doc! { "locale": "de" })
            .unwrap();
        assert!(matches!(
            c.create_index(other).unwrap_err(),
            Error::IndexConflict { .. }
        ));
        c.insert_one(&doc! { "_id": 1, "s": "Cote" }).unwrap();
    }
    let db = Database::open(&path).unwrap();
    let listed: Vec<Document> = db
        .collection("c")
        .list_indexes()
        .unwrap()
        .iter()
        .map(IndexSpec::to_document)
        .collect();
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    let fr = listed
        .iter()
        .find(|d| d.get_str("name").ok() == Some("s_fr"))
        .unwrap();
    let collation = fr.get_document("collation").unwrap();
    assert_eq!(collation.get_str("locale").ok(), Some("fr"));
    assert_eq!(collation.get_i32("strength").ok(), Some(3));
    assert_eq!(
        coll.index_prefix("s_fr", &[bson::Bson::from("Cote")])
            .unwrap()
            .count(),
        1
    );
    assert!(db.verify().unwrap().is_clean());
}

fn with_locale(locale: &str) -> IndexSpec {
    IndexSpec::ascending("s")
        .unwrap()
        .named("s_fr")
        .collated(&doc! { "locale": locale })
        .unwrap()
}

#[test]
fn collations_the_engine_cannot_key_are_refused_on_an_index() {
    let en = doc! { "locale": "en" };
    let hashed = IndexSpec::hashed("s").unwrap().collated(&en);
    assert!(hashed.is_err());
    let id = IndexSpec::from_document(
        &doc! { "key": { "_id": 1 }, "name": "_id_", "collation": en.clone() },
    );
    assert!(id.is_err());
    // The simple collation is binary strings: accepted, and no collation at all.
    let simple = IndexSpec::ascending("s")
        .unwrap()
        .collated(&doc! { "locale": "simple" })
        .unwrap();
    assert!(simple.collation().is_none());
    let bad = IndexSpec::ascending("s")
        .unwrap()
        .collated(&doc! { "locale": "en", "strength": 9 });
    assert!(bad.is_err());
}

/// The words of [`database`] in a collection created with a case-insensitive default
/// collation, and an index on `s` created without one (which takes the collection's).
fn with_default_collation(path: Option<&std::path::Path>) -> Database {
    let db = match path {
        Some(path) => Database::open(path).unwrap(),
        None => Database::in_memory().unwrap(),
    };
    let options = CollectionOptions::default()
        .with_collation(&doc! { "locale": "en", "strength": 2 })
        .unwrap();
    db.write(|t| t.create_collection_with("c", options))
        .unwrap();
    let c = db.collection("c");
    c.create_index(IndexSpec::ascending("s").unwrap()).unwrap();
    c.create_index(
        IndexSpec::ascending("n")
            .unwrap()
            .collated(&doc! { "locale": "simple" })
            .unwrap(),
    )
    .unwrap();
    let words = ["cafe", "Café", "CAFE", "b", "A", "a", "B"];
    for (i, w) in words.iter().enumerate() {
        let i = i32::try_from(i).unwrap() + 1;
        c.insert_one(&doc! { "_id": i, "s": *w, "n": i % 3 })
            .unwrap();
    }
    db
}

#[test]
fn a_default_collation_governs_every_operation_that_names_none() {
    let db = with_default_collation(None);
    let plain = FindOptions::default();
    let binary = FindOptions {
        collation: Some(doc! { "locale": "simple" }),
        ..FindOptions::default()
    };
    let cafe = doc! { "s": "cafe" };
    assert_eq!(ids(&db, &cafe, &plain), [1, 3]);
    assert_eq!(ids(&db, &cafe, &binary), [1]);
    // An empty collation is none given, as MongoDB reads it: the default applies.
    let empty = FindOptions {
        collation: Some(doc! {}),
        ..FindOptions::default()
    };
    assert_eq!(ids(&db, &cafe, &empty), [1, 3]);
    let sorted = FindOptions {
        sort: Some(doc! { "s": 1, "_id": 1 }),
        ..FindOptions::default()
    };
    assert_eq!(ids(&db, &doc! {}, &sorted), [5, 6, 4, 7, 1, 3, 2]);
    {
        let txn = db.read().unwrap();
        let c = txn.collection("c").unwrap().unwrap();
        // The index took the collection's collation, and serves it.
        let explain = c.explain(&cafe, &plain).unwrap();
        assert_eq!(explain.index_used(), Some("s_1"), "{explain}");
        assert_eq!(c.count_matching(&doc! { "s": "B" }, 0, 0).unwrap(), 2);
        assert_eq!(c.distinct("s", &doc! { "n": 1 }).unwrap().len(), 2);
        let grouped = c
            .aggregate(
                &[doc! { "$group": { "_id": "$s", "n": { "$sum": 1 } } }],
                &odm_engine::aggregate::AggregateOptions::default(),
            )
            .unwrap();
        assert_eq!(grouped.len(), 4, "{grouped:?}");
    }
    let listed = db.collection("c").list_indexes().unwrap();
    let s = listed.iter().find(|i| i.name() == "s_1").unwrap();
    assert_eq!(
        s.collation()
            .map(|c| c.normalized().get_i32("strength").ok()),
        Some(Some(2))
    );
    let n = listed.iter().find(|i| i.name() == "n_1").unwrap();
    assert!(n.collation().is_none());
    // Writes select under it too.
    let updated = db
        .collection("c")
        .update_many(
            &doc! { "s": "a" },
            doc! { "$set": { "seen": true } },
            &odm_engine::update::UpdateOptions::default(),
        )
        .unwrap();
    assert_eq!(updated.matched, 2);
    assert_eq!(
        db.collection("c")
            .delete_many(&doc! { "s": "CAFÉ" })
            .unwrap(),
        1
    );
}

#[test]
fn a_default_collation_survives_a_reopen() {
    let path = common::temp_path("default-collation");
    drop(with_default_collation(Some(&path)));
    let db = Database::open(&path).unwrap();
    assert_eq!(
        ids(&db, &doc! { "s": "CAFE" }, &FindOptions::default()),
        [1, 3]
    );
    assert!(db.verify().unwrap().is_clean());
}
