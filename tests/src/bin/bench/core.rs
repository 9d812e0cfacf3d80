//! `bench core`: load, durable inserts (one thread, then 16 threads at once), point gets, a
//! full scan and indexed equality queries, through the engine, raw redb with hand-maintained
//! index tables, and SQLite storing JSON; with the `peers` feature, also through `TalaDB` and
//! `native_db` (see `peers.rs`).
//!
//! The data: documents of about 250 bytes with two secondary indexes (`user`, 1,000 distinct
//! values so an equality query returns about 100 documents; `category`). All three systems encode
//! and decode the same serde type, so the engine/raw ratio is the engine's own overhead.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bson::RawDocumentBuf;
use odm_engine::{Database, IndexSpec};
use odm_tests::rng::Rng;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use crate::Options;
use crate::report::{Row, median, per_op, print_table};

pub(crate) const USERS: u64 = 1_000;
pub(crate) const BATCH: usize = 1_000;
const DURABLE_INSERTS: usize = 1_000;
/// Threads inserting at once, each one document per durable transaction.
const THREADS: usize = 16;
const CONCURRENT_EACH: usize = 100;
const GETS: usize = 100_000;
const QUERIES: usize = 1_000;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Item {
    #[serde(rename = "_id")]
    pub(crate) id: i64,
    pub(crate) user: String,
    pub(crate) category: i32,
    pub(crate) score: f64,
    pub(crate) created_ms: i64,
    pub(crate) title: String,
    pub(crate) tags: Vec<String>,
}

pub(crate) fn item(id: i64, rng: &mut Rng) -> Item {
    let user = format!("user{:05}", rng.below(USERS));
    Item {
        id,
        category: rng.below(500) as i32,
        score: rng.below(1_000_000) as f64 / 100.0,
        created_ms: 1_700_000_000_000 + rng.below(10_000_000_000) as i64,
        title: format!(
            "A title of moderate length for item number {id:>10} in the benchmark data set"
        ),
        tags: vec![
            format!("t{}", rng.below(50)),
            format!("t{}", rng.below(50)),
            "common".into(),
        ],
        user,
    }
}

/// What each phase measured, in µs per operation, for one system in one run.
#[derive(Debug, Default, Clone)]
struct Timings {
    load: f64,
    durable: f64,
    concurrent: f64,
    get: f64,
    scan: f64,
    query: f64,
}

/// The phases every system implements.
pub(crate) trait System {
    /// Inserts the items in one durable transaction.
    fn write(&mut self, items: &[Item]);
    /// Inserts the items from [`THREADS`] threads at once, one durable transaction each.
    fn write_concurrently(&mut self, items: &[Item]);
    /// Gets every id, in batches sharing one read transaction; returns a checksum.
    fn get_many(&mut self, ids: &[i64]) -> i64;
    /// Decodes every document; returns how many.
    fn scan(&mut self) -> usize;
    /// Fetches and decodes the documents of `user`; returns how many.
    fn query(&mut self, user: &str) -> usize;
}

