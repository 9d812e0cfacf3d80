//! Change streams through `odm serve` and the official Rust driver's `watch()`: collection,
//! database and deployment streams, resume tokens (also across a restart of the server),
//! invalidate and `startAfter`, transactions, images, awaiting `getMore`, and MongoDB's
//! refusals.

use std::time::Duration;

use bson::{Document, doc};
use mongodb::change_stream::event::ResumeToken;
use mongodb::error::ErrorKind;
use mongodb::options::{ClientOptions, FullDocumentBeforeChangeType, FullDocumentType};
use mongodb::sync::Client;
use odm_server::{Config, Server, ServerHandle, Storage};

fn start(storage: Storage) -> ServerHandle {
    let config = Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        replica_set: Some("rs0".into()),
        ..Config::default()
    };
    Server::bind(storage, config).expect("binds").spawn()
}

fn client(server: &ServerHandle) -> Client {
    let mut options = ClientOptions::parse(server.uri())
        .run()
        .expect("a valid uri");
    options.server_selection_timeout = Some(Duration::from_secs(5));
    Client::with_options(options).expect("client")
}

fn code_of(e: &mongodb::error::Error) -> Option<i32> {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        _ => None,
    }
}

/// The next event, waiting for it (each `getMore` waits up to a second).
fn next(stream: &mut mongodb::sync::ChangeStream<Document>) -> Document {
    for _ in 0..20 {
        if let Some(event) = stream.next_if_any().expect("the stream reads") {
            return event;
        }
    }
    panic!("no event arrived");
}

/// The `_id`s (in `documentKey`) of the next `n` events.
fn next_ids(stream: &mut mongodb::sync::ChangeStream<Document>, n: usize) -> Vec<i32> {
    (0..n)
        .map(|_| {
            next(stream)
                .get_document("documentKey")
                .unwrap()
                .get_i32("_id")
                .unwrap()
        })
        .collect()
}

fn shape(event: &Document) -> Document {
    let mut e = event.clone();
    for field in ["_id", "clusterTime", "wallTime"] {
        assert!(e.remove(field).is_some(), "{event} lacks {field}");
    }
    e
}

#[test]
fn a_collection_stream_sees_every_write_in_mongodbs_shape() {
    let server = start(Storage::in_memory());
    let c = client(&server)
        .database("shop")
        .collection::<Document>("items");
    c.insert_one(doc! {"_id": 0}).run().unwrap();
    let mut stream = c
        .watch()
        .max_await_time(Duration::from_millis(500))
        .run()
        .unwrap()
        .with_type::<Document>();
    c.insert_one(doc! {"_id": 1, "n": 1, "tags": ["a", "b"]})
        .run()
        .unwrap();
    c.update_one(
        doc! {"_id": 1},
        doc! {"$inc": {"n": 1}, "$unset": {"tags": ""}},
    )
    .run()
    .unwrap();
    c.replace_one(doc! {"_id": 1}, doc! {"n": 10})
        .run()
        .unwrap();
    c.delete_one(doc! {"_id": 1}).run().unwrap();
    let ns = doc! {"db": "shop", "coll": "items"};
    let events: Vec<Document> = (0..4).map(|_| next(&mut stream)).collect();
    assert_eq!(
        events.iter().map(shape).collect::<Vec<_>>(),
        vec![
            doc! {"operationType": "insert", "fullDocument": {"_id": 1, "n": 1, "tags": ["a", "b"]}, "ns": ns.clone(), "documentKey": {"_id": 1}},
            doc! {"operationType": "update", "ns": ns.clone(), "documentKey": {"_id": 1}, "updateDescription": {"updatedFields": {"n": 2}, "removedFields": ["tags"], "truncatedArrays": []}},
            doc! {"operationType": "replace", "fullDocument": {"_id": 1, "n": 10}, "ns": ns.clone(), "documentKey": {"_id": 1}},
            doc! {"operationType": "delete", "ns": ns, "documentKey": {"_id": 1}},
        ]
    );
    // The driver's resume token is the last event's `_id` (or a later batch token).
    let token = stream.resume_token().unwrap();
    let last_id: ResumeToken =
        bson::deserialize_from_bson(events[3].get("_id").unwrap().clone()).unwrap();
    assert_eq!(token, last_id);
}

