//! `odm serve` through the official Rust driver: each command group, cursors, compression,
//! transactions, authentication, TLS, limits and malformed messages.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bson::{Bson, Document, bson, doc};
use mongodb::IndexModel;
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{ClientOptions, IndexOptions};
use mongodb::sync::Client;
use odm_server::{Config, Server, ServerHandle, Storage};

fn start_with(storage: Storage, config: Config) -> ServerHandle {
    let config = Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..config
    };
    Server::bind(storage, config).expect("binds").spawn()
}

fn start() -> ServerHandle {
    start_with(Storage::in_memory(), Config::default())
}

/// An in-memory server with test commands on (`configureFailPoint` and the API's test
/// commands).
fn start_with_test_commands() -> ServerHandle {
    start_with(
        Storage::in_memory(),
        Config {
            test_commands: true,
            ..Config::default()
        },
    )
}

/// An in-memory server that is a one-member replica set (sessions' transactions, snapshot
/// reads, write concerns).
fn start_replica_set() -> ServerHandle {
    start_with(
        Storage::in_memory(),
        Config {
            replica_set: Some("rs0".into()),
            ..Config::default()
        },
    )
}

/// `command` as a statement of transaction `txn` of session `lsid(session)`; the first
/// statement starts it.
fn in_transaction(mut command: Document, session: u32, txn: i64, start: bool) -> Document {
    command.insert("lsid", lsid(session));
    command.insert("txnNumber", txn);
    command.insert("autocommit", false);
    if start {
        command.insert("startTransaction", true);
    }
    command
}

fn client(server: &ServerHandle) -> Client {
    client_at(&server.uri())
}

fn client_at(uri: &str) -> Client {
    let mut options = ClientOptions::parse(uri).run().expect("a valid uri");
    options.server_selection_timeout = Some(Duration::from_secs(5));
    Client::with_options(options).expect("client")
}

/// The raw reply to a command that answers `ok: 1`.
fn command_reply(db: &mongodb::sync::Database, command: Document) -> Document {
    db.run_command(command)
        .run()
        .expect("the command answers ok")
}

fn code_of(e: &mongodb::error::Error) -> Option<i32> {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::InsertMany(m) => m.write_errors.as_ref()?.first().map(|w| w.code),
        _ => None,
    }
}

#[test]
fn crud_through_the_driver_matches_what_was_written() {
    let server = start();
    let c = client(&server)
        .database("shop")
        .collection::<Document>("items");
    let docs: Vec<Document> = (0..500)
        .map(|i| doc! {"_id": i, "k": i % 10, "s": format!("item{i}")})
        .collect();
    assert_eq!(c.insert_many(&docs).run().unwrap().inserted_ids.len(), 500);
    assert_eq!(c.count_documents(doc! {"k": 3}).run().unwrap(), 50);
    // Batches of 7: the cursor pages through getMore and returns every document once, in order.
    let found: Vec<Document> = c
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .batch_size(7)
        .run()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(found, docs);
    let updated = c
        .update_many(doc! {"k": 3}, doc! {"$inc": {"n": 1}})
        .run()
        .unwrap();
    assert_eq!((updated.matched_count, updated.modified_count), (50, 50));
    let upserted = c
        .update_one(doc! {"_id": 1000}, doc! {"$set": {"k": 99}})
        .upsert(true)
        .run()
        .unwrap();
    assert_eq!(upserted.upserted_id, Some(bson::Bson::Int32(1000)));
    assert_eq!(
        c.delete_many(doc! {"k": 4}).run().unwrap().deleted_count,
        50
    );
    let replaced = c
        .replace_one(doc! {"_id": 2}, doc! {"r": true})
        .run()
        .unwrap();
    assert_eq!(replaced.modified_count, 1);
    assert_eq!(
        c.find_one(doc! {"_id": 2}).run().unwrap(),
        Some(doc! {"_id": 2, "r": true})
    );
    let before = c
        .find_one_and_update(doc! {"_id": 5}, doc! {"$set": {"s": "five"}})
        .run()
        .unwrap();
    assert_eq!(before.unwrap().get_str("s").unwrap(), "item5");
    let mut distinct = c.distinct("k", doc! {"k": {"$lt": 3}}).run().unwrap();
    distinct.sort_by_key(bson::Bson::as_i32);
    assert_eq!(
        distinct,
        vec![
            bson::Bson::Int32(0),
            bson::Bson::Int32(1),
            bson::Bson::Int32(2)
        ]
    );
    let grouped: Vec<Document> = c
        .aggregate(vec![
            doc! {"$match": {"k": {"$lte": 1}}},
            doc! {"$group": {"_id": "$k", "n": {"$sum": 1}}},
            doc! {"$sort": {"_id": 1}},
        ])
        .batch_size(1)
        .run()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        grouped,
        vec![doc! {"_id": 0, "n": 50}, doc! {"_id": 1, "n": 50}]
    );
}

#[test]
fn write_errors_carry_their_index_and_code_and_change_nothing_else() {
    let server = start();
    let db = client(&server).database("d");
    let c = db.collection::<Document>("c");
    c.insert_one(doc! {"_id": 1}).run().unwrap();
    let e = c.insert_one(doc! {"_id": 1}).run().unwrap_err();
    assert_eq!(code_of(&e), Some(11000));
    // Unordered: the duplicate at index 1 fails, the others land.
    let e = c
        .insert_many(vec![doc! {"_id": 2}, doc! {"_id": 1}, doc! {"_id": 3}])
        .ordered(false)
        .run()
        .unwrap_err();
    let ErrorKind::InsertMany(failure) = e.kind.as_ref() else {
        panic!("{e}")
    };
    let errors = failure.write_errors.as_ref().unwrap();
    assert_eq!(
        (errors.len(), errors[0].index, errors[0].code),
        (1, 1, 11000)
    );
    assert_eq!(c.count_documents(doc! {}).run().unwrap(), 3);
    // Ordered: stops at the duplicate.
    let _ = c
        .insert_many(vec![doc! {"_id": 4}, doc! {"_id": 1}, doc! {"_id": 5}])
        .run()
        .unwrap_err();
    assert_eq!(c.count_documents(doc! {}).run().unwrap(), 4);
    // A duplicate in a secondary unique index names its fields and the values that collided,
    // as a command error (findAndModify) and as a write error.
    let c = db.collection::<Document>("u");
    c.insert_one(doc! {"_id": 1}).run().unwrap();
    c.create_index(
        IndexModel::builder()
            .keys(doc! {"email": 1, "org": -1})
            .options(IndexOptions::builder().unique(true).build())
            .build(),
    )
    .run()
    .unwrap();
    c.insert_one(doc! {"_id": 10, "email": "a@b", "org": 7})
        .run()
        .unwrap();
    let e = c
        .find_one_and_update(doc! {"_id": 1}, doc! {"$set": {"email": "a@b", "org": 7}})
        .run()
        .unwrap_err();
    let ErrorKind::Command(command) = e.kind.as_ref() else {
        panic!("{e}")
    };
    assert_eq!(command.code, 11000);
    let reply = command_reply(
        &db,
        doc! {
            "insert": "u", "documents": [{"_id": 11, "email": "a@b", "org": 7}],
        },
    );
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(
        error.get_document("keyPattern").unwrap(),
        &doc! {"email": 1, "org": -1}
    );
    assert_eq!(
        error.get_document("keyValue").unwrap(),
        &doc! {"email": "a@b", "org": 7}
    );
    let reply = command_reply(
        &db,
        doc! { "insert": "u", "documents": [{"_id": 10, "email": "x", "org": 1}] },
    );
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(error.get_document("keyValue").unwrap(), &doc! {"_id": 10});
    // A malformed update is refused with MongoDB's code.
    let e = c
        .update_one(doc! {}, doc! {"$set": {"a": 1}, "$inc": {"a": 1}})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&e), Some(40));
}

#[test]
fn indexes_are_created_listed_used_and_dropped() {
    let server = start();
    let db = client(&server).database("d");
    let c = db.collection::<Document>("c");
    c.insert_many((0..100).map(|i| doc! {"a": i, "b": i % 3}))
        .run()
        .unwrap();
    let name = c
        .create_index(
            IndexModel::builder()
                .keys(doc! {"a": 1})
                .options(IndexOptions::builder().unique(true).build())
                .build(),
        )
        .run()
        .unwrap()
        .index_name;
    assert_eq!(name, "a_1");
    let names = c.list_index_names().run().unwrap();
    assert_eq!(names, vec!["_id_".to_owned(), "a_1".to_owned()]);
    let explain = db
        .run_command(doc! {"explain": {"find": "c", "filter": {"a": 5}}})
        .run()
        .unwrap();
    let plan = explain
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(
        plan.get_document("inputStage")
            .unwrap()
            .get_str("indexName")
            .unwrap(),
        "a_1"
    );
    // executionStats carries the stage tree with what each stage examined, and the time.
    let stats = explain.get_document("executionStats").unwrap();
    assert!(stats.contains_key("executionTimeMillis"), "{stats}");
    let fetch = stats.get_document("executionStages").unwrap();
    assert_eq!(fetch.get_str("stage").unwrap(), "FETCH", "{fetch}");
    assert_eq!(fetch.get_i32("nReturned").unwrap(), 1, "{fetch}");
    assert_eq!(fetch.get_i32("docsExamined").unwrap(), 1, "{fetch}");
    let scan = fetch.get_document("inputStage").unwrap();
    assert_eq!(scan.get_str("stage").unwrap(), "IXSCAN", "{scan}");
    assert_eq!(scan.get_i32("keysExamined").unwrap(), 1, "{scan}");
    assert_eq!(
        code_of(&c.insert_one(doc! {"a": 5}).run().unwrap_err()),
        Some(11000)
    );
    c.drop_index("a_1").run().unwrap();
    assert_eq!(c.list_index_names().run().unwrap(), vec!["_id_".to_owned()]);
}

#[test]
fn databases_are_files_listed_and_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(Storage::in_folder(dir.path().to_owned()), Config::default());
    let client = client(&server);
    client
        .database("one")
        .collection::<Document>("c")
        .insert_one(doc! {"x": 1})
        .run()
        .unwrap();
    client
        .database("two")
        .collection::<Document>("c")
        .insert_one(doc! {"x": 2})
        .run()
        .unwrap();
    // `admin` holds `system.version` from the start, as on MongoDB.
    assert_eq!(
        client.list_database_names().run().unwrap(),
        vec!["admin", "one", "two"]
    );
    assert!(dir.path().join("one.odm").exists());
    client.database("one").drop().run().unwrap();
    // The emptied file stays for its change log; the database is no longer listed.
    assert!(
        client
            .database("one")
            .list_collection_names()
            .run()
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        client.list_database_names().run().unwrap(),
        vec!["admin", "two"]
    );
    // Reading a database that does not exist creates nothing.
    assert_eq!(
        client
            .database("three")
            .collection::<Document>("c")
            .count_documents(doc! {})
            .run()
            .unwrap(),
        0
    );
    assert!(!dir.path().join("three.odm").exists());
    let db = client.database("two");
    client
        .database("admin")
        .run_command(doc! {"renameCollection": "two.c", "to": "two.d"})
        .run()
        .unwrap();
    assert_eq!(db.list_collection_names().run().unwrap(), vec!["d"]);
}

#[test]
fn unknown_commands_answer_command_not_found() {
    let server = start();
    let e = client(&server)
        .database("admin")
        .run_command(doc! {"noSuchCommand": 1})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&e), Some(59));
}

#[test]
fn every_compressor_carries_the_same_replies() {
    let server = start();
    for compressor in ["zstd", "zlib", "snappy"] {
        let uri = format!("{}&compressors={compressor}", server.uri());
        let c = client_at(&uri)
            .database("d")
            .collection::<Document>(compressor);
        let docs: Vec<Document> = (0..300)
            .map(|i| doc! {"_id": i, "pad": "y".repeat(100)})
            .collect();
        c.insert_many(&docs).run().unwrap();
        let back: Vec<Document> = c.find(doc! {}).run().unwrap().map(Result::unwrap).collect();
        assert_eq!(back, docs, "{compressor}");
    }
}

#[test]
fn idle_cursors_time_out_and_killed_cursors_are_gone() {
    let server = start_with(
        Storage::in_memory(),
        Config {
            cursor_timeout: Duration::from_millis(300),
            ..Config::default()
        },
    );
    let db = client(&server).database("d");
    db.collection::<Document>("c")
        .insert_many((0..50).map(|i| doc! {"_id": i}))
        .run()
        .unwrap();
    let first = db
        .run_command(doc! {"find": "c", "batchSize": 2})
        .run()
        .unwrap();
    let id = first.get_document("cursor").unwrap().get_i64("id").unwrap();
    assert_ne!(id, 0);
    let kept = db
        .run_command(doc! {"find": "c", "batchSize": 2, "noCursorTimeout": true})
        .run()
        .unwrap();
    let kept = kept.get_document("cursor").unwrap().get_i64("id").unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let e = db
        .run_command(doc! {"getMore": id, "collection": "c"})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&e), Some(43));
    // A `noCursorTimeout` cursor outlives the idle timeout.
    let more = db
        .run_command(doc! {"getMore": kept, "collection": "c", "batchSize": 2})
        .run()
        .unwrap();
    let batch = more
        .get_document("cursor")
        .unwrap()
        .get_array("nextBatch")
        .unwrap();
    assert_eq!(batch.len(), 2);
    let second = db
        .run_command(doc! {"find": "c", "batchSize": 2})
        .run()
        .unwrap();
    let id = second
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    let killed = db
        .run_command(doc! {"killCursors": "c", "cursors": [id]})
        .run()
        .unwrap();
    assert_eq!(killed.get_array("cursorsKilled").unwrap().len(), 1);
    let e = db
        .run_command(doc! {"getMore": id, "collection": "c"})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&e), Some(43));
}

