//! Change streams over the engine's change log (see `odm_engine::changes`): every event type
//! and option, resume points, the history-lost error, transactions, restarts, and a property
//! test that replaying a collection's log rebuilds it document for document.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{Bson, Document, doc};
use odm_engine::changes::{
    ChangeLogOptions, ChangeStream, ChangeStreamOptions, FullDocument, FullDocumentBeforeChange,
    ResumeToken, Scope, Start, clock, diff,
};
use odm_engine::update::UpdateOptions;
use odm_engine::{CollectionOptions, Database, Direction, Error, IndexSpec, ShardKey};
use proptest::prelude::*;

fn options(start: Start) -> ChangeStreamOptions {
    ChangeStreamOptions {
        start,
        db_name: "app".to_owned(),
        ..ChangeStreamOptions::default()
    }
}

fn watch(db: &Database, coll: &str) -> ChangeStream {
    ChangeStream::open(db, Scope::Collection(coll.to_owned()), options(Start::Now)).unwrap()
}

/// A stream on collection `c` resuming after `token`.
fn resume(db: &Database, token: ResumeToken) -> odm_engine::Result<ChangeStream> {
    ChangeStream::open(
        db,
        Scope::Collection("c".into()),
        options(Start::ResumeAfter(token)),
    )
}

fn all(stream: &mut ChangeStream) -> Vec<Document> {
    let mut out = Vec::new();
    loop {
        let batch = stream.try_next_batch(3).unwrap();
        if batch.is_empty() {
            return out;
        }
        out.extend(batch);
    }
}

fn ops(events: &[Document]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e.get_str("operationType").unwrap())
        .collect()
}

fn ids_of(events: &[Document]) -> Vec<i32> {
    events
        .iter()
        .map(|e| {
            e.get_document("documentKey")
                .unwrap()
                .get_i32("_id")
                .unwrap()
        })
        .collect()
}

fn without_volatile(event: &Document) -> Document {
    let mut e = event.clone();
    for field in ["_id", "clusterTime", "wallTime"] {
        assert!(e.remove(field).is_some(), "{event} has no {field}");
    }
    e
}

#[test]
fn document_events_have_mongodbs_shape() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! {"_id": 0}).unwrap();
    let mut stream = watch(&db, "c");
    c.insert_one(doc! {"_id": 1, "a": 1, "arr": [1, 2, 3]})
        .unwrap();
    c.update_one(
        &doc! {"_id": 1},
        doc! {"$set": {"a": 2, "b.c": true}, "$pop": {"arr": 1}},
        &UpdateOptions::default(),
    )
    .unwrap();
    c.replace_one(&doc! {"_id": 1}, &doc! {"z": 1}, &UpdateOptions::default())
        .unwrap();
    c.delete_one(&doc! {"_id": 1}).unwrap();
    let events = all(&mut stream);
    let shapes: Vec<Document> = events.iter().map(without_volatile).collect();
    assert_eq!(
        shapes,
        vec![
            doc! {
                "operationType": "insert",
                "fullDocument": {"_id": 1, "a": 1, "arr": [1, 2, 3]},
                "ns": {"db": "app", "coll": "c"},
                "documentKey": {"_id": 1},
            },
            doc! {
                "operationType": "update",
                "ns": {"db": "app", "coll": "c"},
                "documentKey": {"_id": 1},
                "updateDescription": {
                    "updatedFields": {"a": 2, "b": {"c": true}},
                    "removedFields": [],
                    "truncatedArrays": [{"field": "arr", "newSize": 2}],
                },
            },
            doc! {
                "operationType": "replace",
                "fullDocument": {"_id": 1, "z": 1},
                "ns": {"db": "app", "coll": "c"},
                "documentKey": {"_id": 1},
            },
            doc! {
                "operationType": "delete",
                "ns": {"db": "app", "coll": "c"},
                "documentKey": {"_id": 1},
            },
        ]
    );
    // Tokens and cluster times order the events.
    let tokens: Vec<ResumeToken> = events
        .iter()
        .map(|e| ResumeToken::from_bson(e.get("_id").unwrap()).unwrap())
        .collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]));
    assert!(
        events
            .iter()
            .all(|e| matches!(e.get("clusterTime"), Some(Bson::Timestamp(_))))
    );
    assert!(
        events
            .iter()
            .all(|e| matches!(e.get("wallTime"), Some(Bson::DateTime(_))))
    );
    assert_eq!(stream.resume_token(), *tokens.last().unwrap());
}

