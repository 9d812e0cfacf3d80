//! Update, delete, find-and-modify and bulk operations through the API: all-or-nothing
//! `update_many`, MongoDB's stop-at-first-error mode, a transaction's reads of its own writes,
//! bulk results, and the S1c bucket upsert under concurrent writers.

use bson::{Bson, Document, doc};
use odm_engine::update::{
    BulkWrite, DeleteOptions, FindAndModify, OpResult, ReturnDocument, UpdateOptions, UpdateResult,
    WriteOp,
};
use odm_engine::{Database, Direction, Error, IndexSpec};

fn all(db: &Database, name: &str) -> Vec<Document> {
    let txn = db.read().unwrap();
    let Some(c) = txn.collection(name).unwrap() else {
        return Vec::new();
    };
    c.find(&doc! {}, &odm_engine::query::FindOptions::default())
        .unwrap()
        .collect::<odm_engine::Result<_>>()
        .unwrap()
}

/// The undo of a failed `update_many` runs backwards: restoring the first document's value
/// before the second's would collide, in the unique index, with the second's new value (the
/// consistency proptest found this: `{u: 1.0}` and `{}` with `$inc: {u: 1}`, then `{u: 0.0}`
/// colliding).
#[test]
fn a_failed_update_many_is_undone_in_reverse_so_restored_values_never_collide() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(IndexSpec::ascending("u").unwrap().unique())
        .unwrap();
    let before = [
        doc! { "_id": 0, "u": 1.0 },
        doc! { "_id": 1 },
        doc! { "_id": 2, "u": 0.0 },
    ];
    c.insert_many(before.clone(), true).unwrap();
    let outcome = db
        .write(|txn| {
            Ok::<_, Error>(txn.update_many(
                "c",
                &doc! {},
                &doc! { "$inc": { "u": 1 } },
                &UpdateOptions::default(),
            ))
        })
        .unwrap();
    assert!(
        matches!(outcome, Err(Error::DuplicateKey { .. })),
        "{outcome:?}"
    );
    assert_eq!(all(&db, "c"), before);
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn update_many_is_all_or_nothing_even_inside_a_committing_transaction() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(IndexSpec::ascending("n").unwrap().unique())
        .unwrap();
    c.insert_many(
        [
            doc! { "_id": 1, "n": 1 },
            doc! { "_id": 2, "n": 2 },
            doc! { "_id": 3, "n": 10 },
        ],
        true,
    )
    .unwrap();
    let before = all(&db, "c");
    // Doc 1 becomes 2 while doc 2 still holds 2: a unique violation part way.
    let outcome = db
        .write(|t| {
            let failed = t.update_many(
                "c",
                &doc! {},
                &doc! { "$inc": { "n": 1 } },
                &UpdateOptions::default(),
            );
            t.insert_one("log", doc! { "tried": true })?;
            Ok::<_, Error>(failed)
        })
        .unwrap();
    assert!(
        matches!(outcome, Err(Error::DuplicateKey { .. })),
        "{outcome:?}"
    );
    assert_eq!(all(&db, "c"), before);
    assert_eq!(
        all(&db, "log").len(),
        1,
        "the rest of the transaction committed"
    );
    assert!(db.verify().unwrap().is_clean());
}

