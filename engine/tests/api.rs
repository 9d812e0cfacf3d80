//! The engine's public behaviour: documents, indexes, collections, transactions, persistence,
//! format versions, concurrency and TTL. Each refusal is checked for its error, its message and
//! for having changed nothing.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use bson::{Bson, DateTime, Document, doc};
use odm_engine::{
    CollectionOptions, Database, Direction, DocumentError, Durability, Error, FORMAT_VERSION,
    IndexSpec, MAX_DOCUMENT_SIZE, ShardKey,
};

mod common;
use common::temp_path;

fn ids(db: &Database, collection: &str) -> Vec<Bson> {
    let txn = db.read().unwrap();
    let Some(c) = txn.collection(collection).unwrap() else {
        return Vec::new();
    };
    c.scan()
        .unwrap()
        .map(|d| {
            d.unwrap()
                .decode::<Document>()
                .unwrap()
                .get("_id")
                .unwrap()
                .clone()
        })
        .collect()
}

fn asc(path: &str) -> IndexSpec {
    IndexSpec::ascending(path).unwrap()
}

#[test]
fn duplicate_id_is_refused_by_name_and_changes_nothing() {
    let db = Database::in_memory().unwrap();
    let users = db.collection("users");
    users.insert_one(doc! { "_id": 1, "name": "ann" }).unwrap();
    let err = users
        .insert_one(doc! { "_id": 1, "name": "bob" })
        .unwrap_err();
    assert!(
        matches!(&err, Error::DuplicateKey { collection, index, .. } if collection == "users" && index == "_id_")
    );
    assert_eq!(
        err.to_string(),
        "duplicate key in collection `users`, index `_id_`: { _id: 1 }"
    );
    let stored = users.get(&Bson::Int32(1)).unwrap().unwrap();
    assert_eq!(stored.get_str("name").unwrap(), "ann");
    // 1 and 1.0 are the same `_id`, as in MongoDB.
    assert!(users.insert_one(doc! { "_id": 1.0 }).is_err());
}

#[test]
fn generated_ids_are_object_ids_stored_first() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    let id = c.insert_one(doc! { "a": 1 }).unwrap();
    assert!(matches!(id, Bson::ObjectId(_)));
    let stored = c.get(&id).unwrap().unwrap();
    let first = stored.iter().next().unwrap().unwrap().0.as_str().to_owned();
    assert_eq!(first, "_id");
}

#[test]
fn invalid_documents_are_refused_with_the_reason() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    let cases: Vec<(Document, DocumentError)> = vec![
        (
            doc! { "_id": { "$inc": 1 } },
            DocumentError::DollarField {
                field: "_id.$inc".into(),
            },
        ),
        (
            doc! { "_id": [1, 2] },
            DocumentError::InvalidId { kind: "array" },
        ),
        (
            doc! { "_id": Bson::Undefined },
            DocumentError::InvalidId { kind: "undefined" },
        ),
    ];
    for (doc, expected) in cases {
        match c.insert_one(&doc).unwrap_err() {
            Error::InvalidDocument { collection, source } => {
                assert_eq!(collection, "c");
                assert_eq!(source, expected);
            }
            other => panic!("unexpected {other}"),
        }
    }
    let big = doc! { "blob": "x".repeat(MAX_DOCUMENT_SIZE) };
    let err = c.insert_one(&big).unwrap_err();
    assert!(
        err.to_string().contains("over the 16777216-byte limit"),
        "{err}"
    );
    // Nested `$` fields are allowed, as in MongoDB 5+.
    c.insert_one(doc! { "a": { "$x": 1 } }).unwrap();
    assert_eq!(c.count().unwrap(), 1);
}

#[test]
fn insert_many_ordered_stops_and_unordered_goes_on() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    let batch = || vec![doc! { "_id": 1 }, doc! { "_id": 1 }, doc! { "_id": 2 }];
    let ordered = c.insert_many(batch(), true).unwrap();
    assert_eq!(ordered.inserted.len(), 1);
    assert_eq!(ordered.failures.len(), 1);
    assert_eq!(ordered.failures[0].0, 1);
    assert_eq!(ids(&db, "c"), vec![Bson::Int32(1)]);

    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    let unordered = c.insert_many(batch(), false).unwrap();
    assert_eq!(
        unordered
            .inserted
            .iter()
            .map(|(i, _)| *i)
            .collect::<Vec<_>>(),
        vec![0, 2]
    );
    assert_eq!(
        unordered
            .failures
            .iter()
            .map(|(i, _)| *i)
            .collect::<Vec<_>>(),
        vec![1]
    );
    assert_eq!(ids(&db, "c"), vec![Bson::Int32(1), Bson::Int32(2)]);
}

#[test]
fn unique_indexes_treat_missing_as_null_unless_sparse() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(asc("email").unique()).unwrap();
    c.insert_one(doc! { "_id": 1 }).unwrap();
    let err = c.insert_one(doc! { "_id": 2 }).unwrap_err();
    assert_eq!(
        err.to_string(),
        "duplicate key in collection `c`, index `email_1`: { email: null }"
    );
    // A repeated value inside one document's array is not a duplicate.
    c.insert_one(doc! { "_id": 3, "email": ["a@x", "a@x"] })
        .unwrap();
    assert!(c.insert_one(doc! { "_id": 4, "email": "a@x" }).is_err());

    let s = db.collection("s");
    s.create_index(asc("nick").unique().sparse()).unwrap();
    s.insert_many([doc! { "_id": 1 }, doc! { "_id": 2 }], true)
        .unwrap();
    s.insert_one(doc! { "_id": 3, "nick": "z" }).unwrap();
    assert!(s.insert_one(doc! { "_id": 4, "nick": "z" }).is_err());
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn compound_unique_index_compares_the_whole_key() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("recommendations");
    let spec = IndexSpec::new([
        ("book", Direction::Ascending),
        ("user", Direction::Ascending),
    ])
    .unwrap()
    .unique();
    c.create_index(spec).unwrap();
    c.insert_one(doc! { "book": 1, "user": "ann" }).unwrap();
    c.insert_one(doc! { "book": 1, "user": "bob" }).unwrap();
    c.insert_one(doc! { "book": 2, "user": "ann" }).unwrap();
    let err = c
        .insert_one(doc! { "book": 1.0, "user": "ann" })
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("index `book_1_user_1`: { book: 1, user: \"ann\" }"),
        "{err}"
    );
    assert_eq!(c.count().unwrap(), 3);
}

#[test]
fn parallel_arrays_are_refused() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(
        IndexSpec::new([("a", Direction::Ascending), ("b", Direction::Descending)]).unwrap(),
    )
    .unwrap();
    c.insert_one(doc! { "a": [1, 2], "b": 1 }).unwrap();
    let err = c.insert_one(doc! { "a": [1, 2], "b": [3] }).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot index parallel arrays in collection `c`, index `a_1_b_-1`: `a` and `b` are both arrays"
    );
    assert_eq!(c.count().unwrap(), 1);
}

#[test]
fn building_a_unique_index_over_duplicates_fails_and_leaves_nothing() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_many((0..100).map(|i| doc! { "_id": i, "k": i % 50 }), true)
        .unwrap();
    let err = c.create_index(asc("k").unique()).unwrap_err();
    assert!(matches!(err, Error::DuplicateKey { .. }), "{err}");
    assert_eq!(c.list_indexes().unwrap().len(), 1);
    // The same index without `unique` builds, with one entry per document.
    c.create_index(asc("k")).unwrap();
    let report = db.verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.index_entries, 100);
}