pub fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("odm-bench-core-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!(
        "bench core: {} documents, 2 secondary indexes, {} runs; {}",
        options.docs,
        options.runs,
        super::report::build()
    );
    let mut results: Vec<Vec<Timings>> = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for run in 0..options.runs {
        let mut rng = Rng::new(42 + run as u64);
        let items: Vec<Item> = (0..options.docs as i64)
            .map(|i| item(i, &mut rng))
            .collect();
        let extra: Vec<Item> = (0..DURABLE_INSERTS as i64)
            .map(|i| item(options.docs as i64 + i, &mut rng))
            .collect();
        let first = (options.docs + DURABLE_INSERTS) as i64;
        let concurrent: Vec<Item> = (0..(THREADS * CONCURRENT_EACH) as i64)
            .map(|i| item(first + i, &mut rng))
            .collect();
        let total = (options.docs + DURABLE_INSERTS) as u64;
        let gets: Vec<i64> = (0..GETS).map(|_| rng.below(total) as i64).collect();
        let users: Vec<String> = (0..QUERIES)
            .map(|_| format!("user{:05}", rng.below(USERS)))
            .collect();
        let mut systems: Vec<Box<dyn System>>;
        (names, systems) = open_systems(&dir)?.into_iter().unzip();
        let count = systems.len();
        let mut timings = vec![Timings::default(); count];
        // Phase by phase, every system in turn, starting with a different one each run: a burst
        // of noise on the machine then falls on all systems alike.
        let order: Vec<usize> = (0..count)
            .map(|i| (i + run) % count)
            .filter(|&i| options.only.as_deref().is_none_or(|only| only == names[i]))
            .collect();
        let mut checks = vec![(0i64, 0usize, 0usize); count];
        for phase in 0..6 {
            for &i in &order {
                let (system, t, check) = (&mut systems[i], &mut timings[i], &mut checks[i]);
                match phase {
                    0 => t.load = load(system.as_mut(), &items),
                    1 => t.durable = durable(system.as_mut(), &extra),
                    2 => {
                        t.concurrent = per_op(concurrent.len(), || {
                            system.write_concurrently(&concurrent);
                        })
                        .1;
                    }
                    3 => (check.0, t.get) = per_op(gets.len(), || system.get_many(&gets)),
                    4 => {
                        let all = items.len() + extra.len() + concurrent.len();
                        (check.1, t.scan) = per_op(all, || system.scan());
                    }
                    _ => {
                        (check.2, t.query) =
                            per_op(users.len(), || users.iter().map(|u| system.query(u)).sum());
                    }
                }
            }
        }
        let checks: Vec<_> = order.iter().map(|&i| checks[i]).collect();
        if checks.windows(2).any(|w| w[0] != w[1]) {
            return Err(format!("systems disagree on results: {checks:?}").into());
        }
        results.push(timings);
    }
    let _ = std::fs::remove_dir_all(&dir);
    report(&names, &results);
    Ok(())
}