/// Without a unique index, `update_many` holds the matched ids alone: every new document is
/// computed and checked before the first is written, so a refusal found at the last document
/// (here a parallel-arrays index key, and a `$inc` of a string) leaves nothing written.
#[test]
fn update_many_checks_every_document_before_writing_any() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(
        IndexSpec::new([("a", Direction::Ascending), ("b", Direction::Ascending)]).unwrap(),
    )
    .unwrap();
    let docs: Vec<_> = (0..50)
        .map(|i| doc! { "_id": i, "a": [i], "b": 0, "n": i })
        .collect();
    c.insert_many(docs, true).unwrap();
    c.insert_one(doc! { "_id": 50, "a": 1, "b": 0, "n": "text" })
        .unwrap();
    let before = all(&db, "c");
    for (update, refusal) in [
        (doc! { "$set": { "b": [1, 2] } }, "parallel"),
        (doc! { "$inc": { "n": 1 } }, "$inc"),
    ] {
        let outcome = db
            .write(|t| {
                let failed = t.update_many("c", &doc! {}, &update, &UpdateOptions::default());
                t.insert_one("log", doc! { "tried": refusal })?;
                Ok::<_, Error>(failed)
            })
            .unwrap();
        let err = outcome.unwrap_err();
        assert!(err.to_string().contains(refusal), "{err}");
        assert_eq!(all(&db, "c"), before);
    }
    assert_eq!(
        all(&db, "log").len(),
        2,
        "the rest of each transaction committed"
    );
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn stop_at_first_error_keeps_what_was_updated_and_says_so() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_many(
        [
            doc! { "_id": 1, "a": 1 },
            doc! { "_id": 2, "a": "x" },
            doc! { "_id": 3, "a": 3 },
        ],
        true,
    )
    .unwrap();
    let options = UpdateOptions {
        stop_at_first_error: true,
        ..UpdateOptions::default()
    };
    let outcome = db.write(|t| {
        Ok::<_, Error>(t.update_many("c", &doc! {}, &doc! { "$inc": { "a": 1 } }, &options))
    });
    match outcome.unwrap() {
        Err(Error::UpdateStopped {
            updated, source, ..
        }) => {
            assert_eq!(updated, [Bson::Int32(1)]);
            assert!(matches!(*source, Error::InvalidUpdate(_)), "{source}");
        }
        other => panic!("expected UpdateStopped, got {other:?}"),
    }
    assert_eq!(
        all(&db, "c"),
        [
            doc! { "_id": 1, "a": 2 },
            doc! { "_id": 2, "a": "x" },
            doc! { "_id": 3, "a": 3 }
        ]
    );
    // The default refuses the whole update.
    let err = c
        .update_many(
            &doc! {},
            &doc! { "$inc": { "a": 1 } },
            &UpdateOptions::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("$inc"), "{err}");
}