#[test]
fn transactions_commit_whole_and_abort_without_trace() {
    let server = start_replica_set();
    let client = client(&server);
    let c = client.database("bank").collection::<Document>("accounts");
    c.insert_many(vec![doc! {"_id": "a", "v": 100}, doc! {"_id": "b", "v": 0}])
        .run()
        .unwrap();
    let mut session = client.start_session().run().unwrap();
    session.start_transaction().run().unwrap();
    c.update_one(doc! {"_id": "a"}, doc! {"$inc": {"v": -30}})
        .session(&mut session)
        .run()
        .unwrap();
    c.update_one(doc! {"_id": "b"}, doc! {"$inc": {"v": 30}})
        .session(&mut session)
        .run()
        .unwrap();
    // The transaction reads its own writes.
    let inside = c
        .find_one(doc! {"_id": "b"})
        .session(&mut session)
        .run()
        .unwrap()
        .unwrap();
    assert_eq!(inside.get_i32("v").unwrap(), 30);
    session.commit_transaction().run().unwrap();
    assert_eq!(
        c.find_one(doc! {"_id": "b"})
            .run()
            .unwrap()
            .unwrap()
            .get_i32("v")
            .unwrap(),
        30
    );

    session.start_transaction().run().unwrap();
    c.insert_one(doc! {"_id": "c", "v": 1})
        .session(&mut session)
        .run()
        .unwrap();
    // The `count` command inside the transaction counts its own insert, after `skip`.
    let counted = client
        .database("bank")
        .run_command(doc! {"count": "accounts", "query": {}, "skip": 1})
        .session(&mut session)
        .run()
        .unwrap();
    assert_eq!(counted.get_i64("n").unwrap(), 2);
    // Aggregate and distinct read the transaction's own writes too.
    let totals: Vec<Document> = c
        .aggregate(vec![
            doc! {"$match": {"v": {"$gte": 1}}},
            doc! {"$group": {"_id": null, "n": {"$sum": 1}, "v": {"$sum": "$v"}}},
        ])
        .session(&mut session)
        .run()
        .unwrap()
        .iter(&mut session)
        .map(Result::unwrap)
        .collect();
    assert_eq!(totals, [doc! {"_id": null, "n": 3, "v": 101}]);
    let values = c
        .distinct("v", doc! {})
        .session(&mut session)
        .run()
        .unwrap();
    assert_eq!(values, [bson!(1), bson!(30), bson!(70)]);
    let lookup = c
        .aggregate(vec![
            doc! {"$lookup": {"from": "x", "pipeline": [], "as": "x"}},
        ])
        .session(&mut session)
        .run()
        .unwrap_err();
    assert_eq!(code_of(&lookup), Some(263), "{lookup}");
    session.start_transaction().run().ok();
    session.abort_transaction().run().ok();
    assert_eq!(c.count_documents(doc! {}).run().unwrap(), 2);
    // serverStatus counts them: two begun, one committed, one aborted, none open.
    let transactions = transaction_status_once_none_is_open(&client);
    for (field, n) in [
        ("totalStarted", 2),
        ("totalCommitted", 1),
        ("totalAborted", 1),
        ("currentOpen", 0),
    ] {
        assert_eq!(transactions.get_i64(field).unwrap(), n, "{transactions}");
    }
}

/// `serverStatus.transactions` once no transaction is open (an abort ends its transaction's
/// thread a moment after the reply), or after five seconds.
fn transaction_status_once_none_is_open(client: &Client) -> Document {
    let admin = client.database("admin");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let status = command_reply(&admin, doc! {"serverStatus": 1});
        let t = status.get_document("transactions").unwrap().clone();
        if t.get_i64("currentOpen").unwrap() == 0 || Instant::now() > deadline {
            return t;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_transaction_past_its_lifetime_is_aborted_and_frees_the_writer() {
    let server = start_with(
        Storage::in_memory(),
        Config {
            replica_set: Some("rs0".into()),
            transaction_lifetime: Duration::from_millis(500),
            ..Config::default()
        },
    );
    let client = client(&server);
    let c = client.database("d").collection::<Document>("c");
    c.insert_one(doc! {"_id": 0}).run().unwrap();
    let mut session = client.start_session().run().unwrap();
    session.start_transaction().run().unwrap();
    c.insert_one(doc! {"_id": 1})
        .session(&mut session)
        .run()
        .unwrap();
    // Another writer waits for the engine's one writer, then proceeds once the idle
    // transaction is aborted.
    c.insert_one(doc! {"_id": 2}).run().unwrap();
    let e = session.commit_transaction().run().unwrap_err();
    assert_eq!(code_of(&e), Some(251), "{e}");
    let ids: Vec<i32> = c
        .find(doc! {})
        .run()
        .unwrap()
        .map(|d| d.unwrap().get_i32("_id").unwrap())
        .collect();
    assert_eq!(ids, vec![0, 2]);
}

/// A server requiring authentication, with the user `ann` (password `s3cret pass`) in `admin`.
fn start_with_user_ann(config: Config) -> ServerHandle {
    let storage = Storage::in_memory();
    odm_server::auth::put_user(&storage, "admin", "ann", "s3cret pass").unwrap();
    start_with(
        storage,
        Config {
            auth: true,
            ..config
        },
    )
}

#[test]
fn authentication_is_required_and_checks_the_password() {
    let server = start_with_user_ann(Config::default());
    let addr = server.addr();
    let good = client_at(&format!(
        "mongodb://ann:s3cret%20pass@{addr}/?directConnection=true"
    ));
    good.database("d")
        .collection::<Document>("c")
        .insert_one(doc! {"x": 1})
        .run()
        .unwrap();
    let wrong = client_at(&format!("mongodb://ann:nope@{addr}/?directConnection=true"));
    let e = wrong
        .database("d")
        .collection::<Document>("c")
        .insert_one(doc! {"x": 1})
        .run()
        .unwrap_err();
    assert!(
        matches!(e.kind.as_ref(), ErrorKind::Authentication { .. }),
        "{e}"
    );
    let anonymous = client(&server);
    let e = anonymous
        .database("d")
        .collection::<Document>("c")
        .count_documents(doc! {})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&e), Some(13), "{e}");
    // The handshake and ping need no authentication.
    anonymous
        .database("admin")
        .run_command(doc! {"ping": 1})
        .run()
        .unwrap();
    // Credentials are stored salted and hashed, never in clear.
    let users = good
        .database("admin")
        .collection::<Document>("system.users")
        .find_one(doc! {})
        .run()
        .unwrap()
        .unwrap();
    assert!(!users.to_string().contains("s3cret"));
    assert!(
        users
            .get_document("credentials")
            .unwrap()
            .contains_key("SCRAM-SHA-256")
    );
}

#[test]
fn with_auth_a_connection_that_does_not_authenticate_in_time_is_closed() {
    let server = start_with_user_ann(Config {
        auth_timeout: Duration::from_millis(400),
        ..Config::default()
    });
    // Silent: closed at the deadline (the read sees the end of the stream, not a timeout).
    let started = std::time::Instant::now();
    let mut silent = TcpStream::connect(server.addr()).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut byte = [0u8; 1];
    assert_eq!(silent.read(&mut byte).unwrap_or(0), 0);
    assert!(started.elapsed() < Duration::from_secs(5));
    // Busy without authenticating: pings answer until the deadline, then the connection ends.
    let mut busy = RawConnection::open(&server);
    assert_eq!(busy.code(&doc! {"ping": 1, "$db": "admin"}), 0);
    std::thread::sleep(Duration::from_millis(600));
    let closed = busy
        .0
        .write_all(&op_msg(&doc! {"ping": 1, "$db": "admin"}, 0));
    let mut header = [0u8; 16];
    assert!(closed.is_err() || busy.0.read_exact(&mut header).is_err());
    // An authenticated client goes on past the deadline.
    let addr = server.addr();
    let ann = client_at(&format!(
        "mongodb://ann:s3cret%20pass@{addr}/?directConnection=true&maxPoolSize=1"
    ));
    let c = ann.database("d").collection::<Document>("c");
    c.insert_one(doc! {"x": 1}).run().unwrap();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(c.count_documents(doc! {}).run().unwrap(), 1);
}

#[test]
fn a_public_address_needs_auth_or_an_explicit_override() {
    let config = Config {
        bind: "0.0.0.0:0".parse().unwrap(),
        ..Config::default()
    };
    let refused = Server::bind(Storage::in_memory(), config.clone()).unwrap_err();
    assert!(refused.to_string().contains("--auth"), "{refused}");
    assert!(
        Server::bind(
            Storage::in_memory(),
            Config {
                insecure_no_auth: true,
                ..config
            }
        )
        .is_ok()
    );
}

#[test]
fn tls_connections_work_with_a_trusted_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let server = start_with(
        Storage::in_memory(),
        Config {
            tls: Some(odm_server::tls::TlsFiles {
                cert: cert_path.clone(),
                key: key_path,
            }),
            ..Config::default()
        },
    );
    let port = server.addr().port();
    let uri = format!(
        "mongodb://localhost:{port}/?directConnection=true&tls=true&tlsCAFile={}",
        cert_path.display()
    );
    let c = client_at(&uri).database("d").collection::<Document>("c");
    c.insert_one(doc! {"over": "tls"}).run().unwrap();
    assert_eq!(c.count_documents(doc! {}).run().unwrap(), 1);
    // A client speaking plain TCP to the TLS port gets nowhere, and the server keeps serving.
    let plain = client_at(&format!(
        "mongodb://localhost:{port}/?directConnection=true&serverSelectionTimeoutMS=500"
    ));
    assert!(
        plain
            .database("d")
            .run_command(doc! {"ping": 1})
            .run()
            .is_err()
    );
    assert_eq!(c.count_documents(doc! {}).run().unwrap(), 1);
}

/// Sends raw bytes; what comes back before the server closes or goes quiet.
fn exchange(server: &ServerHandle, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    stream.write_all(bytes).unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    reply
}

fn op_msg(body: &Document, flags: u32) -> Vec<u8> {
    let raw = bson::RawDocumentBuf::try_from(body).unwrap();
    odm_server::wire::encode_msg(1, 0, &raw, flags, None)
}

/// One connection speaking `OP_MSG` by hand, as a hostile client would: each command's reply.
struct RawConnection(TcpStream);

impl RawConnection {
    fn open(server: &ServerHandle) -> RawConnection {
        let stream = TcpStream::connect(server.addr()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        RawConnection(stream)
    }

    fn command(&mut self, body: &Document) -> Document {
        self.0.write_all(&op_msg(body, 0)).unwrap();
        self.read_reply()
    }

    /// The next reply's body.
    fn read_reply(&mut self) -> Document {
        let mut header = [0u8; 16];
        self.0.read_exact(&mut header).unwrap();
        let len = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
        let mut rest = vec![0u8; len - 16];
        self.0.read_exact(&mut rest).unwrap();
        // The flag bits (4 bytes), the body section's kind (1 byte), the body.
        Document::from_reader(&rest[5..]).unwrap()
    }

    /// The code of a command's error reply; 0 when it succeeded.
    fn code(&mut self, body: &Document) -> i32 {
        let reply = self.command(body);
        match reply.get("code") {
            Some(Bson::Int32(code)) => *code,
            _ => 0,
        }
    }
}

fn lsid(n: u32) -> Document {
    let mut bytes = [0u8; 16];
    bytes[..4].copy_from_slice(&n.to_le_bytes());
    doc! {"id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: bytes.to_vec() }}
}

#[test]
fn session_ids_must_be_uuids_and_the_session_table_is_bounded() {
    let server = start_with(
        Storage::in_memory(),
        Config {
            max_sessions: 4,
            max_sessions_per_connection: 3,
            ..Config::default()
        },
    );
    let sessions = || server.shared().sessions.len();
    let ping = |lsid: Bson| doc! {"ping": 1, "$db": "admin", "lsid": lsid};
    let binary = |subtype, len: usize| bson!({"id": bson::Binary { subtype, bytes: vec![7; len] }});
    let mut first = RawConnection::open(&server);
    // What is not a UUID is refused before anything is kept: 15 MB of generic binary, 15 MB
    // under the UUID subtype, a string, no id at all, an lsid that is not a document.
    let big = 15 << 20;
    assert_eq!(
        first.code(&ping(binary(bson::spec::BinarySubtype::Generic, big))),
        14
    );
    assert_eq!(
        first.code(&ping(binary(bson::spec::BinarySubtype::Uuid, big))),
        207
    );
    assert_eq!(
        first.code(&ping(binary(bson::spec::BinarySubtype::Uuid, 15))),
        207
    );
    assert_eq!(first.code(&ping(bson!({"id": "abc"}))), 14);
    assert_eq!(first.code(&ping(bson!({}))), 40414);
    assert_eq!(first.code(&ping(Bson::Int32(1))), 14);
    assert_eq!(sessions(), 0);

    // One connection opens at most three sessions; using one again costs nothing.
    for n in 0..3 {
        assert_eq!(first.code(&ping(Bson::Document(lsid(n)))), 0);
    }
    assert_eq!(first.code(&ping(Bson::Document(lsid(0)))), 0);
    assert_eq!(first.code(&ping(Bson::Document(lsid(3)))), 261);
    // Another connection may open the fourth, and then the table is full.
    let mut second = RawConnection::open(&server);
    assert_eq!(second.code(&ping(Bson::Document(lsid(3)))), 0);
    assert_eq!(second.code(&ping(Bson::Document(lsid(4)))), 261);
    assert_eq!(sessions(), 4);

    // endSessions with one malformed id ends nothing; a good list frees room.
    let end = |ids: Vec<Bson>| doc! {"endSessions": ids, "$db": "admin"};
    let bad = bson!({"id": "x"});
    assert_eq!(first.code(&end(vec![Bson::Document(lsid(0)), bad])), 14);
    assert_eq!(sessions(), 4);
    assert_eq!(first.code(&end(vec![Bson::Document(lsid(0))])), 0);
    assert_eq!(sessions(), 3);
    assert_eq!(first.code(&ping(Bson::Document(lsid(5)))), 0);
    // A full table refuses a new session to any client, the driver's too, until one ends.
    let driver = client(&server);
    let refused = driver.database("admin").run_command(doc! {"ping": 1}).run();
    assert_eq!(code_of(&refused.unwrap_err()), Some(261));
    assert_eq!(first.code(&end(vec![Bson::Document(lsid(1))])), 0);
    driver
        .database("admin")
        .run_command(doc! {"ping": 1})
        .run()
        .unwrap();
}

#[test]
fn aggregations_that_grow_without_bound_are_refused_and_the_server_answers_the_next_ping() {
    let server = start();
    let client = client(&server);
    let db = client.database("grow");
    db.collection::<Document>("c")
        .insert_one(doc! {"_id": 1, "s": "ab"})
        .run()
        .unwrap();
    let range = |n: i64| bson!({"$range": [0, n]});
    let growing = [
        // Nests its value one level a step: once it overflowed a cursor thread's stack.
        (
            bson!({"$reduce": {"input": range(100_000), "initialValue": [], "in": ["$$value"]}}),
            15,
        ),
        // Doubles a string forty times: once it exhausted memory.
        (
            bson!({"$reduce": {"input": range(40), "initialValue": "$s",
                "in": {"$concat": ["$$value", "$$value"]}}}),
            10334,
        ),
        // Ten million elements per element of a map.
        (
            bson!({"$map": {"input": range(1000), "in": range(10_000_000)}}),
            146,
        ),
    ];
    for (expr, code) in growing {
        let pipeline = vec![doc! {"$project": {"v": expr}}];
        let err = db
            .collection::<Document>("c")
            .aggregate(pipeline)
            .run()
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .unwrap_err();
        assert_eq!(code_of(&err), Some(code), "{err}");
        db.run_command(doc! {"ping": 1}).run().unwrap();
    }
}

/// A sort past 100 MiB spills to disk unless the command says `allowDiskUse: false`, which
/// gives MongoDB's 292; `allowDiskUse` must be a boolean (or a number) on aggregate and find.
#[test]
fn sorts_past_the_memory_limit_spill_unless_disk_use_is_refused() {
    let server = start();
    let client = client(&server);
    let db = client.database("spill");
    db.collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .run()
        .unwrap();
    // 110 documents of 1 MiB, made by the pipeline, sorted.
    let pipeline = |allow: Option<Bson>| {
        let mut command = doc! {
            "aggregate": "c",
            "pipeline": [
                {"$project": {"i": {"$range": [0, 110]}}},
                {"$unwind": "$i"},
                {"$addFields": {"pad": {"$literal": "x".repeat(1 << 20)}}},
                {"$sort": {"i": -1}},
                {"$project": {"pad": 0}},
            ],
            "cursor": {"batchSize": 1000},
        };
        if let Some(allow) = allow {
            command.insert("allowDiskUse", allow);
        }
        command
    };
    let reply = command_reply(&db, pipeline(None));
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 110);
    assert_eq!(batch[0].as_document().unwrap().get_i32("i").unwrap(), 109);
    let refused = db
        .run_command(pipeline(Some(Bson::Boolean(false))))
        .run()
        .unwrap_err();
    assert_eq!(code_of(&refused), Some(292), "{refused}");
    let wrong = db
        .run_command(pipeline(Some(Bson::String("yes".into()))))
        .run()
        .unwrap_err();
    assert_eq!(code_of(&wrong), Some(14), "{wrong}");
    let wrong = db
        .run_command(doc! {"find": "c", "allowDiskUse": "yes"})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&wrong), Some(14), "{wrong}");
    let found = command_reply(
        &db,
        doc! {"find": "c", "sort": {"_id": 1}, "allowDiskUse": false},
    );
    assert_eq!(
        found
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .len(),
        1
    );
    db.run_command(doc! {"ping": 1}).run().unwrap();
}