#[test]
fn a_document_key_holds_the_shard_key() {
    let db = Database::in_memory().unwrap();
    db.write(|w| {
        w.create_collection_with(
            "m",
            CollectionOptions::default().with_shard_key(ShardKey::range(["to"]).unwrap()),
        )
    })
    .unwrap();
    let mut stream = watch(&db, "m");
    db.collection("m")
        .insert_one(doc! {"_id": 1, "body": "hi", "to": "joe"})
        .unwrap();
    let events = all(&mut stream);
    assert_eq!(
        events[0].get_document("documentKey").unwrap(),
        &doc! {"_id": 1, "to": "joe"}
    );
}

#[test]
fn ddl_events_and_invalidate() {
    let db = Database::in_memory().unwrap();
    let expanded = ChangeStreamOptions {
        show_expanded_events: true,
        ..options(Start::Now)
    };
    let mut file = ChangeStream::open(&db, Scope::Database, expanded.clone()).unwrap();
    let mut plain = ChangeStream::open(&db, Scope::Database, options(Start::Now)).unwrap();
    db.write(|w| {
        w.create_collection("a")?;
        w.create_index("a", IndexSpec::new([("x", Direction::Ascending)])?)?;
        w.drop_index("a", "x_1")?;
        w.set_pre_and_post_images("a", true)?;
        w.shard_collection("a", ShardKey::hashed("x")?)?;
        w.rename_collection("a", "b")?;
        w.drop_collection("b")?;
        w.record_drop_database()
    })
    .unwrap();
    let events = all(&mut file);
    assert_eq!(
        ops(&events),
        [
            "create",
            "createIndexes",
            "dropIndexes",
            "modify",
            "shardCollection",
            "rename",
            "drop",
            "dropDatabase",
            "invalidate"
        ]
    );
    assert_eq!(
        events[1].get_document("operationDescription").unwrap(),
        &doc! {"indexes": [{"v": 2, "key": {"x": 1}, "name": "x_1"}]}
    );
    assert_eq!(
        events[5].get_document("to").unwrap(),
        &doc! {"db": "app", "coll": "b"}
    );
    assert_eq!(events[7].get_document("ns").unwrap(), &doc! {"db": "app"});
    assert!(file.is_closed());
    assert!(file.try_next_batch(10).unwrap().is_empty());
    // One transaction: every event shares its cluster time.
    let times: Vec<&Bson> = events[..8]
        .iter()
        .map(|e| e.get("clusterTime").unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] == w[1]));
    // Without expanded events, DDL shows only drop, rename and dropDatabase.
    assert_eq!(
        ops(&all(&mut plain)),
        ["rename", "drop", "dropDatabase", "invalidate"]
    );
}

#[test]
fn a_collection_stream_is_invalidated_and_start_after_goes_on() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! {"_id": 1}).unwrap();
    let mut stream = watch(&db, "c");
    db.write(|w| w.drop_collection("c")).unwrap();
    c.insert_one(doc! {"_id": 2}).unwrap();
    let events = all(&mut stream);
    assert_eq!(ops(&events), ["drop", "invalidate"]);
    let invalidate = ResumeToken::from_bson(events[1].get("_id").unwrap()).unwrap();
    assert!(invalidate.is_invalidate());
    // Resuming after the drop gives the invalidate again, as it would have come.
    let drop_token = ResumeToken::from_bson(events[0].get("_id").unwrap()).unwrap();
    let mut again = resume(&db, drop_token).unwrap();
    assert_eq!(ops(&all(&mut again)), ["invalidate"]);
    let mut after_drop = ChangeStream::open(
        &db,
        Scope::Collection("c".into()),
        options(Start::StartAfter(drop_token)),
    )
    .unwrap();
    assert_eq!(ops(&all(&mut after_drop)), ["invalidate"]);
    // resumeAfter refuses an invalidate token; startAfter resumes past it.
    let err = resume(&db, invalidate).unwrap_err();
    assert_eq!(err.code(), 260, "{err}");
    let mut after = ChangeStream::open(
        &db,
        Scope::Collection("c".into()),
        options(Start::StartAfter(invalidate)),
    )
    .unwrap();
    let events = all(&mut after);
    assert_eq!(ops(&events), ["insert"]);
    // A rename invalidates the stream on the old name.
    let mut renamed = watch(&db, "c");
    db.write(|w| w.rename_collection("c", "d")).unwrap();
    assert_eq!(ops(&all(&mut renamed)), ["rename", "invalidate"]);
}