#[test]
fn index_definitions_are_idempotent_or_conflicting() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    assert_eq!(c.create_index(asc("a")).unwrap(), "a_1");
    assert_eq!(c.create_index(asc("a")).unwrap(), "a_1");
    let err = c.create_index(asc("a").unique()).unwrap_err();
    assert!(matches!(err, Error::IndexConflict { .. }), "{err}");
    let err = c.create_index(asc("b").named("a_1")).unwrap_err();
    assert!(
        err.to_string()
            .contains("an index with this name has another definition"),
        "{err}"
    );
    assert_eq!(c.create_index(asc("_id")).unwrap(), "_id_");
    let names: Vec<String> = c
        .list_indexes()
        .unwrap()
        .iter()
        .map(|s| s.name().to_owned())
        .collect();
    assert_eq!(names, ["_id_", "a_1"]);
    assert!(matches!(c.drop_index("_id_"), Err(Error::IdIndexRequired)));
    assert!(matches!(
        c.drop_index("zzz"),
        Err(Error::IndexNotFound { .. })
    ));
    c.drop_index("a_1").unwrap();
    assert_eq!(c.list_indexes().unwrap().len(), 1);
}

#[test]
fn invalid_index_specs_are_refused() {
    assert!(IndexSpec::new(std::iter::empty()).is_err());
    assert!(IndexSpec::ascending("a..b").is_err());
    assert!(IndexSpec::new([("a", Direction::Ascending), ("a", Direction::Descending)]).is_err());
    let db = Database::in_memory().unwrap();
    let ttl_compound = IndexSpec::new([("a", Direction::Ascending), ("b", Direction::Ascending)])
        .unwrap()
        .expire_after(Duration::from_secs(5));
    let err = db.collection("c").create_index(ttl_compound).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid index specification: a TTL index must have exactly one key field, index `a_1_b_1` has 2"
    );
}

#[test]
fn collections_are_created_listed_renamed_and_dropped() {
    let db = Database::in_memory().unwrap();
    db.collection("b").insert_one(doc! { "x": 1 }).unwrap();
    db.write(|t| t.create_collection("a")).unwrap();
    assert!(matches!(
        db.write(|t| t.create_collection("a")),
        Err(Error::CollectionExists(_))
    ));
    assert!(matches!(
        db.write(|t| t.create_collection("bad$name")),
        Err(Error::InvalidCollectionName { .. })
    ));
    assert_eq!(db.list_collections(), ["a", "b"]);
    db.collection("b").create_index(asc("x")).unwrap();
    db.write(|t| t.rename_collection("b", "c")).unwrap();
    assert_eq!(db.list_collections(), ["a", "c"]);
    assert_eq!(db.collection("c").count().unwrap(), 1);
    assert_eq!(db.collection("c").list_indexes().unwrap().len(), 2);
    assert!(matches!(
        db.write(|t| t.rename_collection("a", "c")),
        Err(Error::CollectionExists(_))
    ));
    assert!(db.write(|t| t.drop_collection("c")).unwrap());
    assert!(!db.write(|t| t.drop_collection("c")).unwrap());
    assert_eq!(db.list_collections(), ["a"]);
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn a_write_inside_a_write_is_an_error_not_a_deadlock() {
    let db = Database::in_memory().unwrap();
    let inner = db.clone();
    let outcome = db.write(|t| {
        t.insert_one("c", doc! { "_id": 1 })?;
        inner.collection("c").insert_one(doc! { "_id": 2 })
    });
    assert!(matches!(outcome, Err(Error::NestedWrite)), "{outcome:?}");
    assert_eq!(
        db.collection("c").count().unwrap(),
        0,
        "the outer transaction aborted"
    );
    db.collection("c").insert_one(doc! { "_id": 3 }).unwrap();
    let err = db
        .collection("c")
        .create_index(asc("_id").expire_after(Duration::from_secs(1)))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid index specification: The field 'expireAfterSeconds' is not valid for an _id index specification"
    );
}

#[test]
fn collection_options_persist_and_follow_renames() {
    let path = temp_path("options.redb");
    {
        let db = Database::open(&path).unwrap();
        let key = ShardKey::range(["recipient", "sent"]).unwrap();
        db.write(|t| {
            t.create_collection_with("inbox", CollectionOptions::default().with_shard_key(key))
        })
        .unwrap();
        db.write(|t| t.rename_collection("inbox", "messages"))
            .unwrap();
    }
    let db = Database::open(&path).unwrap();
    let options = db.read().unwrap().collection_options("messages").unwrap();
    assert_eq!(
        options.shard_key.unwrap().to_document(),
        doc! { "recipient": 1, "sent": 1 }
    );
    assert!(db.read().unwrap().collection_options("inbox").is_none());
}

#[test]
fn a_failed_transaction_leaves_nothing_in_any_collection() {
    let db = Database::in_memory().unwrap();
    let result: Result<(), Error> = db.write(|t| {
        t.insert_one("orders", doc! { "_id": 1 })?;
        t.insert_one("stock", doc! { "_id": "widget", "n": 4 })?;
        t.create_index("orders", asc("total"))?;
        t.insert_one("orders", doc! { "_id": 1 })?; // duplicate: the closure fails
        Ok(())
    });
    assert!(matches!(result, Err(Error::DuplicateKey { .. })));
    assert!(db.list_collections().is_empty());
    assert!(db.read().unwrap().collection("orders").unwrap().is_none());

    db.write(|t| {
        t.insert_one("orders", doc! { "_id": 1 })?;
        t.insert_one("stock", doc! { "_id": "widget", "n": 3 })?;
        Ok::<_, Error>(())
    })
    .unwrap();
    assert_eq!(db.list_collections(), ["orders", "stock"]);
}

