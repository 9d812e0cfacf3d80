//! `bench update`: single-document updates, each in its own transaction (committed without
//! waiting for the disk, in both systems, so that the engine's own work is what is measured),
//! the engine's `update_one` against the same change written by hand on raw redb: read the
//! document, decode it, change it, encode it, write it back, fix the index entries.
//!
//! Kinds: `$inc` of an indexed field, `$inc` of a field no index holds, `$push` onto a 50-element
//! array, and S1c's upsert into a recipient's open bucket (`{recipient, count: {$lt: 50}}` with
//! `$inc` and `$push`, a new bucket when none is open). Ends with one `ratio` line per kind.

use std::path::Path;

use bson::{Bson, Document, doc};
use odm_engine::update::UpdateOptions;
use odm_engine::{Database, Direction, Durability, IndexSpec};
use odm_tests::rng::Rng;
use redb::{ReadableTable, TableDefinition};

use crate::Options;
use crate::core::fresh;
use crate::report::{median, per_op};

const DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("docs");
const BY_COUNTER: TableDefinition<&[u8], ()> = TableDefinition::new("by_counter");
const BUCKETS: TableDefinition<u64, &[u8]> = TableDefinition::new("buckets");
const BY_RECIPIENT_COUNT: TableDefinition<&[u8], ()> = TableDefinition::new("by_recipient_count");

const KINDS: [&str; 4] = ["inc_indexed", "inc_unindexed", "push", "upsert_bucket"];
const OPS: usize = 2_000;
const RECIPIENTS: u64 = 200;
const BUCKET: i32 = 50;

fn item(id: u64, rng: &mut Rng) -> Document {
    let tags: Vec<Bson> = (0..50)
        .map(|t| Bson::String(format!("tag{}", (id + t) % 97)))
        .collect();
    doc! {
        "_id": id as i64,
        "user": format!("user{:05}", rng.below(10_000)),
        "counter": rng.below(1_000_000) as i32,
        "hits": 0,
        "tags": tags,
    }
}

fn counter_key(counter: i32, id: u64) -> Vec<u8> {
    let mut k = ((counter as u32) ^ 0x8000_0000).to_be_bytes().to_vec();
    k.extend_from_slice(&id.to_be_bytes());
    k
}

fn bucket_key(recipient: &str, count: i32, id: u64) -> Vec<u8> {
    let mut k = recipient.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(&((count as u32) ^ 0x8000_0000).to_be_bytes());
    k.extend_from_slice(&id.to_be_bytes());
    k
}

fn encode(doc: &Document) -> Vec<u8> {
    bson::RawDocumentBuf::try_from(doc)
        .expect("encodes")
        .into_bytes()
}

fn decode(bytes: &[u8]) -> Document {
    Document::try_from(bson::RawDocument::from_bytes(bytes).expect("bson")).expect("document")
}

/// The hand-written side: the same changes as plain redb table operations.
struct Raw {
    db: redb::Database,
    next_bucket: u64,
}

impl Raw {
    fn load(path: &Path, items: &[Document]) -> Result<Raw, redb::Error> {
        let db = redb::Database::create(path)?;
        for batch in items.chunks(5_000) {
            let txn = db.begin_write()?;
            {
                let mut docs = txn.open_table(DOCS)?;
                let mut by_counter = txn.open_table(BY_COUNTER)?;
                for it in batch {
                    let id = it.get_i64("_id").expect("id") as u64;
                    docs.insert(id, encode(it).as_slice())?;
                    let counter = it.get_i32("counter").expect("counter");
                    by_counter.insert(counter_key(counter, id).as_slice(), ())?;
                }
                txn.open_table(BUCKETS)?;
                txn.open_table(BY_RECIPIENT_COUNT)?;
            }
            txn.commit()?;
        }
        Ok(Raw { db, next_bucket: 0 })
    }

