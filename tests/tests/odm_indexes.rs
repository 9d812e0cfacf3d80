//! Declared indexes: created when missing, a differing stored definition is an error showing
//! both, undeclared indexes reported and dropped only when asked; the shard key is recorded.

use odm::{Database, Document, Error};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "accounts", shard_key(region, email))]
struct Account {
    #[odm(id)]
    id: i64,
    region: String,
    email: String,
    #[odm(index(ttl = "30d"))]
    last_seen: bson::DateTime,
}

/// The same collection as another model would declare it: `last_seen` without the TTL.
#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "accounts", shard_key(region, email))]
struct AccountWithoutTtl {
    #[odm(id)]
    id: i64,
    region: String,
    email: String,
    #[odm(index)]
    last_seen: bson::DateTime,
}

#[test]
fn declared_indexes_are_created_checked_and_synced() {
    let db = odm::testing::database().unwrap();
    let accounts = db.collection::<Account>().unwrap();
    let plan = db.sync_indexes::<Account>(false).unwrap();
    assert_eq!(plan.unchanged, ["last_seen_1"]);
    assert!(
        plan.created.is_empty() && plan.undeclared.is_empty(),
        "{plan}"
    );
    // The shard key was recorded (by `shardCollection` on a server): explain routes by it.
    let a = Account::fields();
    let explain = accounts
        .find(a.region.eq("eu").and(a.email.eq("a@example.com")))
        .explain()
        .unwrap();
    // (A replica set of real MongoDB servers has no shardCollection: nothing to route by.)
    if let Some((key, routing)) = explain.routing {
        assert_eq!(key.to_document(), bson::doc! { "region": 1, "email": 1 });
        assert_eq!(routing, odm_engine::query::Routing::SingleShard);
    } else {
        assert!(odm::testing::remote(), "{explain}");
    }

    // Another declaration of the same index name: refused, showing both definitions.
    let err = db.collection::<AccountWithoutTtl>().unwrap_err();
    match &err {
        Error::IndexMismatch {
            index,
            declared,
            stored,
            ..
        } => {
            assert_eq!(index, "last_seen_1");
            assert_eq!(declared, "{ \"last_seen\": 1 }");
            assert_eq!(stored, "{ \"last_seen\": 1 } expireAfterSeconds=2592000");
        }
        other => panic!("expected IndexMismatch, got {other}"),
    }
    assert!(
        err.to_string().contains("differs from its declaration"),
        "{err}"
    );

    // An index the model does not declare is reported, and dropped only when asked.
    accounts.create_index(odm::Index::asc(&a.email)).unwrap();
    let plan = db.sync_indexes::<Account>(false).unwrap();
    assert_eq!(plan.undeclared, ["email_1"]);
    assert!(plan.dropped.is_empty());
    assert_eq!(plan.unchanged, ["last_seen_1"]);
    let plan = db.sync_indexes::<Account>(true).unwrap();
    assert_eq!(plan.dropped, ["email_1"]);
    assert_eq!(
        plan.to_string(),
        "created: none; unchanged: last_seen_1; undeclared: email_1; dropped: email_1"
    );
    let plan = db.sync_indexes::<Account>(false).unwrap();
    assert!(plan.undeclared.is_empty(), "{plan}");
}

#[test]
fn an_aborted_transaction_does_not_count_as_synced() {
    #[derive(Serialize, Deserialize, Document)]
    #[odm(collection = "tags")]
    struct Tag {
        #[odm(id)]
        id: i64,
        #[odm(index(unique))]
        name: String,
    }
    let db = odm::testing::database().unwrap();
    let outcome: odm::Result<()> = db.write(|t| {
        t.insert_one(&Tag {
            id: 1,
            name: "a".into(),
        })?;
        // Any error aborts; this one stands for the caller's own.
        Err(Error::NoShardKey("tags".into()))
    });
    assert!(outcome.is_err());
    // The next write syncs again: the unique index exists and refuses a duplicate.
    let tags = db.collection::<Tag>().unwrap();
    tags.insert_one(&Tag {
        id: 1,
        name: "a".into(),
    })
    .unwrap();
    let duplicate = tags.insert_one(&Tag {
        id: 2,
        name: "a".into(),
    });
    assert!(duplicate.is_err());
}

/// A model with a TTL index expires with no code of the user's: the typed database runs the
/// expiry monitor by default (here at a short interval), and `ttl_interval: None` turns it off.
#[test]
fn a_declared_ttl_index_expires_documents_without_more_code() {
    let old =
        bson::DateTime::from_millis(bson::DateTime::now().timestamp_millis() - 31 * 86_400_000);
    let account = |id| Account {
        id,
        region: "eu".into(),
        email: format!("{id}@example.com"),
        last_seen: old,
    };
    let quick = odm::Options {
        ttl_interval: Some(std::time::Duration::from_millis(20)),
        ..odm::Options::default()
    };
    let db = Database::in_memory_with(&quick).unwrap();
    let accounts = db.collection::<Account>().unwrap();
    accounts.insert_one(&account(1)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // The monitor counts a pass's expiries once the pass has committed, so the count can
    // trail the deletion by a moment: wait for both.
    while db
        .engine()
        .expect("an embedded database")
        .collection("accounts")
        .count()
        .unwrap()
        > 0
        || db.ttl_stats().unwrap().expired == 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the document never expired"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        db.engine()
            .expect("an embedded database")
            .collection("accounts")
            .count()
            .unwrap(),
        0
    );

    let off = odm::Options {
        ttl_interval: None,
        ..odm::Options::default()
    };
    let db = Database::in_memory_with(&off).unwrap();
    let accounts = db.collection::<Account>().unwrap();
    accounts.insert_one(&account(2)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(
        db.engine()
            .expect("an embedded database")
            .collection("accounts")
            .count()
            .unwrap(),
        1
    );
    assert!(db.ttl_stats().is_none());
    // The default is MongoDB's minute.
    assert_eq!(
        odm::Options::default().ttl_interval,
        Some(std::time::Duration::from_mins(1))
    );
}