#[test]
// Long on purpose: every fullDocument option over the same writes, so the table of outcomes reads
// in one place.
#[allow(clippy::too_many_lines)]
fn full_document_options() {
    let db = Database::in_memory().unwrap();
    db.write(|w| {
        w.create_collection_with(
            "img",
            CollectionOptions::default().with_pre_and_post_images(true),
        )?;
        w.create_collection("plain")
    })
    .unwrap();
    let open = |coll: &str, full: FullDocument, before: FullDocumentBeforeChange| {
        ChangeStream::open(
            &db,
            Scope::Collection(coll.to_owned()),
            ChangeStreamOptions {
                full_document: full,
                full_document_before_change: before,
                start: Start::AtOperationTime(bson::Timestamp {
                    time: 0,
                    increment: 1,
                }),
                ..options(Start::Now)
            },
        )
        .unwrap()
    };
    for coll in ["img", "plain"] {
        let c = db.collection(coll);
        c.insert_one(doc! {"_id": 1, "n": 1}).unwrap();
        c.update_one(
            &doc! {"_id": 1},
            doc! {"$inc": {"n": 1}},
            &UpdateOptions::default(),
        )
        .unwrap();
        c.update_one(
            &doc! {"_id": 1},
            doc! {"$inc": {"n": 1}},
            &UpdateOptions::default(),
        )
        .unwrap();
        c.delete_one(&doc! {"_id": 1}).unwrap();
    }
    let updates = |coll: &str, full, before| {
        let mut s = open(coll, full, before);
        all(&mut s)
            .into_iter()
            .filter(|e| e.get_str("operationType").ok() != Some("insert"))
            .collect::<Vec<_>>()
    };
    let field = |events: &[Document], name: &str| -> Vec<Option<Bson>> {
        events.iter().map(|e| e.get(name).cloned()).collect()
    };
    // updateLookup: the document as it is now (deleted: null).
    let e = updates(
        "img",
        FullDocument::UpdateLookup,
        FullDocumentBeforeChange::Off,
    );
    assert_eq!(
        field(&e, "fullDocument"),
        [Some(Bson::Null), Some(Bson::Null), None]
    );
    assert_eq!(field(&e, "fullDocumentBeforeChange"), [None, None, None]);
    // whenAvailable / required with images: the image after each update, before each change.
    let e = updates(
        "img",
        FullDocument::Required,
        FullDocumentBeforeChange::Required,
    );
    assert_eq!(
        field(&e, "fullDocument"),
        [
            Some(doc! {"_id": 1, "n": 2}.into()),
            Some(doc! {"_id": 1, "n": 3}.into()),
            None
        ]
    );
    assert_eq!(
        field(&e, "fullDocumentBeforeChange"),
        [
            Some(doc! {"_id": 1, "n": 1}.into()),
            Some(doc! {"_id": 1, "n": 2}.into()),
            Some(doc! {"_id": 1, "n": 3}.into())
        ]
    );
    // Without images: whenAvailable gives null, required fails by name.
    let e = updates(
        "plain",
        FullDocument::WhenAvailable,
        FullDocumentBeforeChange::WhenAvailable,
    );
    assert_eq!(
        field(&e, "fullDocument"),
        [Some(Bson::Null), Some(Bson::Null), None]
    );
    assert_eq!(
        field(&e, "fullDocumentBeforeChange"),
        vec![Some(Bson::Null); 3]
    );
    for (full, before) in [
        (FullDocument::Required, FullDocumentBeforeChange::Off),
        (FullDocument::Default, FullDocumentBeforeChange::Required),
    ] {
        let err = open("plain", full, before).try_next_batch(10).unwrap_err();
        assert!(matches!(err, Error::NoMatchingDocument(_)), "{err}");
        assert_eq!(err.code(), 47);
    }
}