    fn write(&self) -> redb::WriteTransaction {
        let mut txn = self.db.begin_write().expect("begin");
        txn.set_durability(redb::Durability::None)
            .expect("durability");
        txn
    }

    /// Read, change, write back one item; `indexed` also moves its `counter` index entry.
    fn change(&self, id: u64, indexed: bool, change: impl FnOnce(&mut Document)) {
        let txn = self.write();
        {
            let mut docs = txn.open_table(DOCS).expect("docs");
            let mut doc = decode(docs.get(id).expect("get").expect("present").value());
            let before = doc.get_i32("counter").expect("counter");
            change(&mut doc);
            docs.insert(id, encode(&doc).as_slice()).expect("put");
            if indexed {
                let after = doc.get_i32("counter").expect("counter");
                let mut index = txn.open_table(BY_COUNTER).expect("index");
                index
                    .remove(counter_key(before, id).as_slice())
                    .expect("remove");
                index
                    .insert(counter_key(after, id).as_slice(), ())
                    .expect("insert");
            }
        }
        txn.commit().expect("commit");
    }

    fn upsert_bucket(&mut self, recipient: &str, message: &str) {
        let txn = self.write();
        {
            let mut buckets = txn.open_table(BUCKETS).expect("buckets");
            let mut index = txn.open_table(BY_RECIPIENT_COUNT).expect("index");
            let lower = bucket_key(recipient, i32::MIN, 0);
            let upper = bucket_key(recipient, BUCKET, 0);
            let open = index
                .range(lower.as_slice()..upper.as_slice())
                .expect("range")
                .next()
                .map(|row| {
                    let key = row.expect("row").0.value().to_vec();
                    u64::from_be_bytes(key[key.len() - 8..].try_into().expect("8 bytes"))
                });
            if let Some(id) = open {
                let mut doc = decode(buckets.get(id).expect("get").expect("present").value());
                let count = doc.get_i32("count").expect("count");
                doc.insert("count", count + 1);
                if let Ok(messages) = doc.get_array_mut("messages") {
                    messages.push(Bson::String(message.to_owned()));
                }
                buckets.insert(id, encode(&doc).as_slice()).expect("put");
                index
                    .remove(bucket_key(recipient, count, id).as_slice())
                    .expect("remove");
                index
                    .insert(bucket_key(recipient, count + 1, id).as_slice(), ())
                    .expect("insert");
            } else {
                self.next_bucket += 1;
                let id = self.next_bucket;
                let doc = doc! {
                    "_id": id as i64, "recipient": recipient, "count": 1, "messages": [message],
                };
                buckets.insert(id, encode(&doc).as_slice()).expect("put");
                index
                    .insert(bucket_key(recipient, 1, id).as_slice(), ())
                    .expect("insert");
            }
        }
        txn.commit().expect("commit");
    }
}

/// One operation of a kind, as the engine's filter and update.
fn engine_op(kind: &str, target: u64, message: &str) -> (Document, Document, bool) {
    match kind {
        "inc_indexed" => (
            doc! { "_id": target as i64 },
            doc! { "$inc": { "counter": 1 } },
            false,
        ),
        "inc_unindexed" => (
            doc! { "_id": target as i64 },
            doc! { "$inc": { "hits": 1 } },
            false,
        ),
        "push" => (
            doc! { "_id": target as i64 },
            doc! { "$push": { "tags": message } },
            false,
        ),
        _ => (
            doc! { "recipient": format!("r{target}"), "count": { "$lt": BUCKET } },
            doc! { "$inc": { "count": 1 }, "$push": { "messages": message } },
            true,
        ),
    }
}

