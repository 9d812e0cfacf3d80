//! `odm serve` stops work on request: `maxTimeMS` on reads and writes, `currentOp` and
//! `killOp`, `killSessions`; the server answers the next command after each.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bson::{Bson, Document, bson, doc};
use odm_server::{Config, Server, ServerHandle, Storage};

fn start() -> ServerHandle {
    start_with(Config::default())
}

fn start_with(config: Config) -> ServerHandle {
    let config = Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..config
    };
    Server::bind(Storage::in_memory(), config)
        .expect("binds")
        .spawn()
}

/// One connection speaking `OP_MSG` by hand.
struct RawConnection(TcpStream);

impl RawConnection {
    fn open(server: &ServerHandle) -> RawConnection {
        let stream = TcpStream::connect(server.addr()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_mins(1)))
            .unwrap();
        RawConnection(stream)
    }

    fn command(&mut self, body: &Document) -> Document {
        let raw = bson::RawDocumentBuf::try_from(body).unwrap();
        self.0
            .write_all(&odm_server::wire::encode_msg(1, 0, &raw, 0, None))
            .unwrap();
        let mut header = [0u8; 16];
        self.0.read_exact(&mut header).unwrap();
        let len = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
        let mut rest = vec![0u8; len - 16];
        self.0.read_exact(&mut rest).unwrap();
        Document::from_reader(&rest[5..]).unwrap()
    }

    /// The code of a command's error reply; 0 when it succeeded.
    fn code(&mut self, body: &Document) -> i32 {
        match self.command(body).get("code") {
            Some(Bson::Int32(code)) => *code,
            _ => 0,
        }
    }

    fn ping(&mut self) {
        assert_eq!(self.code(&doc! {"ping": 1, "$db": "admin"}), 0);
    }
}

fn lsid(n: u8) -> Document {
    doc! {"id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![n; 16] }}
}

/// `n` documents in `db.c`.
fn fill(conn: &mut RawConnection, db: &str, n: i32) {
    let docs: Vec<Document> = (0..n).map(|i| doc! {"_id": i, "x": i}).collect();
    let reply = conn.command(&doc! {"insert": "c", "documents": docs, "$db": db});
    assert_eq!(reply.get_i32("n").unwrap(), n, "{reply}");
}

/// An expression that takes a long while on every document: a million-step `$map`.
fn slow() -> Bson {
    bson!({"$size": {"$map": {"input": {"$range": [0, 1_000_000]}, "in": {"$add": ["$$this", 1]}}}})
}

/// Runs `command` and returns its error code and how long it took past `limit`.
fn expiry(conn: &mut RawConnection, command: &Document, limit: Duration) -> (i32, Duration) {
    let started = Instant::now();
    let code = conn.code(command);
    (code, started.elapsed().saturating_sub(limit))
}

#[test]
fn reads_past_their_max_time_ms_fail_with_50_soon_after_the_deadline() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    fill(&mut conn, "t", 1000);
    let limit = Duration::from_millis(100);
    let commands = [
        // An expression loop on every document: minutes without a limit.
        doc! {"aggregate": "c", "pipeline": [{"$project": {"v": slow()}}], "cursor": {},
        "maxTimeMS": 100, "$db": "t"},
        // A group fed by a hundred million unwound values.
        doc! {"aggregate": "c", "pipeline": [
        {"$project": {"r": {"$range": [0, 100_000]}}}, {"$unwind": "$r"},
        {"$group": {"_id": "$r", "n": {"$sum": 1}}}], "cursor": {}, "maxTimeMS": 100, "$db": "t"},
        // A sort of the same.
        doc! {"aggregate": "c", "pipeline": [
        {"$project": {"r": {"$range": [0, 100_000]}}}, {"$unwind": "$r"},
        {"$sort": {"r": -1}}], "cursor": {}, "maxTimeMS": 100, "$db": "t"},
        doc! {"find": "c", "filter": {"$expr": {"$gt": [slow(), 0]}}, "maxTimeMS": 100, "$db": "t"},
        doc! {"count": "c", "query": {"$expr": {"$gt": [slow(), 0]}}, "maxTimeMS": 100, "$db": "t"},
        doc! {"distinct": "c", "key": "x", "query": {"$expr": {"$gt": [slow(), 0]}},
        "maxTimeMS": 100, "$db": "t"},
    ];
    for command in commands {
        let (code, late) = expiry(&mut conn, &command, limit);
        assert_eq!(code, 50, "{command}");
        assert!(
            late < Duration::from_secs(2),
            "{late:?} past the deadline: {command}"
        );
        eprintln!(
            "{}: expired {late:?} after the deadline",
            command.keys().next().unwrap()
        );
        conn.ping();
    }
    // maxTimeMS is a non-negative integer; 0 is no limit.
    for bad in [Bson::Int32(-1), Bson::Double(1.5), Bson::String("9".into())] {
        let find = doc! {"find": "c", "maxTimeMS": bad, "$db": "t"};
        assert_eq!(conn.code(&find), 2, "{find}");
    }
    assert_eq!(
        conn.code(&doc! {"find": "c", "maxTimeMS": 0, "$db": "t"}),
        0
    );
}