#[test]
fn resume_after_and_start_at_operation_time() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    let mut stream = watch(&db, "c");
    for i in 0..5 {
        c.insert_one(doc! {"_id": i}).unwrap();
    }
    let events = all(&mut stream);
    let token = ResumeToken::from_bson(events[1].get("_id").unwrap()).unwrap();
    let mut resumed = resume(&db, token).unwrap();
    assert_eq!(ids_of(&all(&mut resumed)), [2, 3, 4]);
    let at = events[3].get_timestamp("clusterTime").unwrap();
    let mut from_time = ChangeStream::open(
        &db,
        Scope::Collection("c".into()),
        options(Start::AtOperationTime(at)),
    )
    .unwrap();
    assert_eq!(all(&mut from_time).len(), 2);
    // A stream that starts now sees nothing of the past, and its token is a high-water mark
    // that resumes to the same place.
    let mut now = watch(&db, "c");
    assert!(now.try_next_batch(10).unwrap().is_empty());
    let mark = now.resume_token();
    c.insert_one(doc! {"_id": 9}).unwrap();
    let mut from_mark = resume(&db, mark).unwrap();
    assert_eq!(all(&mut from_mark).len(), 1);
}

#[test]
fn history_lost_when_the_log_was_trimmed() {
    let db = Database::in_memory().unwrap();
    db.set_change_log(ChangeLogOptions {
        max_bytes: 2_000,
        ..ChangeLogOptions::default()
    })
    .unwrap();
    let c = db.collection("c");
    c.insert_one(doc! {"_id": 0}).unwrap();
    let mut slow = watch(&db, "c");
    let early = slow.resume_token();
    for i in 1..200 {
        c.insert_one(doc! {"_id": i, "pad": "x".repeat(50)})
            .unwrap();
    }
    let err = slow.try_next_batch(10).unwrap_err();
    assert!(
        matches!(err, Error::ChangeStreamHistoryLost { .. }),
        "{err}"
    );
    assert_eq!(err.code(), 286);
    assert_eq!(err.code_name(), "ChangeStreamHistoryLost");
    let err = resume(&db, early).unwrap_err();
    assert_eq!(err.code(), 286);
    // A stream opened now reads on.
    let mut now = watch(&db, "c");
    c.insert_one(doc! {"_id": 1000}).unwrap();
    assert_eq!(ids_of(&all(&mut now)), [1000]);
}

#[test]
fn the_log_off_records_nothing_and_on_again_starts_history_anew() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! {"_id": 0}).unwrap();
    let mut stream = watch(&db, "c");
    let before = stream.resume_token();
    db.set_change_log(ChangeLogOptions {
        enabled: false,
        ..ChangeLogOptions::default()
    })
    .unwrap();
    c.insert_one(doc! {"_id": 1}).unwrap();
    assert!(stream.try_next_batch(10).unwrap().is_empty());
    db.set_change_log(ChangeLogOptions::default()).unwrap();
    // Trimming the records from before the gap never moves the trim point back before it.
    db.set_change_log(ChangeLogOptions {
        max_bytes: 1,
        ..ChangeLogOptions::default()
    })
    .unwrap();
    c.insert_one(doc! {"_id": "trims"}).unwrap();
    db.set_change_log(ChangeLogOptions::default()).unwrap();
    let err = resume(&db, before).unwrap_err();
    assert_eq!(err.code(), 286, "a resume across the gap must fail: {err}");
    let mut now = watch(&db, "c");
    c.insert_one(doc! {"_id": 2}).unwrap();
    assert_eq!(all(&mut now).len(), 1);
}