pub fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("odm-bench-update-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng::new(11);
    let items: Vec<Document> = (0..options.docs as u64)
        .map(|i| item(i, &mut rng))
        .collect();
    // The engine as it ships (its change log on), and with the log off: raw redb keeps no
    // log, so the second is the like-for-like comparison of the update path itself.
    let engine = loaded_engine(&fresh(&dir, "engine.redb"), &items, true)?;
    let quiet = loaded_engine(&fresh(&dir, "engine-nolog.redb"), &items, false)?;
    let mut raw = Raw::load(&fresh(&dir, "raw.redb"), &items)?;
    println!(
        "bench update: {} documents (50-element arrays), index counter_1 and buckets recipient_1_count_1, {OPS} updates per kind, {} runs, one transaction per update; {}",
        options.docs,
        options.runs,
        super::report::build()
    );
    println!(
        "{:<16}{:>14}{:>14}{:>14}{:>10}{:>10}",
        "kind", "engine µs/op", "no log µs/op", "raw µs/op", "ratio", "no log"
    );
    let mut lines = Vec::new();
    for kind in KINDS
        .into_iter()
        .filter(|k| options.kind.as_deref().is_none_or(|wanted| wanted == *k))
    {
        let (mut engine_times, mut quiet_times, mut raw_times) =
            (Vec::new(), Vec::new(), Vec::new());
        for run in 0..options.runs {
            let mut ops_rng = Rng::new(1_000 + run as u64);
            let targets: Vec<u64> = (0..OPS)
                .map(|_| {
                    if kind == "upsert_bucket" {
                        ops_rng.below(RECIPIENTS)
                    } else {
                        ops_rng.below(options.docs as u64)
                    }
                })
                .collect();
            let ((), t) = per_op(OPS, || logged_updates(&engine, kind, &targets, run));
            engine_times.push(t);
            let ((), t) = per_op(OPS, || unlogged_updates(&quiet, kind, &targets, run));
            quiet_times.push(t);
            let ((), t) = per_op(OPS, || raw_updates(&mut raw, kind, &targets, run));
            raw_times.push(t);
        }
        let (e, q, r) = (median(engine_times), median(quiet_times), median(raw_times));
        println!(
            "{kind:<16}{e:>14.2}{q:>14.2}{r:>14.2}{:>10.2}{:>10.2}",
            e / r,
            q / r
        );
        lines.push(format!(
            "ratio kind={kind} engine/raw={:.2} nolog/raw={:.2}",
            e / r,
            q / r
        ));
    }
    check_same_state(&engine, &raw)?;
    check_same_state(&quiet, &raw)?;
    for line in lines {
        println!("{line}");
    }
    drop(engine);
    drop(quiet);
    drop(raw);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The message a run's `i`-th update pushes.
fn message(run: usize, i: usize) -> String {
    format!("message {run}-{i}")
}

/// One run of a kind on the engine, each update in its own transaction.
fn engine_updates(db: &Database, kind: &str, targets: &[u64], run: usize, side: &str) {
    let upsert = UpdateOptions {
        upsert: true,
        ..UpdateOptions::default()
    };
    let plain = UpdateOptions::default();
    for (i, &target) in targets.iter().enumerate() {
        let (filter, update, is_upsert) = engine_op(kind, target, &message(run, i));
        let options = if is_upsert { &upsert } else { &plain };
        let collection = if is_upsert { "buckets" } else { "items" };
        db.write_with(Durability::Eventual, |t| {
            t.update_one(collection, &filter, &update, options)
        })
        .unwrap_or_else(|e| panic!("{side} update: {e}"));
    }
}

/// [`engine_updates`] with the change log on, out of line so callgrind can count it alone:
/// `valgrind --tool=callgrind --toggle-collect='*update::logged_updates*' bench update
/// --runs 1 --docs 20000 --kind push` (or `*update::unlogged_updates*`, `*update::raw_updates*`).
#[inline(never)]
fn logged_updates(db: &Database, kind: &str, targets: &[u64], run: usize) {
    engine_updates(db, kind, targets, run, "engine");
}

/// [`engine_updates`] with the change log off (out of line, as [`logged_updates`]).
#[inline(never)]
fn unlogged_updates(db: &Database, kind: &str, targets: &[u64], run: usize) {
    // (A distinct label keeps the two wrappers from being merged into one symbol.)
    engine_updates(db, kind, targets, run, "engine without its log");
}

/// One run of a kind written by hand on raw redb (out of line, as [`logged_updates`]).
#[inline(never)]
fn raw_updates(raw: &mut Raw, kind: &str, targets: &[u64], run: usize) {
    for (i, &target) in targets.iter().enumerate() {
        match kind {
            "inc_indexed" => raw.change(target, true, |d| {
                let c = d.get_i32("counter").expect("counter");
                d.insert("counter", c + 1);
            }),
            "inc_unindexed" => raw.change(target, false, |d| {
                let h = d.get_i32("hits").expect("hits");
                d.insert("hits", h + 1);
            }),
            "push" => raw.change(target, false, |d| {
                if let Ok(tags) = d.get_array_mut("tags") {
                    tags.push(Bson::String(message(run, i)));
                }
            }),
            _ => raw.upsert_bucket(&format!("r{target}"), &message(run, i)),
        }
    }
}

/// The engine on `path` with the items loaded and the indexes made, its change log on or off.
fn loaded_engine(
    path: &std::path::Path,
    items: &[Document],
    log: bool,
) -> Result<Database, Box<dyn std::error::Error>> {
    let engine = Database::open(path)?;
    engine.set_change_log(odm_engine::changes::ChangeLogOptions {
        enabled: log,
        ..odm_engine::changes::ChangeLogOptions::default()
    })?;
    engine
        .collection("items")
        .create_index(IndexSpec::ascending("counter")?)?;
    engine.collection("buckets").create_index(IndexSpec::new([
        ("recipient", Direction::Ascending),
        ("count", Direction::Ascending),
    ])?)?;
    for batch in items.chunks(5_000) {
        engine.write_with(Durability::Eventual, |t| {
            t.insert_many("items", batch.iter(), true).map(drop)
        })?;
    }
    Ok(engine)
}

/// Both systems made the same changes: equal counter sums, bucket counts and message totals.
fn check_same_state(engine: &Database, raw: &Raw) -> Result<(), Box<dyn std::error::Error>> {
    use redb::ReadableDatabase;
    let txn = engine.read()?;
    let sum_engine =
        |name: &str, field: &str| -> Result<(i64, usize), Box<dyn std::error::Error>> {
            let coll = txn.collection(name)?.ok_or("missing collection")?;
            let mut sum = 0i64;
            let mut n = 0;
            for doc in coll.find(&doc! {}, &odm_engine::query::FindOptions::default())? {
                let doc = doc?;
                sum += i64::from(doc.get_i32(field).unwrap_or(0));
                n += 1;
            }
            Ok((sum, n))
        };
    let rtxn = raw.db.begin_read()?;
    let sum_raw = |table: TableDefinition<u64, &[u8]>,
                   field: &str|
     -> Result<(i64, usize), Box<dyn std::error::Error>> {
        let t = rtxn.open_table(table)?;
        let mut sum = 0i64;
        let mut n = 0;
        for row in t.iter()? {
            let doc = decode(row?.1.value());
            sum += i64::from(doc.get_i32(field).unwrap_or(0));
            n += 1;
        }
        Ok((sum, n))
    };
    for (engine_side, raw_side, what) in [
        (
            sum_engine("items", "counter")?,
            sum_raw(DOCS, "counter")?,
            "counters",
        ),
        (sum_engine("items", "hits")?, sum_raw(DOCS, "hits")?, "hits"),
        (
            sum_engine("buckets", "count")?,
            sum_raw(BUCKETS, "count")?,
            "bucket counts",
        ),
    ] {
        if engine_side != raw_side {
            return Err(
                format!("{what} differ: engine {engine_side:?}, raw redb {raw_side:?}").into(),
            );
        }
    }
    Ok(())
}