#[test]
fn a_write_past_its_max_time_ms_fails_keeping_only_the_statements_before_the_expiry() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    fill(&mut conn, "w", 300);
    let update = doc! {
        "update": "c",
        "updates": [
            {"q": {}, "u": {"$set": {"touched": true}}, "multi": true},
            {"q": {"$expr": {"$gt": [slow(), 0]}}, "u": {"$set": {"slow": true}}, "multi": true},
        ],
        "maxTimeMS": 100,
        "$db": "w",
    };
    let (code, late) = expiry(&mut conn, &update, Duration::from_millis(100));
    assert_eq!(code, 50);
    eprintln!("update: expired {late:?} after the deadline");
    let delete = doc! {"delete": "c", "deletes": [{"q": {"$expr": {"$gt": [slow(), 0]}}, "limit": 0}],
    "maxTimeMS": 100, "$db": "w"};
    assert_eq!(conn.code(&delete), 50);
    let count = |conn: &mut RawConnection, query: Document| {
        let reply = conn.command(&doc! {"count": "c", "query": query, "$db": "w"});
        match reply.get("n") {
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(Bson::Int64(n)) => *n,
            _ => panic!("{reply}"),
        }
    };
    assert_eq!(count(&mut conn, doc! {}), 300, "nothing was deleted");
    assert_eq!(
        count(&mut conn, doc! {"touched": true}),
        300,
        "as on MongoDB, the statement before the expiry stays"
    );
    assert_eq!(
        count(&mut conn, doc! {"slow": true}),
        0,
        "the interrupted statement wrote nothing"
    );
    // findAndModify and an insert batch: all or nothing.
    let modify = doc! {"findAndModify": "c", "query": {"$expr": {"$gt": [slow(), 0]}},
    "update": {"$set": {"found": true}}, "maxTimeMS": 100, "$db": "w"};
    assert_eq!(conn.code(&modify), 50);
    assert_eq!(count(&mut conn, doc! {"found": true}), 0);
    conn.ping();
}