#[test]
fn resume_tokens_resume_after_and_start_after_an_invalidate() {
    let server = start(Storage::in_memory());
    let client = client(&server);
    let c = client.database("app").collection::<Document>("c");
    let mut stream = c.watch().run().unwrap().with_type::<Document>();
    for i in 0..3 {
        c.insert_one(doc! {"_id": i}).run().unwrap();
    }
    let first = next(&mut stream);
    let token: ResumeToken =
        bson::deserialize_from_bson(first.get("_id").unwrap().clone()).unwrap();
    let mut resumed = c
        .watch()
        .resume_after(token)
        .run()
        .unwrap()
        .with_type::<Document>();
    let ids = next_ids(&mut resumed, 2);
    assert_eq!(ids, [1, 2]);
    // Dropping the collection: drop, then invalidate, and the cursor is closed.
    c.drop().run().unwrap();
    let drop_event = next(&mut resumed);
    assert_eq!(drop_event.get_str("operationType").unwrap(), "drop");
    let invalidate = next(&mut resumed);
    assert_eq!(invalidate.get_str("operationType").unwrap(), "invalidate");
    assert!(!resumed.is_alive());
    let invalidate_token: ResumeToken =
        bson::deserialize_from_bson(invalidate.get("_id").unwrap().clone()).unwrap();
    // resumeAfter refuses an invalidate's token; startAfter goes on past it.
    let err = c
        .watch()
        .resume_after(invalidate_token.clone())
        .run()
        .map(drop)
        .unwrap_err();
    assert_eq!(code_of(&err), Some(260), "{err}");
    c.insert_one(doc! {"_id": "again"}).run().unwrap();
    let mut after = c
        .watch()
        .start_after(invalidate_token)
        .run()
        .unwrap()
        .with_type::<Document>();
    let event = next(&mut after);
    assert_eq!(event.get_str("operationType").unwrap(), "insert");
    assert_eq!(
        event.get_document("documentKey").unwrap(),
        &doc! {"_id": "again"}
    );
}

