//! Generic models and collections named at run time (S1: one inbox collection per tenant, a
//! bucket generic over its messages), typed reads inside transactions, durability per
//! collection handle, and decoding errors that name the failing field.

use bson::oid::ObjectId;
use odm::{Database, Document, Durability, Embedded, Error, Filter, Sort, UpdateOptions};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Msg {
    from: String,
    body: String,
    at: i64,
}

/// A bucket of messages of any type: the model a generic pattern declares. The parameter needs
/// no bound: marking the field embedded makes the derive require `M: Embedded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "buckets", index(keys(owner = 1, seq = -1), unique))]
struct Bucket<M> {
    #[odm(id)]
    id: ObjectId,
    owner: String,
    seq: i64,
    count: i32,
    #[odm(embedded)]
    messages: Vec<M>,
}

fn bucket<M: Embedded>(owner: &str, seq: i64, messages: Vec<M>) -> Bucket<M> {
    Bucket {
        id: ObjectId::new(),
        owner: owner.to_owned(),
        seq,
        count: i32::try_from(messages.len()).unwrap(),
        messages,
    }
}

fn msg(from: &str, at: i64) -> Msg {
    Msg {
        from: from.to_owned(),
        body: format!("hello from {from}"),
        at,
    }
}

#[test]
fn s1_generic_bucket_handles_are_typed_by_the_parameter() {
    let f = Bucket::<Msg>::fields();
    assert_eq!(f.messages.path(), "messages");
    // Paths continue into the parameter when it is embedded.
    assert_eq!(f.messages.from.path(), "messages.from");
    assert_eq!(f.messages.all().at.path(), "messages.$[].at");
    let specs = Bucket::<Msg>::indexes();
    assert_eq!(specs.len(), 1);
    assert_eq!(
        specs[0].keys_document(),
        bson::doc! { "owner": 1, "seq": -1 }
    );
    assert!(specs[0].is_unique());
    assert_eq!(Bucket::<Msg>::COLLECTION, "buckets");

    let db = Database::in_memory().unwrap();
    let buckets = db.collection::<Bucket<Msg>>().unwrap();
    buckets
        .insert_one(&bucket("ann", 1, vec![msg("bob", 1), msg("cy", 2)]))
        .unwrap();
    buckets
        .update_one(
            f.owner.eq("ann").and(f.seq.eq(1)),
            f.messages.push(msg("dee", 3)).and(f.count.inc(1)),
        )
        .unwrap();
    let found = buckets
        .find_one(f.messages.from.eq("dee"))
        .unwrap()
        .unwrap();
    assert_eq!(found.count, 3);
    assert_eq!(found.messages[2], msg("dee", 3));
    // The declared unique index holds for the generic model.
    let duplicate = buckets
        .insert_one(&bucket("ann", 1, Vec::new()))
        .unwrap_err();
    assert!(
        duplicate.to_string().contains("duplicate key"),
        "{duplicate}"
    );
}

#[test]
fn s1_collections_named_at_run_time_carry_the_declarations() {
    let db = Database::in_memory().unwrap();
    let ann = db.collection_named::<Bucket<Msg>>("inbox_ann").unwrap();
    let bob = db.collection_named::<Bucket<Msg>>("inbox_bob").unwrap();
    assert_eq!(ann.name(), "inbox_ann");
    ann.insert_one(&bucket("ann", 1, vec![msg("bob", 1)]))
        .unwrap();
    bob.insert_one(&bucket("bob", 1, vec![msg("ann", 1)]))
        .unwrap();
    bob.insert_one(&bucket("bob", 2, vec![msg("cy", 2)]))
        .unwrap();
    let f = Bucket::<Msg>::fields();
    assert_eq!(ann.count(Filter::all()).unwrap(), 1);
    assert_eq!(bob.count(Filter::all()).unwrap(), 2);
    // Nothing reached the declared collection.
    let engine = db.engine().expect("an embedded database");
    let names = engine.list_collections();
    assert!(names.contains(&"inbox_ann".to_owned()));
    assert!(!names.contains(&"buckets".to_owned()), "{names:?}");
    // Each named collection has the model's indexes, and queries use them.
    for name in ["inbox_ann", "inbox_bob"] {
        let indexes = engine.read().unwrap().list_indexes(name);
        assert!(
            indexes
                .iter()
                .any(|i| i.name() == "owner_1_seq_-1" && i.is_unique()),
            "{name}: {indexes:?}"
        );
    }
    let explain = bob
        .find(f.owner.eq("bob"))
        .sort(Sort::desc(&f.seq))
        .explain()
        .unwrap();
    assert_eq!(explain.index_used(), Some("owner_1_seq_-1"));
    let newest = bob
        .find(f.owner.eq("bob"))
        .sort(Sort::desc(&f.seq))
        .first()
        .unwrap()
        .unwrap();
    assert_eq!(newest.seq, 2);
    let dup = bob.insert_one(&bucket("bob", 2, Vec::new())).unwrap_err();
    assert!(dup.to_string().contains("inbox_bob"), "{dup}");
    // A name the engine refuses is an error naming it, and creates nothing.
    let bad = db.collection_named::<Bucket<Msg>>("bad$name").unwrap_err();
    assert!(bad.to_string().contains("bad$name"), "{bad}");
}

