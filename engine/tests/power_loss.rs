//! Power loss, not only a killed process: a storage backend that records writes and syncs and
//! "loses power" at a chosen operation. What survives is what a disk keeps: every write
//! followed by a sync, plus, torn at a random length, the last write that was not. Reopened
//! from that image, the database must hold every transaction reported durably committed,
//! nothing half-written (the transaction in flight is there whole or not at all), and indexes
//! equal to their recomputation.
//!
//! The same runs go through the write-ahead log (`odm_engine::wal`), as files are opened: two
//! disks, the database file and its log, lose power at the same moment, and each keeps any
//! subset of its unsynced writes, torn or whole (the database file is not synced between
//! checkpoints, so that set spans many commits).
//!
//! `ODM_POWER_LOSS_POINTS` sets how many crash points to try (CI runs a few dozen; the closing
//! figures come from runs of a thousand and more). `ODM_POWER_LOSS_SEED` replays a run.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use bson::{Bson, Document, doc};
use odm_engine::update::UpdateOptions;
use odm_engine::wal::Limits;
use odm_engine::{Database, Durability, Error, IndexSpec};

/// When power is lost, counted in operations on every disk of one machine.
#[derive(Debug, Default)]
struct Clock {
    /// Writes and syncs so far.
    operations: u64,
    /// The operation at which power is lost; from then on every call fails.
    crash_at: Option<u64>,
    crashed: bool,
}

impl Clock {
    /// Counts an operation; `Err` once power is lost.
    fn step(&mut self) -> io::Result<()> {
        if self.crash_at == Some(self.operations) {
            self.crashed = true;
        }
        self.operations += 1;
        if self.crashed {
            return Err(io::Error::other("power lost"));
        }
        Ok(())
    }
}

/// One disk as a crash leaves it, and the writes made since its last sync.
#[derive(Debug, Default)]
struct Disk {
    /// What the process sees: every write applied.
    current: Vec<u8>,
    /// What survives power loss: the contents at the last sync.
    durable: Vec<u8>,
    /// Writes since the last sync, oldest first.
    unsynced: Vec<(u64, Vec<u8>)>,
    /// Syncs so far.
    syncs: u64,
}

impl Disk {
    /// The image after power loss: the durable contents, and a torn prefix (`keep` bytes at
    /// most) of the last unsynced write.
    fn image_after_crash(&self, keep: usize) -> Vec<u8> {
        let mut image = self.durable.clone();
        if let Some((offset, data)) = self.unsynced.last() {
            let torn = &data[..keep.min(data.len())];
            write_at(&mut image, *offset, torn);
        }
        image
    }

    /// The image after power loss when the disk may have written any of the unsynced writes,
    /// in any order: each is lost, kept whole or torn, independently. Also returns whether one
    /// was torn.
    fn image_keeping_any(&self, rng: &mut Rng) -> (Vec<u8>, bool) {
        let mut image = self.durable.clone();
        let mut torn = false;
        for (offset, data) in &self.unsynced {
            let keep = match rng.below(3) {
                0 => 0,
                1 => data.len(),
                _ => rng.below(data.len() as u64 + 1) as usize,
            };
            torn |= keep > 0 && keep < data.len();
            write_at(&mut image, *offset, &data[..keep]);
        }
        (image, torn)
    }
}

fn write_at(bytes: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let offset = usize::try_from(offset).expect("offsets fit in memory");
    let end = offset + data.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[offset..end].copy_from_slice(data);
}

/// A redb backend over a [`Disk`] shared with the test, on a machine's [`Clock`].
#[derive(Debug, Clone, Default)]
struct PowerLossBackend {
    disk: Arc<Mutex<Disk>>,
    clock: Arc<Mutex<Clock>>,
}

impl PowerLossBackend {
    /// A disk holding `image`, as after a power loss, on a machine of its own.
    fn with_image(image: Vec<u8>) -> Self {
        PowerLossBackend::default().beside(image)
    }

    /// A second disk, holding `image`, on the same machine: power fails for both at once.
    fn beside(&self, image: Vec<u8>) -> Self {
        PowerLossBackend {
            disk: Arc::new(Mutex::new(Disk {
                current: image.clone(),
                durable: image,
                ..Disk::default()
            })),
            clock: self.clock.clone(),
        }
    }

    fn disk(&self) -> std::sync::MutexGuard<'_, Disk> {
        self.disk.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn clock(&self) -> std::sync::MutexGuard<'_, Clock> {
        self.clock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts power from zero from now on, lost at operation `crash_at`.
    fn lose_power_at(&self, crash_at: Option<u64>) {
        let mut clock = self.clock();
        clock.operations = 0;
        clock.crash_at = crash_at;
        self.disk().syncs = 0;
    }
}

