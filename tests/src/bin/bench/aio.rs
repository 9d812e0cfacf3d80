//! `bench async`: the async API (`odm::aio`) on the embedded engine, against the sync API, on
//! the same data in one run. Four operations: a get by `_id`, an indexed find of ten
//! documents and an insert with eventual durability (so that the figures are the API's and
//! the engine's, not the disk's), in memory; and a durable insert (one sync per commit) into
//! a database file, with a tenth as many operations. Each runs from 1, 64 and 1,024 concurrent tokio tasks
//! (a multi-thread runtime with a worker per core), and through the sync API from one thread
//! and from as many threads as cores. For each: throughput (operations a second) and the
//! 99th percentile of one operation's latency. Ends with `ratio async/sync one_task_*` lines:
//! the async path's time per operation for one task over the sync path's for one thread.

use std::sync::Arc;
use std::time::{Duration, Instant};

use odm::aio::Query;
use odm::{Document, Durability};
use odm_tests::rng::Rng;
use serde::{Deserialize, Serialize};

use crate::Options;
use crate::report::median;

#[derive(Debug, Clone, Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Item {
    #[odm(id)]
    id: i64,
    #[odm(index)]
    user: i64,
    title: String,
}

/// Operations per cell (at most the documents' count).
const OPS: usize = 20_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Get,
    Find,
    Insert,
    DurableInsert,
}

impl Op {
    const ALL: [Op; 4] = [Op::Get, Op::Find, Op::Insert, Op::DurableInsert];

    fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Find => "find",
            Op::Insert => "insert",
            Op::DurableInsert => "durable_insert",
        }
    }

    /// Operations per cell, at most the documents' count: a durable commit waits for the
    /// disk, so a tenth as many.
    fn ops(self, docs: usize) -> usize {
        let ops = OPS.min(docs);
        if self == Op::DurableInsert {
            ops / 10
        } else {
            ops
        }
    }
}

/// The collections an operation runs on: in memory, and in a file for durable inserts.
#[derive(Clone)]
struct On<C> {
    memory: C,
    file: C,
}

/// One measurement: operations a second, and the p99 latency in µs.
#[derive(Clone, Copy, Debug)]
struct Figure {
    throughput: f64,
    p99: f64,
}

fn figure(ops: usize, wall: Duration, mut latencies: Vec<f64>) -> Figure {
    latencies.sort_by(f64::total_cmp);
    let p99 = latencies
        .get((latencies.len() * 99 / 100).min(latencies.len().saturating_sub(1)))
        .copied()
        .unwrap_or(f64::NAN);
    Figure {
        throughput: ops as f64 / wall.as_secs_f64(),
        p99,
    }
}

/// The `n`th operation's argument: an id to get, a user to find, an id to insert.
struct Work {
    docs: i64,
    users: i64,
    next_insert: std::sync::atomic::AtomicI64,
}

impl Work {
    fn id(&self, n: u64) -> i64 {
        (Rng::new(n).next_u64() % self.docs as u64) as i64
    }

    fn user(&self, n: u64) -> i64 {
        (Rng::new(n).next_u64() % self.users as u64) as i64
    }