/// The `opid` of the running aggregation on `ns`, as `currentOp` lists it.
fn find_opid(conn: &mut RawConnection, ns: &str) -> (i64, Document) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = conn.command(&doc! {"currentOp": 1, "ns": ns, "op": "command", "$db": "admin"});
        if let Some(Bson::Document(op)) = reply.get_array("inprog").unwrap().first() {
            return (op.get_i64("opid").unwrap(), op.clone());
        }
        assert!(Instant::now() < deadline, "the aggregation never showed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn kill_op_interrupts_a_running_aggregation_found_through_current_op() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    fill(&mut conn, "k", 1000);
    let mut running = RawConnection::open(&server);
    let worker = std::thread::spawn(move || {
        let started = Instant::now();
        let aggregate = doc! {"aggregate": "c", "pipeline": [{"$project": {"v": slow()}}],
        "cursor": {}, "lsid": lsid(9), "$db": "k"};
        (running.command(&aggregate), started.elapsed())
    });
    let (opid, op) = find_opid(&mut conn, "k.c");
    assert!(op.get_bool("active").unwrap());
    assert_eq!(
        op.get_document("command")
            .unwrap()
            .get_str("aggregate")
            .unwrap(),
        "c"
    );
    assert_eq!(op.get_document("lsid").unwrap(), &lsid(9));
    assert!(op.get_i64("microsecs_running").is_ok() && op.get_i64("connectionId").is_ok());
    // The stage lists it too, through the rest of its pipeline.
    let staged = conn.command(&doc! {"aggregate": 1, "pipeline": [
    {"$currentOp": {"allUsers": true}}, {"$match": {"opid": opid}}, {"$project": {"ns": 1}}],
    "cursor": {}, "$db": "admin"});
    let batch = staged
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 1, "{staged}");
    assert_eq!(
        conn.code(&doc! {"killOp": 1, "op": opid, "$db": "k"}),
        13,
        "admin only"
    );
    let killed = Instant::now();
    assert_eq!(
        conn.code(&doc! {"killOp": 1, "op": opid, "$db": "admin"}),
        0
    );
    let (reply, _) = worker.join().unwrap();
    assert_eq!(reply.get_i32("code").unwrap(), 11601, "{reply}");
    assert_eq!(reply.get_str("codeName").unwrap(), "Interrupted");
    eprintln!(
        "killOp: the aggregation ended {:?} after the kill",
        killed.elapsed()
    );
    conn.ping();
    let idle = conn.command(&doc! {"currentOp": 1, "ns": "k.c", "$db": "admin"});
    assert!(idle.get_array("inprog").unwrap().is_empty(), "{idle}");
}

#[test]
fn kill_sessions_closes_the_sessions_cursors() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    fill(&mut conn, "s", 50);
    let find = |n: u8| doc! {"find": "c", "batchSize": 1, "lsid": lsid(n), "$db": "s"};
    let cursor_of = |reply: Document| reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    let mine = cursor_of(conn.command(&find(1)));
    let other = cursor_of(conn.command(&find(2)));
    let mut admin = RawConnection::open(&server);
    assert_eq!(
        admin.code(&doc! {"killSessions": [lsid(1)], "$db": "admin"}),
        0
    );
    let more = |id: i64| doc! {"getMore": id, "collection": "c", "batchSize": 1, "$db": "s"};
    assert_eq!(
        conn.code(&more(mine)),
        43,
        "the killed session's cursor is gone"
    );
    assert_eq!(conn.code(&more(other)), 0, "another session's cursor lives");
    // killAllSessions with no user kills every session's cursors.
    assert_eq!(admin.code(&doc! {"killAllSessions": [], "$db": "admin"}), 0);
    assert_eq!(conn.code(&more(other)), 43);
    let malformed = [
        (doc! {"roles": "readWrite"}, 14),
        (doc! {"roles": [{"role": "readWrite"}]}, 40414),
        (doc! {"uid": "ann"}, 14),
        (
            doc! {"uid": bson::Binary { subtype: bson::spec::BinarySubtype::Generic,
            bytes: vec![0; 5] }},
            2,
        ),
        (doc! {"owner": 1}, 40414),
    ];
    for (pattern, code) in malformed {
        let command = doc! {"killAllSessionsByPattern": [pattern.clone()], "$db": "admin"};
        assert_eq!(admin.code(&command), code, "{pattern}");
    }
}

/// A server with authentication on and one user, `ann` (password `pw`, root, on `admin`).
fn start_with_ann() -> ServerHandle {
    let storage = Storage::in_memory();
    odm_server::auth::put_user(&storage, "admin", "ann", "pw").unwrap();
    let config = Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        auth: true,
        ..Config::default()
    };
    Server::bind(storage, config).expect("binds").spawn()
}