#[test]
fn transactions_emit_only_after_commit_and_nothing_after_abort() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(
        IndexSpec::new([("u", Direction::Ascending)])
            .unwrap()
            .unique(),
    )
    .unwrap();
    c.insert_many([doc! {"_id": 1, "u": 1}, doc! {"_id": 2, "u": 2}], true)
        .unwrap();
    let mut stream = watch(&db, "c");
    let aborted: Result<(), Error> = db.write(|w| {
        w.insert_one("c", doc! {"_id": 3})?;
        Err(Error::ChangeStreamFatal("abort".into()))
    });
    assert!(aborted.is_err());
    assert!(stream.try_next_batch(10).unwrap().is_empty());
    // An update_many undone inside a committing transaction leaves no events.
    db.write(|w| {
        let failed = w.update_many(
            "c",
            &doc! {},
            doc! {"$set": {"u": 7}},
            &UpdateOptions::default(),
        );
        assert!(matches!(failed, Err(Error::DuplicateKey { .. })));
        w.insert_one("c", doc! {"_id": 4, "u": 4})?;
        w.set_change_context(&doc! {"lsid": {"id": 1}, "txnNumber": 5_i64})?;
        w.insert_one("c", doc! {"_id": 5, "u": 5})
    })
    .unwrap();
    let events = all(&mut stream);
    assert_eq!(ops(&events), ["insert", "insert"]);
    assert_eq!(events[0].get("clusterTime"), events[1].get("clusterTime"));
    assert_eq!(events[1].get_i64("txnNumber").ok(), Some(5));
    // Events wait for the commit: a reader in another thread sees the insert only then.
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = {
        let db = db.clone();
        std::thread::spawn(move || {
            let mut s = watch(&db, "c");
            tx.send(()).unwrap();
            s.next_batch(10, Duration::from_secs(20)).unwrap()
        })
    };
    rx.recv().unwrap();
    c.insert_one(doc! {"_id": 6, "u": 6}).unwrap();
    let got = reader.join().unwrap();
    assert_eq!(ops(&got), ["insert"]);
}

/// A stream of collection `c` from now, through `pipeline`.
fn with_pipeline(db: &Database, pipeline: Vec<Document>) -> odm_engine::Result<ChangeStream> {
    ChangeStream::open(
        db,
        Scope::Collection("c".into()),
        ChangeStreamOptions {
            pipeline,
            ..options(Start::Now)
        },
    )
}

#[test]
fn a_pipeline_shapes_events_and_must_keep_their_token() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    let open = |pipeline: Vec<Document>| with_pipeline(&db, pipeline);
    let mut only_updates = open(vec![
        doc! {"$match": {"operationType": "update"}},
        doc! {"$project": {"documentKey": 1}},
        doc! {"$addFields": {"seen": true}},
    ])
    .unwrap();
    let mut broken = open(vec![doc! {"$unset": "_id"}]).unwrap();
    c.insert_one(doc! {"_id": 1}).unwrap();
    c.update_one(
        &doc! {"_id": 1},
        doc! {"$set": {"a": 1}},
        &UpdateOptions::default(),
    )
    .unwrap();
    let events = all(&mut only_updates);
    assert_eq!(events.len(), 1);
    assert_eq!(
        without_id(&events[0]),
        doc! {"documentKey": {"_id": 1}, "seen": true}
    );
    let err = broken.try_next_batch(10).unwrap_err();
    assert_eq!(err.code(), 280, "{err}");
    for stage in [doc! {"$group": {"_id": null}}, doc! {"$sort": {"a": 1}}] {
        let err = open(vec![stage]).unwrap_err();
        assert_eq!(err.code(), 20, "{err}");
    }
}

#[test]
fn every_allowed_stage_shapes_events() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    let with = |stages: Vec<Document>| with_pipeline(&db, stages).unwrap();
    let mut streams = [
        with(vec![
            doc! {"$set": {"seen": 1}},
            doc! {"$unset": ["ns", "wallTime", "clusterTime"]},
        ]),
        with(vec![
            doc! {"$replaceRoot": {"newRoot": {"_id": "$_id", "op": "$operationType"}}},
        ]),
        with(vec![
            doc! {"$replaceWith": {"_id": "$_id", "key": "$documentKey._id"}},
        ]),
        with(vec![doc! {"$redact": {"$cond": [
            {"$eq": ["$operationType", "delete"]}, "$$KEEP", "$$PRUNE"
        ]}}]),
    ];
    c.insert_one(doc! {"_id": 7}).unwrap();
    c.delete_one(&doc! {"_id": 7}).unwrap();
    let shapes: Vec<Vec<Document>> = streams
        .iter_mut()
        .map(|s| all(s).iter().map(without_id).collect())
        .collect();
    assert_eq!(
        shapes[0][0],
        doc! {"operationType": "insert", "fullDocument": {"_id": 7}, "documentKey": {"_id": 7}, "seen": 1}
    );
    assert_eq!(shapes[1], [doc! {"op": "insert"}, doc! {"op": "delete"}]);
    assert_eq!(shapes[2], [doc! {"key": 7}, doc! {"key": 7}]);
    assert_eq!(shapes[3].len(), 1);
    assert_eq!(shapes[3][0].get_str("operationType").unwrap(), "delete");
}

