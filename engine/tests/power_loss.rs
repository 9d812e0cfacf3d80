//! Power loss, not only a killed process: a storage backend that records writes and syncs and
//! "loses power" at a chosen operation. What survives is what a disk keeps: every write
//! followed by a sync, plus, torn at a random length, the last write that was not. Reopened
//! from that image, the database must hold every transaction reported durably committed,
//! nothing half-written (the transaction in flight is there whole or not at all), and indexes
//! equal to their recomputation.
//!
//! `ODM_POWER_LOSS_POINTS` sets how many crash points to try (CI runs a few dozen; the closing
//! figures come from runs of a thousand and more). `ODM_POWER_LOSS_SEED` replays a run.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use bson::{Bson, Document, doc};
use odm_engine::update::UpdateOptions;
use odm_engine::{Database, Durability, Error, IndexSpec};

/// The disk as a crash leaves it, and the writes made since the last sync.
#[derive(Debug, Default)]
struct Disk {
    /// What the process sees: every write applied.
    current: Vec<u8>,
    /// What survives power loss: the contents at the last sync.
    durable: Vec<u8>,
    /// Writes since the last sync, oldest first.
    unsynced: Vec<(u64, Vec<u8>)>,
    /// Writes and syncs so far.
    operations: u64,
    /// The operation at which power is lost; from then on every call fails.
    crash_at: Option<u64>,
    crashed: bool,
}

impl Disk {
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
}

fn write_at(bytes: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let offset = usize::try_from(offset).expect("offsets fit in memory");
    let end = offset + data.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[offset..end].copy_from_slice(data);
}

/// A redb backend over a [`Disk`] shared with the test.
#[derive(Debug, Clone)]
struct PowerLossBackend(Arc<Mutex<Disk>>);

impl PowerLossBackend {
    fn disk(&self) -> std::sync::MutexGuard<'_, Disk> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
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
        let mut disk = self.disk();
        disk.step()?;
        let len = usize::try_from(len).map_err(io::Error::other)?;
        disk.current.resize(len, 0);
        // A length change reaches the disk with the next sync, like a write.
        if disk.durable.len() > len {
            disk.durable.truncate(len);
        }
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut disk = self.disk();
        disk.step()?;
        let Disk {
            current, durable, ..
        } = &mut *disk;
        durable.clone_from(current);
        disk.unsynced.clear();
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut disk = self.disk();
        disk.step()?;
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

/// The database on a disk holding `image`, as after a power loss (`crash` names it).
fn reopen(image: Vec<u8>, crash: &str) -> Database {
    let recovered = Arc::new(Mutex::new(Disk {
        current: image.clone(),
        durable: image,
        ..Disk::default()
    }));
    Database::with_backend(PowerLossBackend(recovered))
        .unwrap_or_else(|e| panic!("{crash}: reopening failed: {e}"))
}

/// Runs the workload on a fresh disk that loses power at operation `crash_at` (never, for
/// `None`); returns the disk, the model after the last acknowledged commit and the model the
/// transaction in flight would have made.
fn run(crash_at: Option<u64>, seed: u64, rounds: u64) -> (Arc<Mutex<Disk>>, Model, Model) {
    let disk = Arc::new(Mutex::new(Disk::default()));
    let mut rng = Rng(seed);
    let mut acknowledged = Model::new();
    let mut in_flight = Model::new();
    let Ok(db) = Database::with_backend(PowerLossBackend(disk.clone())) else {
        return (disk, acknowledged, in_flight);
    };
    let indexed = db
        .collection("c")
        .create_index(IndexSpec::ascending("k").expect("valid"))
        .and_then(|_| {
            db.collection("c")
                .create_index(IndexSpec::ascending("tags").expect("valid"))
        });
    if indexed.is_err() {
        return (disk, acknowledged, in_flight);
    }
    // Power is lost during the transactions, counted from here: the empty database with its
    // indexes is the starting point every image is checked against.
    {
        let mut d = disk.lock().unwrap_or_else(PoisonError::into_inner);
        d.operations = 0;
        d.crash_at = crash_at;
    }
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
    (disk, acknowledged, in_flight)
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
    let seed = env("ODM_POWER_LOSS_SEED", 0x00DD_F00D);
    let points = env("ODM_POWER_LOSS_POINTS", 40);
    let rounds = env("ODM_POWER_LOSS_ROUNDS", 12);
    let (clean, _, _) = run(None, seed, rounds);
    let total = clean
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .operations;
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
        let (disk, acknowledged, in_flight) = run(Some(crash_at), seed, rounds);
        let disk = disk.lock().unwrap_or_else(PoisonError::into_inner);
        // The last unsynced write: lost, kept whole, or torn at a random length.
        let last = disk.unsynced.last().map_or(0, |(_, d)| d.len() as u64);
        let keep = match rng.below(4) {
            0 => 0,
            1 => last,
            _ => rng.below(last + 1),
        };
        if keep > 0 && keep < last {
            torn_images += 1;
        }
        let image = disk.image_after_crash(keep as usize);
        drop(disk);
        let db = reopen(image, &format!("crash at operation {crash_at}"));
        let found = contents(&db);
        assert!(
            found == acknowledged || found == in_flight,
            "crash at operation {crash_at} of {total}: the collection holds {} documents, neither the {} acknowledged nor the {} of the transaction in flight",
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
        assert!(
            report.is_clean(),
            "crash at operation {crash_at}: {report:?}"
        );
        // The recovered database takes writes again.
        db.collection("c")
            .insert_one(doc! { "_id": -1_i64, "k": 0_i64 })
            .expect("the recovered database writes");
    }
    eprintln!(
        "power loss: {points} crash points over {total} storage operations of {rounds} transactions, \
         {torn_images} with a torn last write; the transaction in flight survived whole {kept_in_flight} \
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
    const THREADS: i64 = 6;
    const EACH: i64 = 25;
    let points = env("ODM_POWER_LOSS_POINTS", 40);
    let mut rng = Rng(env("ODM_POWER_LOSS_SEED", 0x00DD_F00D) ^ 0xC0_FFEE);
    for _ in 0..points {
        let disk = Arc::new(Mutex::new(Disk::default()));
        let db = Database::with_backend(PowerLossBackend(disk.clone())).expect("a new disk opens");
        db.collection("c")
            .create_index(IndexSpec::ascending("k").expect("valid"))
            .expect("the index builds");
        {
            let mut d = disk.lock().unwrap_or_else(PoisonError::into_inner);
            d.operations = 0;
            d.crash_at = Some(rng.below(THREADS as u64 * EACH as u64 * 4));
        }
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
        let disk = disk.lock().unwrap_or_else(PoisonError::into_inner);
        let image = disk.image_after_crash(rng.below(4096) as usize);
        let crash_at = disk.crash_at;
        drop(disk);
        let db = reopen(image, &format!("crash at {crash_at:?}"));
        let found = contents(&db);
        for id in &acknowledged {
            assert!(
                found.contains_key(id),
                "crash at {crash_at:?}: acknowledged insert {id} lost"
            );
        }
        // What was not acknowledged was in flight: at most one insert per writer.
        assert!(found.len() <= acknowledged.len() + THREADS as usize);
        let report = db.verify().expect("verify runs");
        assert!(report.is_clean(), "crash at {crash_at:?}: {report:?}");
    }
}