#[test]
fn transactions_open_named_collections_and_read_their_own_writes() {
    let db = Database::in_memory().unwrap();
    let f = Bucket::<Msg>::fields();
    let seen = db
        .write(|txn| {
            let mut ann = txn.collection_named::<Bucket<Msg>>("inbox_ann")?;
            ann.insert_one(&bucket("ann", 1, vec![msg("bob", 1)]))?;
            ann.insert_one(&bucket("ann", 2, vec![msg("cy", 2)]))?;
            ann.update_one(
                f.seq.eq(2),
                f.messages.push(msg("dee", 3)),
                &UpdateOptions::default(),
            )?;
            // Reads in the transaction see its writes, through the same typed query.
            let newest = ann
                .find(f.owner.eq("ann"))
                .sort(Sort::desc(&f.seq))
                .first()?
                .expect("written above");
            let mut bob = txn.collection_named::<Bucket<Msg>>("inbox_bob")?;
            bob.insert_one(&bucket("bob", 1, newest.messages.clone()))?;
            Ok(newest.messages.len())
        })
        .unwrap();
    assert_eq!(seen, 2);
    let bob = db.collection_named::<Bucket<Msg>>("inbox_bob").unwrap();
    assert_eq!(
        bob.find_one(Filter::all()).unwrap().unwrap().messages.len(),
        2
    );

    // An error returned from the closure rolls back every collection it touched, the
    // collections and indexes it created included.
    let err = db
        .write(|txn| {
            txn.collection_named::<Bucket<Msg>>("inbox_cy")?
                .insert_one(&bucket("cy", 1, Vec::new()))?;
            txn.collection_named::<Bucket<Msg>>("inbox_bob")?
                .insert_one(&bucket("bob", 1, Vec::new()))?; // duplicate (owner, seq)
            Ok(())
        })
        .unwrap_err();
    assert!(err.to_string().contains("duplicate key"), "{err}");
    assert!(
        !db.engine()
            .expect("an embedded database")
            .list_collections()
            .contains(&"inbox_cy".to_owned())
    );
    // Opened again after the rollback, its declarations are applied again.
    let cy = db.collection_named::<Bucket<Msg>>("inbox_cy").unwrap();
    cy.insert_one(&bucket("cy", 1, Vec::new())).unwrap();
    assert!(cy.insert_one(&bucket("cy", 1, Vec::new())).is_err());
}

#[test]
fn collection_handles_choose_their_durability() {
    let dir = std::env::temp_dir().join(format!("odm-durability-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("db.redb");
    {
        let db = Database::open(&path).unwrap();
        let fast = db
            .collection_named::<Bucket<Msg>>("inbox_ann")
            .unwrap()
            .with_durability(Durability::Eventual);
        for seq in 0..20 {
            fast.insert_one(&bucket("ann", seq, vec![msg("bob", seq)]))
                .unwrap();
        }
        assert_eq!(fast.count(Filter::all()).unwrap(), 20);
        // One immediate commit makes every earlier eventual one durable.
        db.collection_named::<Bucket<Msg>>("inbox_ann")
            .unwrap()
            .insert_one(&bucket("ann", 99, Vec::new()))
            .unwrap();
    }
    let db = Database::open(&path).unwrap();
    let ann = db.collection_named::<Bucket<Msg>>("inbox_ann").unwrap();
    assert_eq!(ann.count(Filter::all()).unwrap(), 21);
    drop(ann);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "people")]
struct Person {
    #[odm(id)]
    id: i64,
    name: String,
    age: u32,
    #[odm(embedded)]
    visits: Vec<Visit>,
}

#[derive(Debug, Serialize, Deserialize, Embedded)]
struct Visit {
    city: String,
    nights: i32,
}

fn decode_error(db: &Database, stored: bson::Document) -> String {
    db.engine()
        .expect("an embedded database")
        .write(|t| t.insert_one("people", stored))
        .unwrap();
    let people = db.collection::<Person>().unwrap();
    let err = people.find(Filter::all()).to_vec().unwrap_err();
    let from_get = people.get(7).unwrap_err();
    assert_eq!(err.to_string(), from_get.to_string());
    let from_iter = people
        .find(Filter::all())
        .iter()
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.to_string(), from_iter.to_string());
    assert!(matches!(
        err,
        Error::Engine(odm::engine::Error::Decode { .. })
    ));
    err.to_string()
}