#[test]
fn malformed_messages_get_an_error_or_a_closed_connection_never_a_crash() {
    let server = start();
    // A length past the 48 MB limit: the connection is closed unanswered.
    let mut huge = op_msg(&doc! {"ping": 1, "$db": "admin"}, 0);
    huge[..4].copy_from_slice(&(60_000_000i32).to_le_bytes());
    assert!(exchange(&server, &huge).is_empty());
    // A document whose length lies: an error reply naming the problem.
    let mut lying = op_msg(&doc! {"ping": 1, "$db": "admin"}, 0);
    lying[21..25].copy_from_slice(&(5000i32).to_le_bytes());
    let reply = exchange(&server, &lying);
    assert!(
        String::from_utf8_lossy(&reply).contains("past the end"),
        "{reply:?}"
    );
    // A wrong checksum.
    let mut summed = op_msg(&doc! {"ping": 1, "$db": "admin"}, 0);
    odm_server::wire::add_checksum(&mut summed);
    let last = summed.len() - 1;
    summed[last] ^= 0xff;
    let reply = exchange(&server, &summed);
    assert!(
        String::from_utf8_lossy(&reply).contains("checksum"),
        "{reply:?}"
    );
    // Garbage after a valid header.
    let mut garbage = vec![0u8; 64];
    garbage[..4].copy_from_slice(&64i32.to_le_bytes());
    garbage[12..16].copy_from_slice(&2013i32.to_le_bytes());
    garbage[20] = 9;
    assert!(!exchange(&server, &garbage).is_empty());
    // A request with moreToCome gets no reply, and the server is still there.
    assert!(exchange(&server, &op_msg(&doc! {"ping": 1, "$db": "admin"}, 2)).is_empty());
    let reply = exchange(&server, &op_msg(&doc! {"ping": 1, "$db": "admin"}, 0));
    assert!(!reply.is_empty());
    client(&server)
        .database("admin")
        .run_command(doc! {"ping": 1})
        .run()
        .unwrap();
}

#[test]
fn client_level_bulk_write_spans_collections_and_databases() {
    let server = start();
    let admin = client(&server).database("admin");
    let reply = admin
        .run_command(doc! {
            "bulkWrite": 1,
            "ops": [
                {"insert": 0, "document": {"_id": 1}},
                {"insert": 1, "document": {"_id": 1}},
                {"insert": 0, "document": {"_id": 1}},
                {"update": 1, "filter": {"_id": 1}, "updateMods": {"$set": {"x": 1}}},
            ],
            "nsInfo": [{"ns": "a.c"}, {"ns": "b.c"}],
            "ordered": false,
        })
        .run()
        .unwrap();
    assert_eq!(reply.get_i32("nInserted").unwrap(), 2);
    assert_eq!(reply.get_i32("nErrors").unwrap(), 1);
    assert_eq!(reply.get_i32("nModified").unwrap(), 1);
    let results = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let failed = results
        .iter()
        .find(|r| r.as_document().unwrap().get_f64("ok").unwrap() == 0.0)
        .unwrap();
    assert_eq!(failed.as_document().unwrap().get_i32("idx").unwrap(), 2);
}

#[test]
fn what_the_server_does_not_do_is_refused_by_name() {
    let server = start();
    let client = client(&server);
    let db = client.database("d");
    let e = db
        .run_command(doc! {"create": "t", "timeseries": {"timeField": "at"}})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&e), Some(238), "{e}");
    db.collection::<Document>("c")
        .insert_one(doc! {})
        .run()
        .unwrap();
    // A tailable cursor on a collection that is not capped gets MongoDB's answer.
    let e = db
        .run_command(doc! {"find": "c", "tailable": true})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&e), Some(2), "{e}");
    let e = client
        .database("admin")
        .run_command(doc! {"renameCollection": "d.c", "to": "other.c"})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&e), Some(238), "{e}");
    // A cursor belongs to its namespace.
    db.collection::<Document>("c")
        .insert_many((0..10).map(|i| doc! {"i": i}))
        .run()
        .unwrap();
    let first = db
        .run_command(doc! {"find": "c", "batchSize": 1})
        .run()
        .unwrap();
    let id = first.get_document("cursor").unwrap().get_i64("id").unwrap();
    let e = db
        .run_command(doc! {"getMore": id, "collection": "elsewhere"})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&e), Some(13), "{e}");
    // Nothing was created by the refusals.
    assert_eq!(db.list_collection_names().run().unwrap(), vec!["c"]);
    assert_eq!(
        client.list_database_names().run().unwrap(),
        vec!["admin", "d"]
    );
}

#[test]
fn transactions_need_replica_set_mode() {
    let server = start();
    let lsid =
        doc! {"id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16] }};
    let reply = exchange(
        &server,
        &op_msg(
            &doc! {
                "insert": "c", "documents": [{"_id": 1}], "$db": "d",
                "lsid": lsid, "txnNumber": 1i64, "autocommit": false, "startTransaction": true,
            },
            0,
        ),
    );
    assert!(
        String::from_utf8_lossy(&reply).contains("IllegalOperation"),
        "{reply:?}"
    );
    assert_eq!(
        client(&server)
            .database("d")
            .collection::<Document>("c")
            .count_documents(doc! {})
            .run()
            .unwrap(),
        0
    );
}

/// Past the cap a new socket is closed unanswered, the connections already served go on as if
/// nothing happened, and a place freed by a closed connection serves the next one.
#[test]
fn connections_past_the_limit_are_closed_and_the_established_ones_go_on() {
    let server = start_with(
        Storage::in_memory(),
        Config {
            max_connections: 2,
            ..Config::default()
        },
    );
    let ping = doc! {"ping": 1, "$db": "admin"};
    let mut first = RawConnection::open(&server);
    let mut second = RawConnection::open(&server);
    assert_eq!(first.code(&ping), 0);
    assert_eq!(second.code(&ping), 0);
    for _ in 0..5 {
        assert!(exchange(&server, &op_msg(&ping, 0)).is_empty());
    }
    assert_eq!(first.code(&ping), 0);
    assert_eq!(second.code(&ping), 0);
    assert_eq!(
        server
            .shared()
            .stats
            .connections_current
            .load(Ordering::Relaxed),
        2
    );
    drop(second);
    // The server sees the close, and gives its place to the next connection.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while server
        .shared()
        .stats
        .connections_current
        .load(Ordering::Relaxed)
        > 1
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the closed connection's place is freed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut third = RawConnection::open(&server);
    assert_eq!(third.code(&ping), 0);
    assert_eq!(first.code(&ping), 0);
}

/// `shutdown` runs on `admin` only and needs authentication when the server requires it; it
/// lets a command already running answer, closes its own connection unanswered, and stops the
/// server: nothing connects afterwards.
#[test]
fn the_shutdown_command_is_for_admin_only_and_lets_running_commands_answer() {
    let guarded = start_with_user_ann(Config::default());
    let mut anonymous = RawConnection::open(&guarded);
    assert_eq!(anonymous.code(&doc! {"shutdown": 1, "$db": "admin"}), 13);
    assert_eq!(anonymous.code(&doc! {"ping": 1, "$db": "admin"}), 0);

    let mut server = start_with_test_commands();
    let mut admin = RawConnection::open(&server);
    let refused = admin.command(&doc! {"shutdown": 1, "$db": "d"});
    assert_eq!(refused.get_i32("code").unwrap(), 13, "{refused}");
    assert_eq!(
        refused.get_str("errmsg").unwrap(),
        "shutdown may only be run against the admin database."
    );
    let bad = admin.command(&doc! {"shutdown": 1, "timeoutSecs": -1, "$db": "admin"});
    assert_eq!(bad.get_i32("code").unwrap(), 51024, "{bad}");
    let bad = admin.command(&doc! {"shutdown": 1, "force": "yes", "$db": "admin"});
    assert_eq!(bad.get_i32("code").unwrap(), 14, "{bad}");
    assert_eq!(admin.code(&doc! {"ping": 1, "$db": "admin"}), 0);
    // A count that takes 600 ms, running when the shutdown arrives.
    let block = doc! {
        "configureFailPoint": "failCommand", "mode": {"times": 1}, "$db": "admin",
        "data": {"failCommands": ["count"], "blockConnection": true, "blockTimeMS": 600},
    };
    assert_eq!(admin.code(&block), 0);
    let mut busy = RawConnection::open(&server);
    let mut idle = RawConnection::open(&server);
    busy.0
        .write_all(&op_msg(&doc! {"count": "c", "$db": "d"}, 0))
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    admin
        .0
        .write_all(&op_msg(&doc! {"shutdown": 1, "$db": "admin"}, 0))
        .unwrap();
    let mut header = [0u8; 16];
    assert!(
        admin.0.read(&mut header).unwrap_or(0) == 0,
        "the shutdown's connection closes unanswered"
    );
    let count = busy.read_reply();
    assert_eq!(count.get("ok"), Some(&Bson::Double(1.0)), "{count}");
    server.wait();
    assert!(
        idle.0.read(&mut header).unwrap_or(0) == 0,
        "idle connections are closed"
    );
    assert!(
        TcpStream::connect(server.addr()).is_err(),
        "nothing connects after"
    );
}

/// `timeoutSecs` bounds the wait for running commands, and `force` does not wait at all: a
/// command still running then gets no reply.
#[test]
fn the_shutdown_command_waits_at_most_its_timeout_and_not_at_all_with_force() {
    for (shutdown, least, most) in [
        (
            doc! {"shutdown": 1, "timeoutSecs": 1, "$db": "admin"},
            900,
            4_000,
        ),
        (doc! {"shutdown": 1, "force": true, "$db": "admin"}, 0, 800),
    ] {
        let mut server = start_with(
            Storage::in_memory(),
            Config {
                test_commands: true,
                ..Config::default()
            },
        );
        let mut admin = RawConnection::open(&server);
        let block = doc! {
            "configureFailPoint": "failCommand", "mode": {"times": 1}, "$db": "admin",
            "data": {"failCommands": ["count"], "blockConnection": true, "blockTimeMS": 10_000},
        };
        assert_eq!(admin.code(&block), 0);
        let mut busy = RawConnection::open(&server);
        busy.0
            .write_all(&op_msg(&doc! {"count": "c", "$db": "d"}, 0))
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let began = std::time::Instant::now();
        admin.0.write_all(&op_msg(&shutdown, 0)).unwrap();
        server.wait();
        let waited = began.elapsed();
        assert!(
            waited >= Duration::from_millis(least) && waited <= Duration::from_millis(most),
            "{shutdown}: stopped after {waited:?}"
        );
        let mut header = [0u8; 16];
        assert_eq!(
            busy.0.read(&mut header).unwrap_or(0),
            0,
            "no reply past the wait"
        );
    }
}

/// A connection quiet for a second parks (no task; its socket watched by the server's epoll
/// set): its next command is answered as before, with what it negotiated, and stopping the
/// server closes it like any idle connection.
#[test]
fn a_quiet_connection_parks_answers_again_and_closes_at_the_stop() {
    let mut server = start();
    let shared = server.shared().clone();
    let parking = &shared.parking;
    let mut quiet = RawConnection::open(&server);
    assert_eq!(quiet.code(&doc! {"ping": 1, "$db": "admin"}), 0);
    let parked = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while parking.len() < n {
            assert!(Instant::now() < deadline, "the quiet connection parks");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    parked(1);
    let hello = quiet.command(&doc! {"hello": 1, "$db": "admin"});
    assert_eq!(hello.get("ok"), Some(&Bson::Double(1.0)), "{hello}");
    assert_eq!(parking.len(), 0, "answering, it has a task again");
    parked(1);
    server.stop();
    server.wait();
    let mut header = [0u8; 16];
    assert_eq!(
        quiet.0.read(&mut header).unwrap_or(0),
        0,
        "a parked connection is closed at the stop"
    );
}

/// Stopping closes every database file, after writing the queries sampled since the last
/// commit: the file opens again at once (no handle of the stopped server holds it) with them.
#[test]
fn stopping_writes_sampled_queries_and_closes_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start_with(
        Storage::in_folder(dir.path().to_path_buf()),
        Config::default(),
    );
    let client = client(&server);
    let items = client.database("d").collection::<Document>("c");
    items.insert_one(doc! {"_id": 1}).run().unwrap();
    command_reply(
        &client.database("admin"),
        doc! {"configureQueryAnalyzer": "d.c", "mode": "full", "samplesPerSecond": 50},
    );
    // Sampled after the last commit: they wait in memory.
    for _ in 0..3 {
        items.find_one(doc! {"_id": 1}).run().unwrap();
    }
    let began = std::time::Instant::now();
    server.stop();
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    drop(client);
    let db = odm_engine::Database::open(dir.path().join("d.odm")).expect("the file is closed");
    assert!(!db.sampled_queries(Some("c")).unwrap().is_empty());
}

/// The load test, short: 64 clients of mixed reads and writes against one server; nothing is
/// lost, duplicated or left behind, and `validate` is clean (`odm_tests::load` checks it all;
/// `bench load` runs it longer, in release, for the figures).
#[test]
fn sixty_four_clients_of_mixed_reads_and_writes_lose_nothing() {
    let mut server = start();
    let report = odm_tests::load::run(
        &server.uri(),
        &odm_tests::load::LoadOptions {
            clients: 64,
            duration: Duration::from_secs(3),
            seed: 64,
        },
    )
    .expect("the load runs without an error and checks out");
    assert!(
        report.operations() > 64,
        "{} operations",
        report.operations()
    );
    assert!(report.documents_checked > 0);
    report.print();
    server.stop();
}

/// In replica-set mode every reply carries a cluster time that only goes forward, and a write
/// concern one member cannot satisfy is reported after the write, as MongoDB reports it.
#[test]
fn replica_set_replies_carry_cluster_time_and_report_unsatisfiable_write_concerns() {
    let server = start_replica_set();
    let db = client(&server).database("d");
    let time = |d: &Document| {
        let t = d.get_timestamp("operationTime").expect("operationTime");
        (t.time, t.increment)
    };
    let insert = command_reply(&db, doc! {"insert": "c", "documents": [{"_id": 1}]});
    let find = command_reply(&db, doc! {"find": "c"});
    assert!(time(&find) > time(&insert));
    let gossip = find.get_document("$clusterTime").expect("$clusterTime");
    let cluster = gossip.get_timestamp("clusterTime").unwrap();
    assert_eq!((cluster.time, cluster.increment), time(&find));
    // Reads after a cluster time work at once (every write is applied before its reply).
    let after = command_reply(
        &db,
        doc! {"find": "c", "readConcern": {"afterClusterTime": find.get_timestamp("operationTime").unwrap()}},
    );
    assert_eq!(
        after
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .len(),
        1
    );

    let two = command_reply(
        &db,
        doc! {"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": 2}},
    );
    let concern = two
        .get_document("writeConcernError")
        .expect("a write concern error");
    assert_eq!(concern.get_i32("code").unwrap(), 100);
    assert_eq!(two.get_i32("n").unwrap(), 1, "the write itself is applied");
    let tagged = command_reply(
        &db,
        doc! {"delete": "c", "deletes": [{"q": {"_id": 2}, "limit": 1}], "writeConcern": {"w": "east"}},
    );
    assert_eq!(
        tagged
            .get_document("writeConcernError")
            .unwrap()
            .get_i32("code")
            .unwrap(),
        79
    );
    let majority = command_reply(
        &db,
        doc! {"insert": "c", "documents": [{"_id": 3}], "writeConcern": {"w": "majority"}},
    );
    assert!(!majority.contains_key("writeConcernError"));
}