#[test]
fn kill_all_sessions_by_pattern_selects_by_role_and_by_owner_digest() {
    use sha2::Digest as _;
    let server = start_with_ann();
    let client = |login: &str, source: &str| {
        let uri = format!(
            "mongodb://{login}@{}/?directConnection=true&authSource={source}",
            server.addr()
        );
        mongodb::sync::Client::with_uri_str(uri).unwrap()
    };
    let ann = client("ann:pw", "admin");
    ann.database("u")
        .run_command(doc! {"createUser": "bo", "pwd": "pw",
        "roles": [{"role": "readWrite", "db": "u"}]})
        .run()
        .unwrap();
    let bo = client("bo:pw", "u");
    let c = ann.database("u").collection::<Document>("c");
    c.insert_many((0..10).map(|i| doc! {"_id": i}))
        .run()
        .unwrap();
    let open = |client: &mongodb::sync::Client| {
        let coll = client.database("u").collection::<Document>("c");
        let mut cursor = coll.find(doc! {}).batch_size(1).run().unwrap();
        assert!(cursor.next().unwrap().is_ok());
        cursor
    };
    let alive = |cursor: &mut mongodb::sync::Cursor<Document>| match cursor.next() {
        Some(Ok(_)) => true,
        Some(Err(e)) => match e.kind.as_ref() {
            mongodb::error::ErrorKind::Command(c) if c.code == 43 => false,
            _ => panic!("{e}"),
        },
        None => panic!("the cursor ended"),
    };
    let kill = |pattern: Document| {
        ann.database("admin")
            .run_command(doc! {"killAllSessionsByPattern": [pattern]})
            .run()
            .unwrap();
    };
    let (mut of_ann, mut of_bo) = (open(&ann), open(&bo));
    kill(doc! {"roles": [{"role": "read", "db": "u"}]});
    assert!(
        alive(&mut of_ann) && alive(&mut of_bo),
        "no one holds read on u"
    );
    kill(doc! {"roles": [{"role": "readWrite", "db": "u"}]});
    assert!(!alive(&mut of_bo), "bo holds readWrite on u");
    assert!(alive(&mut of_ann), "ann does not");

    let (mut of_ann, mut of_bo) = (open(&ann), open(&bo));
    let digest = sha2::Sha256::digest(b"ann@admin").to_vec();
    let uid = bson::Binary {
        subtype: bson::spec::BinarySubtype::Generic,
        bytes: digest,
    };
    kill(doc! {"uid": uid});
    assert!(!alive(&mut of_ann), "the digest of ann@admin is ann's");
    assert!(alive(&mut of_bo), "not bo's");
}

#[test]
fn a_cursor_runs_on_what_its_commands_limit_left() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    fill(&mut conn, "g", 1000);
    // A millisecond or more a document: the first batch comes at once, the rest would take
    // seconds even on a fast machine.
    let medium = bson!({"$gt": [{"$size": {"$range": [0, 200_000]}}, 0]});
    let find = doc! {"find": "c", "filter": {"$expr": medium}, "batchSize": 1,
    "maxTimeMS": 300, "$db": "g"};
    let reply = conn.command(&find);
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    assert_ne!(id, 0, "{reply}");
    // Only a cursor that awaits data takes a getMore's maxTimeMS (its wait).
    let waiting = doc! {"getMore": id, "collection": "c", "maxTimeMS": 10, "$db": "g"};
    assert_eq!(conn.code(&waiting), 2);
    let started = Instant::now();
    let more = doc! {"getMore": id, "collection": "c", "$db": "g"};
    assert_eq!(conn.code(&more), 50);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(conn.code(&more), 43, "the expired cursor is gone");
}

#[test]
fn an_expiry_inside_a_transaction_aborts_it() {
    let server = start_with(Config {
        replica_set: Some("rs0".into()),
        ..Config::default()
    });
    let mut conn = RawConnection::open(&server);
    fill(&mut conn, "x", 300);
    let in_txn = |mut command: Document, start: bool| {
        command.insert("lsid", lsid(3));
        command.insert("txnNumber", 1_i64);
        command.insert("autocommit", false);
        if start {
            command.insert("startTransaction", true);
        }
        command
    };
    let insert = in_txn(
        doc! {"insert": "c", "documents": [{"_id": -1}], "$db": "x"},
        true,
    );
    assert_eq!(conn.code(&insert), 0);
    let update = in_txn(
        doc! {"update": "c", "updates": [{"q": {"$expr": {"$gt": [slow(), 0]}},
        "u": {"$set": {"slow": true}}, "multi": true}], "maxTimeMS": 100, "$db": "x"},
        false,
    );
    assert_eq!(conn.code(&update), 50);
    let commit = in_txn(doc! {"commitTransaction": 1, "$db": "admin"}, false);
    assert_eq!(conn.code(&commit), 251, "the transaction was aborted");
    let count = conn.command(&doc! {"count": "c", "query": {"_id": -1}, "$db": "x"});
    assert_eq!(
        count
            .get("n")
            .and_then(Bson::as_i64)
            .or_else(|| count.get_i32("n").ok().map(i64::from)),
        Some(0)
    );
}