#[test]
fn database_and_deployment_streams_merge_files_in_order() {
    let server = start(Storage::in_memory());
    let client = client(&server);
    let mut all = client.watch().run().unwrap().with_type::<Document>();
    let mut one = client
        .database("one")
        .watch()
        .run()
        .unwrap()
        .with_type::<Document>();
    for i in 0..4 {
        let db = if i % 2 == 0 { "one" } else { "two" };
        client
            .database(db)
            .collection::<Document>("c")
            .insert_one(doc! {"_id": i})
            .run()
            .unwrap();
    }
    let seen: Vec<(String, i32)> = (0..4)
        .map(|_| {
            let e = next(&mut all);
            (
                e.get_document("ns")
                    .unwrap()
                    .get_str("db")
                    .unwrap()
                    .to_owned(),
                e.get_document("documentKey")
                    .unwrap()
                    .get_i32("_id")
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("one".into(), 0),
            ("two".into(), 1),
            ("one".into(), 2),
            ("two".into(), 3)
        ]
    );
    let ids = next_ids(&mut one, 2);
    assert_eq!(ids, [0, 2]);
    // dropDatabase: a drop per collection, dropDatabase, then invalidate.
    client.database("one").drop().run().unwrap();
    let ops: Vec<String> = (0..3)
        .map(|_| next(&mut one).get_str("operationType").unwrap().to_owned())
        .collect();
    assert_eq!(ops, ["drop", "dropDatabase", "invalidate"]);
    assert!(
        !client
            .list_database_names()
            .run()
            .unwrap()
            .contains(&"one".to_owned())
    );
}

#[test]
fn transactions_show_their_session_and_aborts_show_nothing() {
    let server = start(Storage::in_memory());
    let client = client(&server);
    let c = client.database("bank").collection::<Document>("accounts");
    c.insert_one(doc! {"_id": "a", "v": 0}).run().unwrap();
    let mut stream = c.watch().run().unwrap().with_type::<Document>();
    let mut session = client.start_session().run().unwrap();
    session.start_transaction().run().unwrap();
    c.insert_one(doc! {"_id": "aborted"})
        .session(&mut session)
        .run()
        .unwrap();
    session.abort_transaction().run().unwrap();
    session.start_transaction().run().unwrap();
    c.insert_one(doc! {"_id": "b"})
        .session(&mut session)
        .run()
        .unwrap();
    c.update_one(doc! {"_id": "a"}, doc! {"$inc": {"v": 5}})
        .session(&mut session)
        .run()
        .unwrap();
    session.commit_transaction().run().unwrap();
    let events: Vec<Document> = (0..2).map(|_| next(&mut stream)).collect();
    assert_eq!(events[0].get_str("operationType").unwrap(), "insert");
    assert_eq!(
        events[0].get_document("documentKey").unwrap(),
        &doc! {"_id": "b"}
    );
    assert_eq!(events[1].get_str("operationType").unwrap(), "update");
    assert_eq!(events[0].get("clusterTime"), events[1].get("clusterTime"));
    for e in &events {
        assert!(e.get_document("lsid").unwrap().contains_key("id"), "{e}");
        assert!(e.get_i64("txnNumber").is_ok(), "{e}");
    }
    assert!(
        stream.next_if_any().unwrap().is_none(),
        "the aborted insert shows nothing"
    );
}

#[test]
fn images_and_update_lookup() {
    let server = start(Storage::in_memory());
    let db = client(&server).database("app");
    db.run_command(doc! {"create": "img", "changeStreamPreAndPostImages": {"enabled": true}})
        .run()
        .unwrap();
    let c = db.collection::<Document>("img");
    let mut images = c
        .watch()
        .full_document(FullDocumentType::Required)
        .full_document_before_change(FullDocumentBeforeChangeType::Required)
        .run()
        .unwrap()
        .with_type::<Document>();
    let mut lookup = c
        .watch()
        .full_document(FullDocumentType::UpdateLookup)
        .run()
        .unwrap()
        .with_type::<Document>();
    c.insert_one(doc! {"_id": 1, "n": 1}).run().unwrap();
    c.update_one(doc! {"_id": 1}, doc! {"$inc": {"n": 1}})
        .run()
        .unwrap();
    c.update_one(doc! {"_id": 1}, doc! {"$inc": {"n": 1}})
        .run()
        .unwrap();
    let _insert = next(&mut images);
    let update = next(&mut images);
    assert_eq!(
        update.get_document("fullDocument").unwrap(),
        &doc! {"_id": 1, "n": 2}
    );
    assert_eq!(
        update.get_document("fullDocumentBeforeChange").unwrap(),
        &doc! {"_id": 1, "n": 1}
    );
    let _insert = next(&mut lookup);
    // updateLookup reads the document as it is now.
    assert_eq!(
        next(&mut lookup).get_document("fullDocument").unwrap(),
        &doc! {"_id": 1, "n": 3}
    );
    // collMod turns images off: required then fails by name.
    db.run_command(doc! {"collMod": "img", "changeStreamPreAndPostImages": {"enabled": false}})
        .run()
        .unwrap();
    c.update_one(doc! {"_id": 1}, doc! {"$inc": {"n": 1}})
        .run()
        .unwrap();
    let _second = next(&mut images);
    let err = (0..50)
        .find_map(|_| images.next_if_any().err())
        .expect("the stream fails: the update has no post-image");
    assert_eq!(code_of(&err), Some(47), "{err}");
}

#[test]
fn a_waiting_get_more_wakes_on_a_commit() {
    let server = start(Storage::in_memory());
    let c = client(&server)
        .database("app")
        .collection::<Document>("live");
    let mut stream = c
        .watch()
        .max_await_time(Duration::from_secs(30))
        .run()
        .unwrap()
        .with_type::<Document>();
    let writer = {
        let c = c.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            c.insert_one(doc! {"_id": "now"}).run().unwrap();
        })
    };
    // Each getMore waits (up to 30 s) for the event the writer commits 200 ms later, so
    // it arrives within a call or two; a getMore that answered at once would need many.
    let mut calls = 0;
    let event = loop {
        calls += 1;
        if let Some(event) = stream.next_if_any().unwrap() {
            break event;
        }
        assert!(calls < 4, "getMore answered without waiting");
    };
    assert_eq!(
        event.get_document("documentKey").unwrap(),
        &doc! {"_id": "now"}
    );
    writer.join().unwrap();
}

