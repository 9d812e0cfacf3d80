//! The MongoDB back end's own rules: `Database::connect`, transactions through driver sessions
//! (and their refusal on a standalone), errors with the same codes as the engine's, declared
//! indexes and shard keys deployed and checked, the server's explain in typed form, cursors.
//!
//! Each test runs against the deployment `ODM_MONGODB_URI` names when it is set (as
//! `tests/wire/backends.sh` runs it), and otherwise against an `odm serve` started in this
//! process as a one-member replica set.

use bson::doc;
use odm::{Database, Document, Error, Filter, Index};
use odm_engine::query::Routing;
use odm_server::{Config, Server, ServerHandle, Storage};
use serde::{Deserialize, Serialize};

/// A fresh database on the deployment under test, and the in-process server serving it when
/// no deployment is named (dropped with the test).
fn database() -> (Option<ServerHandle>, Database) {
    let (server, uri) = deployment();
    (server, Database::connect(&uri).unwrap())
}

/// The connection string of a fresh database on the deployment under test.
fn deployment() -> (Option<ServerHandle>, String) {
    if let Some(uri) = odm::testing::fresh_uri() {
        return (None, uri);
    }
    let server = serve(Some("rs0"));
    let uri = odm::testing::with_database(&server.uri(), "app");
    (Some(server), uri)
}

fn serve(replica_set: Option<&str>) -> ServerHandle {
    let config = Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        replica_set: replica_set.map(str::to_owned),
        ..Config::default()
    };
    Server::bind(Storage::in_memory(), config).unwrap().spawn()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(
    collection = "users",
    shard_key(region, email),
    index(keys(region = 1, email = 1), unique)
)]
struct User {
    #[odm(id)]
    id: i64,
    region: String,
    #[odm(index)]
    email: String,
    visits: i32,
}

fn user(id: i64, region: &str) -> User {
    User {
        id,
        region: region.into(),
        email: format!("{id}@example.org"),
        visits: 0,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "orders")]
struct Order {
    #[odm(id)]
    id: i64,
    user: i64,
}

/// The same collection as another program declares it: `email_1` sparse.
#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users")]
struct SparseEmails {
    #[odm(id)]
    id: i64,
    #[odm(index(sparse))]
    email: String,
}

/// The users collection sharded on another key.
#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users", shard_key(email))]
struct ByEmail {
    #[odm(id)]
    id: i64,
    email: String,
}

/// A hashed key: its supporting index is hashed, and equality routes to one shard.
#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "events", shard_key(hashed(user)))]
struct Event {
    #[odm(id)]
    id: i64,
    user: String,
}

#[test]
fn a_connection_string_must_name_its_database() {
    if odm::testing::remote() {
        return;
    }
    let server = serve(Some("rs0"));
    let err = Database::connect(&server.uri()).unwrap_err();
    assert!(matches!(err, Error::Driver { .. }), "{err}");
    assert!(err.to_string().contains("names no database"), "{err}");
}

#[test]
fn transactions_commit_whole_or_not_at_all() {
    let (_server, db) = database();
    let users = db.collection::<User>().unwrap();
    let orders = db.collection::<Order>().unwrap();
    users.insert_one(&user(1, "eu")).unwrap();
    let u = User::fields();
    // Both writes or neither: the closure's error aborts the driver transaction.
    let aborted: odm::Result<()> = db.write(|txn| {
        txn.insert_one(&Order { id: 1, user: 1 })?;
        txn.update_one(u.id.eq(1), u.visits.inc(1), &odm::UpdateOptions::default())?;
        // The transaction reads its own writes.
        assert_eq!(txn.get::<User>(&1_i64.into())?.unwrap().visits, 1);
        // Any error aborts; this one stands for the caller's own.
        Err(Error::NoShardKey("orders".into()))
    });
    assert!(aborted.is_err());
    assert_eq!(orders.count(Filter::all()).unwrap(), 0);
    assert_eq!(users.get(1).unwrap().unwrap().visits, 0);
    db.write(|txn| {
        txn.insert_one(&Order { id: 1, user: 1 })?;
        txn.update_one(u.id.eq(1), u.visits.inc(1), &odm::UpdateOptions::default())?;
        Ok(())
    })
    .unwrap();
    assert_eq!(orders.count(Filter::all()).unwrap(), 1);
    assert_eq!(users.get(1).unwrap().unwrap().visits, 1);
}

