//! `odm serve` under load: many clients, each with its own driver `Client` and so its own
//! connections, run mixed reads and writes against one server for a bounded time. Used by the
//! server tests (a short run that must hold) and by `bench load` (the figures in the README).
//!
//! What must hold, checked after the run: every client's documents, read back in `_id` order,
//! are exactly the ones it wrote, with the counters it incremented (nothing lost, duplicated or
//! left behind by a delete); reads during the run saw the client's own committed writes; and
//! the server's `validate` (the engine's `verify`) finds every index equal to its
//! recomputation. Any error a client meets fails the run.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bson::{Document, doc};
use mongodb::options::ClientOptions;
use mongodb::sync::{Client, Collection};

use crate::rng::Rng;

/// The operations a client mixes.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    InsertOne,
    InsertTen,
    UpdateOne,
    DeleteOne,
    GetById,
    IndexedFind,
    Aggregate,
}

/// Each kind with its name and its share of the mix in percent.
pub const KINDS: [(Kind, &str, u64); 7] = [
    (Kind::InsertOne, "insert one", 35),
    (Kind::InsertTen, "insert ten", 10),
    (Kind::UpdateOne, "update one", 15),
    (Kind::DeleteOne, "delete one", 5),
    (Kind::GetById, "get by _id", 20),
    (Kind::IndexedFind, "indexed find", 10),
    (Kind::Aggregate, "aggregate", 5),
];

/// A run's size.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub clients: usize,
    pub duration: Duration,
    pub seed: u64,
}

/// What a run measured. Latencies are in microseconds, one per operation, by kind.
#[derive(Debug)]
pub struct LoadReport {
    pub clients: usize,
    pub elapsed: Duration,
    pub latencies: Vec<Vec<u32>>,
    /// Documents checked after the run, over every client.
    pub documents_checked: usize,
}

impl LoadReport {
    pub fn operations(&self) -> usize {
        self.latencies.iter().map(Vec::len).sum()
    }

    pub fn throughput(&self) -> f64 {
        self.operations() as f64 / self.elapsed.as_secs_f64()
    }

    /// The `p`-th percentile (0..=100) of the latencies in `values`, in microseconds.
    pub fn percentile(values: &[u32], p: f64) -> f64 {
        if values.is_empty() {
            return f64::NAN;
        }
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
        f64::from(sorted[rank.min(sorted.len() - 1)])
    }

    pub fn print(&self) {
        println!(
            "{} clients for {:.1} s: {} operations, {:.0} ops/s, {} documents checked after the run",
            self.clients,
            self.elapsed.as_secs_f64(),
            self.operations(),
            self.throughput(),
            self.documents_checked,
        );
        println!(
            "{:<14}{:>10}{:>12}{:>12}",
            "operation", "count", "p50 µs", "p99 µs"
        );
        let all: Vec<u32> = self.latencies.iter().flatten().copied().collect();
        let rows = KINDS
            .iter()
            .map(|(_, name, _)| *name)
            .zip(self.latencies.iter().map(Vec::as_slice))
            .chain([("all", all.as_slice())]);
        for (name, values) in rows {
            println!(
                "{name:<14}{:>10}{:>12.0}{:>12.0}",
                values.len(),
                Self::percentile(values, 50.0),
                Self::percentile(values, 99.0),
            );
        }
    }
}

/// One client's own view of what it wrote: its live documents by `_id` with their counters.
struct Written {
    live: Vec<(i64, i64)>,
}

const DATABASE: &str = "load";
const COLLECTION: &str = "items";
const PAD: &str = "a payload of some length so that documents are not trivially small ........";