#[test]
fn a_stream_resumes_after_the_server_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let token = {
        let server = start(Storage::in_folder(dir.path().to_owned()));
        let c = client(&server).database("app").collection::<Document>("c");
        let mut stream = c.watch().run().unwrap().with_type::<Document>();
        c.insert_one(doc! {"_id": 1}).run().unwrap();
        c.insert_one(doc! {"_id": 2}).run().unwrap();
        let first = next(&mut stream);
        bson::deserialize_from_bson::<ResumeToken>(first.get("_id").unwrap().clone()).unwrap()
    };
    let server = start(Storage::in_folder(dir.path().to_owned()));
    let c = client(&server).database("app").collection::<Document>("c");
    // The stopped server's connection threads let go of the file a moment after it stops.
    let mut attempts = 0;
    let mut resumed = loop {
        match c.watch().resume_after(token.clone()).run() {
            Ok(stream) => break stream.with_type::<Document>(),
            Err(e) if code_of(&e) == Some(20) && attempts < 50 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("{e}"),
        }
    };
    c.insert_one(doc! {"_id": 3}).run().unwrap();
    let ids = next_ids(&mut resumed, 2);
    assert_eq!(ids, [2, 3]);
}

#[test]
fn refusals_carry_mongodbs_codes() {
    // A standalone server has no change streams.
    let standalone = Server::bind(
        Storage::in_memory(),
        Config {
            bind: "127.0.0.1:0".parse().unwrap(),
            ..Config::default()
        },
    )
    .unwrap()
    .spawn();
    let db = client(&standalone).database("app");
    let run = |db: &mongodb::sync::Database, command: Document| {
        db.run_command(command).run().map(drop).unwrap_err()
    };
    let err = run(
        &db,
        doc! {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}},
    );
    assert_eq!(code_of(&err), Some(40573), "{err}");
    let server = start(Storage::in_memory());
    let client = client(&server);
    let db = client.database("app");
    for (command, code) in [
        (
            doc! {"aggregate": "c", "pipeline": [{"$match": {}}, {"$changeStream": {}}], "cursor": {}},
            40602,
        ),
        (
            doc! {"aggregate": "c", "pipeline": [{"$changeStream": {}}, {"$group": {"_id": null}}], "cursor": {}},
            20,
        ),
        (
            doc! {"aggregate": "c", "pipeline": [{"$changeStream": {"bogus": 1}}], "cursor": {}},
            40415,
        ),
        (
            doc! {"aggregate": "c", "pipeline": [{"$changeStream": {"resumeAfter": {"_data": "zz"}}}], "cursor": {}},
            260,
        ),
        (
            doc! {"aggregate": 1, "pipeline": [{"$changeStream": {"allChangesForCluster": true}}], "cursor": {}},
            72,
        ),
    ] {
        let err = run(&db, command.clone());
        assert_eq!(code_of(&err), Some(code), "{command}: {err}");
    }
    let err = run(
        &client.database("admin"),
        doc! {"aggregate": 1, "pipeline": [{"$changeStream": {}}], "cursor": {}},
    );
    assert_eq!(code_of(&err), Some(73), "{err}");
}