/// The `failCommand` fail point exists only with test commands on; it fails, or drops the
/// connection of, the commands it names, as often as its mode says.
#[test]
fn the_fail_point_fails_what_it_names_and_only_with_test_commands() {
    let plain = start();
    let admin = client(&plain).database("admin");
    let configure = doc! {
        "configureFailPoint": "failCommand", "mode": {"times": 1},
        "data": {"failCommands": ["insert"], "errorCode": 91},
    };
    let e = admin.run_command(configure.clone()).run().unwrap_err();
    assert_eq!(code_of(&e), Some(59));

    let server = start_with_test_commands();
    let client = client(&server);
    let admin = client.database("admin");
    let items = client.database("d").collection::<Document>("c");
    admin.run_command(configure).run().unwrap();
    let e = items.insert_one(doc! {"_id": 1}).run().unwrap_err();
    assert_eq!(code_of(&e), Some(91));
    // Once only: the next insert runs, and the failed one changed nothing.
    items.insert_one(doc! {"_id": 2}).run().unwrap();
    assert_eq!(items.count_documents(doc! {}).run().unwrap(), 1);
    // A dropped connection: the driver's retryable read tries again on a new one.
    admin
        .run_command(doc! {
            "configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": ["find"], "closeConnection": true},
        })
        .run()
        .unwrap();
    assert!(items.find_one(doc! {"_id": 2}).run().unwrap().is_some());
    // A write concern error: the command runs, then the error is added to its reply.
    admin
        .run_command(doc! {
            "configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": ["insert"], "writeConcernError": {"code": 64, "errmsg": "w"}},
        })
        .run()
        .unwrap();
    let reply = command_reply(
        &client.database("d"),
        doc! {"insert": "c", "documents": [{"_id": 4}]},
    );
    let concern = reply.get_document("writeConcernError").unwrap();
    assert_eq!(concern.get_i32("code").unwrap(), 64);
    assert_eq!(reply.get_i32("n").unwrap(), 1);
    // blockConnection: the command waits its time, then runs.
    admin
        .run_command(doc! {
            "configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": ["count"], "blockConnection": true, "blockTimeMS": 200},
        })
        .run()
        .unwrap();
    let began = std::time::Instant::now();
    let count = command_reply(&client.database("d"), doc! {"count": "c"});
    assert!(began.elapsed() >= Duration::from_millis(200));
    assert!(
        matches!(
            count.get("n"),
            Some(bson::Bson::Int32(2) | bson::Bson::Int64(2))
        ),
        "{count}"
    );
    admin
        .run_command(doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .run()
        .unwrap();
    items.insert_one(doc! {"_id": 3}).run().unwrap();
}

/// One message read whole: its request id, the id it answers, its flags and its body.
fn read_message(stream: &mut TcpStream) -> (i32, i32, u32, Document) {
    let mut header = [0u8; 16];
    stream.read_exact(&mut header).unwrap();
    let field = |i: usize| i32::from_le_bytes(header[i * 4..i * 4 + 4].try_into().unwrap());
    let mut rest = vec![0u8; field(0) as usize - 16];
    stream.read_exact(&mut rest).unwrap();
    let flags = u32::from_le_bytes(rest[..4].try_into().unwrap());
    (
        field(1),
        field(2),
        flags,
        Document::from_reader(&rest[5..]).unwrap(),
    )
}

#[test]
fn a_streaming_hello_answers_after_each_wait_each_reply_answering_the_last() {
    // The server monitoring specification's awaitable `hello`: with `exhaustAllowed`, each
    // reply is flagged `moreToCome` and answers the reply before it, one per `maxAwaitTimeMS`.
    let server = start();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(&op_msg(&doc! {"hello": 1, "$db": "admin"}, 0))
        .unwrap();
    let (_, _, flags, first) = read_message(&mut stream);
    assert_eq!(
        flags & odm_server::wire::MORE_TO_COME,
        0,
        "a plain hello answers once"
    );
    let known = first.get_document("topologyVersion").unwrap().clone();
    let awaitable =
        doc! {"hello": 1, "$db": "admin", "topologyVersion": known, "maxAwaitTimeMS": 200};
    // Without exhaust, the awaitable hello waits, then answers once.
    let started = Instant::now();
    stream.write_all(&op_msg(&awaitable, 0)).unwrap();
    let (_, _, flags, _) = read_message(&mut stream);
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(flags & odm_server::wire::MORE_TO_COME, 0);
    // With exhaust, it streams.
    stream
        .write_all(&op_msg(&awaitable, odm_server::wire::EXHAUST_ALLOWED))
        .unwrap();
    let mut answered = 1; // op_msg's request id
    let started = Instant::now();
    for n in 1..=4u32 {
        let (id, response_to, flags, reply) = read_message(&mut stream);
        assert_eq!(
            response_to, answered,
            "reply {n} answers the message before it"
        );
        assert_ne!(
            flags & odm_server::wire::MORE_TO_COME,
            0,
            "reply {n} flags more to come"
        );
        assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)));
        assert!(reply.get_bool("isWritablePrimary").unwrap());
        assert!(
            started.elapsed() >= Duration::from_millis(200) * n,
            "reply {n} came early"
        );
        answered = id;
    }
    // A client that closes its end ends the stream; the server serves on.
    drop(stream);
    let mut conn = RawConnection::open(&server);
    assert_eq!(conn.code(&doc! {"ping": 1, "$db": "admin"}), 0);
}

#[test]
fn the_ttl_monitor_expires_what_wire_clients_index_and_obeys_set_parameter() {
    let server = start();
    let client = client(&server);
    let admin = client.database("admin");
    let db = client.database("ttl");
    let c = db.collection::<Document>("sessions");
    let past = bson::DateTime::from_millis(0);
    let future = bson::DateTime::from_millis(i64::MAX / 2);
    c.create_index(
        IndexModel::builder()
            .keys(doc! {"at": 1})
            .options(
                IndexOptions::builder()
                    .expire_after(Duration::from_secs(5))
                    .build(),
            )
            .build(),
    )
    .run()
    .unwrap();
    // Off first: nothing expires however often the monitor wakes.
    let was = command_reply(&admin, doc! {"setParameter": 1, "ttlMonitorEnabled": false});
    assert!(was.get_bool("was").unwrap());
    let was = command_reply(&admin, doc! {"setParameter": 1, "ttlMonitorSleepSecs": 1});
    assert_eq!(was.get_i32("was").unwrap(), 60);
    c.insert_many((0..10).map(|i| doc! {"_id": i, "at": past}))
        .run()
        .unwrap();
    c.insert_one(doc! {"_id": 10, "at": future}).run().unwrap();
    std::thread::sleep(Duration::from_millis(2_500));
    assert_eq!(
        c.count_documents(doc! {}).run().unwrap(),
        11,
        "the monitor is off"
    );
    // On: the expired ten go within a few seconds; the future one stays.
    command_reply(&admin, doc! {"setParameter": 1, "ttlMonitorEnabled": true});
    let deadline = Instant::now() + Duration::from_secs(20);
    while c.count_documents(doc! {}).run().unwrap() > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(c.count_documents(doc! {}).run().unwrap(), 1);
    let status = command_reply(&admin, doc! {"serverStatus": 1});
    let ttl = status
        .get_document("metrics")
        .unwrap()
        .get_document("ttl")
        .unwrap();
    assert_eq!(ttl.get_i64("deletedDocuments").unwrap(), 10, "{ttl}");
    assert!(ttl.get_i64("passes").unwrap() >= 1, "{ttl}");
    assert!(ttl.get_i64("subPasses").unwrap() >= 1, "{ttl}");
    let params = command_reply(
        &admin,
        doc! {"getParameter": 1, "ttlMonitorEnabled": 1, "ttlMonitorSleepSecs": 1},
    );
    assert!(params.get_bool("ttlMonitorEnabled").unwrap());
    assert_eq!(params.get_i32("ttlMonitorSleepSecs").unwrap(), 1);
    // What cannot be set is refused by name, and a refusal changes nothing.
    for refused in [
        doc! {"setParameter": 1, "cursorTimeoutMillis": 5},
        doc! {"setParameter": 1, "notAParameter": 5},
        doc! {"setParameter": 1, "ttlMonitorSleepSecs": 0},
        doc! {"setParameter": 1, "ttlMonitorEnabled": "yes"},
        doc! {"setParameter": 1, "ttlMonitorSleepSecs": 7, "notAParameter": 5},
    ] {
        assert!(
            admin.run_command(refused.clone()).run().is_err(),
            "{refused}"
        );
    }
    assert!(
        db.run_command(doc! {"setParameter": 1, "ttlMonitorSleepSecs": 7})
            .run()
            .is_err(),
        "admin only"
    );
    let params = command_reply(&admin, doc! {"getParameter": 1, "ttlMonitorSleepSecs": 1});
    assert_eq!(params.get_i32("ttlMonitorSleepSecs").unwrap(), 1);
}

#[test]
fn a_retried_write_is_answered_from_its_record_across_a_restart_and_applied_once() {
    let dir = tempfile::tempdir().unwrap();
    let replica = || Config {
        replica_set: Some("rs0".into()),
        ..Config::default()
    };
    let mut server = start_with(Storage::in_folder(dir.path().to_path_buf()), replica());
    let mut conn = RawConnection::open(&server);
    let session = lsid(42);
    let insert = doc! {
        "insert": "c", "documents": [{"_id": 1, "n": 0}], "$db": "retry",
        "lsid": session.clone(), "txnNumber": 1_i64,
    };
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 1);
    // The same statement again: the first reply, not a duplicate key error.
    let again = conn.command(&insert);
    assert_eq!(again.get_i32("n").unwrap(), 1, "{again}");
    assert!(!again.contains_key("writeErrors"), "{again}");
    let inc = doc! {
        "findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"n": 1}}, "new": true,
        "$db": "retry", "lsid": session.clone(), "txnNumber": 2_i64,
    };
    let first = conn.command(&inc);
    assert_eq!(
        first.get_document("value").unwrap().get_i32("n").unwrap(),
        1
    );
    let update = doc! {
        "update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 10}}}],
        "$db": "retry", "lsid": session.clone(), "txnNumber": 3_i64,
    };
    assert_eq!(conn.command(&update).get_i32("nModified").unwrap(), 1);
    // Across a restart, the latest write's retry is answered from its record.
    drop(conn);
    server.stop();
    let server = start_with(Storage::in_folder(dir.path().to_path_buf()), replica());
    let mut conn = RawConnection::open(&server);
    let retried = conn.command(&update);
    assert_eq!(retried.get_i32("nModified").unwrap(), 1, "{retried}");
    // An older number of the session is refused, and applies nothing.
    assert_eq!(conn.code(&inc), 225);
    let find = doc! {"find": "c", "filter": {}, "$db": "retry"};
    let docs = conn.command(&find);
    let batch = docs
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(
        batch,
        &vec![Bson::Document(doc! {"_id": 1, "n": 11})],
        "applied once each"
    );
    // A new number applies again; a delete's retry too is answered from its record.
    let delete = doc! {
        "delete": "c", "deletes": [{"q": {}, "limit": 0}], "$db": "retry",
        "lsid": session.clone(), "txnNumber": 4_i64,
    };
    assert_eq!(conn.command(&delete).get_i32("n").unwrap(), 1);
    assert_eq!(conn.command(&delete).get_i32("n").unwrap(), 1);
    // A transaction number outside a write, or without a session, is refused.
    let read = doc! {"find": "c", "$db": "retry", "lsid": session.clone(), "txnNumber": 5_i64};
    assert_eq!(conn.code(&read), 72);
    let sessionless = doc! {"insert": "c", "documents": [{}], "$db": "retry", "txnNumber": 6_i64};
    assert_eq!(conn.code(&sessionless), 72);
}

#[test]
fn transaction_numbers_need_a_replica_set() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let insert = doc! {
        "insert": "c", "documents": [{"_id": 1}], "$db": "retry",
        "lsid": lsid(1), "txnNumber": 1_i64,
    };
    assert_eq!(conn.code(&insert), 20);
}

#[test]
fn database_level_aggregations_read_documents_and_sessions() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let insert = doc! {"insert": "books", "documents": [{"_id": 1, "title": "Dune"}], "$db": "lib"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 1);
    let documents = doc! {
        "aggregate": 1, "$db": "lib", "cursor": {},
        "pipeline": [
            {"$documents": [{"book": 1}, {"book": 2}]},
            {"$lookup": {"from": "books", "localField": "book", "foreignField": "_id", "as": "found"}},
            {"$project": {"_id": 0, "book": 1, "n": {"$size": "$found"}}},
        ],
    };
    let reply = conn.command(&documents);
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(
        batch,
        &vec![
            Bson::Document(doc! {"book": 1, "n": 1}),
            Bson::Document(doc! {"book": 2, "n": 0})
        ],
        "{reply}"
    );
    // A session used once is listed, with its id and last use.
    let ping = doc! {"ping": 1, "$db": "admin", "lsid": lsid(7)};
    assert_eq!(conn.code(&ping), 0);
    let sessions = doc! {
        "aggregate": 1, "$db": "admin", "cursor": {},
        "pipeline": [{"$listLocalSessions": {"allUsers": true}}, {"$match": {"_id.id": lsid(7).get("id").unwrap().clone()}}],
    };
    let reply = conn.command(&sessions);
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 1, "{reply}");
    let listed = batch[0].as_document().unwrap();
    assert!(listed.get_datetime("lastUse").is_ok(), "{listed}");
    assert!(
        listed
            .get_document("_id")
            .unwrap()
            .get_binary_generic("uid")
            .is_ok(),
        "{listed}"
    );
    // A pipeline that reads a collection needs one; a database that does not exist is not made.
    let reads = doc! {"aggregate": 1, "$db": "nowhere", "cursor": {}, "pipeline": [{"$match": {}}]};
    assert_eq!(conn.code(&reads), 40602);
    let empty =
        doc! {"aggregate": 1, "$db": "nowhere", "cursor": {}, "pipeline": [{"$documents": []}]};
    assert_eq!(conn.code(&empty), 0);
    let list = conn.command(&doc! {"listDatabases": 1, "$db": "admin", "nameOnly": true});
    assert!(!list.to_string().contains("nowhere"), "{list}");
}