    fn fresh(&self) -> i64 {
        self.next_insert
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

fn sync_op(on: &On<odm::Collection<Item>>, work: &Work, op: Op, n: u64) -> odm::Result<()> {
    let f = Item::fields();
    let items = &on.memory;
    match op {
        Op::Get => drop(items.get(work.id(n))?),
        Op::Find => drop(items.find(f.user.eq(work.user(n))).limit(10).to_vec()?),
        Op::Insert => drop(items.insert_one(&item(work.fresh()))?),
        Op::DurableInsert => drop(on.file.insert_one(&item(work.fresh()))?),
    }
    Ok(())
}

async fn async_op(
    on: &On<odm::aio::Collection<Item>>,
    work: &Work,
    op: Op,
    n: u64,
) -> odm::Result<()> {
    let f = Item::fields();
    let items = &on.memory;
    match op {
        Op::Get => drop(items.get(work.id(n)).await?),
        Op::Find => drop(
            items
                .find(f.user.eq(work.user(n)))
                .limit(10)
                .fetch_all()
                .await?,
        ),
        Op::Insert => drop(items.insert_one(item(work.fresh())).await?),
        Op::DurableInsert => drop(on.file.insert_one(item(work.fresh())).await?),
    }
    Ok(())
}

fn item(id: i64) -> Item {
    Item {
        id,
        user: id % 1_000,
        title: format!("item {id}, with a title as long as a real one's"),
    }
}

/// `ops` operations from `threads` threads of the sync API.
fn sync_run(
    items: &On<odm::Collection<Item>>,
    work: &Work,
    op: Op,
    threads: usize,
    ops: usize,
) -> odm::Result<Figure> {
    let start = Instant::now();
    let per = ops / threads;
    let latencies = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || -> odm::Result<Vec<f64>> {
                    let mut out = Vec::with_capacity(per);
                    for i in 0..per {
                        let began = Instant::now();
                        sync_op(items, work, op, (t * per + i) as u64)?;
                        out.push(began.elapsed().as_secs_f64() * 1e6);
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect::<odm::Result<Vec<_>>>()
    })?;
    Ok(figure(per * threads, start.elapsed(), latencies.concat()))
}

/// `ops` operations from `tasks` concurrent tasks of the async API.
fn async_run(
    runtime: &tokio::runtime::Runtime,
    items: &On<odm::aio::Collection<Item>>,
    work: &Arc<Work>,
    op: Op,
    tasks: usize,
    ops: usize,
) -> odm::Result<Figure> {
    let per = (ops / tasks).max(1);
    runtime.block_on(async {
        let start = Instant::now();
        let handles: Vec<_> = (0..tasks)
            .map(|t| {
                let (items, work) = (items.clone(), Arc::clone(work));
                tokio::spawn(async move {
                    let mut out = Vec::with_capacity(per);
                    for i in 0..per {
                        let began = Instant::now();
                        async_op(&items, &work, op, (t * per + i) as u64).await?;
                        out.push(began.elapsed().as_secs_f64() * 1e6);
                    }
                    Ok::<_, odm::Error>(out)
                })
            })
            .collect();
        let mut latencies = Vec::with_capacity(per * tasks);
        for handle in handles {
            latencies.extend(handle.await.expect("no panic")?);
        }
        Ok(figure(per * tasks, start.elapsed(), latencies))
    })
}

pub fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let docs = options.docs.min(100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()?;
    let db = odm::Database::in_memory()?;
    let memory = db
        .collection::<Item>()?
        .with_durability(Durability::Eventual);
    for chunk in (0..docs as i64).collect::<Vec<_>>().chunks(1_000) {
        memory.insert_many(&chunk.iter().map(|&id| item(id)).collect::<Vec<_>>())?;
    }
    let dir = std::env::temp_dir().join(format!("odm-bench-async-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file_db = odm::Database::open(dir.join("durable.redb"))?;
    let file = file_db
        .collection::<Item>()?
        .with_durability(Durability::Immediate);
    let items = On { memory, file };
    let async_items = runtime.block_on(async {
        let memory = odm::aio::Database::from_sync(db.clone())
            .collection::<Item>()
            .await?;
        let file = odm::aio::Database::from_sync(file_db.clone())
            .collection::<Item>()
            .await?;
        Ok::<_, odm::Error>(On {
            memory: memory.with_durability(Durability::Eventual),
            file: file.with_durability(Durability::Immediate),
        })
    })?;
    let work = Arc::new(Work {
        docs: docs as i64,
        users: 1_000,
        next_insert: std::sync::atomic::AtomicI64::new(docs as i64),
    });
    println!(
        "bench async: {docs} documents in memory, index user_1, {} operations per cell ({} durable inserts), {} runs, {cores} cores, a pool of {} workers; {}",
        OPS.min(docs),
        OPS.min(docs) / 10,
        options.runs,
        odm::aio::pool_size(),
        super::report::build()
    );
    let columns = [
        "sync 1 thread".to_owned(),
        format!("sync {cores} threads"),
        "async 1 task".into(),
        "async 64".into(),
        "async 1024".into(),
    ];
    print!("{:<22}", "op: ops/s (p99 µs)");
    for c in &columns {
        print!("{c:>22}");
    }
    println!();
    let mut ratios = Vec::new();
    for op in Op::ALL {
        let mut cells: Vec<Vec<Figure>> = vec![Vec::new(); columns.len()];
        for _ in 0..options.runs {
            cells[0].push(sync_run(&items, &work, op, 1, op.ops(docs))?);
            cells[1].push(sync_run(&items, &work, op, cores, op.ops(docs))?);
            for (cell, tasks) in [(2, 1), (3, 64), (4, 1_024)] {
                cells[cell].push(async_run(
                    &runtime,
                    &async_items,
                    &work,
                    op,
                    tasks,
                    op.ops(docs),
                )?);
            }
        }
        print!("{:<22}", op.name());
        let medians: Vec<Figure> = cells
            .iter()
            .map(|runs| Figure {
                throughput: median(runs.iter().map(|f| f.throughput).collect()),
                p99: median(runs.iter().map(|f| f.p99).collect()),
            })
            .collect();
        for m in &medians {
            print!("{:>22}", format!("{:.0} ({:.1})", m.throughput, m.p99));
        }
        println!();
        ratios.push(format!(
            "one_task_{}={:.2}",
            op.name(),
            medians[0].throughput / medians[2].throughput
        ));
    }
    println!("ratio async/sync {}", ratios.join(" "));
    drop((items, async_items, file_db));
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
