//! `bench wire`: what MongoDB's wire protocol costs. The same operations through the official
//! Rust driver against `odm serve` (started in this process, over loopback TCP) and through the
//! engine in process, on copies of the same data in files, with 1 and 16 client threads:
//! point gets by `_id`, inserts of 1 and of 1,000 documents per request (each request one
//! durable commit), and an indexed equality find returning about 100 documents. Both sides
//! decode into the same serde type.
//!
//! Reported: operations per second on each side, and the wire's overhead per operation, the
//! difference of the wall time per operation (with 16 threads, per operation of the whole
//! run, so it shrinks as requests overlap). An insert of 1,000 documents counts 1,000.
//!
//! `bench load` (see `odm_tests::load`): 64 clients of mixed reads and writes against one
//! server, with p50/p99 latencies and the checks after the run. With `--idle I --slow W`, I
//! sockets that never send and W clients that read large replies 4 KB per 20 ms
//! (`odm_tests::crowd`) are held open throughout, and the process's resident memory and
//! threads are reported before them, with them, and at their peak during the run.

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use bson::doc;
use mongodb::options::ClientOptions;
use mongodb::sync::Client;
use odm_engine::query::FindOptions;
use odm_engine::{Database, IndexSpec};
use odm_server::{Config, Server, Storage};
use odm_tests::rng::Rng;

use crate::Options;
use crate::core::{Item, USERS, item, to_raw};
use crate::report::median;

const GETS: usize = 8_000;
const INSERTS: usize = 400;
const BATCHES: usize = 16;
const BATCH: usize = 1_000;
const QUERIES: usize = 400;
const THREADS: [usize; 2] = [1, 16];
const DATABASE: &str = "bench";
const COLLECTION: &str = "items";

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Get,
    InsertOne,
    InsertBatch,
    IndexedFind,
}

const PHASES: [(Phase, &str, usize); 4] = [
    (Phase::Get, "point get by _id", GETS),
    (Phase::InsertOne, "insert, 1 per request", INSERTS),
    (
        Phase::InsertBatch,
        "insert, 1000 per request",
        BATCHES * BATCH,
    ),
    (Phase::IndexedFind, "indexed find (~100 docs)", QUERIES),
];

/// One side of the comparison: runs `ops` operations of a phase on one thread.
trait Side: Sync {
    fn get(&self, id: i64) -> Item;
    fn insert_one(&self, item: &Item);
    fn insert_batch(&self, items: &[Item]);
    fn find_user(&self, user: &str) -> usize;
}

struct Engine(Database);

impl Side for Engine {
    fn get(&self, id: i64) -> Item {
        let txn = self.0.read().expect("read");
        let items = txn.collection(COLLECTION).expect("open").expect("exists");
        let options = FindOptions {
            limit: Some(1),
            ..FindOptions::default()
        };
        items
            .find_as::<Item>(&doc! { "_id": id }, &options)
            .expect("find")
            .next()
            .expect("present")
            .expect("decodes")
    }

    fn insert_one(&self, item: &Item) {
        self.0
            .write(|t| t.insert_one(COLLECTION, to_raw(item)))
            .expect("insert");
    }

    fn insert_batch(&self, items: &[Item]) {
        let result = self
            .0
            .write(|t| t.insert_many(COLLECTION, items.iter().map(to_raw), true))
            .expect("insert many");
        assert!(result.failures.is_empty(), "{:?}", result.failures);
    }

    fn find_user(&self, user: &str) -> usize {
        let txn = self.0.read().expect("read");
        let items = txn.collection(COLLECTION).expect("open").expect("exists");
        items
            .find_as::<Item>(&doc! { "user": user }, &FindOptions::default())
            .expect("find")
            .map(|i| i.expect("decodes"))
            .filter(|i| i.user == user)
            .count()
    }
}

struct Driver(mongodb::sync::Collection<Item>);

impl Side for Driver {
    fn get(&self, id: i64) -> Item {
        self.0
            .find_one(doc! { "_id": id })
            .run()
            .expect("find one")
            .expect("present")
    }

    fn insert_one(&self, item: &Item) {
        self.0.insert_one(item).run().expect("insert");
    }

    fn insert_batch(&self, items: &[Item]) {
        let result = self.0.insert_many(items).run().expect("insert many");
        assert_eq!(result.inserted_ids.len(), items.len());
    }

    fn find_user(&self, user: &str) -> usize {
        self.0
            .find(doc! { "user": user })
            .run()
            .expect("find")
            .map(|i| i.expect("decodes"))
            .filter(|i| i.user == user)
            .count()
    }
}