#[test]
fn database_level_aggregations_write_through_out_and_merge() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let out = doc! {
        "aggregate": 1, "$db": "made", "cursor": {},
        "pipeline": [{"$documents": [{"_id": 1}, {"_id": 2}]}, {"$out": "c"}],
    };
    assert_eq!(conn.code(&out), 0);
    let count = doc! {"count": "c", "$db": "made"};
    assert_eq!(conn.command(&count).get_i64("n").unwrap(), 2);
    // A `$merge` that meets an existing `_id` under `whenMatched: "fail"` writes nothing and
    // answers the duplicate key with its pattern, as MongoDB does.
    let merge = doc! {
        "aggregate": 1, "$db": "made", "cursor": {},
        "pipeline": [
            {"$documents": [{"_id": 3}, {"_id": 1}]},
            {"$merge": {"into": "c", "whenMatched": "fail"}},
        ],
    };
    let reply = conn.command(&merge);
    assert_eq!(reply.get_i32("code").unwrap(), 11000, "{reply}");
    assert!(reply.get_document("keyPattern").is_ok(), "{reply}");
    assert_eq!(conn.command(&count).get_i64("n").unwrap(), 2);
}

#[test]
fn commands_refuse_fields_they_do_not_know_and_those_they_do_not_implement() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let insert = doc! {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}], "$db": "d"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 2);
    // A misspelt filter returns no documents: it is an error naming the field.
    let misspelt = doc! {"find": "c", "fliter": {"_id": 1}, "$db": "d"};
    let reply = conn.command(&misspelt);
    assert_eq!(reply.get_i32("code").unwrap(), 40415, "{reply}");
    assert!(
        reply.get_str("errmsg").unwrap().contains("find.fliter"),
        "{reply}"
    );
    for (command, code) in [
        (
            doc! {"insert": "c", "documents": [{}], "orderd": false, "$db": "d"},
            40415,
        ),
        (
            doc! {"update": "c", "updates": [], "upsert": true, "$db": "d"},
            40415,
        ),
        (doc! {"count": "c", "filter": {}, "$db": "d"}, 40415),
        (
            doc! {"aggregate": "c", "pipeline": [], "cursor": {}, "batchSize": 1, "$db": "d"},
            40415,
        ),
        (doc! {"find": "c", "tailable": true, "$db": "d"}, 2),
        (doc! {"find": "c", "awaitData": true, "$db": "d"}, 9),
        // `min` and `max` walk a hinted index between keys of its fields.
        (doc! {"find": "c", "min": {"_id": 1}, "$db": "d"}, 51173),
        (
            doc! {"find": "c", "min": {"_id": 1}, "max": {"a": 2}, "hint": "_id_", "$db": "d"},
            51176,
        ),
        (doc! {"count": "c", "hint": "noSuchIndex", "$db": "d"}, 2),
        (
            doc! {"distinct": "c", "key": "a", "hint": {"nope": 1}, "$db": "d"},
            2,
        ),
    ] {
        assert_eq!(conn.code(&command), code, "{command}");
    }
    // Generic arguments and fields that do nothing on one node pass.
    let generic = doc! {
        "find": "c", "filter": {}, "$db": "d", "lsid": lsid(3), "comment": "x", "maxTimeMS": 1000,
        "$readPreference": {"mode": "primaryPreferred"}, "readConcern": {"level": "local"},
        "allowPartialResults": true, "oplogReplay": true, "min": {}, "returnKey": false,
    };
    let reply = conn.command(&generic);
    assert!(!reply.contains_key("code"), "{reply}");
    // Count's and distinct's hints force their plan.
    let count = conn
        .command(&doc! {"count": "c", "query": {"_id": {"$gt": 1}}, "hint": "_id_", "$db": "d"});
    assert_eq!(count.get_i64("n").unwrap(), 1, "{count}");
    let distinct =
        conn.command(&doc! {"distinct": "c", "key": "_id", "hint": {"$natural": 1}, "$db": "d"});
    assert_eq!(distinct.get_array("values").unwrap().len(), 2, "{distinct}");
    assert_eq!(
        conn.command(&insert)
            .get_array("writeErrors")
            .unwrap()
            .len(),
        1,
        "nothing was written twice"
    );
}

#[test]
fn db_stats_and_coll_stats_sum_what_the_collections_hold_in_their_scale() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let payload = "x".repeat(1000);
    let docs: Vec<Document> = (0..50)
        .map(|i| doc! {"_id": i, "p": payload.clone()})
        .collect();
    let insert = doc! {"insert": "a", "documents": docs, "$db": "s"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 50);
    let insert = doc! {"insert": "b", "documents": [{"_id": 1}], "$db": "s"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 1);
    let index =
        doc! {"createIndexes": "a", "indexes": [{"key": {"p": 1}, "name": "p_1"}], "$db": "s"};
    assert_eq!(conn.code(&index), 0);
    let stats = conn.command(&doc! {"dbStats": 1, "$db": "s"});
    assert_eq!(stats.get_i64("collections").unwrap(), 2, "{stats}");
    assert_eq!(stats.get_i64("objects").unwrap(), 51, "{stats}");
    assert_eq!(
        stats.get_i64("indexes").unwrap(),
        3,
        "two _id indexes and p_1: {stats}"
    );
    let data = stats.get_f64("dataSize").unwrap();
    assert!(data > 50_000.0, "{stats}");
    assert!(stats.get_f64("indexSize").unwrap() > 0.0, "{stats}");
    let scaled = conn.command(&doc! {"dbStats": 1, "scale": 1024, "$db": "s"});
    assert!(
        (scaled.get_f64("dataSize").unwrap() - data / 1024.0).abs() < 1e-9,
        "{scaled}"
    );
    assert_eq!(scaled.get_i64("scaleFactor").unwrap(), 1024);
    assert_eq!(conn.code(&doc! {"dbStats": 1, "scale": 0, "$db": "s"}), 2);
    let coll = conn.command(&doc! {"collStats": "a", "$db": "s"});
    assert_eq!(coll.get_i32("nindexes").unwrap(), 2, "{coll}");
    let size = coll.get_i64("size").unwrap();
    let kb = conn.command(&doc! {"collStats": "a", "scale": 1024, "$db": "s"});
    assert_eq!(kb.get_i64("size").unwrap(), size / 1024, "{kb}");
    let stage = doc! {
        "aggregate": "a", "cursor": {}, "$db": "s",
        "pipeline": [{"$collStats": {"storageStats": {"scale": 1024}}}],
    };
    let reply = conn.command(&stage);
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let storage = batch[0]
        .as_document()
        .unwrap()
        .get_document("storageStats")
        .unwrap();
    assert_eq!(storage.get_i64("size").unwrap(), size / 1024, "{reply}");
}

fn ids_of(batch: &[Bson]) -> Vec<i32> {
    batch
        .iter()
        .map(|d| d.as_document().unwrap().get_i32("_id").unwrap())
        .collect()
}

/// The documents of a reply's first batch; panics, showing the reply, when it has none.
fn first_batch(reply: &Document) -> Vec<Document> {
    let batch = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .unwrap_or_else(|_| panic!("{reply}"));
    batch
        .iter()
        .filter_map(|d| d.as_document().cloned())
        .collect()
}

fn cursor_of(reply: &Document) -> (i64, Vec<i32>) {
    let cursor = reply
        .get_document("cursor")
        .unwrap_or_else(|_| panic!("{reply}"));
    let batch = cursor
        .get_array("firstBatch")
        .or_else(|_| cursor.get_array("nextBatch"))
        .unwrap();
    (cursor.get_i64("id").unwrap(), ids_of(batch))
}

#[test]
fn capped_collections_keep_the_newest_in_insertion_order_and_say_so() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let create = doc! {"create": "log", "capped": true, "size": 4000, "max": 3, "$db": "s"};
    assert_eq!(conn.code(&create), 0);
    for (bad, code) in [
        (doc! {"create": "a", "capped": true}, 72),
        (doc! {"create": "a", "size": 4096}, 72),
        (doc! {"create": "a", "capped": false, "max": 5}, 72),
        (doc! {"create": "a", "capped": true, "size": 0}, 51024),
        (doc! {"create": "a", "capped": true, "size": "big"}, 14),
        (
            doc! {"create": "a", "capped": true, "size": 4096, "sise": 1},
            40415,
        ),
    ] {
        let mut bad = bad;
        bad.insert("$db", "s");
        assert_eq!(conn.code(&bad), code, "{bad}");
    }
    let docs: Vec<Document> = [5, 1, 4, 2, 3].iter().map(|i| doc! {"_id": i}).collect();
    let insert = doc! {"insert": "log", "documents": docs, "$db": "s"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 5);
    let find = doc! {"find": "log", "$db": "s"};
    assert_eq!(cursor_of(&conn.command(&find)).1, [4, 2, 3]);
    let newest_first = doc! {"find": "log", "sort": {"$natural": -1}, "$db": "s"};
    assert_eq!(cursor_of(&conn.command(&newest_first)).1, [3, 2, 4]);
    let listed = conn.command(&doc! {"listCollections": 1, "$db": "s"});
    let first = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let options = first[0]
        .as_document()
        .unwrap()
        .get_document("options")
        .unwrap();
    assert_eq!(
        options,
        &doc! {"capped": true, "size": 4096_i64, "max": 3_i64}
    );
    let stats = conn.command(&doc! {"collStats": "log", "$db": "s"});
    assert!(stats.get_bool("capped").unwrap(), "{stats}");
    assert_eq!(stats.get_i64("max").unwrap(), 3, "{stats}");
    assert_eq!(stats.get_i64("maxSize").unwrap(), 4096, "{stats}");
    let too_big = doc! {"insert": "log", "documents": [{"p": "x".repeat(5000)}], "$db": "s"};
    let reply = conn.command(&too_big);
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap();
    assert_eq!(error.get_i32("code").unwrap(), 2, "{reply}");
    assert_eq!(cursor_of(&conn.command(&find)).1, [4, 2, 3]);
}

#[test]
fn tailable_cursors_follow_inserts_wait_for_them_and_lose_their_place_when_it_is_removed() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let mut writer = RawConnection::open(&server);
    let create = doc! {"create": "log", "capped": true, "size": 100_000, "max": 4, "$db": "s"};
    assert_eq!(conn.code(&create), 0);
    let empty = doc! {"find": "log", "tailable": true, "$db": "s"};
    assert_eq!(
        cursor_of(&conn.command(&empty)),
        (0, vec![]),
        "no place to resume from"
    );
    let insert = |conn: &mut RawConnection, ids: &[i32]| {
        let docs: Vec<Document> = ids.iter().map(|i| doc! {"_id": i}).collect();
        let insert = doc! {"insert": "log", "documents": docs, "$db": "s"};
        assert_eq!(
            conn.command(&insert).get_i32("n").unwrap(),
            ids.len() as i32
        );
    };
    insert(&mut writer, &[1, 2, 3]);
    let tail = doc! {
        "find": "log", "tailable": true, "awaitData": true, "batchSize": 2, "$db": "s",
    };
    let (id, batch) = cursor_of(&conn.command(&tail));
    assert_ne!(id, 0);
    assert_eq!(batch, [1, 2]);
    let more =
        move |ms: i64| doc! {"getMore": id, "collection": "log", "maxTimeMS": ms, "$db": "s"};
    assert_eq!(cursor_of(&conn.command(&more(100))), (id, vec![3]));
    let started = Instant::now();
    assert_eq!(cursor_of(&conn.command(&more(300))), (id, vec![]));
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "awaited its maxTimeMS"
    );
    // An insert while a getMore waits ends the wait.
    let waiting = std::thread::spawn(move || {
        let started = Instant::now();
        let reply = conn.command(&more(5_000));
        (cursor_of(&reply), started.elapsed(), conn)
    });
    std::thread::sleep(Duration::from_millis(200));
    insert(&mut writer, &[4]);
    let ((same, batch), waited, mut conn) = waiting.join().unwrap();
    assert_eq!((same, batch), (id, vec![4]));
    assert!(
        waited < Duration::from_secs(4),
        "woke on the insert: {waited:?}"
    );
    // Four inserts push document 4, the cursor's place, out of the collection.
    insert(&mut writer, &[5, 6, 7, 8]);
    let lost = doc! {"getMore": id, "collection": "log", "$db": "s"};
    assert_eq!(conn.code(&lost), 136);
    for (bad, code) in [
        (doc! {"find": "plain", "tailable": true}, 2),
        (
            doc! {"find": "log", "tailable": true, "sort": {"_id": 1}},
            2,
        ),
        (
            doc! {"find": "log", "tailable": true, "singleBatch": true},
            2,
        ),
        (doc! {"find": "log", "awaitData": true}, 9),
    ] {
        let mut bad = bad;
        bad.insert("$db", "s");
        if bad.get_str("find").is_ok_and(|f| f == "plain") {
            insert_plain(&mut writer);
        }
        assert_eq!(conn.code(&bad), code, "{bad}");
    }
    // A tailable cursor that does not await takes no maxTimeMS on getMore.
    let (id, _) = cursor_of(&conn.command(&doc! {"find": "log", "tailable": true, "$db": "s"}));
    let timed = doc! {"getMore": id, "collection": "log", "maxTimeMS": 10, "$db": "s"};
    assert_eq!(conn.code(&timed), 2);
}

fn insert_plain(conn: &mut RawConnection) {
    let insert = doc! {"insert": "plain", "documents": [{"_id": 1}], "$db": "s"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 1);
}

#[test]
fn convert_to_capped_keeps_the_newest_and_only_the_id_index() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let docs: Vec<Document> = (0..20)
        .map(|i| doc! {"_id": i, "p": "x".repeat(200)})
        .collect();
    let insert = doc! {"insert": "c", "documents": docs, "$db": "s"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 20);
    let index =
        doc! {"createIndexes": "c", "indexes": [{"key": {"p": 1}, "name": "p_1"}], "$db": "s"};
    assert_eq!(conn.code(&index), 0);
    let convert = doc! {"convertToCapped": "c", "size": 1000, "$db": "s"};
    assert_eq!(conn.code(&convert), 0);
    let (_, held) = cursor_of(&conn.command(&doc! {"find": "c", "$db": "s"}));
    assert_eq!(
        held,
        (16..20).collect::<Vec<_>>(),
        "four documents of 228 bytes in 1,024"
    );
    let indexes = conn.command(&doc! {"listIndexes": "c", "$db": "s"});
    assert_eq!(first_batch(&indexes).len(), 1, "{indexes}");
    let missing = doc! {"convertToCapped": "none", "size": 1000, "$db": "s"};
    assert_eq!(conn.code(&missing), 26);
    let no_size = doc! {"convertToCapped": "c", "$db": "s"};
    assert_ne!(conn.code(&no_size), 0);
}

/// The entries of `system.profile` in `s` matching `filter`, in insertion order.
fn profile_entries(conn: &mut RawConnection, filter: Document) -> Vec<Document> {
    let find = doc! {"find": "system.profile", "filter": filter, "batchSize": 1000, "$db": "s"};
    let reply = conn.command(&find);
    let cursor = reply
        .get_document("cursor")
        .unwrap_or_else(|_| panic!("{reply}"));
    cursor
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|d| d.as_document().unwrap().clone())
        .collect()
}