#[test]
fn a_transaction_updates_what_it_wrote_itself_through_indexes() {
    let db = Database::in_memory().unwrap();
    db.collection("c")
        .create_index(IndexSpec::ascending("tag").unwrap())
        .unwrap();
    let result = db
        .write(|t| {
            t.insert_one("c", doc! { "_id": 1, "tag": "new" })?;
            t.insert_one("c", doc! { "_id": 2, "tag": "new" })?;
            let r = t.update_many(
                "c",
                &doc! { "tag": "new" },
                &doc! { "$set": { "tag": "seen" } },
                &UpdateOptions::default(),
            )?;
            // The index now says `seen`: a second pass finds nothing new.
            let again = t.update_many(
                "c",
                &doc! { "tag": "new" },
                &doc! { "$set": { "tag": "other" } },
                &UpdateOptions::default(),
            )?;
            let deleted = t.delete_many("c", &doc! { "tag": "seen", "_id": 2 })?;
            Ok::<_, Error>((r, again, deleted))
        })
        .unwrap();
    assert_eq!(
        result,
        (
            UpdateResult {
                matched: 2,
                modified: 2,
                upserted_id: None
            },
            UpdateResult::default(),
            1
        )
    );
    assert_eq!(all(&db, "c"), [doc! { "_id": 1, "tag": "seen" }]);
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn find_one_and_update_serves_a_counter_and_a_queue() {
    let db = Database::in_memory().unwrap();
    let counters = db.collection("counters");
    let next = || {
        counters
            .find_one_and_update(
                &doc! { "_id": "user7" },
                &doc! { "$inc": { "count": 1 } },
                &FindAndModify {
                    upsert: true,
                    return_document: ReturnDocument::After,
                    ..FindAndModify::default()
                },
            )
            .unwrap()
            .unwrap()
            .get_i32("count")
            .unwrap()
    };
    assert_eq!((next(), next(), next()), (1, 2, 3));
    // S10: take the most urgent job, marking it taken.
    let jobs = db.collection("jobs");
    jobs.create_index(
        IndexSpec::new([
            ("state", Direction::Ascending),
            ("priority", Direction::Descending),
        ])
        .unwrap(),
    )
    .unwrap();
    jobs.insert_many(
        [
            doc! { "_id": 1, "state": "ready", "priority": 1 },
            doc! { "_id": 2, "state": "ready", "priority": 9 },
            doc! { "_id": 3, "state": "ready", "priority": 5 },
        ],
        true,
    )
    .unwrap();
    let take = || {
        jobs.find_one_and_update(
            &doc! { "state": "ready" },
            &doc! { "$set": { "state": "taken" } },
            &FindAndModify {
                sort: Some(doc! { "priority": -1 }),
                projection: Some(doc! { "_id": 1 }),
                ..FindAndModify::default()
            },
        )
        .unwrap()
        .map(|d| d.get_i32("_id").unwrap())
    };
    assert_eq!(
        (take(), take(), take(), take()),
        (Some(2), Some(3), Some(1), None)
    );
    let gone = jobs
        .find_one_and_delete(&doc! { "_id": 2 }, &FindAndModify::default())
        .unwrap();
    assert_eq!(
        gone,
        Some(doc! { "_id": 2, "state": "taken", "priority": 9 })
    );
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn bulk_writes_report_each_operation() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(IndexSpec::ascending("u").unwrap().unique())
        .unwrap();
    let ops = |ordered| BulkWrite {
        ordered,
        ops: vec![
            WriteOp::InsertOne(doc! { "_id": 1, "u": 1 }),
            WriteOp::InsertOne(doc! { "_id": 2, "u": 1 }),
            WriteOp::UpdateOne {
                filter: doc! { "_id": 1 },
                update: doc! { "$set": { "x": true } }.into(),
                options: UpdateOptions::default(),
            },
            WriteOp::UpdateOne {
                filter: doc! { "_id": 9 },
                update: doc! { "$set": { "u": 9 } }.into(),
                options: UpdateOptions {
                    upsert: true,
                    ..UpdateOptions::default()
                },
            },
            WriteOp::DeleteMany {
                filter: doc! { "x": true },
                options: DeleteOptions::default(),
            },
        ],
        let_vars: None,
    };
    let ordered = c.bulk_write(ops(true)).unwrap();
    assert_eq!(ordered.inserted, 1);
    assert_eq!(ordered.failures.len(), 1);
    assert_eq!(ordered.failures[0].0, 1);
    assert!(matches!(ordered.failures[0].1, Error::DuplicateKey { .. }));
    assert_eq!(all(&db, "c"), [doc! { "_id": 1, "u": 1 }]);

    c.delete_many(&doc! {}).unwrap();
    let unordered = c.bulk_write(ops(false)).unwrap();
    assert_eq!(
        (
            unordered.inserted,
            unordered.matched,
            unordered.modified,
            unordered.upserted,
            unordered.deleted
        ),
        (1, 1, 1, 1, 1)
    );
    assert_eq!(unordered.upserted_ids, [(3, Bson::Int32(9))]);
    assert_eq!(unordered.failures.len(), 1);
    assert_eq!(all(&db, "c"), [doc! { "_id": 9, "u": 9 }]);
    assert!(db.verify().unwrap().is_clean());
}

/// S1c: writers on several threads upsert messages into a recipient's open bucket (fewer than
/// 50 messages). Write transactions are serialised and each upsert reads and writes in one, so
/// there is never a second open bucket and no message is lost or repeated.
#[test]
fn concurrent_bucket_upserts_never_open_two_buckets_or_lose_a_message() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 120;
    const BUCKET: i32 = 50;
    let dir = std::env::temp_dir().join(format!("odm-buckets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("inbox.redb");
    let _ = std::fs::remove_file(&path);
    let db = Database::open(&path).unwrap();
    db.collection("inbox")
        .create_index(
            IndexSpec::new([
                ("recipient", Direction::Ascending),
                ("count", Direction::Ascending),
            ])
            .unwrap(),
        )
        .unwrap();
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let db = db.clone();
            scope.spawn(move || {
                for i in 0..PER_THREAD {
                    let message = format!("t{thread}-m{i}");
                    db.collection("inbox")
                        .update_one(
                            &doc! { "recipient": "ann", "count": { "$lt": BUCKET } },
                            &doc! {
                                "$inc": { "count": 1 },
                                "$push": { "messages": &message },
                                "$setOnInsert": { "created": i as i64 },
                            },
                            &UpdateOptions {
                                upsert: true,
                                ..UpdateOptions::default()
                            },
                        )
                        .unwrap();
                }
            });
        }
    });
    let buckets = all(&db, "inbox");
    let total = THREADS * PER_THREAD;
    let open: Vec<&Document> = buckets
        .iter()
        .filter(|b| b.get_i32("count").unwrap() < BUCKET)
        .collect();
    assert!(open.len() <= 1, "{} open buckets", open.len());
    assert_eq!(buckets.len(), total.div_ceil(BUCKET as usize));
    let mut messages: Vec<String> = Vec::new();
    for bucket in &buckets {
        let items = bucket.get_array("messages").unwrap();
        assert_eq!(items.len() as i32, bucket.get_i32("count").unwrap());
        messages.extend(items.iter().map(|m| m.as_str().unwrap().to_owned()));
    }
    messages.sort();
    let mut expected: Vec<String> = (0..THREADS)
        .flat_map(|t| (0..PER_THREAD).map(move |i| format!("t{t}-m{i}")))
        .collect();
    expected.sort();
    assert_eq!(messages, expected);
    assert!(db.verify().unwrap().is_clean());
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bulk_write_across_collections_reports_each_operation_and_stops_when_ordered() {
    let db = Database::in_memory().unwrap();
    db.collection("a").insert_one(&doc! { "_id": 1 }).unwrap();
    let ops = || {
        vec![
            ("a".to_owned(), WriteOp::InsertOne(doc! { "_id": 2 })),
            (
                "b".to_owned(),
                WriteOp::UpdateOne {
                    filter: doc! { "_id": 7 },
                    update: doc! { "$set": { "x": 1 } }.into(),
                    options: UpdateOptions {
                        upsert: true,
                        ..UpdateOptions::default()
                    },
                },
            ),
            // A duplicate `_id` in `a`: the failing operation.
            ("a".to_owned(), WriteOp::InsertOne(doc! { "_id": 1 })),
            (
                "b".to_owned(),
                WriteOp::DeleteMany {
                    filter: doc! {},
                    options: DeleteOptions::default(),
                },
            ),
        ]
    };
    let ordered = db
        .write(|t| t.bulk_write_across(ops(), true, None))
        .unwrap();
    assert_eq!(ordered.failures.len(), 1);
    assert_eq!(ordered.failures[0].0, 2);
    assert_eq!(
        ordered.results,
        [
            (0, OpResult::Inserted(Bson::Int32(2))),
            (
                1,
                OpResult::Updated(UpdateResult {
                    matched: 0,
                    modified: 0,
                    upserted_id: Some(Bson::Int32(7)),
                })
            ),
        ]
    );
    // The operations before the failure stay; the one after did not run.
    let txn = db.read().unwrap();
    assert_eq!(txn.collection("a").unwrap().unwrap().len().unwrap(), 2);
    assert_eq!(txn.collection("b").unwrap().unwrap().len().unwrap(), 1);
    drop(txn);
    // Unordered: it goes on past the failure (the upsert now matches, the delete runs).
    let unordered = db
        .write(|t| t.bulk_write_across(ops()[1..].to_vec(), false, None))
        .unwrap();
    assert_eq!(unordered.failures.len(), 1);
    assert_eq!(unordered.deleted, 1);
    assert!(db.verify().unwrap().is_clean());
}