/// Runs the load against the server at `uri` (an empty `load` database is expected) and
/// checks the result; any error or mismatch is the `Err`.
pub fn run(uri: &str, options: &LoadOptions) -> Result<LoadReport, String> {
    let setup = connect(uri)?;
    let items = setup.database(DATABASE).collection::<Document>(COLLECTION);
    items
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! { "client": 1, "seq": 1 })
                .build(),
        )
        .run()
        .map_err(|e| format!("createIndexes: {e}"))?;
    let deadline = Instant::now() + options.duration;
    let start = Instant::now();
    let errors = Mutex::new(Vec::<String>::new());
    let outcomes: Vec<(Vec<Vec<u32>>, Written)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..options.clients)
            .map(|c| {
                let errors = &errors;
                scope.spawn(move || {
                    let mut latencies = vec![Vec::new(); KINDS.len()];
                    let mut written = Written { live: Vec::new() };
                    let outcome = connect(uri).and_then(|client| {
                        let items = client.database(DATABASE).collection(COLLECTION);
                        let mut rng = Rng::new(options.seed ^ (c as u64).wrapping_mul(0x9E37));
                        let mut next_seq = 0;
                        while Instant::now() < deadline {
                            let kind = pick(&mut rng);
                            let began = Instant::now();
                            step(
                                &items,
                                c as i64,
                                kind,
                                &mut rng,
                                &mut next_seq,
                                &mut written,
                            )?;
                            let micros = began.elapsed().as_micros().min(u128::from(u32::MAX));
                            latencies[kind].push(micros as u32);
                        }
                        Ok(())
                    });
                    if let Err(e) = outcome {
                        errors
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push(format!("client {c}: {e}"));
                    }
                    (latencies, written)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a load client does not panic"))
            .collect()
    });
    let elapsed = start.elapsed();
    let errors = errors
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !errors.is_empty() {
        return Err(format!(
            "{} clients failed, the first: {}",
            errors.len(),
            errors[0]
        ));
    }
    let mut latencies = vec![Vec::new(); KINDS.len()];
    let mut documents_checked = 0;
    for (c, (lat, written)) in outcomes.into_iter().enumerate() {
        for (all, mine) in latencies.iter_mut().zip(lat) {
            all.extend(mine);
        }
        documents_checked += check_client(&items, c as i64, written)?;
    }
    let total = items
        .count_documents(doc! {})
        .run()
        .map_err(|e| format!("count: {e}"))?;
    if total as usize != documents_checked {
        return Err(format!(
            "the collection holds {total} documents, the clients wrote {documents_checked}"
        ));
    }
    let validate = setup
        .database(DATABASE)
        .run_command(doc! { "validate": COLLECTION, "full": true })
        .run()
        .map_err(|e| format!("validate: {e}"))?;
    if validate.get_bool("valid").ok() != Some(true) {
        return Err(format!("validate reports a damaged collection: {validate}"));
    }
    Ok(LoadReport {
        clients: options.clients,
        elapsed,
        latencies,
        documents_checked,
    })
}

fn connect(uri: &str) -> Result<Client, String> {
    let mut options = ClientOptions::parse(uri)
        .run()
        .map_err(|e| format!("uri: {e}"))?;
    options.server_selection_timeout = Some(Duration::from_secs(10));
    options.max_pool_size = Some(1);
    Client::with_options(options).map_err(|e| format!("client: {e}"))
}

fn pick(rng: &mut Rng) -> usize {
    let mut roll = rng.below(100);
    for (i, (_, _, share)) in KINDS.iter().enumerate() {
        if roll < *share {
            return i;
        }
        roll -= share;
    }
    0
}

fn id_of(client: i64, seq: i64) -> i64 {
    client * 1_000_000_000 + seq
}

/// One operation of kind `kind`, checked against what this client wrote before it.
// Long on purpose: one client's step of the load test: each kind of request in one match, so the
// mix is visible at once.
#[allow(clippy::too_many_lines)]
fn step(
    items: &Collection<Document>,
    client: i64,
    kind: usize,
    rng: &mut Rng,
    next_seq: &mut i64,
    written: &mut Written,
) -> Result<(), String> {
    let mut new_doc = |next_seq: &mut i64| {
        let seq = *next_seq;
        *next_seq += 1;
        written.live.push((id_of(client, seq), 0));
        doc! { "_id": id_of(client, seq), "client": client, "seq": seq, "counter": 0_i64, "pad": PAD }
    };
    let own = |rng: &mut Rng, written: &Written| {
        (!written.live.is_empty()).then(|| rng.below(written.live.len() as u64) as usize)
    };
    match KINDS[kind].0 {
        Kind::InsertOne => {
            let d = new_doc(next_seq);
            items
                .insert_one(d)
                .run()
                .map_err(|e| format!("insert: {e}"))?;
        }
        Kind::InsertTen => {
            let docs: Vec<Document> = (0..10).map(|_| new_doc(next_seq)).collect();
            let result = items
                .insert_many(docs)
                .run()
                .map_err(|e| format!("insert many: {e}"))?;
            if result.inserted_ids.len() != 10 {
                return Err(format!("{} of 10 inserted", result.inserted_ids.len()));
            }
        }
        Kind::UpdateOne => {
            let Some(i) = own(rng, written) else {
                return Ok(());
            };
            let id = written.live[i].0;
            let result = items
                .update_one(doc! { "_id": id }, doc! { "$inc": { "counter": 1_i64 } })
                .run()
                .map_err(|e| format!("update: {e}"))?;
            if result.modified_count != 1 {
                return Err(format!("update of {id} modified {}", result.modified_count));
            }
            written.live[i].1 += 1;
        }
        Kind::DeleteOne => {
            let Some(i) = own(rng, written) else {
                return Ok(());
            };
            let (id, _) = written.live.swap_remove(i);
            let result = items
                .delete_one(doc! { "_id": id })
                .run()
                .map_err(|e| format!("delete: {e}"))?;
            if result.deleted_count != 1 {
                return Err(format!("delete of {id} deleted {}", result.deleted_count));
            }
        }
        Kind::GetById => {
            let Some(i) = own(rng, written) else {
                return Ok(());
            };
            let (id, counter) = written.live[i];
            let found = items
                .find_one(doc! { "_id": id })
                .run()
                .map_err(|e| format!("find one: {e}"))?
                .ok_or_else(|| format!("{id}, written and not deleted, is not found"))?;
            if found.get_i64("counter").ok() != Some(counter) {
                return Err(format!("{id} reads {found}, its counter is {counter}"));
            }
        }
        Kind::IndexedFind => {
            let from = rng.below((*next_seq).max(1) as u64) as i64;
            let found: Vec<Document> = items
                .find(doc! { "client": client, "seq": { "$gte": from } })
                .limit(20)
                .run()
                .and_then(Iterator::collect)
                .map_err(|e| format!("find: {e}"))?;
            let expected = written
                .live
                .iter()
                .filter(|(id, _)| *id >= id_of(client, from))
                .count()
                .min(20);
            if found.len() != expected {
                return Err(format!(
                    "find from seq {from}: {} of {expected}",
                    found.len()
                ));
            }
        }
        Kind::Aggregate => {
            let counts: Vec<Document> = items
                .aggregate([
                    doc! { "$match": { "client": client } },
                    doc! { "$group": { "_id": null, "n": { "$sum": 1 }, "counters": { "$sum": "$counter" } } },
                ])
                .run()
                .and_then(Iterator::collect)
                .map_err(|e| format!("aggregate: {e}"))?;
            let n = counts
                .first()
                .and_then(|d| d.get_i32("n").ok())
                .unwrap_or(0);
            if n as usize != written.live.len() {
                return Err(format!(
                    "aggregate counts {n}, {} are live",
                    written.live.len()
                ));
            }
        }
    }
    Ok(())
}

/// The client's documents, read back in `_id` order, against what it wrote.
fn check_client(
    items: &Collection<Document>,
    client: i64,
    mut written: Written,
) -> Result<usize, String> {
    written.live.sort_unstable();
    let stored: Vec<Document> = items
        .find(doc! { "client": client })
        .sort(doc! { "_id": 1 })
        .run()
        .and_then(Iterator::collect)
        .map_err(|e| format!("reading back client {client}: {e}"))?;
    let stored: Vec<(i64, i64)> = stored
        .iter()
        .map(|d| {
            (
                d.get_i64("_id").unwrap_or(-1),
                d.get_i64("counter").unwrap_or(-1),
            )
        })
        .collect();
    if stored != written.live {
        let lost = written.live.iter().filter(|w| !stored.contains(w)).count();
        let extra = stored.iter().filter(|s| !written.live.contains(s)).count();
        return Err(format!(
            "client {client}: {} documents written, {} stored; {lost} lost or changed, {extra} unexpected",
            written.live.len(),
            stored.len()
        ));
    }
    Ok(stored.len())
}
