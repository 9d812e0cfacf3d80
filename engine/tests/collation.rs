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
    let db = case_insensitive(path);
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

/// A collection created with a case-insensitive collation (strength 2).
fn case_insensitive(path: Option<&std::path::Path>) -> Database {
    let db = match path {
        Some(path) => Database::open(path).unwrap(),
        None => Database::in_memory().unwrap(),
    };
    let options = CollectionOptions::default()
        .with_collation(&doc! { "locale": "en", "strength": 2 })
        .unwrap();
    db.write(|t| t.create_collection_with("c", options))
        .unwrap();
    db
}

fn string_ids(db: &Database, filter: &Document, options: &FindOptions) -> Vec<String> {
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    coll.find(filter, options)
        .unwrap()
        .map(|d| d.unwrap().get_str("_id").unwrap().to_owned())
        .collect()
}

/// MongoDB's `_id` index takes the collection's default collation, so on a case-insensitive
/// collection `"a"` and `"A"` are one `_id`: the second insert is a duplicate key of `_id_`,
/// a query under the collection's collation finds the document by either spelling through that
/// index, and one under the simple collation by its own spelling only.
#[test]
fn ids_are_unique_under_the_collections_default_collation() {
    let db = case_insensitive(None);
    let c = db.collection("c");
    c.insert_one(&doc! { "_id": "a", "n": 1 }).unwrap();
    c.insert_one(&doc! { "_id": "é", "n": 2 }).unwrap();
    let err = c.insert_one(&doc! { "_id": "A", "n": 3 }).unwrap_err();
    assert!(
        matches!(&err, Error::DuplicateKey { index, .. } if index == "_id_"),
        "{err}"
    );
    assert!(err.to_string().contains("_id: \"A\""), "{err}");
    // Strength 2 tells accents apart: "e" is another `_id` than "é".
    c.insert_one(&doc! { "_id": "e", "n": 4 }).unwrap();
    assert_eq!(c.count().unwrap(), 3);
    let plain = FindOptions::default();
    assert_eq!(string_ids(&db, &doc! { "_id": "A" }, &plain), ["a"]);
    let binary = FindOptions {
        collation: Some(doc! { "locale": "simple" }),
        ..FindOptions::default()
    };
    assert!(string_ids(&db, &doc! { "_id": "A" }, &binary).is_empty());
    {
        let txn = db.read().unwrap();
        let coll = txn.collection("c").unwrap().unwrap();
        let explain = coll.explain(&doc! { "_id": "A" }, &plain).unwrap();
        assert!(explain.index_used().is_some(), "{explain}");
    }
    // An upsert that would add a second spelling is refused the same way.
    let upsert = odm_engine::update::UpdateOptions {
        upsert: true,
        collation: Some(doc! { "locale": "simple" }),
        ..Default::default()
    };
    let err = c
        .update_one(&doc! { "_id": "E" }, doc! { "$set": { "n": 5 } }, &upsert)
        .unwrap_err();
    assert!(matches!(err, Error::DuplicateKey { .. }), "{err}");
    assert_eq!(c.count().unwrap(), 3);
    assert!(db.verify().unwrap().is_clean());
}

/// The index that keeps `_id`s unique under the collation is part of `_id_` as users see it:
/// `_id_` is listed with the collation and nothing else beside it, it cannot be dropped by a
/// name of its own, `convertToCapped` keeps it, and an `_id` index asked for under another
/// collation is refused with MongoDB's words.
#[test]
fn the_id_index_of_a_collated_collection_is_listed_with_its_collation() {
    let db = case_insensitive(None);
    let c = db.collection("c");
    let listed = c.list_indexes().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].name(), "_id_");
    assert_eq!(
        listed[0]
            .collation()
            .map(|c| c.normalized().get_i32("strength").ok()),
        Some(Some(2))
    );
    assert!(db.write(|t| t.drop_index("c", "_id_collated")).is_err());
    let same = IndexSpec::ascending("_id")
        .unwrap()
        .collated(&doc! { "locale": "en", "strength": 2 })
        .unwrap();
    assert_eq!(c.create_index(same).unwrap(), "_id_");
    for other in [
        doc! { "locale": "fr" },
        doc! { "locale": "simple" },
        doc! { "locale": "en", "strength": 1 },
    ] {
        let spec = IndexSpec::ascending("_id")
            .unwrap()
            .collated(&other)
            .unwrap();
        let err = c.create_index(spec).unwrap_err();
        assert!(
            err.to_string()
                .contains("The _id index must have the same collation as the collection"),
            "{err}"
        );
        assert_eq!(err.code(), 2, "BadValue");
    }
    // On a collection without a collation, the simple one is its own.
    let plain = db.collection("plain");
    let simple = IndexSpec::ascending("_id")
        .unwrap()
        .collated(&doc! { "locale": "simple" })
        .unwrap();
    assert_eq!(plain.create_index(simple).unwrap(), "_id_");
    c.insert_one(&doc! { "_id": "a" }).unwrap();
    db.write(|t| t.convert_to_capped("c", odm_engine::capped::Capped::new(1 << 20, None).unwrap()))
        .unwrap();
    assert!(c.insert_one(&doc! { "_id": "A" }).is_err());
    assert_eq!(c.list_indexes().unwrap().len(), 1);
}