/// A stored document that does not fit the model names the collection, the `_id`, the path
/// that failed and the expected and found types.
#[test]
fn a_document_that_does_not_decode_names_the_field_and_the_types() {
    let db = Database::in_memory().unwrap();
    let message = decode_error(
        &db,
        bson::doc! { "_id": 7_i64, "name": "ann", "age": "forty", "visits": [] },
    );
    assert!(message.contains("`people`"), "{message}");
    assert!(message.contains("document 7 "), "{message}");
    assert!(message.contains("at `age`"), "{message}");
    assert!(message.contains("string"), "{message}");
    assert!(message.contains("u32"), "{message}");

    let db = Database::in_memory().unwrap();
    let message = decode_error(
        &db,
        bson::doc! { "_id": 7_i64, "name": "ann", "age": 40, "visits": [
            { "city": "Oslo", "nights": 2 },
            { "city": "Rome", "nights": "three" },
        ] },
    );
    assert!(message.contains("at `visits.1.nights`"), "{message}");
    assert!(message.contains("i32"), "{message}");

    // Through the bson crate's slower decoder (a decimal is not in the fast one's types).
    let db = Database::in_memory().unwrap();
    let message = decode_error(
        &db,
        bson::doc! { "_id": 7_i64, "name": "ann", "age": 40, "visits": [
            { "city": "Oslo", "nights": bson::Decimal128::from_bytes([0; 16]) },
        ] },
    );
    assert!(message.contains("at `visits.0.nights`"), "{message}");

    let db = Database::in_memory().unwrap();
    let message = decode_error(
        &db,
        bson::doc! { "_id": 7_i64, "name": "ann", "visits": [] },
    );
    assert!(message.contains("missing field `age`"), "{message}");
}

/// `Find::iter` decodes one document at a time and goes on past one that does not decode.
#[test]
fn iter_yields_each_decoding_error_in_place() {
    let db = Database::in_memory().unwrap();
    db.engine()
        .expect("an embedded database")
        .write(|t| {
            for id in 0..5_i64 {
                let age = if id == 2 {
                    bson::Bson::from("two")
                } else {
                    bson::Bson::from(30)
                };
                t.insert_one(
                    "people",
                    bson::doc! { "_id": id, "name": "p", "age": age, "visits": [] },
                )?;
            }
            Ok::<_, odm::engine::Error>(())
        })
        .unwrap();
    let people = db.collection::<Person>().unwrap();
    let f = Person::fields();
    let results: Vec<Result<Person, Error>> = people
        .find(Filter::all())
        .sort(Sort::asc(&f.id))
        .iter()
        .unwrap()
        .collect();
    assert_eq!(results.len(), 5);
    assert!(results[2].is_err());
    assert_eq!(
        results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|p| p.id)
            .collect::<Vec<_>>(),
        [0, 1, 3, 4]
    );
}

/// An embedded type generic over the message, inside a model generic over it too: the shape
/// of an inbox bucket of envelopes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Envelope<M> {
    id: i64,
    read: bool,
    message: M,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "mailboxes", index(keys(owner = 1, "letters.id" = 1)))]
struct Mailbox<M> {
    #[odm(id)]
    id: i64,
    owner: String,
    #[odm(embedded)]
    letters: Vec<Envelope<M>>,
}