impl redb::StorageBackend for PowerLossBackend {
    fn len(&self) -> io::Result<u64> {
        Ok(self.disk().current.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let disk = self.disk();
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let end = start + out.len();
        if end > disk.current.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end",
            ));
        }
        out.copy_from_slice(&disk.current[start..end]);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.clock().step()?;
        let mut disk = self.disk();
        let len = usize::try_from(len).map_err(io::Error::other)?;
        disk.current.resize(len, 0);
        // A length change reaches the disk with the next sync, like a write.
        if disk.durable.len() > len {
            disk.durable.truncate(len);
        }
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        self.clock().step()?;
        let mut disk = self.disk();
        let Disk {
            current, durable, ..
        } = &mut *disk;
        durable.clone_from(current);
        disk.unsynced.clear();
        disk.syncs += 1;
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.clock().step()?;
        let mut disk = self.disk();
        write_at(&mut disk.current, offset, data);
        disk.unsynced.push((offset, data.to_vec()));
        Ok(())
    }
}

/// A small deterministic generator (xorshift), so that a seed replays a run exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The collection's contents as the model expects them: `_id` -> document.
type Model = std::collections::BTreeMap<i64, Document>;

/// One transaction of the workload: inserts, an update of several documents (indexed fields
/// change) and a delete, applied to the database and to the model alike.
fn transaction(db: &Database, model: &mut Model, rng: &mut Rng, round: u64) -> Result<(), Error> {
    let mut next = model.clone();
    let inserted: Vec<Document> = (0..=rng.below(4))
        .map(|i| {
            let id = (round * 10 + i) as i64;
            doc! { "_id": id, "k": rng.below(20) as i64, "tags": [rng.below(5) as i64, "t"], "pad": "x".repeat(rng.below(600) as usize) }
        })
        .collect();
    let bump = rng.below(20) as i64;
    let doomed = rng.below(20) as i64;
    db.write_with(Durability::Immediate, |t| {
        for d in &inserted {
            t.insert_one("c", d)?;
        }
        t.update_many(
            "c",
            &doc! { "k": bump },
            doc! { "$inc": { "k": 100 }, "$push": { "tags": round as i64 } },
            &UpdateOptions::default(),
        )?;
        t.delete_many("c", &doc! { "k": doomed })?;
        Ok::<_, Error>(())
    })?;
    for d in inserted {
        next.insert(d.get_i64("_id").expect("ids are int64"), d);
    }
    for d in next.values_mut() {
        if d.get_i64("k").ok() == Some(bump) {
            d.insert("k", bump + 100);
            if let Ok(tags) = d.get_array_mut("tags") {
                tags.push(Bson::Int64(round as i64));
            }
        }
    }
    next.retain(|_, d| d.get_i64("k").ok() != Some(doomed));
    *model = next;
    Ok(())
}

fn contents(db: &Database) -> Model {
    let txn = db.read().expect("a snapshot opens");
    let Some(c) = txn.collection("c").expect("the catalog reads") else {
        return Model::new();
    };
    c.scan()
        .expect("a scan opens")
        .map(|d| {
            let d: Document = d
                .expect("documents read")
                .decode()
                .expect("documents decode");
            (d.get_i64("_id").expect("ids are int64"), d)
        })
        .collect()
}

/// How a run stores its database: redb on the file alone, or through the write-ahead log as
/// [`Database::open`] opens files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    Plain,
    Wal(Limits),
}

/// Limits that checkpoint every few commits and send some commits' writes to the database
/// file instead of the log, so that a run crosses every path of the log. A commit of this
/// workload logs 5-26 KiB in a release build, where a few pass the group limit, and 37-62 KiB
/// in a debug build, where most do: there redb fills new pages with non-zero bytes, and the
/// log keeps each page up to its last non-zero byte. The default limits cover the log alone.
const SMALL: Limits = Limits {
    checkpoint_bytes: 96 << 10,
    group_bytes: 24 << 10,
};

/// The disks of one run, on one machine: the database file, and its log.
#[derive(Debug, Clone, Default)]
struct Disks {
    main: PowerLossBackend,
    log: PowerLossBackend,
}

impl Disks {
    fn new() -> Self {
        let main = PowerLossBackend::default();
        let log = main.beside(Vec::new());
        Disks { main, log }
    }

    fn open(&self, storage: Storage) -> Result<Database, Error> {
        match storage {
            Storage::Plain => Database::with_backend(self.main.clone()),
            Storage::Wal(limits) => Database::with_wal(self.main.clone(), self.log.clone(), limits),
        }
    }