#[test]
fn an_error_caught_inside_a_transaction_leaves_the_rest_committed() {
    let db = Database::in_memory().unwrap();
    db.collection("c").create_index(asc("k").unique()).unwrap();
    db.write(|t| {
        t.insert_one("c", doc! { "_id": 1, "k": 1 })?;
        // Refused whole: neither the document nor any index entry may remain.
        assert!(t.insert_one("c", doc! { "_id": 2, "k": 1 }).is_err());
        t.insert_one("c", doc! { "_id": 3, "k": 3 })?;
        Ok::<_, Error>(())
    })
    .unwrap();
    assert_eq!(ids(&db, "c"), vec![Bson::Int32(1), Bson::Int32(3)]);
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn replace_updates_indexes_and_keeps_the_id() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(asc("tags")).unwrap();
    c.insert_one(doc! { "_id": 1, "tags": ["a", "b"] }).unwrap();
    let old = c
        .replace_by_id(&Bson::Int32(1), doc! { "tags": ["b", "c"] })
        .unwrap()
        .unwrap();
    assert_eq!(old.get_array("tags").unwrap().into_iter().count(), 2);
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    assert_eq!(
        coll.index_prefix("tags_1", &[Bson::from("a")])
            .unwrap()
            .count(),
        0
    );
    assert_eq!(
        coll.index_prefix("tags_1", &[Bson::from("c")])
            .unwrap()
            .count(),
        1
    );
    drop(coll);
    drop(txn);
    let err = c
        .replace_by_id(&Bson::Int32(1), doc! { "_id": 2 })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid document for collection `c`: the replacement changes the immutable field `_id` from 1 to 2"
    );
    assert!(
        c.replace_by_id(&Bson::Int32(9), doc! { "x": 1 })
            .unwrap()
            .is_none()
    );
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn index_prefix_scans_follow_index_order_and_dedupe_multikey() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("books");
    c.create_index(
        IndexSpec::new([
            ("publisher.name", Direction::Ascending),
            ("year", Direction::Descending),
        ])
        .unwrap(),
    )
    .unwrap();
    c.create_index(asc("subjects")).unwrap();
    c.insert_many(
        [
            doc! { "_id": 1, "publisher": { "name": "A" }, "year": 2001, "subjects": ["db", "db", "rust"] },
            doc! { "_id": 2, "publisher": { "name": "A" }, "year": 2010, "subjects": ["db"] },
            doc! { "_id": 3, "publisher": { "name": "B" }, "year": 2005, "subjects": [] },
        ],
        true,
    )
    .unwrap();
    let txn = db.read().unwrap();
    let books = txn.collection("books").unwrap().unwrap();
    let order: Vec<i32> = books
        .index_prefix("publisher.name_1_year_-1", &[Bson::from("A")])
        .unwrap()
        .map(|d| {
            d.unwrap()
                .decode::<Document>()
                .unwrap()
                .get_i32("_id")
                .unwrap()
        })
        .collect();
    assert_eq!(order, [2, 1]);
    let db_books = books
        .index_prefix("subjects_1", &[Bson::from("db")])
        .unwrap()
        .count();
    assert_eq!(db_books, 2);
    assert_eq!(books.index_prefix("subjects_1", &[]).unwrap().count(), 3);
    assert!(matches!(
        books.index_prefix("nope", &[]),
        Err(Error::IndexNotFound { .. })
    ));
}

#[test]
fn index_scans_see_entries_in_both_the_main_and_the_recent_table() {
    let db = Database::in_memory().unwrap();
    db.set_index_merge_threshold(16);
    let c = db.collection("c");
    c.create_index(
        IndexSpec::new([("k", Direction::Descending), ("n", Direction::Ascending)]).unwrap(),
    )
    .unwrap();
    c.create_index(asc("u").unique()).unwrap();
    let mut expected: std::collections::BTreeMap<i32, Vec<i32>> = std::collections::BTreeMap::new();
    for batch in 0..30 {
        db.write(|t| {
            for j in 0..7 {
                let n = batch * 7 + j;
                // `n` in scrambled order, so recent entries interleave with merged ones.
                t.insert_one(
                    "c",
                    doc! { "_id": n, "k": n % 5, "n": (n * 7919) % 1009, "u": n },
                )?;
            }
            // Deletes and replaces reach entries wherever they now live.
            if batch % 3 == 2 {
                t.delete_by_id("c", &Bson::Int32(batch * 7 - 10))?;
                t.replace_by_id(
                    "c",
                    &Bson::Int32(batch * 7 - 9),
                    doc! { "k": 9, "n": 0, "u": -1 - batch },
                )?;
            }
            Ok::<_, Error>(())
        })
        .unwrap();
    }
    let txn = db.read().unwrap();
    let all: Vec<Document> = txn
        .collection("c")
        .unwrap()
        .unwrap()
        .scan()
        .unwrap()
        .map(|d| d.unwrap().decode().unwrap())
        .collect();
    for d in &all {
        expected
            .entry(d.get_i32("k").unwrap())
            .or_default()
            .push(d.get_i32("n").unwrap());
    }
    let coll = txn.collection("c").unwrap().unwrap();
    for (k, ns) in &mut expected {
        ns.sort_unstable();
        let found: Vec<i32> = coll
            .index_prefix("k_-1_n_1", &[Bson::Int32(*k)])
            .unwrap()
            .map(|d| {
                d.unwrap()
                    .decode::<Document>()
                    .unwrap()
                    .get_i32("n")
                    .unwrap()
            })
            .collect();
        assert_eq!(&found, ns, "k = {k}");
    }
    let everything = coll.index_prefix("k_-1_n_1", &[]).unwrap().count();
    assert_eq!(everything, all.len());
    drop(coll);
    drop(txn);
    assert!(
        c.insert_one(doc! { "u": 3 }).is_err(),
        "unique lookups see merged entries"
    );
    assert!(
        c.insert_one(doc! { "u": 208 }).is_err(),
        "unique lookups see recent entries"
    );
    assert!(
        c.insert_one(doc! { "u": -30 }).is_err(),
        "replaced entries are found too"
    );
    let report = db.verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
}

#[test]
fn decode_errors_name_the_collection_and_id() {
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Strict {
        n: i32,
    }
    let db = Database::in_memory().unwrap();
    db.collection("c")
        .insert_one(doc! { "_id": "k1", "n": "not a number" })
        .unwrap();
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let err = c
        .get(&Bson::from("k1"))
        .unwrap()
        .unwrap()
        .decode::<Strict>()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("document \"k1\" in collection `c` does not decode"),
        "{text}"
    );
}

#[test]
fn data_indexes_and_catalog_survive_reopening() {
    let path = temp_path("reopen.redb");
    {
        let db = Database::open(&path).unwrap();
        let c = db.collection("c");
        c.create_index(asc("k").unique()).unwrap();
        c.insert_many((0..500).map(|i| doc! { "_id": i, "k": i }), true)
            .unwrap();
    }
    let db = Database::open(&path).unwrap();
    let c = db.collection("c");
    assert_eq!(c.count().unwrap(), 500);
    assert!(
        c.insert_one(doc! { "k": 7 }).is_err(),
        "the unique index survived"
    );
    let report = db.verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.documents, 500);
}