#[test]
fn a_standalone_server_refuses_transactions_and_says_why() {
    if odm::testing::remote() {
        return;
    }
    let server = serve(None);
    let db = Database::connect(&odm::testing::with_database(&server.uri(), "app")).unwrap();
    let orders = db.collection::<Order>().unwrap();
    let err = db
        .write(|txn| txn.insert_one(&Order { id: 1, user: 1 }))
        .unwrap_err();
    assert!(matches!(err, Error::TransactionsUnsupported), "{err}");
    assert!(err.to_string().contains("replica set"), "{err}");
    assert_eq!(orders.count(Filter::all()).unwrap(), 0);
    // One-operation writes need no transaction; a promised-whole write goes document by
    // document, as MongoDB's own.
    orders.insert_one(&Order { id: 1, user: 1 }).unwrap();
    let refused = orders.insert_many(&[Order { id: 2, user: 1 }, Order { id: 1, user: 2 }]);
    assert_eq!(refused.unwrap_err().code(), Some(11000));
    assert_eq!(orders.count(Filter::all()).unwrap(), 2);
}

#[test]
fn a_duplicate_key_is_the_engines_error_with_the_servers_details() {
    let (_server, db) = database();
    let users = db.collection::<User>().unwrap();
    users.insert_one(&user(1, "eu")).unwrap();
    let mut twin = user(2, "eu");
    twin.email = "1@example.org".into();
    let err = users.insert_one(&twin).unwrap_err();
    assert_eq!(err.code(), Some(11000));
    match &err {
        Error::Engine(odm_engine::Error::DuplicateKey {
            index, key_value, ..
        }) => {
            assert_eq!(index, "region_1_email_1");
            assert_eq!(
                **key_value,
                doc! { "region": "eu", "email": "1@example.org" }
            );
        }
        other => panic!("expected a duplicate key, got {other:?}"),
    }
    // Nothing changed; the same write under another key goes through.
    assert_eq!(users.count(Filter::all()).unwrap(), 1);
    twin.email = "2@example.org".into();
    users.insert_one(&twin).unwrap();
    // Any other refusal keeps the server's code and message.
    let err = users
        .find(Filter::from(doc! { "$where": "1" }))
        .to_vec()
        .unwrap_err();
    assert!(err.code().is_some_and(|c| c != 0), "{err}");
}

#[test]
fn declared_indexes_deploy_and_a_conflicting_one_names_both_definitions() {
    let (_server, db) = database();
    let users = db.collection::<User>().unwrap();
    let plan = users.sync_indexes(false).unwrap();
    assert_eq!(plan.unchanged, ["email_1", "region_1_email_1"]);
    assert!(plan.undeclared.is_empty(), "{plan}");
    // An index made at run time is undeclared, and dropped only when asked.
    let u = User::fields();
    assert_eq!(
        users.create_index(Index::desc(&u.visits)).unwrap(),
        "visits_-1"
    );
    let plan = users.sync_indexes(true).unwrap();
    assert_eq!(
        (plan.undeclared, plan.dropped),
        (vec!["visits_-1".to_owned()], vec!["visits_-1".to_owned()])
    );

    match db.collection::<SparseEmails>().unwrap_err() {
        Error::IndexMismatch {
            index,
            declared,
            stored,
            ..
        } => {
            assert_eq!(index, "email_1");
            assert_eq!(declared, "{ \"email\": 1 } sparse");
            assert_eq!(stored, "{ \"email\": 1 }");
        }
        other => panic!("expected an index mismatch, got {other}"),
    }
}