#[test]
fn the_profiler_keeps_each_operation_its_level_asks_for_in_mongodbs_shape() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let read = conn.command(&doc! {"profile": -1, "$db": "s"});
    assert_eq!(read.get_i32("was").unwrap(), 0, "{read}");
    assert_eq!(read.get_i64("slowms").unwrap(), 100, "{read}");
    assert!(
        (read.get_f64("sampleRate").unwrap() - 1.0).abs() < 1e-9,
        "{read}"
    );
    for (bad, code) in [
        (doc! {"profile": 1, "sampleRate": 2.0}, 2),
        (doc! {"profile": 1, "filter": 5}, 2),
        (doc! {"profile": 1, "slowMS": 5}, 40415),
    ] {
        let mut bad = bad;
        bad.insert("$db", "s");
        assert_eq!(conn.code(&bad), code, "{bad}");
    }
    assert_eq!(conn.code(&doc! {"profile": 2, "$db": "s"}), 0);
    let docs: Vec<Document> = (0..5).map(|i| doc! {"_id": i, "a": i % 2}).collect();
    let insert = doc! {"insert": "c", "documents": docs, "$db": "s"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 5);
    let find = doc! {"find": "c", "filter": {"a": 1}, "$db": "s"};
    assert_eq!(cursor_of(&conn.command(&find)).1, [1, 3]);
    let (id, _) = cursor_of(&conn.command(&doc! {"find": "c", "batchSize": 2, "$db": "s"}));
    let more = doc! {"getMore": id, "collection": "c", "$db": "s"};
    assert_eq!(cursor_of(&conn.command(&more)).1, [2, 3, 4]);
    let update = doc! {"update": "c", "updates": [{"q": {"a": 0}, "u": {"$set": {"b": 1}}, "multi": true}], "$db": "s"};
    assert_eq!(conn.command(&update).get_i32("nModified").unwrap(), 3);
    let entries = profile_entries(&mut conn, doc! {});
    let ops: Vec<&str> = entries.iter().map(|e| e.get_str("op").unwrap()).collect();
    assert_eq!(
        ops,
        ["insert", "query", "query", "getmore", "update"],
        "{entries:?}"
    );
    let [inserted, query, _, getmore, updated] = &entries[..] else {
        unreachable!()
    };
    assert_eq!(inserted.get_str("ns").unwrap(), "s.c");
    assert_eq!(inserted.get_i64("ninserted").unwrap(), 5);
    assert!(
        !inserted
            .get_document("command")
            .unwrap()
            .contains_key("documents")
    );
    assert_eq!(query.get_i64("nreturned").unwrap(), 2, "{query}");
    assert_eq!(query.get_i64("docsExamined").unwrap(), 5, "{query}");
    assert_eq!(query.get_str("planSummary").unwrap(), "COLLSCAN", "{query}");
    assert!(query.get_bool("cursorExhausted").unwrap(), "{query}");
    assert_eq!(
        query
            .get_document("command")
            .unwrap()
            .get_str("find")
            .unwrap(),
        "c"
    );
    for field in ["millis", "responseLength"] {
        assert!(query.get_i64(field).is_ok(), "{field}: {query}");
    }
    assert!(
        query.get_datetime("ts").is_ok() && query.get_str("client").is_ok(),
        "{query}"
    );
    assert_eq!(
        getmore.get_i64("cursorid").unwrap_or(0),
        0,
        "exhausted: {getmore}"
    );
    assert_eq!(getmore.get_i64("nreturned").unwrap(), 3, "{getmore}");
    let origin = getmore.get_document("originatingCommand").unwrap();
    assert_eq!(origin.get_i32("batchSize").unwrap(), 2, "{getmore}");
    assert_eq!(updated.get_i64("nMatched").unwrap(), 3, "{updated}");
    assert_eq!(updated.get_i64("nModified").unwrap(), 3, "{updated}");
    assert!(
        updated.get_document("command").unwrap().contains_key("q"),
        "{updated}"
    );
    // Reading system.profile is itself profiled.
    assert_eq!(profile_entries(&mut conn, doc! {}).len(), 6);
    let write = doc! {"insert": "system.profile", "documents": [{}], "$db": "s"};
    assert_ne!(conn.code(&write), 0);
}

#[test]
fn views_read_through_their_pipelines_and_refuse_writes() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let docs: Vec<Document> = (1..=6)
        .map(|i| doc! {"_id": i, "n": i, "tags": ["a", format!("t{}", i % 3)]})
        .collect();
    let insert = doc! {"insert": "c", "documents": docs, "$db": "s"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 6);
    let even = doc! {"create": "even", "viewOn": "c", "pipeline": [{"$match": {"n": {"$mod": [2, 0]}}}], "$db": "s"};
    assert_eq!(conn.code(&even), 0);
    // A view on a view: its pipeline runs after the inner one's.
    let big = doc! {"create": "bigEven", "viewOn": "even", "pipeline": [{"$match": {"n": {"$gt": 2}}}], "$db": "s"};
    assert_eq!(conn.code(&big), 0);
    let find = doc! {"find": "even", "filter": {"n": {"$gt": 0}}, "sort": {"n": -1}, "skip": 1, "limit": 5, "$db": "s"};
    assert_eq!(cursor_of(&conn.command(&find)).1, [4, 2]);
    let (id, first) =
        cursor_of(&conn.command(&doc! {"find": "bigEven", "batchSize": 1, "$db": "s"}));
    assert_eq!(first, [4]);
    let more = doc! {"getMore": id, "collection": "bigEven", "$db": "s"};
    assert_eq!(cursor_of(&conn.command(&more)).1, [6]);
    let count = conn.command(&doc! {"count": "even", "query": {"n": {"$lt": 6}}, "$db": "s"});
    assert_eq!(count.get_i64("n").unwrap(), 2, "{count}");
    let distinct = conn.command(&doc! {"distinct": "even", "key": "tags", "$db": "s"});
    assert_eq!(
        distinct.get_array("values").unwrap(),
        &vec![bson!("a"), bson!("t0"), bson!("t1"), bson!("t2")]
    );
    let aggregate = doc! {"aggregate": "bigEven", "pipeline": [{"$group": {"_id": null, "s": {"$sum": "$n"}}}], "cursor": {}, "$db": "s"};
    let reply = conn.command(&aggregate);
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(
        batch[0].as_document().unwrap().get_i32("s").unwrap(),
        10,
        "{reply}"
    );
    for write in [
        doc! {"insert": "even", "documents": [{"n": 8}]},
        doc! {"update": "even", "updates": [{"q": {}, "u": {"$set": {"x": 1}}}]},
        doc! {"delete": "even", "deletes": [{"q": {}, "limit": 0}]},
        doc! {"findAndModify": "even", "query": {}, "remove": true},
        doc! {"createIndexes": "even", "indexes": [{"key": {"n": 1}, "name": "n_1"}]},
        doc! {"collStats": "even"},
    ] {
        let mut write = write;
        write.insert("$db", "s");
        assert_eq!(conn.code(&write), 166, "{write}");
    }
    assert_eq!(conn.code(&doc! {"drop": "even", "$db": "s"}), 0);
    let gone = conn.command(&doc! {"find": "even", "$db": "s"});
    assert_eq!(cursor_of(&gone).1, Vec::<i32>::new());
    let stats = conn.command(&doc! {"dbStats": 1, "$db": "s"});
    assert_eq!(stats.get_i64("views").unwrap(), 1, "{stats}");
}

#[test]
fn view_definitions_are_checked_listed_and_never_cycle() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let insert = doc! {"insert": "c", "documents": [{"_id": 1}], "$db": "s"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 1);
    let even = doc! {"create": "even", "viewOn": "c", "pipeline": [{"$match": {"n": {"$mod": [2, 0]}}}], "$db": "s"};
    assert_eq!(conn.code(&even), 0);
    let big = doc! {"create": "bigEven", "viewOn": "even", "pipeline": [{"$match": {"n": {"$gt": 2}}}], "$db": "s"};
    assert_eq!(conn.code(&big), 0);
    for (bad, code) in [
        (doc! {"create": "even", "viewOn": "c"}, 48),
        (doc! {"create": "c", "viewOn": "even"}, 48),
        (
            doc! {"create": "w", "viewOn": "c", "pipeline": [{"$out": "x"}]},
            167,
        ),
        (
            doc! {"create": "w", "viewOn": "c", "pipeline": [{"$fake": 1}]},
            40324,
        ),
        (doc! {"create": "w", "pipeline": []}, 72),
        // A view on a view keeps its collation; a malformed one is refused by name.
        (
            doc! {"create": "w", "viewOn": "even", "collation": {"locale": "en"}},
            167,
        ),
        (doc! {"create": "w", "viewOn": "c", "collation": "en"}, 14),
        (
            doc! {"create": "w", "collation": {"locale": "en", "strength": 9}},
            2,
        ),
        // Finds on a view take none of the options that read an index.
        (
            doc! {"find": "even", "min": {"n": 1}, "hint": {"n": 1}},
            167,
        ),
        (doc! {"find": "even", "returnKey": true}, 167),
        (doc! {"find": "even", "showRecordId": true}, 167),
    ] {
        let mut bad = bad;
        bad.insert("$db", "s");
        assert_eq!(conn.code(&bad), code, "{bad}");
    }
    // Nothing was made by the refused creations.
    let names = conn.command(&doc! {"listCollections": 1, "filter": {"name": "w"}, "$db": "s"});
    assert!(!names.to_string().contains("\"w\""), "{names}");
    // A cycle through a view's source is refused and leaves nothing behind.
    assert_eq!(
        conn.code(&doc! {"create": "loopA", "viewOn": "loopB", "$db": "s"}),
        0
    );
    assert_eq!(
        conn.code(&doc! {"create": "loopB", "viewOn": "loopA", "$db": "s"}),
        145
    );
    let listed = conn.command(&doc! {"listCollections": 1, "filter": {"type": "view"}, "$db": "s"});
    let views = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let names: Vec<&str> = views
        .iter()
        .map(|v| v.as_document().unwrap().get_str("name").unwrap())
        .collect();
    assert_eq!(names, ["bigEven", "even", "loopA"]);
    let even_listed = views[1].as_document().unwrap();
    assert_eq!(
        even_listed
            .get_document("options")
            .unwrap()
            .get_str("viewOn")
            .unwrap(),
        "c"
    );
    assert!(
        even_listed
            .get_document("info")
            .unwrap()
            .get_bool("readOnly")
            .unwrap()
    );
}

#[test]
fn the_profilers_level_one_keeps_what_its_filter_matches_and_level_zero_nothing() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    assert_eq!(conn.code(&doc! {"profile": 2, "$db": "s"}), 0);
    let docs: Vec<Document> = (0..5).map(|i| doc! {"_id": i, "a": i % 2}).collect();
    let insert = doc! {"insert": "c", "documents": docs, "$db": "s"};
    assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 5);
    let find = doc! {"find": "c", "filter": {"a": 1}, "$db": "s"};
    let update = doc! {"update": "c", "updates": [{"q": {"a": 0}, "u": {"$set": {"b": 1}}, "multi": true}], "$db": "s"};
    // Level 1 keeps what its filter matches, and nothing else.
    let level_one = doc! {"profile": 1, "filter": {"op": "update"}, "$db": "s"};
    let previous = conn.command(&level_one);
    assert_eq!(previous.get_i32("was").unwrap(), 2, "{previous}");
    let before = profile_entries(&mut conn, doc! {}).len();
    assert_eq!(cursor_of(&conn.command(&find)).1, [1, 3]);
    assert_eq!(conn.command(&update).get_i32("n").unwrap(), 3);
    let after = profile_entries(&mut conn, doc! {});
    assert_eq!(
        after.len(),
        before + 1,
        "only the update: {:?}",
        after.last()
    );
    let off = conn.command(&doc! {"profile": 0, "filter": "unset", "$db": "s"});
    assert_eq!(off.get_i32("was").unwrap(), 1, "{off}");
    assert_eq!(off.get_document("filter").unwrap(), &doc! {"op": "update"});
    let listed = conn
        .command(&doc! {"listCollections": 1, "filter": {"name": "system.profile"}, "$db": "s"});
    let first = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let options = first[0]
        .as_document()
        .unwrap()
        .get_document("options")
        .unwrap();
    assert_eq!(options, &doc! {"capped": true, "size": 1_048_576_i64});
    assert_eq!(conn.code(&doc! {"drop": "system.profile", "$db": "s"}), 0);
}

#[test]
fn validators_refuse_writes_with_errinfo_unless_bypassed_and_collmod_changes_them() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let schema = doc! {"$jsonSchema": {"required": ["name"], "properties": {"name": {"bsonType": "string"}}}};
    let create = doc! {"create": "people", "validator": schema.clone(), "$db": "s"};
    assert_eq!(conn.code(&create), 0);
    let insert = doc! {"insert": "people", "documents": [{"_id": 1, "name": "ann"}, {"_id": 2}], "ordered": false, "$db": "s"};
    let reply = conn.command(&insert);
    assert_eq!(reply.get_i32("n").unwrap(), 1, "{reply}");
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap();
    assert_eq!(error.get_i32("code").unwrap(), 121, "{reply}");
    let info = error.get_document("errInfo").unwrap();
    assert_eq!(info.get_i32("failingDocumentId").unwrap(), 2, "{info}");
    assert_eq!(
        info.get_document("details")
            .unwrap()
            .get_str("operatorName")
            .unwrap(),
        "$jsonSchema"
    );
    let bypass = doc! {"insert": "people", "documents": [{"_id": 3}], "bypassDocumentValidation": true, "$db": "s"};
    assert_eq!(conn.command(&bypass).get_i32("n").unwrap(), 1);
    let update = doc! {"update": "people", "updates": [{"q": {"_id": 1}, "u": {"$unset": {"name": 1}}}], "$db": "s"};
    let reply = conn.command(&update);
    assert_eq!(
        reply.get_array("writeErrors").unwrap()[0]
            .as_document()
            .unwrap()
            .get_i32("code")
            .unwrap(),
        121
    );
    let modify = doc! {"findAndModify": "people", "query": {"_id": 1}, "update": {"$set": {"name": 5}}, "$db": "s"};
    assert_eq!(conn.code(&modify), 121);
    let listed =
        conn.command(&doc! {"listCollections": 1, "filter": {"name": "people"}, "$db": "s"});
    let options = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()[0]
        .as_document()
        .unwrap()
        .get_document("options")
        .unwrap()
        .clone();
    assert_eq!(options.get_document("validator").unwrap(), &schema);
    assert_eq!(options.get_str("validationLevel").unwrap(), "strict");
    assert_eq!(options.get_str("validationAction").unwrap(), "error");
    // collMod to warn: the same write goes through.
    let warn = doc! {"collMod": "people", "validationAction": "warn", "$db": "s"};
    assert_eq!(conn.code(&warn), 0);
    assert_eq!(conn.code(&modify), 0);
    // A $jsonSchema query finds the documents that fail the schema.
    let invalid = doc! {"find": "people", "filter": {"$nor": [schema.clone()]}, "$db": "s"};
    assert_eq!(cursor_of(&conn.command(&invalid)).1, [1, 3]);
    for (bad, code) in [
        (
            doc! {"create": "x", "validator": {"$jsonSchema": {"bsonType": "strung"}}},
            9,
        ),
        (doc! {"create": "x", "validator": {"$where": "1"}}, 224),
        (
            doc! {"create": "x", "validator": {"a": 1}, "validationLevel": "lax"},
            2,
        ),
        (doc! {"collMod": "people", "validationAction": "shout"}, 2),
    ] {
        let mut bad = bad;
        bad.insert("$db", "s");
        assert_eq!(conn.code(&bad), code, "{bad}");
    }
}