fn without_id(d: &Document) -> Document {
    let mut d = d.clone();
    d.remove("_id");
    d
}

#[test]
fn a_stream_resumes_after_a_restart() {
    let path = common::temp_path("restart.odm");
    let token = {
        let db = Database::open(&path).unwrap();
        let c = db.collection("c");
        let mut s = watch(&db, "c");
        c.insert_one(doc! {"_id": 1}).unwrap();
        c.insert_one(doc! {"_id": 2}).unwrap();
        let first = s.try_next_batch(1).unwrap();
        ResumeToken::from_bson(first[0].get("_id").unwrap()).unwrap()
    };
    let db = Database::open(&path).unwrap();
    let mut resumed = resume(&db, token).unwrap();
    db.collection("c").insert_one(doc! {"_id": 3}).unwrap();
    assert_eq!(ids_of(&all(&mut resumed)), [2, 3]);
    drop(db);
    let _ = std::fs::remove_file(&path);
}

/// The log keeps its newest records in a small table and moves them into the main one in
/// bulk (every 32): reads, resumes, restarts and trimming see one log in commit order across
/// the moves.
#[test]
fn a_long_history_reads_in_order_across_the_logs_two_tables() {
    let path = common::temp_path("long.odm");
    let n = 150;
    let tokens: Vec<ResumeToken> = {
        let db = Database::open(&path).unwrap();
        let c = db.collection("c");
        let mut stream = watch(&db, "c");
        let mut events = Vec::new();
        for i in 0..n {
            c.insert_one(doc! {"_id": i}).unwrap();
            // Read while writing, too: a batch may end on either side of a move.
            if i % 7 == 0 {
                events.extend(stream.try_next_batch(5).unwrap());
            }
        }
        events.extend(all(&mut stream));
        assert_eq!(ids_of(&events), (0..n).collect::<Vec<_>>());
        events
            .iter()
            .map(|e| ResumeToken::from_bson(e.get("_id").unwrap()).unwrap())
            .collect()
    };
    let db = Database::open(&path).unwrap();
    for (i, token) in tokens.iter().enumerate().step_by(13) {
        let mut resumed = resume(&db, *token).unwrap();
        let expected: Vec<i32> = (i as i32 + 1..n).collect();
        assert_eq!(ids_of(&all(&mut resumed)), expected, "after {i}");
    }
    // Trimming takes the oldest records first, whichever table holds them.
    db.set_change_log(ChangeLogOptions {
        max_bytes: 3_000,
        ..ChangeLogOptions::default()
    })
    .unwrap();
    db.collection("c").insert_one(doc! {"_id": n}).unwrap();
    let err = resume(&db, tokens[0]).unwrap_err();
    assert_eq!(err.code(), 286);
    let kept = tokens.iter().position(|t| resume(&db, *t).is_ok()).unwrap();
    let mut rest = resume(&db, tokens[kept]).unwrap();
    let expected: Vec<i32> = (kept as i32 + 1..=n).collect();
    assert_eq!(ids_of(&all(&mut rest)), expected);
    assert!(kept > 0 && kept < n as usize - 1, "kept from {kept}");
    drop(db);
    let _ = std::fs::remove_file(&path);
}

/// One write of the replay property.
#[derive(Debug, Clone)]
enum Op {
    Insert(i32, Document),
    Update(i32, Document),
    Replace(i32, Document),
    /// A pipeline update, which may reorder fields.
    Pipeline(i32, Vec<Document>),
    Delete(i32),
}