#[test]
fn current_op_lists_idle_sessions_and_cursors_and_kill_sessions_aborts_the_transaction() {
    let server = start_with(Config {
        replica_set: Some("rs0".into()),
        ..Config::default()
    });
    let mut conn = RawConnection::open(&server);
    fill(&mut conn, "i", 10);
    let insert = doc! {"insert": "c", "documents": [{"_id": -1}], "lsid": lsid(5),
    "txnNumber": 1_i64, "autocommit": false, "startTransaction": true, "$db": "i"};
    assert_eq!(conn.code(&insert), 0);
    let find = doc! {"find": "c", "batchSize": 1, "lsid": lsid(6), "$db": "i"};
    let cursor = conn
        .command(&find)
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    let listed = |conn: &mut RawConnection, options: Document| {
        let reply = conn.command(&doc! {"aggregate": 1, "pipeline": [{"$currentOp": options},
        {"$match": {"active": false}}], "cursor": {}, "$db": "admin"});
        let batch = reply
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap();
        batch
            .iter()
            .map(|d| d.as_document().unwrap().clone())
            .collect::<Vec<_>>()
    };
    let idle = listed(&mut conn, doc! {});
    assert_eq!(idle.len(), 1, "{idle:?}");
    assert_eq!(idle[0].get_str("type").unwrap(), "idleSession");
    assert_eq!(idle[0].get_document("lsid").unwrap(), &lsid(5));
    assert!(listed(&mut conn, doc! {"idleSessions": false}).is_empty());
    let cursors = listed(&mut conn, doc! {"idleSessions": false, "idleCursors": true});
    assert_eq!(cursors.len(), 1, "{cursors:?}");
    let listed_cursor = cursors[0].get_document("cursor").unwrap();
    assert_eq!(listed_cursor.get_i64("cursorId").unwrap(), cursor);

    assert_eq!(
        conn.code(&doc! {"killSessions": [lsid(5)], "$db": "admin"}),
        0
    );
    assert!(listed(&mut conn, doc! {}).is_empty());
    let commit = doc! {"commitTransaction": 1, "lsid": lsid(5), "txnNumber": 1_i64,
    "autocommit": false, "$db": "admin"};
    assert_eq!(conn.code(&commit), 251, "the transaction was aborted");
}

/// The `inprog` entries of `currentOp` (with `query`'s fields) that are not active.
fn inactive(conn: &mut RawConnection, query: Document) -> Vec<Document> {
    let mut command = doc! {"currentOp": 1, "$db": "admin"};
    command.extend(query);
    let reply = conn.command(&command);
    reply
        .get_array("inprog")
        .unwrap()
        .iter()
        .map(|d| d.as_document().unwrap().clone())
        .filter(|d| matches!(d.get_bool("active"), Ok(false)))
        .collect()
}