#[test]
fn a_shard_key_deploys_and_another_key_for_the_same_collection_is_refused() {
    let (_server, db) = database();
    let users = db.collection::<User>().unwrap();
    for id in 0..20 {
        users
            .insert_one(&user(id, if id % 2 == 0 { "eu" } else { "us" }))
            .unwrap();
    }
    // The server routes by the deployed key: the full key to one shard, a prefix to the
    // shards of its ranges, anything else to every shard.
    let u = User::fields();
    let route = |filter: Filter<User>| {
        users
            .find(filter)
            .explain()
            .unwrap()
            .routing
            .map(|(_, r)| r)
    };
    let single = route(u.region.eq("eu").and(u.email.eq("2@example.org")));
    if single.is_none() {
        // A replica set of real MongoDB servers has no shardCollection: no key to check.
        assert!(odm::testing::remote());
        return;
    }
    assert_eq!(single, Some(Routing::SingleShard));
    assert_eq!(route(u.visits.eq(0)), Some(Routing::Broadcast));
    // A `mongos`'s explain says one shard or several, not whether several are all.
    if !odm::testing::remote() {
        assert_eq!(route(u.region.eq("eu")), Some(Routing::Targeted));
    }

    match db.collection::<ByEmail>().unwrap_err() {
        Error::IndexMismatch {
            index,
            declared,
            stored,
            ..
        } => {
            assert_eq!(index, "shard key");
            assert_eq!(declared, "{ \"email\": 1 }");
            assert!(stored.contains("region"), "{stored}");
        }
        other => panic!("expected a shard key mismatch, got {other}"),
    }

    let events = db.collection::<Event>().unwrap();
    events
        .insert_one(&Event {
            id: 1,
            user: "ann".into(),
        })
        .unwrap();
    let e = Event::fields();
    let explain = events.find(e.user.eq("ann")).explain().unwrap();
    assert_eq!(explain.index_used(), Some("user_hashed"), "{explain}");
    assert_eq!(explain.routing.map(|(_, r)| r), Some(Routing::SingleShard));
}

#[test]
fn explain_is_the_servers_in_the_engines_typed_form() {
    let (_server, db) = database();
    let users = db.collection::<User>().unwrap();
    let all: Vec<User> = (0..50).map(|id| user(id, "eu")).collect();
    users.insert_many(&all).unwrap();
    let u = User::fields();
    let explain = users.find(u.email.eq("7@example.org")).explain().unwrap();
    assert_eq!(explain.index_used(), Some("email_1"), "{explain}");
    assert_eq!(
        (explain.returned, explain.docs_examined),
        (1, 1),
        "{explain}"
    );
    let scan = users.find(u.visits.eq(0)).explain().unwrap();
    assert_eq!(scan.index_used(), None, "{scan}");
    assert_eq!(scan.docs_examined, 50, "{scan}");
    let pipeline = users
        .aggregate()
        .filter(u.email.eq("7@example.org"))
        .explain()
        .unwrap();
    let head = pipeline.cursor.expect("a pipeline led by a find");
    assert_eq!(head.index_used(), Some("email_1"));
}

#[test]
fn cursors_stream_past_one_batch_and_reads_decode_as_on_a_file() {
    let (_server, db) = database();
    let users = db.collection::<User>().unwrap();
    let all: Vec<User> = (0..450).map(|id| user(id, "eu")).collect();
    users.insert_many(&all).unwrap();
    let u = User::fields();
    let streamed: Vec<User> = users
        .find(Filter::all())
        .sort(odm::Sort::asc(&u.id))
        .iter()
        .unwrap()
        .collect::<odm::Result<_>>()
        .unwrap();
    assert_eq!(streamed, all);
    let page = users
        .find(u.id.gte(10))
        .sort(odm::Sort::desc(&u.id))
        .skip(5)
        .limit(3)
        .to_vec()
        .unwrap();
    assert_eq!(
        page.iter().map(|u| u.id).collect::<Vec<_>>(),
        [444, 443, 442]
    );
    let projected = users
        .find(u.id.eq(3))
        .project(&odm::Projection::include(&u.email))
        .unwrap();
    assert_eq!(projected, [doc! { "_id": 3_i64, "email": "3@example.org" }]);
    assert_eq!(
        users.distinct(&u.region, Filter::all()).unwrap(),
        [bson::Bson::from("eu")]
    );
    let counted = users.aggregate().filter(u.id.lt(100)).count().unwrap();
    assert_eq!(counted, 100);
    let streamed = users
        .aggregate()
        .filter(u.id.lt(300))
        .iter()
        .unwrap()
        .count();
    assert_eq!(streamed, 300);
    assert!(db.collection_names().unwrap().contains(&"users".to_owned()));
    assert!(db.engine().is_none());
}