fn fields() -> impl Strategy<Value = Document> {
    prop::collection::vec((common::key(), common::value()), 0..4).prop_map(|f| {
        let mut d = Document::new();
        for (k, v) in f {
            if !k.is_empty() {
                d.insert(k, v);
            }
        }
        d
    })
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0..6i32;
    let path = prop::sample::select(vec!["a", "b", "a.b", "c.0", "arr"]);
    let update = prop_oneof![
        (path.clone(), common::value()).prop_map(|(p, v)| doc! {"$set": {p: v}}),
        path.clone().prop_map(|p| doc! {"$unset": {p: ""}}),
        path.clone().prop_map(|p| doc! {"$inc": {p: 1}}),
        (path.clone(), common::value()).prop_map(|(p, v)| doc! {"$push": {p: v}}),
        path.prop_map(|p| doc! {"$pop": {p: 1}}),
    ];
    prop_oneof![
        (id.clone(), fields()).prop_map(|(i, d)| Op::Insert(i, d)),
        (id.clone(), update).prop_map(|(i, u)| Op::Update(i, u)),
        (id.clone(), fields()).prop_map(|(i, d)| Op::Replace(i, d)),
        (id.clone(), common::value()).prop_map(|(i, v)| Op::Pipeline(
            i,
            vec![doc! {"$replaceWith": {"$mergeObjects": [{"first": {"$literal": v}}, "$$ROOT"]}}]
        )),
        (id.clone(), fields()).prop_map(|(i, d)| Op::Update(i, doc! {"$set": d})),
        id.prop_map(Op::Delete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Replaying the whole log of a collection created inside the window, from empty,
    /// rebuilds it document for document (field order included).
    #[test]
    fn replaying_the_log_rebuilds_the_collection(ops in prop::collection::vec(op(), 1..40)) {
        let db = Database::in_memory().unwrap();
        let start = clock::tick();
        db.write(|w| w.create_collection("c")).unwrap();
        let c = db.collection("c");
        for op in ops {
            // Refused writes (a duplicate _id, $inc on a string) must leave no event.
            let _ = match op {
                Op::Insert(id, mut d) => {
                    d.insert("_id", id);
                    c.insert_one(d).map(drop)
                }
                Op::Update(id, u) => c.update_one(&doc! {"_id": id}, u, &UpdateOptions::default()).map(drop),
                Op::Replace(id, d) => c.replace_one(&doc! {"_id": id}, &d, &UpdateOptions::default()).map(drop),
                Op::Pipeline(id, p) => c.update_one(&doc! {"_id": id}, p, &UpdateOptions::default()).map(drop),
                Op::Delete(id) => c.delete_one(&doc! {"_id": id}).map(drop),
            };
        }
        let mut stream = ChangeStream::open(
            &db,
            Scope::Collection("c".into()),
            options(Start::AtOperationTime(start)),
        ).unwrap();
        let mut replayed: BTreeMap<String, Document> = BTreeMap::new();
        for event in all(&mut stream) {
            let key = event.get_document("documentKey").map(|k| k.get("_id").unwrap().to_string());
            match event.get_str("operationType").unwrap() {
                "insert" | "replace" => {
                    replayed.insert(key.unwrap(), event.get_document("fullDocument").unwrap().clone());
                }
                "update" => {
                    let doc = replayed.get_mut(&key.unwrap()).expect("an update of a known document");
                    diff::apply(doc, event.get_document("updateDescription").unwrap()).unwrap();
                }
                "delete" => {
                    replayed.remove(&key.unwrap());
                }
                other => prop_assert!(false, "unexpected {other}"),
            }
        }
        let snapshot = db.read().unwrap();
        let coll = snapshot.collection("c").unwrap().unwrap();
        let mut stored: BTreeMap<String, Document> = BTreeMap::new();
        for doc in coll.scan().unwrap() {
            let doc = Document::try_from(doc.unwrap().as_raw().unwrap()).unwrap();
            stored.insert(doc.get("_id").unwrap().to_string(), doc);
        }
        // Compared as bytes: `Document`'s `==` ignores field order.
        let bytes = |m: BTreeMap<String, Document>| -> BTreeMap<String, Vec<u8>> {
            m.into_iter()
                .map(|(k, d)| (k, bson::RawDocumentBuf::try_from(&d).unwrap().into_bytes()))
                .collect()
        };
        prop_assert_eq!(bytes(replayed), bytes(stored));
    }
}

/// A batch of large events is cut once it holds 16 MiB, not after reading as many events as
/// asked for: 40 inserts of 1 MiB come in batches of at most 17, and all of them come.
#[test]
fn a_batch_stops_at_sixteen_mib_of_events() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    let mut stream = watch(&db, "c");
    for i in 0..40 {
        c.insert_one(doc! {"_id": i, "pad": "x".repeat(1 << 20)})
            .unwrap();
    }
    let mut seen = 0;
    loop {
        let batch = stream.try_next_batch(10_000).unwrap();
        if batch.is_empty() {
            break;
        }
        assert!(batch.len() <= 17, "a batch of {} events", batch.len());
        seen += batch.len();
    }
    assert_eq!(seen, 40);
}