#[test]
fn current_op_with_all_lists_idle_connections_until_they_close() {
    let server = start_with(Config::default());
    let mut asker = RawConnection::open(&server);
    let mut named = RawConnection::open(&server);
    let hello = doc! {"hello": 1, "client": {"application": {"name": "idle-app"}}, "$db": "admin"};
    let named_id = named.command(&hello).get_i64("connectionId").unwrap();
    let mut silent = RawConnection::open(&server);
    let silent_id = silent
        .command(&doc! {"hello": 1, "$db": "admin"})
        .get_i64("connectionId")
        .unwrap();
    drop(silent);
    let unnamed = RawConnection::open(&server);

    assert!(inactive(&mut asker, doc! {}).is_empty(), "without $all");
    // The closed connection leaves the list once the server has read its end.
    let started = Instant::now();
    let idle = loop {
        let idle = inactive(&mut asker, doc! {"$all": true});
        let ids: Vec<i64> = idle
            .iter()
            .map(|d| d.get_i64("connectionId").unwrap())
            .collect();
        if !ids.contains(&silent_id) || started.elapsed() > Duration::from_secs(10) {
            break idle;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        idle.len(),
        2,
        "the named and the unnamed, not the asker: {idle:?}"
    );
    let of_named = idle
        .iter()
        .find(|d| d.get_i64("connectionId").ok() == Some(named_id))
        .expect("the named connection is listed");
    assert_eq!(of_named.get_str("appName").ok(), Some("idle-app"));
    assert_eq!(of_named.get_str("desc").unwrap(), format!("conn{named_id}"));
    assert!(
        of_named
            .get_str("client")
            .unwrap()
            .starts_with("127.0.0.1:")
    );

    let filtered = inactive(&mut asker, doc! {"$all": true, "appName": "idle-app"});
    assert_eq!(filtered.len(), 1, "{filtered:?}");
    let stage = asker.command(&doc! {"aggregate": 1, "pipeline": [
    {"$currentOp": {"idleConnections": true, "idleSessions": false}},
    {"$match": {"active": false}}], "cursor": {}, "$db": "admin"});
    let batch = stage
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 2, "{batch:?}");
    drop((named, unnamed));
}