#[test]
fn snapshot_reads_name_their_time_and_never_read_later_data() {
    let server = start_replica_set();
    let mut conn = RawConnection::open(&server);
    let insert = |conn: &mut RawConnection, id: i32| {
        let insert = doc! {"insert": "c", "documents": [{"_id": id}], "$db": "s"};
        assert_eq!(conn.command(&insert).get_i32("n").unwrap(), 1);
    };
    insert(&mut conn, 1);
    let snapshot = doc! {"find": "c", "readConcern": {"level": "snapshot"}, "$db": "s"};
    let reply = conn.command(&snapshot);
    let at = *reply
        .get_document("cursor")
        .unwrap()
        .get_timestamp("atClusterTime")
        .as_ref()
        .unwrap_or_else(|_| panic!("{reply}"));
    assert_eq!(cursor_of(&reply).1, [1]);
    let at_time = |command: &str| {
        let mut d = doc! {command: "c", "readConcern": {"level": "snapshot", "atClusterTime": at}, "$db": "s"};
        if command == "distinct" {
            d.insert("key", "_id");
        }
        if command == "aggregate" {
            d.insert("pipeline", Vec::<Bson>::new());
            d.insert("cursor", Document::new());
        }
        d
    };
    assert_eq!(cursor_of(&conn.command(&at_time("find"))).1, [1]);
    let distinct = conn.command(&at_time("distinct"));
    assert_eq!(
        distinct.get_timestamp("atClusterTime").unwrap(),
        at,
        "{distinct}"
    );
    // After a commit the state at `at` is gone: refused, never answered with later data.
    insert(&mut conn, 2);
    for command in ["find", "aggregate", "distinct"] {
        assert_eq!(conn.code(&at_time(command)), 239, "{command}");
    }
    let local =
        doc! {"find": "c", "readConcern": {"level": "local", "afterClusterTime": at}, "$db": "s"};
    assert_eq!(cursor_of(&conn.command(&local)).1, [1, 2]);
    let future = bson::Timestamp {
        time: at.time + 3600,
        increment: 0,
    };
    for (bad, code) in [
        (
            doc! {"find": "c", "readConcern": {"level": "local", "atClusterTime": at}},
            72,
        ),
        (
            doc! {"find": "c", "readConcern": {"level": "snapshot", "atClusterTime": future}},
            72,
        ),
        (
            doc! {"find": "c", "readConcern": {"level": "available", "afterClusterTime": at}},
            72,
        ),
        (
            doc! {"count": "c", "readConcern": {"level": "snapshot"}},
            72,
        ),
        (
            doc! {"aggregate": "c", "pipeline": [{"$out": "d"}], "cursor": {}, "readConcern": {"level": "linearizable"}},
            72,
        ),
        (doc! {"find": "c", "readConcern": {"level": "strong"}}, 2),
        (
            doc! {"find": "c", "readConcern": {"level": "local", "when": 1}},
            40415,
        ),
    ] {
        let mut bad = bad;
        bad.insert("$db", "s");
        assert_eq!(conn.code(&bad), code, "{bad}");
    }
    let standalone = start();
    let mut alone = RawConnection::open(&standalone);
    assert_eq!(alone.code(&snapshot), 20);
}

#[test]
fn an_index_keeps_the_background_flag_it_was_created_with_and_it_is_no_part_of_its_identity() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let create = doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1", "background": false}], "$db": "s"};
    assert_eq!(conn.code(&create), 0);
    let again =
        doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}], "$db": "s"};
    assert_eq!(conn.code(&again), 0);
    let listed = conn.command(&doc! {"listIndexes": "c", "$db": "s"});
    let indexes = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let a = indexes[1].as_document().unwrap();
    assert!(!a.get_bool("background").unwrap(), "{a}");
    let bad = doc! {"createIndexes": "c", "indexes": [{"key": {"b": 1}, "name": "b_1", "background": "no"}], "$db": "s"};
    assert_eq!(conn.code(&bad), 14);
}

#[test]
fn on_primary_transactional_write_drops_the_reply_of_a_committed_write_and_its_retry_is_answered() {
    let server = start_with(
        Storage::in_memory(),
        Config {
            replica_set: Some("rs0".into()),
            test_commands: true,
            ..Config::default()
        },
    );
    let mut admin = RawConnection::open(&server);
    let point = |data: Document, times: i32| {
        doc! {"configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": times}, "data": data, "$db": "admin"}
    };
    let insert = |id: i32, txn: i64| {
        doc! {"insert": "c", "documents": [{"_id": id}], "lsid": lsid(7), "txnNumber": txn, "$db": "s"}
    };
    let dropped = |command: &Document| {
        let mut conn = RawConnection::open(&server);
        conn.0.write_all(&op_msg(command, 0)).unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(
            conn.0.read(&mut byte).unwrap_or(0),
            0,
            "the connection closes without a reply"
        );
    };
    // Committed, reply lost: the retry is answered from the record, the write applied once.
    assert_eq!(admin.code(&point(doc! {}, 1)), 0);
    dropped(&insert(1, 1));
    let retry = RawConnection::open(&server).command(&insert(1, 1));
    assert_eq!(retry.get_i32("n").unwrap(), 1, "{retry}");
    // Failing before its commit: nothing written; the retry writes it.
    assert_eq!(
        admin.code(&point(doc! {"failBeforeCommitExceptionCode": 1}, 1)),
        0
    );
    dropped(&insert(2, 2));
    let count = doc! {"count": "c", "$db": "s"};
    assert_eq!(admin.command(&count).get_i64("n").unwrap(), 1);
    let retry = RawConnection::open(&server).command(&insert(2, 2));
    assert_eq!(retry.get_i32("n").unwrap(), 1, "{retry}");
    assert_eq!(admin.command(&count).get_i64("n").unwrap(), 2);
    // Always on: each applied write loses its reply; a retry answered from its record keeps
    // its own.
    let always = doc! {"configureFailPoint": "onPrimaryTransactionalWrite", "mode": "alwaysOn", "$db": "admin"};
    assert_eq!(admin.code(&always), 0);
    dropped(&insert(4, 3));
    let retry = RawConnection::open(&server).command(&insert(4, 3));
    assert_eq!(retry.get_i32("n").unwrap(), 1, "{retry}");
    // A write outside a session is not a retryable write: the point does not fire.
    let plain = doc! {"insert": "c", "documents": [{"_id": 3}], "$db": "s"};
    assert_eq!(admin.command(&plain).get_i32("n").unwrap(), 1);
}

#[test]
fn get_log_serves_the_servers_own_lines_in_mongodb_json() {
    let server = start();
    let client = client(&server);
    let admin = client.database("admin");
    command_reply(&admin, doc! {"ping": 1});
    let names = command_reply(&admin, doc! {"getLog": "*"});
    assert_eq!(
        names.get_array("names").unwrap(),
        &vec![bson!("global"), bson!("startupWarnings")]
    );
    // In memory and without access control: both startup warnings.
    let warnings = command_reply(&admin, doc! {"getLog": "startupWarnings"});
    let lines = warnings.get_array("log").unwrap();
    assert_eq!(lines.len(), 2, "{warnings}");
    assert!(
        lines
            .iter()
            .all(|l| l.as_str().unwrap().contains(r#""s":"W","c":"CONTROL""#))
    );
    // Every command slower than slowms is logged: -1 makes every one slow.
    command_reply(&admin, doc! {"profile": 0, "slowms": -1});
    command_reply(&admin, doc! {"ping": 1});
    let global = command_reply(&admin, doc! {"getLog": "global"});
    let lines: Vec<&str> = global
        .get_array("log")
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let written = global.get_i64("totalLinesWritten").unwrap();
    assert!(written >= lines.len() as i64, "{global}");
    for (id, text) in [
        (23016, "Waiting for connections"),
        (22943, "Connection accepted"),
        (51803, "Slow query"),
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!(r#""id":{id},"#)) && l.contains(text)),
            "{text} missing from {lines:#?}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains(r#""command":"ping""#)),
        "{lines:#?}"
    );
    let refused = admin
        .run_command(doc! {"getLog": "nope"})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&refused), Some(2), "{refused}");
}

#[test]
fn fsync_commits_every_open_database_durably_and_refuses_lock() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(
        Storage::in_folder(dir.path().to_path_buf()),
        Config::default(),
    );
    let client = client(&server);
    for name in ["a", "b"] {
        client
            .database(name)
            .collection::<Document>("c")
            .insert_one(doc! {"x": 1})
            .run()
            .unwrap();
    }
    let admin = client.database("admin");
    let reply = command_reply(&admin, doc! {"fsync": 1});
    assert!(reply.get_i32("numFiles").unwrap() >= 2, "{reply}");
    let locked = admin
        .run_command(doc! {"fsync": 1, "lock": true})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&locked), Some(238), "{locked}");
    let elsewhere = client
        .database("a")
        .run_command(doc! {"fsync": 1})
        .run()
        .unwrap_err();
    assert_eq!(code_of(&elsewhere), Some(13), "{elsewhere}");
}

#[test]
fn admin_holds_the_feature_compatibility_version_and_cannot_be_dropped() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let list =
        conn.command(&doc! {"listDatabases": 1, "$db": "admin", "filter": {"name": "admin"}});
    let names = list.get_array("databases").unwrap();
    assert_eq!(names.len(), 1, "{list}");
    let fcv = conn.command(&doc! {"find": "system.version", "$db": "admin"});
    let first = fcv
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(
        first,
        &vec![Bson::from(
            doc! {"_id": "featureCompatibilityVersion", "version": "8.0"}
        )]
    );
    assert_eq!(conn.code(&doc! {"dropDatabase": 1, "$db": "admin"}), 20);
    assert_eq!(
        conn.code(&doc! {"count": "system.version", "$db": "admin"}),
        0
    );
}

/// `$out: {db, coll}` and `$merge: {into: {db, coll}}` write into the database they name, from
/// a collection's pipeline and from `{aggregate: 1}`.
#[test]
fn a_pipeline_writes_into_the_database_its_output_stage_names() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let insert = doc! {"insert": "c", "$db": "src", "documents": [{"_id": 1}, {"_id": 2}]};
    assert_eq!(conn.code(&insert), 0);
    let out = doc! {
        "aggregate": "c", "$db": "src", "cursor": {},
        "pipeline": [{"$out": {"db": "dst", "coll": "copy"}}],
    };
    assert_eq!(conn.code(&out), 0);
    let merge = doc! {
        "aggregate": 1, "$db": "admin", "cursor": {},
        "pipeline": [
            {"$documents": [{"_id": 2, "m": true}, {"_id": 3, "m": true}]},
            {"$merge": {"into": {"db": "dst", "coll": "copy"}}},
        ],
    };
    assert_eq!(conn.code(&merge), 0);
    let find = doc! {"find": "copy", "$db": "dst", "sort": {"_id": 1}};
    let found = conn.command(&find);
    let docs = found
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(
        docs,
        &vec![
            Bson::from(doc! {"_id": 1}),
            Bson::from(doc! {"_id": 2, "m": true}),
            Bson::from(doc! {"_id": 3, "m": true}),
        ]
    );
    // The source is unchanged and the admin database got nothing.
    let count = conn.command(&doc! {"count": "c", "$db": "src"});
    assert_eq!(count.get("n").and_then(Bson::as_i64), Some(2), "{count}");
    let admin = conn.command(&doc! {"listCollections": 1, "$db": "admin", "nameOnly": true});
    assert!(!admin.to_string().contains("copy"), "{admin}");
    let bad = doc! {
        "aggregate": "c", "$db": "src", "cursor": {},
        "pipeline": [{"$out": {"db": 1, "coll": "x"}}],
    };
    assert_eq!(conn.code(&bad), 14);
}

#[test]
fn transactions_refuse_a_write_concern_and_new_indexes_on_existing_collections() {
    let server = start_replica_set();
    let mut conn = RawConnection::open(&server);
    assert_eq!(
        conn.code(&doc! {"insert": "old", "$db": "t", "documents": [{}]}),
        0
    );
    let in_txn = |command: Document, txn: i64, start: bool| in_transaction(command, 7, txn, start);
    let with_concern =
        doc! {"insert": "old", "$db": "t", "documents": [{}], "writeConcern": {"w": 1}};
    assert_eq!(conn.code(&in_txn(with_concern, 1, true)), 72);
    let index =
        doc! {"createIndexes": "old", "$db": "t", "indexes": [{"key": {"a": 1}, "name": "a_1"}]};
    assert_eq!(conn.code(&in_txn(index, 2, true)), 263);
    // Indexes that exist may be asked for again.
    let again =
        doc! {"createIndexes": "old", "$db": "t", "indexes": [{"key": {"_id": 1}, "name": "_id_"}]};
    let again = conn.command(&in_txn(again, 3, true));
    assert_eq!(
        again.get_str("note").unwrap_or_default(),
        "all indexes already exist",
        "{again}"
    );
    let abort = doc! {"abortTransaction": 1, "$db": "admin"};
    assert_eq!(conn.code(&in_txn(abort, 3, false)), 0);
    // A collection the transaction creates takes indexes.
    let new =
        doc! {"createIndexes": "new", "$db": "t", "indexes": [{"key": {"a": 1}, "name": "a_1"}]};
    assert_eq!(conn.code(&in_txn(new, 4, true)), 0);
    let commit = doc! {"commitTransaction": 1, "$db": "admin", "writeConcern": {"w": 1}};
    assert_eq!(conn.code(&in_txn(commit, 4, false)), 0);
    let indexes = conn.command(&doc! {"listIndexes": "new", "$db": "t"});
    assert!(indexes.to_string().contains("a_1"), "{indexes}");
}

#[test]
fn read_concerns_follow_the_cursor_and_change_streams_read_majority() {
    let server = start_replica_set();
    let mut conn = RawConnection::open(&server);
    let insert = doc! {"insert": "c", "$db": "r", "documents": [{"_id": 1}, {"_id": 2}]};
    assert_eq!(conn.code(&insert), 0);
    let find = doc! {
        "find": "c", "$db": "r", "batchSize": 1, "lsid": lsid(8),
        "readConcern": {"level": "snapshot"},
    };
    let first = conn.command(&find);
    let cursor = first.get_document("cursor").unwrap();
    let at = cursor.get_timestamp("atClusterTime").unwrap();
    // A driver repeats the session's read concern on getMore; the cursor's own applies.
    let more = doc! {
        "getMore": cursor.get_i64("id").unwrap(), "collection": "c", "$db": "r",
        "lsid": lsid(8), "readConcern": {"level": "snapshot", "atClusterTime": at},
    };
    let next = conn.command(&more);
    let batch = next
        .get_document("cursor")
        .unwrap()
        .get_array("nextBatch")
        .unwrap();
    assert_eq!(batch, &vec![Bson::from(doc! {"_id": 2})], "{next}");
    let watch = |level: &str| {
        doc! {
            "aggregate": "c", "$db": "r", "cursor": {}, "pipeline": [{"$changeStream": {}}],
            "readConcern": {"level": level},
        }
    };
    let local = conn.command(&watch("local"));
    assert_eq!(local.get_i32("code").unwrap(), 72, "{local}");
    assert!(local.get_str("errmsg").unwrap().contains("'majority'"));
    assert_eq!(conn.code(&watch("majority")), 0);
}