    /// The disks as power loss leaves them, and whether a write was torn. Plain: the last
    /// unsynced write lost, kept whole or torn. Through the log: each disk keeps any subset of
    /// its unsynced writes.
    fn after_crash(&self, storage: Storage, rng: &mut Rng) -> (Disks, bool) {
        match storage {
            Storage::Plain => {
                let disk = self.main.disk();
                let last = disk.unsynced.last().map_or(0, |(_, d)| d.len() as u64);
                let keep = match rng.below(4) {
                    0 => 0,
                    1 => last,
                    _ => rng.below(last + 1),
                };
                let main = PowerLossBackend::with_image(disk.image_after_crash(keep as usize));
                let log = main.beside(Vec::new());
                (Disks { main, log }, keep > 0 && keep < last)
            }
            Storage::Wal(_) => {
                let (main, torn_main) = self.main.disk().image_keeping_any(rng);
                let (log, torn_log) = self.log.disk().image_keeping_any(rng);
                let main = PowerLossBackend::with_image(main);
                let log = main.beside(log);
                (Disks { main, log }, torn_main || torn_log)
            }
        }
    }
}

/// Runs the workload on fresh disks that lose power at operation `crash_at` (never, for
/// `None`); returns the disks, the model after the last acknowledged commit and the model the
/// transaction in flight would have made.
fn run(storage: Storage, crash_at: Option<u64>, seed: u64, rounds: u64) -> (Disks, Model, Model) {
    let disks = Disks::new();
    let mut rng = Rng(seed);
    let mut acknowledged = Model::new();
    let mut in_flight = Model::new();
    let Ok(db) = disks.open(storage) else {
        return (disks, acknowledged, in_flight);
    };
    let indexed = db
        .collection("c")
        .create_index(IndexSpec::ascending("k").expect("valid"))
        .and_then(|_| {
            db.collection("c")
                .create_index(IndexSpec::ascending("tags").expect("valid"))
        });
    if indexed.is_err() {
        return (disks, acknowledged, in_flight);
    }
    // Power is lost during the transactions, counted from here: the empty database with its
    // indexes is the starting point every image is checked against.
    disks.main.lose_power_at(crash_at);
    for round in 1..=rounds {
        let mut attempt = acknowledged.clone();
        let mut probe = Rng(rng.0);
        // The model of this transaction, computed as if it commits.
        transaction_model(&mut attempt, &mut probe, round);
        in_flight = attempt;
        match transaction(&db, &mut acknowledged, &mut rng, round) {
            Ok(()) => {}
            Err(_) => break,
        }
    }
    drop(db);
    (disks, acknowledged, in_flight)
}