#[test]
fn files_of_another_format_version_are_refused() {
    let path = temp_path("version.redb");
    drop(Database::open(&path).unwrap());
    {
        let raw = redb::Database::open(&path).unwrap();
        let txn = raw.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("odm.meta");
            let mut meta = txn.open_table(def).unwrap();
            meta.insert("format_version", 999u32.to_be_bytes().as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let err = Database::open(&path).unwrap_err();
    assert!(
        matches!(err, Error::FormatVersion { found: 999, supported } if supported == FORMAT_VERSION)
    );
    assert_eq!(
        err.to_string(),
        format!(
            "the file uses storage format version 999; this build reads version {FORMAT_VERSION} only"
        )
    );
}

/// Version 3 only added query sampling to version 2: a version 2 file opens, keeps its data,
/// and is marked version 3 (so that older builds refuse it from then on).
#[test]
fn files_of_version_2_are_upgraded_in_place() {
    let path = temp_path("version2.redb");
    {
        let db = Database::open(&path).unwrap();
        db.write(|t| t.insert_one("c", doc! { "_id": 1, "a": 2 }).map(drop))
            .unwrap();
    }
    {
        let raw = redb::Database::open(&path).unwrap();
        let txn = raw.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("odm.meta");
            let mut meta = txn.open_table(def).unwrap();
            meta.insert("format_version", 2u32.to_be_bytes().as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    assert_eq!(stored_version(&path), 2);
    let db = Database::open(&path).unwrap();
    let txn = db.read().unwrap();
    let stored = txn.collection("c").unwrap().unwrap();
    assert!(stored.get(&Bson::Int32(1)).unwrap().is_some());
    drop(stored);
    drop(txn);
    drop(db);
    assert_eq!(stored_version(&path), FORMAT_VERSION);
}

/// A stored document without `_id` (damage no write of the engine makes) is refused by a write
/// that selects it, whether it is read by its key (a filter naming one `_id`) or found by a
/// scan, and is left as it was. Only `{_id: null}` can select it: a missing `_id` matches null.
#[test]
fn a_write_refuses_a_stored_document_without_an_id() {
    let path = temp_path("no-id.redb");
    {
        let db = Database::open(&path).unwrap();
        db.collection("c")
            .insert_one(&doc! { "_id": Bson::Null, "a": 1 })
            .unwrap();
    }
    let damaged = bson::RawDocumentBuf::try_from(&doc! { "a": 1 }).unwrap();
    {
        let raw = redb::Database::open(&path).unwrap();
        let txn = raw.begin_write().unwrap();
        let docs = txn
            .list_tables()
            .unwrap()
            .map(|t| redb::TableHandle::name(&t).to_owned())
            .find(|name| name.split('.').next_back() == Some("docs"))
            .expect("the collection's documents table");
        {
            let def: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new(&docs);
            let mut table = txn.open_table(def).unwrap();
            let key = odm_engine::keys::encode(bson::RawBsonRef::Null);
            assert!(
                table
                    .insert(key.as_slice(), damaged.as_bytes())
                    .unwrap()
                    .is_some()
            );
        }
        txn.commit().unwrap();
    }
    let db = Database::open(&path).unwrap();
    let by_key = odm_engine::update::UpdateOptions::default();
    let by_scan = odm_engine::update::UpdateOptions {
        hint: Some(Bson::Document(doc! { "$natural": 1 })),
        ..Default::default()
    };
    for options in [&by_key, &by_scan] {
        let err = db
            .write(|t| {
                t.update_one(
                    "c",
                    &doc! { "_id": Bson::Null },
                    doc! { "$set": { "a": 2 } },
                    options,
                )
            })
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "corrupt data in collection `c`: a document has no _id",
            "{options:?}"
        );
        let deletes = odm_engine::update::DeleteOptions {
            hint: options.hint.clone(),
            ..Default::default()
        };
        let err = db
            .write(|t| t.delete_one_with("c", &doc! { "_id": Bson::Null }, &deletes))
            .unwrap_err();
        assert!(err.to_string().contains("a document has no _id"), "{err}");
    }
    let txn = db.read().unwrap();
    let stored = txn.collection("c").unwrap().unwrap();
    let scanned: Vec<_> = stored.scan().unwrap().map(|d| d.unwrap()).collect();
    assert_eq!(scanned.len(), 1);
    assert_eq!(scanned[0].bytes(), damaged.as_bytes());
}

/// The format version in a closed file's meta table.
fn stored_version(path: &std::path::Path) -> u32 {
    let raw = redb::Database::open(path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&raw).unwrap();
    let def: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("odm.meta");
    let meta = txn.open_table(def).unwrap();
    let bytes = meta
        .get("format_version")
        .unwrap()
        .unwrap()
        .value()
        .to_vec();
    u32::from_be_bytes(bytes.try_into().unwrap())
}

/// Version 6 changed how keys encode numbers. A file written by a version 5 build (the fixture:
/// numeric `_id`s of every type, NaN and ±infinity among them; compound, descending, multikey
/// and unique indexes over doubles, integers and decimals) opens with its documents under the
/// new keys and its indexes rebuilt: `verify` recomputes both and finds nothing wrong.
#[test]
fn files_of_version_5_have_their_keys_rewritten() {
    use std::io::Read;
    let path = temp_path("version5.redb");
    let fixture = std::fs::File::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/format5.redb.gz"
    ))
    .unwrap();
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(fixture)
        .read_to_end(&mut bytes)
        .unwrap();
    std::fs::write(&path, bytes).unwrap();
    assert_eq!(stored_version(&path), 5);
    {
        let db = Database::open(&path).unwrap();
        let report = db.verify().unwrap();
        assert!(report.is_clean(), "{:?}", report.problems);
        assert_eq!(report.documents, 314);
        let txn = db.read().unwrap();
        let numbers = txn.collection("numbers").unwrap().unwrap();
        let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
        for id in [
            Bson::Int32(1),
            Bson::Double(1.0),
            Bson::Int64(1 << 40),
            Bson::Int64(i64::MIN),
            Bson::Double(-0.1),
            Bson::Double(5e-324),
            dec("0.1"),
            dec("1E+400"),
            dec("-3.250"),
            Bson::Double(f64::NAN),
            Bson::Double(f64::NEG_INFINITY),
            Bson::String("text".into()),
        ] {
            assert!(numbers.get(&id).unwrap().is_some(), "{id}");
        }
        let count = |c: &odm_engine::ReadCollection, filter: Document| {
            c.find(&filter, &odm_engine::query::FindOptions::default())
                .unwrap()
                .count()
        };
        assert_eq!(count(&numbers, doc! { "vals": dec("0.30") }), 14);
        assert_eq!(count(&numbers, doc! { "vals": 2.5 }), 1);
        assert_eq!(count(&numbers, doc! { "sub.w": 13_000.0 }), 1);
        let expected = (0..14i64)
            .filter(|n| n % 3 == 1 && (n * 37 % 11) as f64 / 4.0 - 1.0 < 0.0)
            .count();
        assert_eq!(
            count(&numbers, doc! { "cat": 1, "score": { "$lt": 0 } }),
            expected
        );
        let other = txn.collection("other").unwrap().unwrap();
        let expected = (0..300i64).filter(|i| (i % 17) as f64 * 0.7 >= 2.1).count();
        assert_eq!(count(&other, doc! { "x": { "$gte": 2.1 } }), expected);
    }
    assert_eq!(stored_version(&path), FORMAT_VERSION);
}

#[test]
fn foreign_and_garbage_files_are_refused_without_panicking() {
    let path = temp_path("foreign.redb");
    {
        let raw = redb::Database::create(&path).unwrap();
        let txn = raw.begin_write().unwrap();
        {
            let def: redb::TableDefinition<u64, u64> = redb::TableDefinition::new("theirs");
            txn.open_table(def).unwrap().insert(1, 2).unwrap();
        }
        txn.commit().unwrap();
    }
    let err = Database::open(&path).unwrap_err();
    assert!(err.to_string().contains("did not create"), "{err}");

    let garbage = temp_path("garbage.redb");
    std::fs::write(&garbage, vec![0x5Au8; 8192]).unwrap();
    assert!(Database::open(&garbage).is_err());
}

#[test]
fn snapshots_do_not_see_later_writes_and_threads_share_a_database() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Database>();

    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! { "_id": 0 }).unwrap();
    let snapshot = db.read().unwrap();
    c.insert_one(doc! { "_id": 1 }).unwrap();
    assert_eq!(snapshot.collection("c").unwrap().unwrap().len().unwrap(), 1);
    assert_eq!(c.count().unwrap(), 2);
    drop(snapshot);

    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..50 {
                    if t % 2 == 0 {
                        db.collection("c")
                            .insert_one(doc! { "_id": 1000 * (t + 1) + i })
                            .unwrap();
                    } else {
                        let n = db.collection("c").count().unwrap();
                        assert!(n >= 2);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(c.count().unwrap(), 102);
}

#[test]
fn eventual_durability_commits_visibly() {
    let path = temp_path("eventual.redb");
    {
        let db = Database::open(&path).unwrap();
        db.write_with(Durability::Eventual, |t| {
            t.insert_one("c", doc! { "_id": 1 })
        })
        .unwrap();
        assert_eq!(db.collection("c").count().unwrap(), 1);
        // An immediate commit makes everything before it durable.
        db.write(|t| t.insert_one("c", doc! { "_id": 2 })).unwrap();
    }
    assert_eq!(
        Database::open(&path)
            .unwrap()
            .collection("c")
            .count()
            .unwrap(),
        2
    );
}

fn at(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

#[test]
fn ttl_expires_by_earliest_date_and_never_non_dates() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("sessions");
    c.create_index(asc("seen").expire_after(Duration::from_secs(10)))
        .unwrap();
    c.create_index(asc("user")).unwrap();
    c.insert_many(
        [
            doc! { "_id": 1, "user": "a", "seen": at(0) },
            doc! { "_id": 2, "user": "b", "seen": at(20_000) },
            doc! { "_id": 3, "user": "c", "seen": [at(50_000), at(1_000)] },
            doc! { "_id": 4, "user": "d", "seen": "yesterday" },
            doc! { "_id": 5, "user": "e" },
            doc! { "_id": 6, "user": "f", "seen": at(9_999) },
        ],
        true,
    )
    .unwrap();
    // At 20 s the cutoff is 10 s: 1 (0 s), 3 (earliest 1 s) and 6 (9.999 s) expire.
    assert_eq!(db.expire(DateTime::from_millis(20_000)).unwrap(), 3);
    assert_eq!(
        ids(&db, "sessions"),
        vec![Bson::Int32(2), Bson::Int32(4), Bson::Int32(5)]
    );
    assert!(db.verify().unwrap().is_clean());
    assert_eq!(db.expire(DateTime::from_millis(29_999)).unwrap(), 0);
    assert_eq!(db.expire(DateTime::from_millis(30_001)).unwrap(), 1);
    assert_eq!(
        db.expire(DateTime::from_millis(i64::MAX)).unwrap(),
        0,
        "non-dates never expire"
    );
}

#[test]
fn ttl_works_on_descending_and_unique_indexes() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    let spec = IndexSpec::new([("at", Direction::Descending)])
        .unwrap()
        .unique()
        .expire_after(Duration::from_secs(1));
    c.create_index(spec).unwrap();
    c.insert_many(
        (0..10).map(|i| doc! { "_id": i, "at": at(i64::from(i) * 1000) }),
        true,
    )
    .unwrap();
    // Cutoff 4 s: dates 0..=3 s expire.
    assert_eq!(db.expire(DateTime::from_millis(5_000)).unwrap(), 4);
    assert_eq!(c.count().unwrap(), 6);
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn ttl_expiry_commits_in_batches_of_bounded_size() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(asc("at").expire_after(Duration::from_secs(1)))
        .unwrap();
    let n = odm_engine::EXPIRY_BATCH * 2 + 500;
    c.insert_many((0..n).map(|i| doc! { "_id": i as i64, "at": at(0) }), true)
        .unwrap();
    c.insert_one(doc! { "_id": -1, "at": at(1_000_000) })
        .unwrap();
    let expiry = db.expire_in_batches(DateTime::from_millis(10_000)).unwrap();
    assert_eq!(expiry.deleted, n as u64);
    assert_eq!(expiry.batches, 3, "two full batches and the rest");
    assert_eq!(c.count().unwrap(), 1);
    assert!(db.verify().unwrap().is_clean());
    // A pass with nothing to expire is one empty batch.
    let idle = db.expire_in_batches(DateTime::from_millis(10_000)).unwrap();
    assert_eq!((idle.deleted, idle.batches), (0, 1));
}