/// A named system measured, on a fresh file.
pub(crate) type Named = (&'static str, Box<dyn System>);

/// Every system, each on a fresh file in `dir`: the engine, raw redb and SQLite, and the peers
/// when they are built.
fn open_systems(dir: &Path) -> Result<Vec<Named>, Box<dyn std::error::Error>> {
    #[cfg_attr(not(feature = "peers"), expect(unused_mut, reason = "the peers join"))]
    let mut systems: Vec<Named> = vec![
        (
            "engine",
            Box::new(EngineSystem::new(&fresh(dir, "engine.redb"))?),
        ),
        ("raw", Box::new(RawRedb::open(&fresh(dir, "raw.redb"))?)),
        ("sqlite", Box::new(Sqlite::open(&fresh(dir, "sqlite.db"))?)),
    ];
    #[cfg(feature = "peers")]
    systems.extend(super::peers::open(dir)?);
    Ok(systems)
}

pub(crate) fn fresh(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

fn load(system: &mut dyn System, items: &[Item]) -> f64 {
    per_op(items.len(), || {
        for batch in items.chunks(BATCH) {
            system.write(batch);
        }
    })
    .1
}

/// Out of line so callgrind can count it alone: `valgrind --tool=callgrind
/// --toggle-collect='bench::core::durable' bench core --runs 1 --docs 20000 --only engine`.
#[inline(never)]
fn durable(system: &mut dyn System, items: &[Item]) -> f64 {
    per_op(items.len(), || {
        for item in items {
            system.write(std::slice::from_ref(item));
        }
    })
    .1
}

/// A table row's label, unit and the figure it reads from each system's timings.
type Phase = (&'static str, &'static str, fn(&Timings) -> f64);

fn report(names: &[&str], results: &[Vec<Timings>]) {
    let column = |system: usize, f: fn(&Timings) -> f64| {
        median(results.iter().map(|r| f(&r[system])).collect())
    };
    let phases: [Phase; 6] = [
        ("load, 1,000 per transaction", "doc", |t| t.load),
        ("insert, one durable txn each", "doc", |t| t.durable),
        ("same, 16 threads at once", "doc", |t| t.concurrent),
        ("point get", "get", |t| t.get),
        ("full scan, decoded", "doc", |t| t.scan),
        ("indexed equality, ~100 docs", "query", |t| t.query),
    ];
    let rows: Vec<Row> = phases
        .iter()
        .map(|(phase, unit, f)| Row {
            phase,
            unit,
            values: (0..names.len()).map(|s| column(s, *f)).collect(),
        })
        .collect();
    print_table(names, &rows);
    let ratio = |row: usize, other: usize| rows[row].values[0] / rows[row].values[other];
    println!(
        "ratio insert={:.2} get={:.2} query={:.2} vs_sqlite insert={:.2} get={:.2} query={:.2} scan={:.2} durable={:.2} concurrent={:.2}",
        ratio(0, 1),
        ratio(3, 1),
        ratio(5, 1),
        ratio(0, 2),
        ratio(3, 2),
        ratio(5, 2),
        ratio(4, 2),
        ratio(1, 2),
        ratio(2, 2),
    );
}

struct EngineSystem {
    db: Database,
}

impl EngineSystem {
    fn new(path: &Path) -> Result<Self, odm_engine::Error> {
        let db = Database::open(path)?;
        let items = db.collection("items");
        items.create_index(IndexSpec::ascending("user")?)?;
        items.create_index(IndexSpec::ascending("category")?)?;
        Ok(EngineSystem { db })
    }
}

pub(crate) fn to_raw(item: &Item) -> RawDocumentBuf {
    bson::serialize_to_raw_document_buf(item).expect("items serialize")
}

impl System for EngineSystem {
    fn write(&mut self, items: &[Item]) {
        // Immediate durability, like raw redb's default commit and SQLite's synchronous=FULL.
        let result = self
            .db
            .write(|t| t.insert_many("items", items.iter().map(to_raw), true))
            .expect("load");
        assert!(result.failures.is_empty(), "{:?}", result.failures);
    }

    fn write_concurrently(&mut self, items: &[Item]) {
        let db = &self.db;
        on_threads(items, |share| {
            for item in share {
                db.write(|t| t.insert_one("items", to_raw(item)).map(drop))
                    .expect("insert");
            }
        });
    }

    fn get_many(&mut self, ids: &[i64]) -> i64 {
        let mut checksum = 0;
        for batch in ids.chunks(BATCH) {
            let txn = self.db.read().expect("read");
            let items = txn.collection("items").expect("open").expect("exists");
            for id in batch {
                let doc = items
                    .get(&bson::Bson::Int64(*id))
                    .expect("get")
                    .expect("present");
                checksum += i64::from(doc.decode::<Item>().expect("decode").category);
            }
        }
        checksum
    }

    fn scan(&mut self) -> usize {
        let txn = self.db.read().expect("read");
        let items = txn.collection("items").expect("open").expect("exists");
        items
            .scan()
            .expect("scan")
            .map(|d| d.expect("row").decode::<Item>().expect("decode"))
            .filter(|i| !i.user.is_empty())
            .count()
    }

    fn query(&mut self, user: &str) -> usize {
        let txn = self.db.read().expect("read");
        let items = txn.collection("items").expect("open").expect("exists");
        items
            .index_prefix("user_1", &[bson::Bson::from(user)])
            .expect("scan")
            .map(|d| d.expect("row").decode::<Item>().expect("decode"))
            .filter(|i| i.user == user)
            .count()
    }
}

const RAW_DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("docs");
const RAW_BY_USER: TableDefinition<&[u8], ()> = TableDefinition::new("by_user");
const RAW_BY_CATEGORY: TableDefinition<&[u8], ()> = TableDefinition::new("by_category");

/// Deals the items out to [`THREADS`] threads, each running `insert` on its share.
pub(crate) fn on_threads(items: &[Item], insert: impl Fn(&[Item]) + Sync) {
    let share = items.len().div_ceil(THREADS);
    std::thread::scope(|s| {
        for chunk in items.chunks(share) {
            let insert = &insert;
            s.spawn(move || insert(chunk));
        }
    });
}

/// Raw redb written by hand: documents by id, and index tables keyed `field bytes ++ id` as a
/// careful user would write them; BSON encode and decode as in the engine.
struct RawRedb {
    db: redb::Database,
}

impl RawRedb {
    fn open(path: &Path) -> Result<Self, redb::Error> {
        let db = redb::Database::create(path)?;
        let txn = db.begin_write()?;
        txn.open_table(RAW_DOCS)?;
        txn.open_table(RAW_BY_USER)?;
        txn.open_table(RAW_BY_CATEGORY)?;
        txn.commit()?;
        Ok(RawRedb { db })
    }
}

pub(crate) fn user_key(user: &str, id: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(user.len() + 9);
    key.extend_from_slice(user.as_bytes());
    key.push(0);
    key.extend_from_slice(&id.to_be_bytes());
    key
}

impl System for RawRedb {
    fn write_concurrently(&mut self, items: &[Item]) {
        // redb has one writer at a time: each thread's commit waits for the one before.
        let db = &self.db;
        on_threads(items, |share| {
            for item in share {
                raw_write(db, std::slice::from_ref(item));
            }
        });
    }

    fn write(&mut self, items: &[Item]) {
        raw_write(&self.db, items);
    }

    fn get_many(&mut self, ids: &[i64]) -> i64 {
        let mut checksum = 0;
        for batch in ids.chunks(BATCH) {
            let txn = self.db.begin_read().expect("read");
            let docs = txn.open_table(RAW_DOCS).expect("docs");
            for id in batch {
                let doc = docs.get(*id as u64).expect("get").expect("present");
                let item: Item = bson::deserialize_from_slice(doc.value()).expect("decode");
                checksum += i64::from(item.category);
            }
        }
        checksum
    }

    fn scan(&mut self) -> usize {
        let txn = self.db.begin_read().expect("read");
        let docs = txn.open_table(RAW_DOCS).expect("docs");
        docs.iter()
            .expect("iter")
            .map(|row| {
                bson::deserialize_from_slice::<Item>(row.expect("row").1.value()).expect("decode")
            })
            .filter(|i| !i.user.is_empty())
            .count()
    }

    fn query(&mut self, user: &str) -> usize {
        let txn = self.db.begin_read().expect("read");
        let docs = txn.open_table(RAW_DOCS).expect("docs");
        let by_user = txn.open_table(RAW_BY_USER).expect("by_user");
        let lower = user_key(user, 0);
        let upper = user_key(user, u64::MAX);
        let mut seen = BTreeSet::new();
        let mut found = 0;
        for row in by_user
            .range(lower.as_slice()..=upper.as_slice())
            .expect("range")
        {
            let (key, _) = row.expect("row");
            let key = key.value();
            let id = u64::from_be_bytes(key[key.len() - 8..].try_into().expect("8 bytes"));
            if !seen.insert(id) {
                continue;
            }
            let doc = docs.get(id).expect("get").expect("present");
            let item: Item = bson::deserialize_from_slice(doc.value()).expect("decode");
            found += usize::from(item.user == user);
        }
        found
    }
}

/// Inserts `items` into raw redb in one durable transaction, index entries by hand.
fn raw_write(db: &redb::Database, items: &[Item]) {
    let txn = db.begin_write().expect("begin");
    {
        let mut docs = txn.open_table(RAW_DOCS).expect("docs");
        let mut by_user = txn.open_table(RAW_BY_USER).expect("by_user");
        let mut by_category = txn.open_table(RAW_BY_CATEGORY).expect("by_category");
        for item in items {
            let bytes = bson::serialize_to_vec(item).expect("encode");
            let id = item.id as u64;
            docs.insert(id, bytes.as_slice()).expect("insert");
            by_user
                .insert(user_key(&item.user, id).as_slice(), ())
                .expect("insert");
            let mut category = (item.category as u32 ^ 0x8000_0000).to_be_bytes().to_vec();
            category.extend_from_slice(&id.to_be_bytes());
            by_category.insert(category.as_slice(), ()).expect("insert");
        }
    }
    txn.commit().expect("commit");
}

/// SQLite storing JSON with expression indexes, WAL mode, `synchronous=FULL`.
struct Sqlite {
    conn: Connection,
    path: PathBuf,
}

/// A connection in WAL mode with `synchronous=FULL`, waiting up to a minute for the lock
/// that concurrent writers share.
fn sqlite_connection(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.busy_timeout(std::time::Duration::from_mins(1))?;
    Ok(conn)
}

/// Inserts `items` in one transaction on `conn`.
fn sqlite_write(conn: &mut Connection, items: &[Item]) {
    let txn = conn.transaction().expect("begin");
    {
        let mut insert = txn
            .prepare_cached("INSERT INTO items (id, body) VALUES (?1, ?2)")
            .expect("prepare");
        for item in items {
            let body = serde_json::to_string(item).expect("encode");
            insert.execute(params![item.id, body]).expect("insert");
        }
    }
    txn.commit().expect("commit");
}

impl Sqlite {
    fn open(path: &Path) -> rusqlite::Result<Self> {
        let conn = sqlite_connection(path)?;
        conn.execute_batch(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
             CREATE INDEX items_user ON items (json_extract(body, '$.user'));
             CREATE INDEX items_category ON items (json_extract(body, '$.category'));",
        )?;
        Ok(Sqlite {
            conn,
            path: path.to_path_buf(),
        })
    }
}

impl System for Sqlite {
    fn write(&mut self, items: &[Item]) {
        sqlite_write(&mut self.conn, items);
    }

    fn write_concurrently(&mut self, items: &[Item]) {
        // A connection per thread, as concurrent SQLite writers have; the WAL lock serializes
        // their transactions, each with its own sync.
        let path = &self.path;
        on_threads(items, |share| {
            let mut conn = sqlite_connection(path).expect("connects");
            for item in share {
                sqlite_write(&mut conn, std::slice::from_ref(item));
            }
        });
    }

    fn get_many(&mut self, ids: &[i64]) -> i64 {
        let mut checksum = 0;
        for batch in ids.chunks(BATCH) {
            let txn = self.conn.transaction().expect("begin");
            {
                let mut get = txn
                    .prepare_cached("SELECT body FROM items WHERE id = ?1")
                    .expect("prepare");
                for id in batch {
                    let body: String = get.query_row([id], |r| r.get(0)).expect("get");
                    let item: Item = serde_json::from_str(&body).expect("decode");
                    checksum += i64::from(item.category);
                }
            }
            txn.commit().expect("commit");
        }
        checksum
    }

    fn scan(&mut self) -> usize {
        let mut all = self
            .conn
            .prepare_cached("SELECT body FROM items")
            .expect("prepare");
        all.query_map([], |r| r.get::<_, String>(0))
            .expect("query")
            .map(|b| serde_json::from_str::<Item>(&b.expect("row")).expect("decode"))
            .filter(|i| !i.user.is_empty())
            .count()
    }

    fn query(&mut self, user: &str) -> usize {
        let mut by_user = self
            .conn
            .prepare_cached("SELECT body FROM items WHERE json_extract(body, '$.user') = ?1")
            .expect("prepare");
        by_user
            .query_map([user], |r| r.get::<_, String>(0))
            .expect("query")
            .map(|b| serde_json::from_str::<Item>(&b.expect("row")).expect("decode"))
            .filter(|i| i.user == user)
            .count()
    }
}