/// Fills a database file with `docs` items and the `user` index.
fn load(path: &Path, docs: usize) -> Result<(), String> {
    let db = Database::open(path).map_err(|e| e.to_string())?;
    let items = db.collection(COLLECTION);
    items
        .create_index(IndexSpec::ascending("user").map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let mut rng = Rng::new(7);
    let all: Vec<Item> = (0..docs as i64).map(|id| item(id, &mut rng)).collect();
    for chunk in all.chunks(10_000) {
        let result = db
            .write(|t| t.insert_many(COLLECTION, chunk.iter().map(to_raw), true))
            .map_err(|e| e.to_string())?;
        if !result.failures.is_empty() {
            return Err(format!("loading: {:?}", result.failures[0]));
        }
    }
    Ok(())
}

/// Runs `ops` operations of `phase` spread over `threads` threads; the wall time in seconds.
fn measure(
    side: &dyn Side,
    phase: Phase,
    ops: usize,
    threads: usize,
    docs: usize,
    next_id: &AtomicI64,
) -> f64 {
    let per_thread = ops.div_ceil(threads);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            scope.spawn(move || {
                let mut rng = Rng::new(1_000 + t as u64);
                match phase {
                    Phase::Get => {
                        for _ in 0..per_thread {
                            let id = rng.below(docs as u64) as i64;
                            assert_eq!(side.get(id).id, id);
                        }
                    }
                    Phase::InsertOne => {
                        for _ in 0..per_thread {
                            let id = next_id.fetch_add(1, Ordering::Relaxed);
                            side.insert_one(&item(id, &mut rng));
                        }
                    }
                    Phase::InsertBatch => {
                        for _ in 0..per_thread / BATCH {
                            let first = next_id.fetch_add(BATCH as i64, Ordering::Relaxed);
                            let batch: Vec<Item> = (first..first + BATCH as i64)
                                .map(|id| item(id, &mut rng))
                                .collect();
                            side.insert_batch(&batch);
                        }
                    }
                    Phase::IndexedFind => {
                        for _ in 0..per_thread {
                            let user = format!("user{:05}", rng.below(USERS));
                            assert!(side.find_user(&user) > 0, "{user} has items");
                        }
                    }
                }
            });
        }
    });
    start.elapsed().as_secs_f64()
}