/// Code generic over the message type, written once with typed handles.
fn mark_read<M: Serialize + DeserializeOwned + 'static>(
    mailboxes: &odm::Collection<Mailbox<M>>,
    owner: &str,
    id: i64,
) -> bool {
    let f = Mailbox::<M>::fields();
    let result = mailboxes
        .update_one(
            f.owner.eq(owner).and(f.letters.id.eq(id)),
            f.letters.matched().read.set(true),
        )
        .unwrap();
    result.modified == 1
}

#[test]
fn generic_embedded_types_have_handles_through_the_parameter() {
    let f = Mailbox::<Msg>::fields();
    assert_eq!(f.letters.id.path(), "letters.id");
    assert_eq!(f.letters.message.path(), "letters.message");
    assert_eq!(f.letters.matched().read.path(), "letters.$.read");
    assert_eq!(
        Mailbox::<Msg>::indexes()[0].keys_document(),
        bson::doc! { "owner": 1, "letters.id": 1 }
    );
    let db = Database::in_memory().unwrap();
    let mailboxes = db.collection::<Mailbox<Msg>>().unwrap();
    mailboxes
        .insert_one(&Mailbox {
            id: 1,
            owner: "ann".to_owned(),
            letters: vec![
                Envelope {
                    id: 10,
                    read: false,
                    message: msg("bob", 1),
                },
                Envelope {
                    id: 11,
                    read: false,
                    message: msg("cy", 2),
                },
            ],
        })
        .unwrap();
    assert!(mark_read(&mailboxes, "ann", 11));
    assert!(!mark_read(&mailboxes, "bob", 11));
    let stored = mailboxes.get(1).unwrap().unwrap();
    assert_eq!(
        stored.letters.iter().map(|l| l.read).collect::<Vec<_>>(),
        [false, true]
    );
    // The same generic code over another message type.
    let notes = db.collection_named::<Mailbox<String>>("notes").unwrap();
    notes
        .insert_one(&Mailbox {
            id: 1,
            owner: "ann".to_owned(),
            letters: vec![Envelope {
                id: 5,
                read: false,
                message: "hi".to_owned(),
            }],
        })
        .unwrap();
    assert!(mark_read(&notes, "ann", 5));
}

/// A storage backend that counts the syncs redb asks of it: an immediate commit syncs, an
/// eventual one does not.
#[derive(Debug)]
struct CountingSyncs {
    inner: redb::backends::InMemoryBackend,
    syncs: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl redb::StorageBackend for CountingSyncs {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.inner.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.inner.read(offset, out)
    }
    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> Result<(), std::io::Error> {
        self.syncs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.sync_data()
    }
    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        self.inner.write(offset, data)
    }
}

#[test]
fn eventual_writes_skip_the_sync_that_immediate_ones_make() {
    use std::sync::atomic::Ordering;
    let syncs = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let engine = odm::engine::Database::with_backend(CountingSyncs {
        inner: redb::backends::InMemoryBackend::new(),
        syncs: syncs.clone(),
    })
    .unwrap();
    let db = Database::from_engine(engine);
    let ann = db.collection_named::<Bucket<Msg>>("inbox_ann").unwrap();
    let eventual = ann.clone().with_durability(Durability::Eventual);
    let before = syncs.load(Ordering::SeqCst);
    for seq in 0..10 {
        eventual
            .insert_one(&bucket("ann", seq, Vec::new()))
            .unwrap();
    }
    assert_eq!(
        syncs.load(Ordering::SeqCst),
        before,
        "eventual commits synced"
    );
    ann.insert_one(&bucket("ann", 10, Vec::new())).unwrap();
    assert!(
        syncs.load(Ordering::SeqCst) > before,
        "an immediate commit did not sync"
    );
    // The database-wide default applies to handles that chose nothing.
    let after = syncs.load(Ordering::SeqCst);
    let options = odm::Options {
        durability: Durability::Eventual,
        ttl_interval: None,
    };
    let quiet =
        Database::from_engine_with(db.engine().expect("an embedded database").clone(), &options);
    quiet
        .collection_named::<Bucket<Msg>>("inbox_ann")
        .unwrap()
        .insert_one(&bucket("ann", 11, Vec::new()))
        .unwrap();
    assert_eq!(
        syncs.load(Ordering::SeqCst),
        after,
        "the default durability was not applied"
    );
    assert_eq!(ann.count(Filter::all()).unwrap(), 12);
}