#[test]
fn ttl_monitor_expires_in_the_background_and_stops_on_drop() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(asc("at").expire_after(Duration::from_mins(1)))
        .unwrap();
    c.insert_one(doc! { "at": at(0) }).unwrap();
    let monitor = db.start_ttl_monitor_with_clock(Duration::from_millis(5), || {
        DateTime::from_millis(3_600_000)
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while c.count().unwrap() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(c.count().unwrap(), 0);
    let stats = monitor.stats();
    assert!(
        stats.passes >= 1 && stats.expired == 1 && stats.last_error.is_none(),
        "{stats:?}"
    );
    drop(monitor);
}

#[test]
fn explain_shows_the_index_and_what_was_examined() {
    use odm_engine::query::FindOptions;
    let db = Database::in_memory().unwrap();
    let c = db.collection("books");
    c.create_index(asc("year")).unwrap();
    c.create_index(
        IndexSpec::new([
            ("publisher", Direction::Ascending),
            ("year", Direction::Descending),
        ])
        .unwrap(),
    )
    .unwrap();
    c.insert_many((0..100).map(|i| doc! { "_id": i, "year": 1950 + i, "publisher": if i % 2 == 0 { "A" } else { "B" } }), true)
        .unwrap();
    let txn = db.read().unwrap();
    let books = txn.collection("books").unwrap().unwrap();
    let range = books
        .explain(
            &doc! { "year": { "$gte": 2000, "$lt": 2010 } },
            &FindOptions::default(),
        )
        .unwrap();
    assert_eq!(range.index_used(), Some("year_1"), "{range}");
    assert_eq!(
        (range.keys_examined, range.docs_examined, range.returned),
        (10, 10, 10),
        "{range}"
    );
    let lte = books
        .explain(&doc! { "year": { "$lte": 1952 } }, &FindOptions::default())
        .unwrap();
    assert_eq!((lte.keys_examined, lte.returned), (3, 3), "{lte}");
    let sorted = FindOptions {
        sort: Some(doc! { "year": -1 }),
        limit: Some(5),
        ..FindOptions::default()
    };
    let by_publisher = books.explain(&doc! { "publisher": "A" }, &sorted).unwrap();
    assert_eq!(
        by_publisher.index_used(),
        Some("publisher_1_year_-1"),
        "{by_publisher}"
    );
    assert!(!by_publisher.in_memory_sort, "{by_publisher}");
    assert_eq!(by_publisher.keys_examined, 5, "{by_publisher}");
    assert_eq!(by_publisher.returned, 5, "{by_publisher}");
    let skipped = FindOptions {
        skip: 48,
        ..sorted.clone()
    };
    let tail = books.explain(&doc! { "publisher": "A" }, &skipped).unwrap();
    assert_eq!((tail.keys_examined, tail.returned), (50, 2), "{tail}");
    assert_eq!(
        books
            .find(&doc! { "publisher": "A" }, &skipped)
            .unwrap()
            .count(),
        2
    );
    let by_id = books
        .explain(
            &doc! { "_id": { "$in": [3, 4, 500] } },
            &FindOptions::default(),
        )
        .unwrap();
    assert_eq!(by_id.returned, 2);
    assert_eq!(
        by_id
            .to_document()
            .get_document("queryPlanner")
            .unwrap()
            .get_document("winningPlan")
            .unwrap()
            .get_str("stage")
            .unwrap(),
        "IDHACK"
    );
    let scan = books
        .explain(&doc! { "title": "x" }, &FindOptions::default())
        .unwrap();
    assert_eq!(scan.index_used(), None);
    assert_eq!(scan.docs_examined, 100);
    let prefix = books
        .explain(
            &doc! { "publisher": { "$regex": "^A" } },
            &FindOptions::default(),
        )
        .unwrap();
    assert_eq!(prefix.index_used(), Some("publisher_1_year_-1"), "{prefix}");
    assert_eq!(prefix.keys_examined, 50, "{prefix}");
}

#[test]
fn or_branches_use_their_indexes_and_hints_force_a_plan() {
    use odm_engine::query::FindOptions;
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(asc("a")).unwrap();
    c.create_index(asc("b")).unwrap();
    c.insert_many(
        (0..50).map(|i| doc! { "_id": i, "a": i, "b": i % 10 }),
        true,
    )
    .unwrap();
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    let or = coll
        .explain(
            &doc! { "$or": [{ "a": 3 }, { "b": 3 }] },
            &FindOptions::default(),
        )
        .unwrap();
    let stage = or.to_document();
    let winning = stage
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(
        winning
            .get_document("inputStage")
            .unwrap()
            .get_str("stage")
            .unwrap(),
        "OR",
        "{or}"
    );
    assert_eq!(or.returned, 5, "{or}");
    assert_eq!(or.keys_examined, 6, "{or}");
    let hinted = FindOptions {
        hint: Some(Bson::from("b_1")),
        ..FindOptions::default()
    };
    let forced = coll.explain(&doc! { "a": 3 }, &hinted).unwrap();
    assert_eq!(forced.index_used(), Some("b_1"), "{forced}");
    assert_eq!(coll.find(&doc! { "a": 3 }, &hinted).unwrap().count(), 1);
    let natural = FindOptions {
        hint: Some(Bson::Document(doc! { "$natural": 1 })),
        ..FindOptions::default()
    };
    assert_eq!(
        coll.explain(&doc! { "a": 3 }, &natural)
            .unwrap()
            .index_used(),
        None
    );
    let missing = FindOptions {
        hint: Some(Bson::from("nope")),
        ..FindOptions::default()
    };
    let err = coll.find(&doc! {}, &missing).unwrap_err();
    assert!(err.to_string().contains("does not name an index"), "{err}");
}

#[test]
fn partial_indexes_hold_only_matching_documents_and_serve_implying_queries() {
    use odm_engine::query::FindOptions;
    let path = temp_path("partial.redb");
    {
        let db = Database::open(&path).unwrap();
        let c = db.collection("orders");
        let spec = asc("customer")
            .unique()
            .partial(doc! { "status": "open" })
            .unwrap();
        c.create_index(spec).unwrap();
        c.insert_one(doc! { "_id": 1, "customer": "ann", "status": "open" })
            .unwrap();
        // Unique only among documents the filter accepts.
        c.insert_one(doc! { "_id": 2, "customer": "ann", "status": "closed" })
            .unwrap();
        let err = c
            .insert_one(doc! { "_id": 3, "customer": "ann", "status": "open" })
            .unwrap_err();
        assert!(matches!(err, Error::DuplicateKey { .. }), "{err}");
        c.replace_by_id(
            &Bson::Int32(1),
            doc! { "customer": "ann", "status": "closed" },
        )
        .unwrap();
        c.insert_one(doc! { "_id": 3, "customer": "ann", "status": "open" })
            .unwrap();
        let report = db.verify().unwrap();
        assert!(report.is_clean(), "{:?}", report.problems);
        assert_eq!(report.index_entries, 1);
    }
    let db = Database::open(&path).unwrap();
    let txn = db.read().unwrap();
    let orders = txn.collection("orders").unwrap().unwrap();
    let used = orders
        .explain(
            &doc! { "customer": "ann", "status": "open" },
            &FindOptions::default(),
        )
        .unwrap();
    assert_eq!(used.index_used(), Some("customer_1"), "{used}");
    assert_eq!(used.returned, 1);
    let not_implied = orders
        .explain(&doc! { "customer": "ann" }, &FindOptions::default())
        .unwrap();
    assert_eq!(not_implied.index_used(), None, "{not_implied}");
    assert_eq!(not_implied.returned, 3);
    assert!(asc("a").partial(doc! { "b": { "$bogus": 1 } }).is_err());
}

#[test]
fn the_plan_cache_reuses_a_shape_choice_until_indexes_change() {
    use odm_engine::query::FindOptions;
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(asc("a")).unwrap();
    c.insert_many((0..20).map(|i| doc! { "_id": i, "a": i, "b": i % 3 }), true)
        .unwrap();
    let explain = |filter: Document| {
        let txn = db.read().unwrap();
        let coll = txn.collection("c").unwrap().unwrap();
        coll.explain(&filter, &FindOptions::default()).unwrap()
    };
    let first = explain(doc! { "a": 5, "b": 2 });
    assert!(!first.winning.from_cache);
    // Same shape, other values: the cached choice, and still the right answer.
    let second = explain(doc! { "a": 8, "b": 2 });
    assert!(second.winning.from_cache, "{second}");
    assert_eq!((second.index_used(), second.returned), (Some("a_1"), 1));
    let none = explain(doc! { "a": 7, "b": 2 });
    assert_eq!(none.returned, 0);
    // Another shape is planned afresh: another operator, value bracket, regex, nesting or
    // field; each then reuses its own choice.
    for shape in [
        doc! { "a": { "$gt": 3 } },
        doc! { "a": "5", "b": 2 },
        doc! { "a": { "$regex": "^x" } },
        doc! { "a": { "$regex": "^y" } },
        doc! { "$or": [{ "a": 5 }, { "b": 2 }] },
        doc! { "$or": [{ "a": 5 }], "b": 2 },
        doc! { "$or": [{ "a": 5, "b": 2 }] },
        doc! { "b": 5, "a": 2 },
        doc! { "a": { "$in": [1, "x"] } },
        doc! { "a": { "$in": ["x", 1] } },
    ] {
        assert!(!explain(shape.clone()).winning.from_cache, "{shape}");
        let again = explain(shape.clone());
        assert!(
            again.winning.from_cache || again.index_used().is_none(),
            "{shape}: {again}"
        );
    }
    // A new index makes the old choice unreachable.
    c.create_index(
        IndexSpec::new([("a", Direction::Ascending), ("b", Direction::Ascending)]).unwrap(),
    )
    .unwrap();
    let after = explain(doc! { "a": 5, "b": 2 });
    assert!(!after.winning.from_cache, "{after}");
    assert_eq!(after.index_used(), Some("a_1_b_1"), "{after}");
    let planner = after
        .to_document()
        .get_document("queryPlanner")
        .unwrap()
        .clone();
    assert!(!planner.get_bool("fromPlanCache").unwrap());
}

#[test]
fn covered_queries_read_no_document_and_keep_value_types() {
    use odm_engine::query::FindOptions;
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(
        IndexSpec::new([("b", Direction::Ascending), ("e", Direction::Descending)]).unwrap(),
    )
    .unwrap();
    c.insert_many(
        [
            doc! { "_id": 1, "b": 1_i32, "e": "x", "other": true },
            doc! { "_id": 2, "b": 2_i64, "other": true },
            doc! { "_id": 3, "b": 2.5, "e": null },
            doc! { "_id": 4, "b": -0.0, "e": { "k": [1, 2.0] } },
            doc! { "_id": 5, "e": 7 },
        ],
        true,
    )
    .unwrap();
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    let options = FindOptions {
        projection: Some(doc! { "_id": 0, "b": 1, "e": 1 }),
        sort: Some(doc! { "b": 1 }),
        ..FindOptions::default()
    };
    let found: Vec<Document> = coll
        .find(&doc! { "b": { "$gte": -1 } }, &options)
        .unwrap()
        .collect::<odm_engine::Result<_>>()
        .unwrap();
    // Types, null and missing fields come back exactly as stored.
    assert_eq!(
        found,
        [
            doc! { "b": -0.0, "e": { "k": [1, 2.0] } },
            doc! { "b": 1_i32, "e": "x" },
            doc! { "b": 2_i64 },
            doc! { "b": 2.5, "e": null },
        ]
    );
    assert!(found[0].get_f64("b").unwrap().is_sign_negative());
    assert_eq!(found[2].get("b"), Some(&Bson::Int64(2)));
    let explain = coll
        .explain(&doc! { "b": { "$gte": -1 } }, &options)
        .unwrap();
    assert!(explain.covered, "{explain}");
    assert_eq!(
        (
            explain.docs_examined,
            explain.keys_examined,
            explain.returned
        ),
        (0, 4, 4)
    );
    let plan = explain.to_document();
    let winning = plan
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(winning.get_str("stage").unwrap(), "PROJECTION_COVERED");
    assert_eq!(
        winning
            .get_document("inputStage")
            .unwrap()
            .get_str("stage")
            .unwrap(),
        "IXSCAN"
    );
    // `_id` returned, or a field outside the index read: the documents are fetched.
    for (filter, projection) in [
        (doc! { "b": 2 }, doc! { "b": 1 }),
        (doc! { "b": 2 }, doc! { "b": 1, "other": 1, "_id": 0 }),
        (doc! { "b": 2, "other": true }, doc! { "b": 1, "_id": 0 }),
    ] {
        let options = FindOptions {
            projection: Some(projection),
            ..FindOptions::default()
        };
        let explain = coll.explain(&filter, &options).unwrap();
        assert!(!explain.covered, "{explain}");
        assert!(explain.docs_examined > 0, "{explain}");
    }
    // Counting reads only the index when the filter does.
    assert_eq!(
        coll.count_matching(&doc! { "b": 2, "e": null }, 0, 0)
            .unwrap(),
        1
    );
    assert_eq!(
        coll.count_matching(&doc! { "e": { "$exists": false }, "b": { "$gt": 0 } }, 0, 0)
            .unwrap(),
        1
    );
}

#[test]
fn cursors_read_documents_only_as_results_are_pulled() {
    use odm_engine::query::FindOptions;
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(IndexSpec::ascending("n").unwrap()).unwrap();
    c.insert_many((0..2000).map(|i| doc! { "_id": i, "n": 2000 - i }), true)
        .unwrap();
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    // A scan, and an index order that gives the sort: three results, three documents read.
    for options in [
        FindOptions::default(),
        FindOptions {
            sort: Some(doc! { "n": -1 }),
            ..FindOptions::default()
        },
    ] {
        let mut cursor = coll.find(&doc! {}, &options).unwrap();
        let first: Vec<Document> = cursor.by_ref().take(3).map(Result::unwrap).collect();
        assert_eq!(first.len(), 3);
        assert_eq!(cursor.stats().docs_examined, 3);
        assert!(!cursor.sorted_in_memory());
        // The rest is still there.
        assert_eq!(cursor.count(), 1997);
    }
    // A sort no index gives reads every match before the first result.
    let cursor = coll
        .find(
            &doc! {},
            &FindOptions {
                sort: Some(doc! { "m": 1, "_id": -1 }),
                limit: Some(2),
                ..FindOptions::default()
            },
        )
        .unwrap();
    assert!(cursor.sorted_in_memory());
    assert_eq!(cursor.stats().docs_examined, 2000);
    let ids: Vec<i32> = cursor.map(|d| d.unwrap().get_i32("_id").unwrap()).collect();
    assert_eq!(ids, [1999, 1998]);
}

#[test]
fn explain_reports_shard_routing_for_sharded_collections() {
    use odm_engine::query::{FindOptions, Routing};
    use odm_engine::{CollectionOptions, ShardKey};
    let db = Database::in_memory().unwrap();
    let key = ShardKey::range(["recipient", "sent"]).unwrap();
    db.write(|t| {
        t.create_collection_with("inbox", CollectionOptions::default().with_shard_key(key))?;
        t.create_collection("plain")
    })
    .unwrap();
    let txn = db.read().unwrap();
    let inbox = txn.collection("inbox").unwrap().unwrap();
    let routing = |filter: Document| {
        inbox
            .explain(&filter, &FindOptions::default())
            .unwrap()
            .routing
            .map(|(_, r)| r)
    };
    // S1: reading one recipient's inbox reaches the shards of that recipient only.
    assert_eq!(
        routing(doc! { "recipient": "ann" }),
        Some(Routing::Targeted)
    );
    assert_eq!(
        routing(doc! { "recipient": "ann", "sent": 3 }),
        Some(Routing::SingleShard)
    );
    assert_eq!(routing(doc! { "sent": 3 }), Some(Routing::Broadcast));
    let explain = inbox
        .explain(&doc! { "recipient": "ann" }, &FindOptions::default())
        .unwrap();
    let shard = explain
        .to_document()
        .get_document("queryPlanner")
        .unwrap()
        .get_document("shardRouting")
        .unwrap()
        .clone();
    assert_eq!(
        shard,
        doc! { "shardKey": { "recipient": 1, "sent": 1 }, "routing": "targeted" }
    );
    assert!(explain.to_string().contains("targeted"), "{explain}");
    let plain = txn.collection("plain").unwrap().unwrap();
    assert!(
        plain
            .explain(&doc! {}, &FindOptions::default())
            .unwrap()
            .routing
            .is_none()
    );
}

#[test]
fn elem_match_conditions_bound_indexes_and_intersect_on_one_element() {
    use odm_engine::query::FindOptions;
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(IndexSpec::ascending("scores").unwrap())
        .unwrap();
    c.create_index(
        IndexSpec::new([
            ("attrs.k", Direction::Ascending),
            ("attrs.v", Direction::Ascending),
        ])
        .unwrap(),
    )
    .unwrap();
    c.insert_many(
        [
            doc! { "_id": 1, "scores": [1, 9], "attrs": [{ "k": "size", "v": 10 }, { "k": "type", "v": "text" }] },
            doc! { "_id": 2, "scores": [6], "attrs": [{ "k": "size", "v": 100 }] },
            doc! { "_id": 3, "scores": [7, 20], "attrs": [{ "k": "type", "v": 100 }, { "k": "size", "v": 5 }] },
        ],
        true,
    )
    .unwrap();
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    let run = |filter: Document| {
        let explain = coll.explain(&filter, &FindOptions::default()).unwrap();
        let mut ids: Vec<i32> = coll
            .find(&filter, &FindOptions::default())
            .unwrap()
            .map(|d| d.unwrap().get_i32("_id").unwrap())
            .collect();
        ids.sort_unstable();
        (explain, ids)
    };
    // One element between 5 and 8: both bounds apply to the multikey index.
    let (explain, ids) = run(doc! { "scores": { "$elemMatch": { "$gte": 5, "$lt": 8 } } });
    assert_eq!(ids, [2, 3]);
    assert_eq!(explain.index_used(), Some("scores_1"), "{explain}");
    assert_eq!(explain.keys_examined, 2, "{explain}");
    // Without $elemMatch, two elements may meet the two conditions: only one bound is used.
    let (explain, ids) = run(doc! { "scores": { "$gte": 5, "$lt": 8 } });
    assert_eq!(ids, [1, 2, 3]);
    assert!(explain.keys_examined > 2, "{explain}");
    // S3b: one attribute by equality on its key and a range on its value.
    let (explain, ids) =
        run(doc! { "attrs": { "$elemMatch": { "k": "size", "v": { "$gt": 64 } } } });
    assert_eq!(ids, [2]);
    assert_eq!(
        explain.index_used(),
        Some("attrs.k_1_attrs.v_1"),
        "{explain}"
    );
    // Both fields bounded. The index holds every (k, v) pair of a document's attributes,
    // across elements (a superset of MongoDB's per-element keys), so document 3's
    // ("size", 100) is examined and refused by the matcher.
    assert_eq!(explain.keys_examined, 2, "{explain}");
}

#[test]
fn id_ranges_and_id_sorts_walk_the_documents_table() {
    use odm_engine::query::FindOptions;
    let db = Database::in_memory().unwrap();
    let c = db.collection("months");
    for user in ["ann", "bob"] {
        for month in ["201208", "201209", "201210", "201211"] {
            c.insert_one(doc! { "_id": format!("{user}-{month}") })
                .unwrap();
        }
    }
    let txn = db.read().unwrap();
    let coll = txn.collection("months").unwrap().unwrap();
    // S9: a user's latest two months, by an anchored regex on `_id`, newest first.
    let options = FindOptions {
        sort: Some(doc! { "_id": -1 }),
        limit: Some(2),
        ..FindOptions::default()
    };
    let filter = doc! { "_id": { "$regex": "^bob-" } };
    let ids: Vec<String> = coll
        .find(&filter, &options)
        .unwrap()
        .map(|d| d.unwrap().get_str("_id").unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["bob-201211", "bob-201210"]);
    let explain = coll.explain(&filter, &options).unwrap();
    assert_eq!(explain.index_used(), Some("_id_"), "{explain}");
    assert!(!explain.in_memory_sort, "{explain}");
    assert_eq!(
        (explain.keys_examined, explain.docs_examined),
        (2, 2),
        "{explain}"
    );
    // A range of `_id`s.
    let explain = coll
        .explain(
            &doc! { "_id": { "$gte": "ann-201209", "$lt": "ann-201211" } },
            &FindOptions::default(),
        )
        .unwrap();
    assert_eq!(
        (explain.returned, explain.keys_examined),
        (2, 2),
        "{explain}"
    );
}

#[test]
fn stats_count_documents_and_index_pages_and_compact_returns_free_pages() {
    let path = temp_path("stats.odm");
    let mut db = Database::open(&path).unwrap();
    db.write(|w| {
        w.create_index("people", asc("name"))?;
        for i in 0..5000 {
            w.insert_one(
                "people",
                doc! {"_id": i, "name": format!("person {i:05}"), "pad": "x".repeat(200)},
            )?;
        }
        w.insert_one("other", doc! {"_id": 1})?;
        Ok::<_, Error>(())
    })
    .unwrap();
    let stats = db.stats().unwrap();
    let names: Vec<&str> = stats.collections.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["other", "people"]);
    let people = &stats.collections[1];
    assert_eq!(people.documents, 5000);
    assert!(people.data_bytes > 5000 * 200, "{people:?}");
    assert!(people.storage_bytes >= people.data_bytes, "{people:?}");
    assert_eq!(people.indexes.len(), 1);
    assert_eq!(people.indexes[0].name, "name_1");
    assert!(people.index_bytes() > 0);
    assert_eq!(stats.file_bytes, std::fs::metadata(&path).unwrap().len());

    // Deleting most documents frees pages inside the file; compaction gives them back.
    db.write(|w| {
        for i in 0..4900 {
            w.delete_by_id("people", &Bson::Int32(i))?;
        }
        Ok::<_, Error>(())
    })
    .unwrap();
    let before = db.stats().unwrap();
    assert!(before.free_pages > 0, "{before:?}");
    assert!(db.compact().unwrap());
    let after = db.stats().unwrap();
    assert!(after.file_bytes < before.file_bytes, "{before:?} {after:?}");
    assert_eq!(after.collections[1].documents, 100);
    assert!(db.verify().unwrap().is_clean());

    // A second handle keeps compaction from running, with an error that says why.
    let other = db.clone();
    let err = db.compact().unwrap_err();
    assert!(matches!(err, Error::Compaction(_)), "{err}");
    drop(other);
}

