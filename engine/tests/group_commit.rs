//! Group commit: concurrent durable writers share syncs, and each still succeeds or fails on
//! its own. A storage backend in memory counts syncs and makes each take a millisecond, as a
//! disk's would, so that writers queue up behind it.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bson::doc;
use odm_engine::{Database, Error};
use redb::StorageBackend;
use redb::backends::InMemoryBackend;

#[derive(Debug, Default)]
struct Counters {
    syncs: AtomicU64,
    fail_syncs: AtomicBool,
}

#[derive(Debug)]
struct SlowSyncs {
    inner: InMemoryBackend,
    counters: Arc<Counters>,
}

impl StorageBackend for SlowSyncs {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        std::thread::sleep(Duration::from_millis(1));
        if self.counters.fail_syncs.load(Ordering::SeqCst) {
            return Err(io::Error::other("the disk refuses to sync"));
        }
        self.counters.syncs.fetch_add(1, Ordering::SeqCst);
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.inner.write(offset, data)
    }
}

fn database() -> (Database, Arc<Counters>) {
    let counters = Arc::new(Counters::default());
    let db = Database::with_backend(SlowSyncs {
        inner: InMemoryBackend::new(),
        counters: counters.clone(),
    })
    .expect("opens");
    (db, counters)
}

/// Runs `threads` writers inserting `each` documents, one durable write each.
fn insert_concurrently(db: &Database, threads: i64, each: i64) -> Vec<Result<(), Error>> {
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    (0..each)
                        .map(|i| {
                            db.write(|w| w.insert_one("c", doc! { "_id": t * 1000 + i }).map(drop))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        writers
            .into_iter()
            .flat_map(|w| w.join().expect("no panic"))
            .collect()
    })
}

#[test]
fn concurrent_durable_writers_share_syncs() {
    let (db, counters) = database();
    db.write(|w| w.insert_one("c", doc! { "_id": -1 }).map(drop))
        .expect("the collection is made");
    let before = counters.syncs.load(Ordering::SeqCst);
    let results = insert_concurrently(&db, 16, 20);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let syncs = counters.syncs.load(Ordering::SeqCst) - before;
    assert_eq!(db.collection("c").count().expect("counts"), 321);
    // 320 durable commits; grouped, far fewer syncs (each round covers the writers queued
    // behind the sync before it).
    assert!(
        syncs * 3 < 320,
        "{syncs} syncs for 320 concurrent durable commits"
    );
}

#[test]
fn a_writer_alone_syncs_its_own_commit() {
    let (db, counters) = database();
    db.write(|w| w.insert_one("c", doc! { "_id": 0 }).map(drop))
        .expect("writes");
    let before = counters.syncs.load(Ordering::SeqCst);
    for i in 1..=10 {
        db.write(|w| w.insert_one("c", doc! { "_id": i }).map(drop))
            .expect("writes");
    }
    // One sync per commit, no extra empty commit.
    assert_eq!(counters.syncs.load(Ordering::SeqCst) - before, 10);
}

#[test]
fn a_failed_sync_fails_the_writers_it_would_have_covered() {
    let (db, counters) = database();
    db.write(|w| w.insert_one("c", doc! { "_id": -1 }).map(drop))
        .expect("the collection is made");
    counters.fail_syncs.store(true, Ordering::SeqCst);
    let results = insert_concurrently(&db, 8, 3);
    // No writer is told its write is durable while no sync succeeds.
    assert!(
        results.iter().all(Result::is_err),
        "{} of {} writes reported success without a sync",
        results.iter().filter(|r| r.is_ok()).count(),
        results.len()
    );
}