/// A collation's `_id` uniqueness survives a reopen, and a file of storage version 9 (which
/// kept the collation but not the uniqueness) has it built when opened; one whose `_id`s
/// already collide keeps every document.
#[test]
fn a_version_9_file_has_its_collated_ids_indexed_when_opened() {
    let path = common::temp_path("collated-ids");
    {
        let db = case_insensitive(Some(&path));
        db.collection("c").insert_one(&doc! { "_id": "a" }).unwrap();
    }
    let db = Database::open(&path).unwrap();
    assert!(db.collection("c").insert_one(&doc! { "_id": "A" }).is_err());
    drop(db);
    as_version_9(&path);
    let db = Database::open(&path).unwrap();
    let c = db.collection("c");
    assert!(c.insert_one(&doc! { "_id": "A" }).is_err());
    assert_eq!(c.list_indexes().unwrap().len(), 1);
    assert!(db.verify().unwrap().is_clean());
    drop(c);
    drop(db);
    // Without the index (as version 9 wrote), two spellings go in; opened as version 9 again,
    // the index cannot be built and the documents stay.
    as_version_9(&path);
    set_version(&path, odm_engine::FORMAT_VERSION);
    Database::open(&path)
        .unwrap()
        .collection("c")
        .insert_one(&doc! { "_id": "A" })
        .unwrap();
    set_version(&path, 9);
    let db = Database::open(&path).unwrap();
    assert_eq!(db.collection("c").count().unwrap(), 2);
    assert!(db.verify().unwrap().is_clean());
}

/// Takes the collated `_id` index out of the catalog and marks the file version 9.
fn as_version_9(path: &std::path::Path) {
    let raw = redb::Database::open(path).unwrap();
    let txn = raw.begin_write().unwrap();
    {
        let def: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("odm.meta");
        let mut meta = txn.open_table(def).unwrap();
        let bytes = redb::ReadableTable::get(&meta, "catalog")
            .unwrap()
            .unwrap()
            .value()
            .to_vec();
        let mut catalog = Document::from_reader(bytes.as_slice()).unwrap();
        for collection in catalog.get_array_mut("collections").unwrap() {
            let collection = collection.as_document_mut().unwrap();
            collection.get_array_mut("indexes").unwrap().retain(|i| {
                let name = i.as_document().and_then(|i| i.get_str("name").ok());
                name != Some("_id_collated")
            });
        }
        meta.insert("catalog", catalog.to_vec().unwrap().as_slice())
            .unwrap();
        meta.insert("format_version", 9u32.to_be_bytes().as_slice())
            .unwrap();
    }
    txn.commit().unwrap();
}

fn set_version(path: &std::path::Path, version: u32) {
    let raw = redb::Database::open(path).unwrap();
    let txn = raw.begin_write().unwrap();
    {
        let def: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("odm.meta");
        let mut meta = txn.open_table(def).unwrap();
        meta.insert("format_version", version.to_be_bytes().as_slice())
            .unwrap();
    }
    txn.commit().unwrap();
}

/// A hashed index under a collation hashes strings' sort keys, as MongoDB's does: strings equal
/// under it hash alike, so an equality under that collation is answered from the index and
/// finds every spelling, and one under the simple collation is not bounded by it.
#[test]
fn a_hashed_index_under_a_collation_hashes_sort_keys() {
    let db = case_insensitive(None);
    let c = db.collection("c");
    c.create_index(IndexSpec::hashed("s").unwrap()).unwrap();
    for (i, s) in ["cafe", "CAFE", "Café", "tea"].iter().enumerate() {
        let i = i32::try_from(i).unwrap() + 1;
        c.insert_one(&doc! { "_id": i, "s": *s, "nested": { "s": *s } })
            .unwrap();
    }
    c.create_index(IndexSpec::hashed("nested").unwrap())
        .unwrap();
    let listed = c.list_indexes().unwrap();
    assert!(
        listed
            .iter()
            .filter(|i| i.hashed_field().is_some())
            .all(|i| i.collation().is_some())
    );
    let plain = FindOptions::default();
    let binary = FindOptions {
        collation: Some(doc! { "locale": "simple" }),
        ..FindOptions::default()
    };
    let cafe = doc! { "s": "Cafe" };
    assert_eq!(ids(&db, &cafe, &plain), [1, 2]);
    assert!(ids(&db, &cafe, &binary).is_empty());
    let nested = doc! { "nested": { "s": "cAfE" } };
    assert_eq!(ids(&db, &nested, &plain), [1, 2]);
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    let explain = coll.explain(&cafe, &plain).unwrap();
    assert_eq!(explain.index_used(), Some("s_hashed"), "{explain}");
    let explain = coll.explain(&cafe, &binary).unwrap();
    assert_eq!(explain.index_used(), None, "{explain}");
    drop(coll);
    drop(txn);
    assert!(db.verify().unwrap().is_clean());
}