/// An all-or-nothing `update_many` over a collection with a unique index keeps what it replaces
/// in a scratch table of the transaction, never committed: after a refused and a successful
/// update, the file holds no such table, and the collection is as each outcome says.
#[test]
fn the_undo_table_of_update_many_never_reaches_the_file() {
    let dir = std::env::temp_dir().join(format!("odm-undo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("undo.odm");
    let _ = std::fs::remove_file(&path);
    {
        let db = Database::open(&path).unwrap();
        let c = db.collection("c");
        c.create_index(IndexSpec::ascending("n").unwrap().unique())
            .unwrap();
        c.insert_many((1..=20).map(|i| doc! { "_id": i, "n": i }), true)
            .unwrap();
        let before = all(&db, "c");
        // 1 becomes 2 while 2 still holds it: refused part way, everything put back.
        assert!(
            c.update_many(
                &doc! {},
                doc! { "$inc": { "n": 1 } },
                &UpdateOptions::default()
            )
            .is_err()
        );
        assert_eq!(all(&db, "c"), before);
        // Downwards in `_id` order every new key is free when written.
        let result = c
            .update_many(
                &doc! {},
                doc! { "$inc": { "n": -1 } },
                &UpdateOptions::default(),
            )
            .unwrap();
        assert_eq!(result.modified, 20);
        assert!(db.verify().unwrap().is_clean());
    }
    let raw = redb::Database::open(&path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&raw).unwrap();
    let names: Vec<String> = txn
        .list_tables()
        .unwrap()
        .map(|t| redb::TableHandle::name(&t).to_owned())
        .collect();
    assert!(names.iter().all(|n| n != "odm.undo"), "{names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