pub fn run(options: &Options) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("odm-bench-wire-{}", std::process::id()));
    let engine_dir = dir.join("engine");
    let server_dir = dir.join("server");
    for d in [&engine_dir, &server_dir] {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    let outcome = (|| {
        println!("loading {} documents twice ...", options.docs);
        load(&engine_dir.join("bench.odm"), options.docs)?;
        load(&server_dir.join(format!("{DATABASE}.odm")), options.docs)?;
        let engine =
            Engine(Database::open(engine_dir.join("bench.odm")).map_err(|e| e.to_string())?);
        let config = Config {
            bind: "127.0.0.1:0".parse().expect("an address"),
            ..Config::default()
        };
        let mut server = Server::bind(Storage::in_folder(server_dir.clone()), config)
            .map_err(|e| e.to_string())?
            .spawn();
        let mut client_options = ClientOptions::parse(server.uri())
            .run()
            .map_err(|e| e.to_string())?;
        client_options.max_pool_size = Some(THREADS[1] as u32 + 4);
        client_options.server_selection_timeout = Some(Duration::from_secs(10));
        let client = Client::with_options(client_options).map_err(|e| e.to_string())?;
        let driver = Driver(client.database(DATABASE).collection(COLLECTION));
        // Connections opened before timing: the pool fills as threads first ask.
        measure(
            &driver,
            Phase::Get,
            THREADS[1] * 4,
            THREADS[1],
            options.docs,
            &AtomicI64::new(0),
        );

        println!(
            "\n{:<28}{:>8}{:>14}{:>14}{:>10}{:>16}",
            "operation", "threads", "engine ops/s", "wire ops/s", "ratio", "wire µs per op"
        );
        let engine_ids = AtomicI64::new(options.docs as i64);
        let driver_ids = AtomicI64::new(options.docs as i64);
        for (phase, name, ops) in PHASES {
            for threads in THREADS {
                let mut in_process = Vec::new();
                let mut over_wire = Vec::new();
                for _ in 0..options.runs {
                    in_process.push(
                        ops as f64
                            / measure(&engine, phase, ops, threads, options.docs, &engine_ids),
                    );
                    over_wire.push(
                        ops as f64
                            / measure(&driver, phase, ops, threads, options.docs, &driver_ids),
                    );
                }
                let (e, w) = (median(in_process), median(over_wire));
                println!(
                    "{name:<28}{threads:>8}{e:>14.0}{w:>14.0}{:>10.2}{:>16.1}",
                    e / w,
                    1e6 / w - 1e6 / e
                );
            }
        }
        server.stop();
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// `bench load`: the load test's figures, against a server over database files.
pub fn run_load(options: &Options) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("odm-bench-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    if options.idle + options.slow > 0 {
        // The server's ends of the idle sockets, both ends of the slow readers' and of the
        // load's clients', and the database files.
        let wanted = (options.idle + options.slow * 2 + options.clients * 8 + 1024) as u64;
        let limit = odm_tests::process::raise_open_file_limit(wanted);
        if limit < wanted {
            return Err(format!(
                "needs {wanted} open files; the limit stays at {limit}"
            ));
        }
    }
    let config = Config {
        bind: "127.0.0.1:0".parse().expect("an address"),
        ..Config::default()
    };
    let outcome = Server::bind(Storage::in_folder(dir.clone()), config)
        .map_err(|e| e.to_string())
        .and_then(|server| {
            let mut server = server.spawn();
            let report = load_with_crowd(&server, options);
            server.stop();
            report
        });
    let _ = std::fs::remove_dir_all(&dir);
    let (report, crowd) = outcome?;
    report.print();
    if let Some(crowd) = crowd {
        crowd.print(options);
    }
    Ok(())
}

/// The process's resident memory (bytes) and threads at three moments of a crowded run.
struct CrowdFigures {
    before: (u64, u64),
    with_crowd: (u64, u64),
    peak: (u64, u64),
    slow_replies: u64,
}

impl CrowdFigures {
    fn print(&self, options: &Options) {
        println!(
            "with {} idle sockets and {} slow readers ({} replies of 256 KB read, {} KB per {} ms each)",
            options.idle,
            options.slow,
            self.slow_replies,
            odm_tests::crowd::SLOW_CHUNK / 1024,
            odm_tests::crowd::SLOW_TICK.as_millis(),
        );
        println!(
            "{:<34}{:>14}{:>10}",
            "process (server and clients)", "resident MB", "threads"
        );
        for (moment, (bytes, threads)) in [
            ("before the idle and slow clients", self.before),
            ("with them, before the load", self.with_crowd),
            ("peak during the load", self.peak),
        ] {
            println!("{moment:<34}{:>14.1}{threads:>10}", bytes as f64 / 1e6);
        }
    }
}

fn figures() -> (u64, u64) {
    (
        odm_tests::process::resident_bytes().unwrap_or(0),
        odm_tests::process::threads().unwrap_or(0),
    )
}

/// The load, with the idle and slow clients `options` asks for held open throughout.
fn load_with_crowd(
    server: &odm_server::ServerHandle,
    options: &Options,
) -> Result<(odm_tests::load::LoadReport, Option<CrowdFigures>), String> {
    let load = || {
        odm_tests::load::run(
            &server.uri(),
            &odm_tests::load::LoadOptions {
                clients: options.clients,
                duration: Duration::from_secs(options.seconds),
                seed: 20_261_124,
            },
        )
    };
    if options.idle + options.slow == 0 {
        return Ok((load()?, None));
    }
    let setup = Client::with_uri_str(server.uri()).map_err(|e| e.to_string())?;
    odm_tests::crowd::seed_slow_readers(&setup)?;
    let before = figures();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut idle = odm_tests::crowd::idle_sockets_in_child(&exe, server.addr(), options.idle)?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let slow = odm_tests::crowd::start_slow_readers(server.addr(), options.slow, stop.clone())?;
    // Every socket accepted before the figures are read.
    let connections = &server.shared().stats.connections_current;
    let deadline = Instant::now() + Duration::from_mins(1);
    while (connections.load(Ordering::Relaxed) as usize) < options.idle + options.slow {
        if Instant::now() > deadline {
            return Err("the server did not accept every idle socket".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Quiet for a second, the idle sockets park (no task each; see the server's `parking`).
    let parking = &server.shared().parking;
    while parking.len() < options.idle {
        if Instant::now() > deadline {
            return Err("the idle sockets did not park".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let with_crowd = figures();
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        std::thread::spawn(move || {
            let mut peak = figures();
            while sampling.load(Ordering::Acquire) {
                let now = figures();
                peak = (peak.0.max(now.0), peak.1.max(now.1));
                std::thread::sleep(Duration::from_millis(50));
            }
            peak
        })
    };
    let report = load();
    sampling.store(false, Ordering::Release);
    stop.store(true, Ordering::Release);
    let peak = sampler.join().map_err(|_| "the sampler panicked")?;
    let slow_replies = slow.join().map_err(|_| "the slow readers panicked")??;
    let _ = idle.kill();
    let _ = idle.wait();
    Ok((
        report?,
        Some(CrowdFigures {
            before,
            with_crowd,
            peak,
            slow_replies,
        }),
    ))
}