mod under_a_default_collation {
    //! The law of a collection's default collation over `_id`s and hashed keys: inserts are
    //! refused exactly when an earlier `_id` is equal under the collation, and equality and
    //! `$in` on `_id` and on a hashed field answer what a model comparing strings under the
    //! collation answers, whichever index serves them.

    use std::cmp::Ordering;

    use bson::{Bson, Document, doc};
    use odm_engine::collation::Collation;
    use odm_engine::query::FindOptions;
    use odm_engine::{CollectionOptions, Database, IndexSpec};
    use proptest::prelude::*;

    /// Strings that collations at strengths 1 to 3 tell apart differently: case, accents and
    /// base letters.
    fn word() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec!["a", "A", "á", "b", "B", "é", "e"]),
            1..3,
        )
        .prop_map(|parts| parts.concat())
    }

    fn value() -> impl Strategy<Value = Bson> {
        prop_oneof![
            4 => word().prop_map(Bson::String),
            1 => word().prop_map(|w| Bson::Document(doc! { "w": w })),
            1 => (0..3i32).prop_map(Bson::Int32),
        ]
    }

    /// Equality of two values under the collation: strings by it, at any depth.
    fn equal(collation: &Collation, a: &Bson, b: &Bson) -> bool {
        match (a, b) {
            (Bson::String(a), Bson::String(b)) => {
                collation.compare_strings(a, b) == Ordering::Equal
            }
            (Bson::Document(a), Bson::Document(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((ka, va), (kb, vb))| ka == kb && equal(collation, va, vb))
            }
            _ => a == b,
        }
    }

    fn ids(db: &Database, filter: &Document) -> Vec<Bson> {
        let txn = db.read().unwrap();
        let coll = txn.collection("c").unwrap().unwrap();
        let mut found: Vec<Bson> = coll
            .find(filter, &FindOptions::default())
            .unwrap()
            .map(|d| d.unwrap().get("_id").unwrap().clone())
            .collect();
        found.sort_by_key(ToString::to_string);
        found
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn ids_and_hashed_keys_follow_the_collation(
            strength in 1..=3i32,
            docs in prop::collection::vec((word(), value()), 0..12),
            asked in prop::collection::vec(value(), 1..3),
        ) {
            let spec = doc! { "locale": "en", "strength": strength };
            let collation = Collation::parse(&spec).unwrap().unwrap();
            let db = Database::in_memory().unwrap();
            let options = CollectionOptions::default().with_collation(&spec).unwrap();
            db.write(|t| t.create_collection_with("c", options)).unwrap();
            let c = db.collection("c");
            c.create_index(IndexSpec::hashed("h").unwrap()).unwrap();
            let mut kept: Vec<(Bson, Bson)> = Vec::new();
            for (id, h) in docs {
                let id = Bson::String(id);
                let taken = kept.iter().any(|(k, _)| equal(&collation, k, &id));
                let inserted = c.insert_one(&doc! { "_id": id.clone(), "h": h.clone() });
                prop_assert_eq!(inserted.is_err(), taken, "insert of {}", id);
                if !taken {
                    kept.push((id, h));
                }
            }
            let expect = |field: usize| {
                let mut out: Vec<Bson> = kept
                    .iter()
                    .filter(|(id, h)| {
                        let v = if field == 0 { id } else { h };
                        asked.iter().any(|a| equal(&collation, v, a))
                    })
                    .map(|(id, _)| id.clone())
                    .collect();
                out.sort_by_key(ToString::to_string);
                out
            };
            let list: Vec<Bson> = asked.clone();
            prop_assert_eq!(ids(&db, &doc! { "_id": { "$in": list.clone() } }), expect(0));
            prop_assert_eq!(ids(&db, &doc! { "h": { "$in": list } }), expect(1));
            prop_assert_eq!(ids(&db, &doc! { "h": asked[0].clone() }), {
                let one = kept.iter().filter(|(_, h)| equal(&collation, h, &asked[0]));
                let mut out: Vec<Bson> = one.map(|(id, _)| id.clone()).collect();
                out.sort_by_key(ToString::to_string);
                out
            });
            prop_assert!(db.verify().unwrap().is_clean());
        }
    }
}