/// The derive refuses, at compile time, the declarations a server would refuse at deploy time
/// (`odm/tests/ui/derive`: `unique_index_not_prefixed_by_shard_key`,
/// `hashed_shard_key_marked_unique`, `hashed_compound_shard_key`). Each rule, sent as the
/// command such a declaration would generate, is refused by the server.
#[test]
fn the_commands_the_derive_refuses_to_generate_are_refused_by_the_server() {
    let (_server, uri) = deployment();
    let client = mongodb::sync::Client::with_uri_str(&uri).unwrap();
    let app = client.default_database().unwrap();
    let admin = client.database("admin");
    let ns = |c: &str| format!("{}.{c}", app.name());
    let refused = |command: bson::Document| {
        let err = admin.run_command(command).run().unwrap_err();
        match *err.kind {
            mongodb::error::ErrorKind::Command(c) => (c.code, c.message),
            other => panic!("expected a command error, got {other:?}"),
        }
    };
    // A unique index the shard key does not prefix.
    app.run_command(doc! {
        "createIndexes": "accounts",
        "indexes": [{ "key": { "email": 1 }, "name": "email_1", "unique": true }],
    })
    .run()
    .unwrap();
    let (code, message) =
        refused(doc! { "shardCollection": ns("accounts"), "key": { "region": 1 } });
    if !odm::testing::remote() {
        assert_eq!(code, 72, "{message}");
        assert!(
            message.contains("Uniqueness can't be maintained"),
            "{message}"
        );
    }
    // A hashed key declared unique.
    let (code, message) = refused(doc! {
        "shardCollection": ns("identities"), "key": { "identifier": "hashed" }, "unique": true,
    });
    if !odm::testing::remote() {
        assert_eq!(code, 72, "{message}");
    }
    // A hashed field in a compound key (a MongoDB 4.4 key this engine does not route).
    let (_, message) = refused(doc! {
        "shardCollection": ns("orders"), "key": { "customer": "hashed", "region": 1 },
    });
    if !odm::testing::remote() {
        assert!(message.contains("compound hashed"), "{message}");
    }
    // What the derive does generate for a valid declaration is accepted.
    app.run_command(doc! { "create": "users" }).run().unwrap();
    admin
        .run_command(doc! { "shardCollection": ns("users"), "key": { "region": 1, "email": 1 } })
        .run()
        .unwrap();
}

/// A known document is found by its identity, its `_id` and its shard key's values, so that
/// its writes route to one shard; a save under another key value is another document, which
/// the `_id` index refuses.
#[test]
fn saves_and_deletes_of_a_known_document_carry_its_shard_key() {
    let (_server, db) = database();
    let users = db.collection::<User>().unwrap();
    let mut ann = user(1, "eu");
    assert!(users.save(&mut ann).unwrap().upserted_id.is_some());
    ann.visits = 5;
    let replaced = users.save(&mut ann).unwrap();
    assert_eq!((replaced.matched, replaced.modified), (1, 1));
    assert_eq!(users.get(1).unwrap().unwrap().visits, 5);
    let mut moved = ann.clone();
    moved.region = "us".into();
    assert_eq!(users.save(&mut moved).unwrap_err().code(), Some(11000));
    assert_eq!(users.delete_document(&moved).unwrap(), 0);
    assert_eq!(users.delete_document(&ann).unwrap(), 1);
    assert_eq!(users.count(Filter::all()).unwrap(), 0);
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "blobs")]
struct Blob {
    #[odm(id)]
    id: i64,
    data: String,
}

/// The same collection as a second model sees it, for two models synced in one transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "orders")]
struct OrderTotal {
    #[odm(id)]
    id: i64,
    #[odm(index)]
    user: i64,
}

/// Collections first met inside a transaction: two models on one new collection sync in it
/// without ending it, and a shard key met there deploys once it commits.
#[test]
fn collections_first_synced_inside_a_transaction_keep_it_alive_and_deploy_after_commit() {
    let (_server, db) = database();
    db.write(|txn| {
        txn.insert_one(&Order { id: 1, user: 7 })?;
        txn.insert_one(&OrderTotal { id: 2, user: 7 })?;
        txn.insert_one(&user(1, "eu"))?;
        // Synced once: a second use of the shard-key model in the same transaction.
        txn.insert_one(&user(2, "us"))?;
        Ok(())
    })
    .unwrap();
    let orders = db.collection::<OrderTotal>().unwrap();
    assert_eq!(orders.count(Filter::all()).unwrap(), 2);
    let plan = orders.sync_indexes(false).unwrap();
    assert_eq!(plan.unchanged, ["user_1"]);
    let users = db.collection::<User>().unwrap();
    let u = User::fields();
    let explain = users
        .find(u.region.eq("eu").and(u.email.eq("1@example.org")))
        .explain()
        .unwrap();
    if !odm::testing::remote() {
        assert_eq!(explain.routing.map(|(_, r)| r), Some(Routing::SingleShard));
    }
}