/// The model a transaction makes, without a database.
fn transaction_model(model: &mut Model, rng: &mut Rng, round: u64) {
    let db = Database::in_memory().expect("memory opens");
    let c = db.collection("c");
    for d in model.values() {
        c.insert_one(d).expect("model documents insert");
    }
    transaction(&db, model, rng, round).expect("the workload runs in memory");
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn every_durable_commit_survives_power_loss_and_nothing_half_written_shows() {
    every_durable_commit_survives(Storage::Plain);
}

#[test]
fn through_the_write_ahead_log_every_durable_commit_survives_power_loss() {
    every_durable_commit_survives(Storage::Wal(Limits::default()));
    every_durable_commit_survives(Storage::Wal(SMALL));
}

fn every_durable_commit_survives(storage: Storage) {
    let seed = env("ODM_POWER_LOSS_SEED", 0x00DD_F00D);
    let points = env("ODM_POWER_LOSS_POINTS", 40);
    let rounds = env("ODM_POWER_LOSS_ROUNDS", 12);
    // Through the log a commit is two operations (an append and its sync; pages reach the
    // database file only at checkpoints), so the run takes more transactions to offer as many
    // crash points.
    let rounds = match storage {
        Storage::Wal(_) => rounds * 3,
        Storage::Plain => rounds,
    };
    let (clean, _, _) = run(storage, None, seed, rounds);
    let total = clean.main.clock().operations;
    // Through the log, the database file is synced by checkpoints alone, and once when the
    // database closes: small limits reach a few, the default ones none before closing.
    let file_syncs = clean.main.disk().syncs;
    match storage {
        Storage::Wal(limits) if limits == SMALL => assert!(file_syncs >= 3, "{file_syncs}"),
        Storage::Wal(_) => assert_eq!(file_syncs, 1),
        Storage::Plain => {}
    }
    assert!(
        total > 100,
        "the workload wrote too little to test ({total} operations)"
    );
    let mut rng = Rng(seed ^ 0x5EED);
    let mut torn_images = 0;
    let (mut kept_in_flight, mut lost_in_flight, mut recovered_data) = (0, 0, 0);
    for point in 0..points {
        // Spread the crash points over the whole run, the first and last operations included.
        let crash_at = if point == 0 {
            0
        } else {
            (point * total / points + rng.below(total / points + 1)).min(total - 1)
        };
        let (disks, acknowledged, in_flight) = run(storage, Some(crash_at), seed, rounds);
        let (recovered, torn) = disks.after_crash(storage, &mut rng);
        torn_images += usize::from(torn);
        let crash = format!("{storage:?}, crash at operation {crash_at}");
        let db = recovered
            .open(storage)
            .unwrap_or_else(|e| panic!("{crash}: reopening failed: {e}"));
        let found = contents(&db);
        assert!(
            found == acknowledged || found == in_flight,
            "{crash} of {total}: the collection holds {} documents, neither the {} acknowledged nor the {} of the transaction in flight",
            found.len(),
            acknowledged.len(),
            in_flight.len()
        );
        if !found.is_empty() {
            recovered_data += 1;
        }
        if found == in_flight && found != acknowledged {
            kept_in_flight += 1;
        } else if found != in_flight {
            lost_in_flight += 1;
        }
        let report = db.verify().expect("verify runs");
        assert!(report.is_clean(), "{crash}: {report:?}");
        // The recovered database takes writes again.
        db.collection("c")
            .insert_one(doc! { "_id": -1_i64, "k": 0_i64 })
            .expect("the recovered database writes");
    }
    eprintln!(
        "power loss ({storage:?}): {points} crash points over {total} storage operations of {rounds} transactions, \
         {torn_images} with a torn write; the transaction in flight survived whole {kept_in_flight} \
         times and vanished whole {lost_in_flight} times; {recovered_data} images held committed documents"
    );
    // Crash points landed inside commits and after some, or the check proved little.
    if points >= 20 {
        assert!(lost_in_flight > 0 && recovered_data > 0);
    }
}

/// Group commit (see the engine's `group_commit`): writers on several threads each insert one
/// document per durable write, so their commits share syncs. Power is lost at a random
/// operation; every insert that returned `Ok` must be in the recovered database, and nothing
/// else may appear but inserts that were in flight.
#[test]
fn concurrent_durable_writers_lose_nothing_acknowledged() {
    concurrent_writers_lose_nothing(Storage::Plain);
}

#[test]
fn through_the_write_ahead_log_concurrent_writers_lose_nothing_acknowledged() {
    concurrent_writers_lose_nothing(Storage::Wal(Limits::default()));
    concurrent_writers_lose_nothing(Storage::Wal(SMALL));
}

fn concurrent_writers_lose_nothing(storage: Storage) {
    const THREADS: i64 = 6;
    const EACH: i64 = 25;
    let points = env("ODM_POWER_LOSS_POINTS", 40);
    let mut rng = Rng(env("ODM_POWER_LOSS_SEED", 0x00DD_F00D) ^ 0xC0_FFEE);
    for _ in 0..points {
        let disks = Disks::new();
        let db = disks.open(storage).expect("a new disk opens");
        db.collection("c")
            .create_index(IndexSpec::ascending("k").expect("valid"))
            .expect("the index builds");
        let crash_at = rng.below(THREADS as u64 * EACH as u64 * 4);
        disks.main.lose_power_at(Some(crash_at));
        let acknowledged: Vec<i64> = std::thread::scope(|s| {
            let writers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let db = db.clone();
                    s.spawn(move || {
                        let mut done = Vec::new();
                        for i in 0..EACH {
                            let id = t * 1000 + i;
                            let wrote = db.write(|w| {
                                w.insert_one("c", doc! { "_id": id, "k": id % 7 }).map(drop)
                            });
                            match wrote {
                                Ok(()) => done.push(id),
                                Err(_) => break,
                            }
                        }
                        done
                    })
                })
                .collect();
            writers
                .into_iter()
                .flat_map(|w| w.join().expect("writers do not panic"))
                .collect()
        });
        drop(db);
        let (recovered, _) = disks.after_crash(storage, &mut rng);
        let crash_at = format!("{storage:?}, crash at {crash_at}");
        let db = recovered
            .open(storage)
            .unwrap_or_else(|e| panic!("{crash_at}: reopening failed: {e}"));
        let found = contents(&db);
        for id in &acknowledged {
            assert!(
                found.contains_key(id),
                "{crash_at}: acknowledged insert {id} lost"
            );
        }
        // What was not acknowledged was in flight: at most one insert per writer.
        assert!(found.len() <= acknowledged.len() + THREADS as usize);
        let report = db.verify().expect("verify runs");
        assert!(report.is_clean(), "{crash_at}: {report:?}");
    }
}