#[test]
fn kill_op_ends_a_change_streams_awaiting_get_more() {
    let server = start_with(Config {
        replica_set: Some("rs0".into()),
        ..Config::default()
    });
    let mut conn = RawConnection::open(&server);
    fill(&mut conn, "cs", 1);
    let opened = conn.command(
        &doc! {"aggregate": "c", "pipeline": [{"$changeStream": {}}],
        "cursor": {}, "$db": "cs"},
    );
    let id = opened
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    let mut waiting = RawConnection::open(&server);
    let worker = std::thread::spawn(move || {
        let started = Instant::now();
        let more = doc! {"getMore": id, "collection": "c", "maxTimeMS": 30_000, "$db": "cs"};
        (waiting.code(&more), started.elapsed())
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let opid = loop {
        let reply = conn.command(&doc! {"currentOp": 1, "op": "getmore", "$db": "admin"});
        if let Some(Bson::Document(op)) = reply.get_array("inprog").unwrap().first() {
            break op.get_i64("opid").unwrap();
        }
        assert!(Instant::now() < deadline, "the getMore never showed");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        conn.code(&doc! {"killOp": 1, "op": opid, "$db": "admin"}),
        0
    );
    let (code, waited) = worker.join().unwrap();
    assert_eq!(code, 11601);
    assert!(waited < Duration::from_secs(5), "{waited:?}");
}

#[test]
fn kill_all_sessions_kills_the_sessions_of_the_users_it_names() {
    let server = start_with_ann();
    let uri = format!("mongodb://ann:pw@{}/?directConnection=true", server.addr());
    let client = mongodb::sync::Client::with_uri_str(uri).unwrap();
    let c = client.database("u").collection::<Document>("c");
    c.insert_many((0..10).map(|i| doc! {"_id": i}))
        .run()
        .unwrap();
    let mut cursor = c.find(doc! {}).batch_size(1).run().unwrap();
    assert!(cursor.next().unwrap().is_ok());
    let admin = client.database("admin");
    let kill = |user: &str| {
        admin
            .run_command(doc! {"killAllSessions": [{"user": user, "db": "admin"}]})
            .run()
            .unwrap();
    };
    kill("bob");
    assert!(
        cursor.next().unwrap().is_ok(),
        "bob's sessions are not ann's"
    );
    kill("ann");
    let e = cursor.next().unwrap().unwrap_err();
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => assert_eq!(c.code, 43, "{e}"),
        _ => panic!("{e}"),
    }
}

#[test]
fn kill_cursors_stops_a_get_more_at_work() {
    let server = start();
    let mut conn = RawConnection::open(&server);
    fill(&mut conn, "kc", 1000);
    let find = doc! {"find": "c", "filter": {"$expr": {"$gt": [slow(), 0]}}, "batchSize": 0,
    "$db": "kc"};
    let id = conn
        .command(&find)
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    assert_ne!(id, 0);
    let mut working = RawConnection::open(&server);
    let worker = std::thread::spawn(move || {
        let more = doc! {"getMore": id, "collection": "c", "$db": "kc"};
        working.code(&more)
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while conn
        .command(&doc! {"currentOp": 1, "op": "getmore", "$db": "admin"})
        .get_array("inprog")
        .unwrap()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "the getMore never showed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = Instant::now();
    let reply = conn.command(&doc! {"killCursors": "c", "cursors": [id], "$db": "kc"});
    assert_eq!(
        reply.get_array("cursorsKilled").unwrap(),
        &vec![Bson::Int64(id)]
    );
    assert_eq!(worker.join().unwrap(), 237, "CursorKilled");
    assert!(
        killed.elapsed() < Duration::from_secs(2),
        "{:?}",
        killed.elapsed()
    );
}

/// A write waiting behind an open transaction (the database's one writer) fails with 50 at its
/// `maxTimeMS` and with 11601 at its `killOp`, in a transaction of its own or not, and none of
/// them writes anything; the transaction ahead commits as if nothing happened.
#[test]
fn writes_waiting_for_the_writer_stop_at_their_max_time_ms_and_their_kill() {
    let server = start_with(Config {
        replica_set: Some("rs0".into()),
        ..Config::default()
    });
    let mut conn = RawConnection::open(&server);
    fill(&mut conn, "w", 1);
    let in_txn = |mut command: Document, session: u8, start: bool| {
        command.insert("lsid", lsid(session));
        command.insert("txnNumber", 1_i64);
        command.insert("autocommit", false);
        if start {
            command.insert("startTransaction", true);
        }
        command
    };
    let ahead = in_txn(
        doc! {"insert": "c", "documents": [{"_id": "ahead"}], "$db": "w"},
        1,
        true,
    );
    assert_eq!(conn.code(&ahead), 0);
    let mut other = RawConnection::open(&server);
    let plain = doc! {"insert": "c", "documents": [{"_id": "plain"}], "maxTimeMS": 200, "$db": "w"};
    let (code, late) = expiry(&mut other, &plain, Duration::from_millis(200));
    assert_eq!(code, 50);
    assert!(late < Duration::from_secs(5), "{late:?} late");
    let second = in_txn(
        doc! {"insert": "c", "documents": [{"_id": "second"}], "maxTimeMS": 200, "$db": "w"},
        2,
        true,
    );
    let (code, late) = expiry(&mut other, &second, Duration::from_millis(200));
    assert_eq!(
        code, 50,
        "a transaction's first write waits for the writer too"
    );
    assert!(late < Duration::from_secs(5), "{late:?} late");
    // A waiting update, found through currentOp and killed.
    let waiting = std::thread::spawn({
        let mut waiting = RawConnection::open(&server);
        move || {
            waiting.command(&doc! {"update": "c", "updates": [{"q": {"_id": 0}, "u": {"$set": {"killed": true}}}], "$db": "w"})
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let opid = loop {
        let reply = other.command(&doc! {"currentOp": 1, "ns": "w.c", "$db": "admin"});
        if let Some(Bson::Document(op)) = reply.get_array("inprog").unwrap().first() {
            break op.get_i64("opid").unwrap();
        }
        assert!(Instant::now() < deadline, "the waiting update never showed");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        other.code(&doc! {"killOp": 1, "op": opid, "$db": "admin"}),
        0
    );
    let killed = waiting.join().unwrap();
    assert_eq!(killed.get_i32("code").ok(), Some(11601), "{killed}");
    let commit = in_txn(doc! {"commitTransaction": 1, "$db": "admin"}, 1, false);
    assert_eq!(conn.code(&commit), 0);
    let found = conn.command(&doc! {"find": "c", "filter": {}, "sort": {"_id": 1}, "$db": "w"});
    let batch = found
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .clone();
    assert_eq!(
        batch,
        vec![
            Bson::from(doc! {"_id": 0, "x": 0}),
            Bson::from(doc! {"_id": "ahead"})
        ],
        "only the transaction ahead wrote"
    );
    other.ping();
}