/// Inserts beyond one command's bounds (16 MiB) go in several commands; a refusal inside a
/// transaction's bulk write ends the write with the error.
#[test]
fn large_inserts_split_into_commands_and_a_refused_bulk_write_in_a_transaction_fails_it() {
    let (_server, db) = database();
    let orders = db.collection::<Order>().unwrap();
    let blobs = db.collection::<Blob>().unwrap();
    let many: Vec<Blob> = (0..20_000)
        .map(|id| Blob {
            id,
            data: "b".repeat(1_000),
        })
        .collect();
    assert_eq!(blobs.insert_many(&many).unwrap().len(), 20_000);
    assert_eq!(blobs.count(Filter::all()).unwrap(), 20_000);

    orders.insert_one(&Order { id: 1, user: 1 }).unwrap();
    let outcome = db.write(|txn| {
        txn.bulk_write(
            [
                odm::WriteModel::InsertOne(Order { id: 2, user: 1 }),
                odm::WriteModel::InsertOne(Order { id: 1, user: 1 }),
            ],
            false,
        )
    });
    // (Embedded, the refusal is reported by position and the rest commits.) On MongoDB the
    // server has ended the transaction: the bulk write fails and nothing commits.
    assert_eq!(outcome.unwrap_err().code(), Some(11000));
    assert_eq!(orders.count(Filter::all()).unwrap(), 1);
}

/// The declared key analyzed in one call, answered by the server: `configureQueryAnalyzer`
/// samples the finds the driver sends, and `analyzeShardKey`'s reply reads back into the
/// typed form. (A real MongoDB writes its samples every `queryAnalysisWriterIntervalSecs`, 90
/// by default: set it to 1 on the server before running this against one.)
#[test]
fn the_declared_key_is_analyzed_by_the_server_from_the_queries_it_sampled() {
    use odm_advisor::{AnalyzeOptions, Monotonicity};
    use odm_engine::sampling::AnalyzerMode;
    let (_server, db) = database();
    let users = db.collection::<User>().unwrap();
    let all: Vec<User> = (0..1500)
        .map(|i| user(i, ["eu", "us", "ap"][i as usize % 3]))
        .collect();
    users.insert_many(&all).unwrap();
    let configured = users
        .configure_query_analyzer(AnalyzerMode::Full, Some(50.0))
        .unwrap();
    assert_eq!(
        configured.get_document("newConfiguration").unwrap(),
        &doc! { "mode": "full", "samplesPerSecond": 50.0 }
    );
    let f = User::fields();
    for u in all.iter().take(5) {
        users
            .find(
                f.region
                    .eq(u.region.as_str())
                    .and(f.email.eq(u.email.as_str())),
            )
            .to_vec()
            .unwrap();
        users.find(f.email.eq(u.email.as_str())).to_vec().unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let analysis = users.analyze_shard_key(&AnalyzeOptions::default()).unwrap();
    let k = analysis.key_characteristics.as_ref().unwrap();
    assert_eq!((k.num_docs_total, k.num_distinct_values), (1500, 1500));
    assert!(
        k.is_unique,
        "the unique index on (region, email) supports the key"
    );
    // Unknown on odm serve, which stores by `_id` and has integer ids here (their order says
    // nothing of insertion order); not monotonic on MongoDB, which has record ids (the region
    // comes first, and cycles).
    assert!(
        matches!(
            k.monotonicity,
            Monotonicity::Unknown | Monotonicity::NotMonotonic
        ),
        "{:?}",
        k.monotonicity
    );
    let reads = analysis.read_distribution.as_ref().unwrap();
    assert_eq!((reads.find, reads.total()), (10, 10));
    assert_eq!(
        (reads.targets.single_shard, reads.targets.scatter_gather),
        (5, 5)
    );
    assert_eq!(reads.targets.by_range.len(), 100);
    assert_eq!(analysis.write_distribution.as_ref().unwrap().total(), 0);
}