#[test]
fn an_update_pipeline_naming_an_unknown_stage_fails_the_whole_command() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    assert_eq!(
        conn.code(&doc! {"insert": "c", "$db": "u", "documents": [{"x": 1}]}),
        0
    );
    let unknown = doc! {
        "update": "c", "$db": "u",
        "updates": [{"q": {}, "u": {"$set": {"y": 1}}}, {"q": {}, "u": [{"$invalidOperator": true}]}],
    };
    let reply = conn.command(&unknown);
    assert_eq!(reply.get_i32("code").unwrap(), 40324, "{reply}");
    // Not even the first statement ran.
    let found = conn.command(&doc! {"find": "c", "$db": "u", "filter": {"y": 1}});
    assert!(
        found
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .is_empty()
    );
    // A known stage that updates may not use is the statement's write error, as on MongoDB.
    let misplaced =
        doc! {"update": "c", "$db": "u", "updates": [{"q": {}, "u": [{"$group": {"_id": 1}}]}]};
    let reply = conn.command(&misplaced);
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)), "{reply}");
    assert!(reply.contains_key("writeErrors"), "{reply}");
}

#[test]
fn a_failed_command_still_reports_an_unsatisfiable_write_concern() {
    let server = start_replica_set();
    let mut conn = RawConnection::open(&server);
    let create = doc! {"create": "c", "$db": "w", "writeConcern": {"w": 2, "wtimeout": 1}};
    let created = conn.command(&create);
    assert_eq!(created.get("ok"), Some(&Bson::Double(1.0)), "{created}");
    assert_eq!(
        created
            .get_document("writeConcernError")
            .unwrap()
            .get_i32("code")
            .unwrap(),
        100
    );
    let again = conn.command(&create);
    assert_eq!(again.get_i32("code").unwrap(), 48, "{again}");
    assert_eq!(
        again
            .get_document("writeConcernError")
            .unwrap()
            .get_i32("code")
            .unwrap(),
        100
    );
}

/// A `failCommand` limited to an application fires on the `hello` that names it, the first
/// command of a connection, before the connection knows its name.
#[test]
fn the_fail_point_knows_the_application_of_the_hello_that_names_it() {
    let server = start_with_test_commands();
    let mut admin = RawConnection::open(&server);
    let configure = doc! {
        "configureFailPoint": "failCommand", "mode": "alwaysOn", "$db": "admin",
        "data": {"failCommands": ["hello"], "appName": "slowApp", "errorCode": 2},
    };
    assert_eq!(admin.code(&configure), 0);
    let hello = |app: &str| {
        doc! {"hello": 1, "$db": "admin", "client": {"application": {"name": app}}}
    };
    assert_eq!(RawConnection::open(&server).code(&hello("slowApp")), 2);
    assert_eq!(RawConnection::open(&server).code(&hello("other")), 0);
    let off = doc! {"configureFailPoint": "failCommand", "mode": "off", "$db": "admin"};
    assert_eq!(admin.code(&off), 0);
}

/// The Stable API: a strict declaration keeps a command to version 1, and the commands that
/// test the API exist with test commands only.
#[test]
fn a_strict_api_declaration_refuses_what_version_1_does_not_hold() {
    let plain = start();
    let mut conn = RawConnection::open(&plain);
    let strict = |command: Document| {
        let mut command = command;
        command.insert("$db", "api");
        command.insert("apiVersion", "1");
        command.insert("apiStrict", true);
        command
    };
    assert_eq!(
        conn.code(&strict(doc! {"insert": "c", "documents": [{"x": 1}]})),
        0
    );
    let distinct = conn.command(&strict(doc! {"distinct": "c", "key": "x"}));
    assert_eq!(distinct.get_str("codeName").unwrap(), "APIStrictError");
    assert!(
        distinct
            .get_str("errmsg")
            .unwrap()
            .contains("command distinct is not in API Version 1")
    );
    assert_eq!(
        conn.code(&doc! {"distinct": "c", "key": "x", "$db": "api", "apiVersion": "1"}),
        0
    );
    assert_eq!(
        conn.code(&doc! {"ping": 1, "$db": "api", "apiVersion": "2"}),
        322
    );
    assert_eq!(conn.code(&strict(doc! {"testVersion2": 1})), 59);
    let tests = start_with_test_commands();
    let mut conn = RawConnection::open(&tests);
    assert_eq!(conn.code(&strict(doc! {"testVersion2": 1})), 323);
    assert_eq!(conn.code(&strict(doc! {"testVersions1And2": 1})), 0);
}

/// An exhaust cursor: a `getMore` sent with `exhaustAllowed` is answered batch after batch,
/// each reply flagged `moreToCome` and answering the one before, until the cursor closes.
#[test]
fn an_exhaust_get_more_streams_every_batch_until_the_cursor_closes() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let docs: Vec<Document> = (0..10).map(|i| doc! {"_id": i}).collect();
    assert_eq!(
        conn.code(&doc! {"insert": "c", "$db": "x", "documents": docs}),
        0
    );
    let first = conn.command(&doc! {"find": "c", "$db": "x", "batchSize": 3});
    let id = first.get_document("cursor").unwrap().get_i64("id").unwrap();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let more = doc! {"getMore": id, "collection": "c", "$db": "x", "batchSize": 3};
    stream
        .write_all(&op_msg(&more, odm_server::wire::EXHAUST_ALLOWED))
        .unwrap();
    let mut answered = 1; // op_msg's request id
    let mut seen = Vec::new();
    loop {
        let (reply_id, response_to, flags, reply) = read_message(&mut stream);
        assert_eq!(response_to, answered, "{reply}");
        let cursor = reply.get_document("cursor").unwrap();
        for doc in cursor.get_array("nextBatch").unwrap() {
            seen.push(doc.as_document().unwrap().get_i32("_id").unwrap());
        }
        let open = cursor.get_i64("id").unwrap() != 0;
        assert_eq!(flags & odm_server::wire::MORE_TO_COME != 0, open, "{reply}");
        if !open {
            break;
        }
        answered = reply_id;
    }
    assert_eq!(seen, (3..10).collect::<Vec<_>>());
    // The stream over, the connection serves the next command.
    stream
        .write_all(&op_msg(&doc! {"ping": 1, "$db": "x"}, 0))
        .unwrap();
    let (_, _, flags, reply) = read_message(&mut stream);
    assert_eq!((flags, reply.get("ok")), (0, Some(&Bson::Double(1.0))));
}

/// A client `bulkWrite` inside a transaction writes in it (its one database), commits or aborts
/// with it, and answers through a cursor that `getMore` reads inside it.
#[test]
fn a_client_bulk_write_runs_inside_a_transaction_on_its_one_database() {
    let server = start_replica_set();
    let mut conn = RawConnection::open(&server);
    let in_txn = |command: Document, txn: i64, start: bool| in_transaction(command, 9, txn, start);
    let bulk = |ids: [i32; 3]| {
        doc! {
            "bulkWrite": 1, "$db": "admin", "nsInfo": [{"ns": "b.c"}], "cursor": {"batchSize": 1},
            "ops": ids.iter().map(|id| doc! {"insert": 0, "document": {"_id": id}}).collect::<Vec<_>>(),
        }
    };
    let written = conn.command(&in_txn(bulk([1, 2, 3]), 1, true));
    assert_eq!(written.get_i32("nInserted").unwrap(), 3, "{written}");
    let cursor = written.get_document("cursor").unwrap();
    let more = doc! {"getMore": cursor.get_i64("id").unwrap(), "collection": "$cmd.bulkWrite", "$db": "admin"};
    let rest = conn.command(&in_txn(more, 1, false));
    let batch = rest
        .get_document("cursor")
        .unwrap_or_else(|_| panic!("{rest}"))
        .get_array("nextBatch")
        .unwrap();
    assert_eq!(batch.len(), 2, "{rest}");
    // Not visible outside before the commit, visible after.
    let count = doc! {"count": "c", "$db": "b"};
    assert_eq!(
        conn.command(&count).get("n").and_then(Bson::as_i64),
        Some(0)
    );
    let commit = doc! {"commitTransaction": 1, "$db": "admin"};
    assert_eq!(conn.code(&in_txn(commit, 1, false)), 0);
    assert_eq!(
        conn.command(&count).get("n").and_then(Bson::as_i64),
        Some(3)
    );
    // A failed operation aborts the transaction: nothing of it stays.
    let failing = conn.command(&in_txn(bulk([4, 1, 5]), 2, true));
    assert_eq!(failing.get_i32("nErrors").unwrap(), 1, "{failing}");
    let commit = doc! {"commitTransaction": 1, "$db": "admin"};
    assert_eq!(conn.code(&in_txn(commit, 2, false)), 251);
    assert_eq!(
        conn.command(&count).get("n").and_then(Bson::as_i64),
        Some(3)
    );
    // Two databases in one transaction are refused before anything is written.
    let two = doc! {
        "bulkWrite": 1, "$db": "admin", "nsInfo": [{"ns": "b.c"}, {"ns": "other.c"}],
        "ops": [{"insert": 0, "document": {"_id": 9}}, {"insert": 1, "document": {"_id": 9}}],
    };
    assert_eq!(conn.code(&in_txn(two, 3, true)), 263);
}

/// A view's default collation: its pipeline and every read of it run under it (not under its
/// collection's), a read may name it again but not another, and a view on it keeps it.
#[test]
fn a_view_reads_under_its_own_default_collation() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let words = |db: &str| {
        doc! {"insert": "words", "$db": db, "documents": [
            {"_id": 1, "w": "apple"}, {"_id": 2, "w": "Apple"}, {"_id": 3, "w": "banana"},
        ]}
    };
    assert_eq!(conn.code(&words("v")), 0);
    let strength_2 = doc! {"locale": "en", "strength": 2};
    let create =
        doc! {"create": "ci", "viewOn": "words", "collation": strength_2.clone(), "$db": "v"};
    assert_eq!(conn.code(&create), 0);
    let ids = |reply: &Document| -> Vec<i32> {
        let cursor = reply
            .get_document("cursor")
            .unwrap_or_else(|_| panic!("{reply}"));
        let batch = cursor.get_array("firstBatch").unwrap();
        batch
            .iter()
            .map(|d| d.as_document().unwrap().get_i32("_id").unwrap())
            .collect()
    };
    let find = doc! {"find": "ci", "filter": {"w": "APPLE"}, "sort": {"_id": 1}, "$db": "v"};
    assert_eq!(ids(&conn.command(&find)), [1, 2]);
    let mut same = find.clone();
    same.insert("collation", strength_2.clone());
    assert_eq!(ids(&conn.command(&same)), [1, 2]);
    let mut other = find.clone();
    other.insert("collation", doc! {"locale": "fr"});
    assert_eq!(conn.code(&other), 167);
    let count = doc! {"count": "ci", "query": {"w": "apple"}, "$db": "v"};
    assert_eq!(
        conn.command(&count).get("n").and_then(Bson::as_i64),
        Some(2)
    );
    let distinct = conn.command(&doc! {"distinct": "ci", "key": "w", "$db": "v"});
    assert_eq!(distinct.get_array("values").unwrap().len(), 2, "{distinct}");
    let grouped = doc! {
        "aggregate": "ci", "cursor": {}, "$db": "v",
        "pipeline": [{"$group": {"_id": "$w", "n": {"$sum": 1}}}, {"$sort": {"n": -1}}],
    };
    let groups = conn.command(&grouped);
    let first = groups
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()[0]
        .clone();
    assert_eq!(
        first.as_document().unwrap().get_i32("n").unwrap(),
        2,
        "{groups}"
    );
    // A view without a collation compares binary strings, whatever its collection's default.
    let defaulted = doc! {"create": "words", "collation": strength_2.clone(), "$db": "d"};
    assert_eq!(conn.code(&defaulted), 0);
    assert_eq!(conn.code(&words("d")), 0);
    assert_eq!(
        conn.code(&doc! {"create": "plain", "viewOn": "words", "$db": "d"}),
        0
    );
    let plain = doc! {"find": "plain", "filter": {"w": "APPLE"}, "$db": "d"};
    assert!(ids(&conn.command(&plain)).is_empty());
    let through_collection = doc! {"find": "words", "filter": {"w": "APPLE"}, "$db": "d"};
    assert_eq!(ids(&conn.command(&through_collection)).len(), 2);
    // A view on the view keeps its collation.
    let on_view = |collation: Document| {
        doc! {"create": "ci2", "viewOn": "ci", "collation": collation, "$db": "v"}
    };
    assert_eq!(conn.code(&on_view(doc! {"locale": "fr"})), 167);
    assert_eq!(conn.code(&on_view(strength_2)), 0);
    let listed = conn.command(&doc! {"listCollections": 1, "filter": {"name": "ci"}, "$db": "v"});
    let listed = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()[0]
        .clone();
    let options = listed
        .as_document()
        .unwrap()
        .get_document("options")
        .unwrap()
        .clone();
    assert_eq!(
        options
            .get_document("collation")
            .unwrap()
            .get_str("locale")
            .unwrap(),
        "en"
    );
}

/// On a collection created with a case-insensitive default collation, `"a"` and `"A"` are one
/// `_id`, as MongoDB's `_id` index under that collation holds them: the second insert is an
/// `E11000` of `_id_`, and `listIndexes` and `listCollections` show `_id_` with the collation.
#[test]
fn a_collated_collection_refuses_ids_equal_under_its_collation() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    let strength_2 = doc! {"locale": "en", "strength": 2};
    let create = doc! {"create": "ci", "collation": strength_2, "$db": "d"};
    assert_eq!(conn.code(&create), 0);
    let insert = |id: &str| doc! {"insert": "ci", "documents": [{"_id": id}], "$db": "d"};
    assert_eq!(conn.code(&insert("a")), 0);
    let refused = conn.command(&insert("A"));
    let error = refused.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(error.get_i32("code").unwrap(), 11000, "{refused}");
    assert!(
        error
            .get_str("errmsg")
            .unwrap()
            .contains("index: _id_ dup key"),
        "{refused}"
    );
    let indexes = conn.command(&doc! {"listIndexes": "ci", "$db": "d"});
    let batch = first_batch(&indexes);
    assert_eq!(batch.len(), 1, "{indexes}");
    let id = &batch[0];
    assert_eq!(id.get_str("name").unwrap(), "_id_");
    assert_eq!(
        id.get_document("collation")
            .unwrap()
            .get_i32("strength")
            .unwrap(),
        2,
        "{indexes}"
    );
    let listed = conn.command(&doc! {"listCollections": 1, "$db": "d"});
    let info = first_batch(&listed).swap_remove(0);
    let id_index = info.get_document("idIndex").unwrap();
    assert_eq!(
        id_index
            .get_document("collation")
            .unwrap()
            .get_str("locale")
            .unwrap(),
        "en",
        "{listed}"
    );
    let other = doc! {
        "createIndexes": "ci", "$db": "d",
        "indexes": [{"key": {"_id": 1}, "name": "_id_", "collation": {"locale": "fr"}}],
    };
    assert_eq!(conn.code(&other), 2);
}