#[test]
fn a_file_open_elsewhere_is_refused_as_locked() {
    let path = temp_path("locked.odm");
    let db = Database::open(&path).unwrap();
    let err = Database::open(&path).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("open in another process"), "{err}");
    drop(db);
    Database::open(&path).unwrap();
}

#[test]
fn the_id_index_takes_no_options_as_mongodb_words_it() {
    for field in ["unique", "sparse", "background", "expireAfterSeconds"] {
        let mut spec = doc! { "key": { "_id": 1 }, "name": "_id_" };
        spec.insert(field, false);
        if field == "expireAfterSeconds" {
            spec.insert(field, 5);
        }
        let err = IndexSpec::from_document(&spec).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("The field '{field}' is not valid for an _id index specification"),
        );
        assert_eq!(err.code().code, 197);
    }
    let plain = doc! { "key": { "_id": 1 }, "name": "_id_", "v": 2 };
    assert!(IndexSpec::from_document(&plain).is_ok());
    // A descending `_id` index is an ordinary index, with options.
    let descending = doc! { "key": { "_id": -1 }, "unique": true };
    assert!(IndexSpec::from_document(&descending).is_ok());
}

#[test]
fn a_natural_hint_scans_in_storage_order_either_way() {
    use odm_engine::query::FindOptions;
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_many(
        [doc! { "_id": 2 }, doc! { "_id": 3 }, doc! { "_id": 1 }],
        true,
    )
    .unwrap();
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    for (direction, expected) in [(1, [1, 2, 3]), (-1, [3, 2, 1])] {
        let options = FindOptions {
            hint: Some(Bson::Document(doc! { "$natural": direction })),
            ..FindOptions::default()
        };
        let ids: Vec<i32> = coll
            .find(&doc! {}, &options)
            .unwrap()
            .map(|d| d.unwrap().get_i32("_id").unwrap())
            .collect();
        assert_eq!(ids, expected, "hint $natural: {direction}");
    }
}
