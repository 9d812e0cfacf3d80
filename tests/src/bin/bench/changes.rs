//! `bench changes`: what change streams cost and how fast they deliver (see
//! `odm_engine::changes`), on database files in a scratch folder:
//! - durable single inserts and single `$inc` updates (one fsync'd transaction each) with the
//!   change log off and on, side by side in each run: `ratio changelog on/off`;
//! - the latency from the start of a commit to the event in a reader that waits for it
//!   (another thread, blocked in `next_batch`), p50 and p99;
//! - a reader that resumes after `--docs` events (100,000 by default) and reads them all.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use bson::doc;
use odm_engine::changes::{ChangeLogOptions, ChangeStream, ChangeStreamOptions, Scope, Start};
use odm_engine::update::UpdateOptions;
use odm_engine::{Database, Durability};

use crate::Options;
use crate::report::median;

fn scratch() -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("odm-bench-changes-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn fresh(
    dir: &std::path::Path,
    name: &str,
    log: bool,
) -> Result<Database, Box<dyn std::error::Error>> {
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    let db = Database::open(&path)?;
    db.set_change_log(ChangeLogOptions {
        enabled: log,
        ..ChangeLogOptions::default()
    })?;
    Ok(db)
}

/// µs per durable insert and per durable update, one transaction each.
fn durable(db: &Database, ops: usize) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let start = Instant::now();
    for i in 0..ops {
        db.write(|w| {
            w.insert_one(
                "items",
                doc! {"_id": i as i64, "user": format!("u{}", i % 100), "hits": 0, "title": "a title of some length"},
            )
        })?;
    }
    let insert = start.elapsed().as_secs_f64() * 1e6 / ops as f64;
    let start = Instant::now();
    for i in 0..ops {
        db.write(|w| {
            w.update_one(
                "items",
                &doc! {"_id": i as i64},
                doc! {"$inc": {"hits": 1}},
                &UpdateOptions::default(),
            )
        })?;
    }
    let update = start.elapsed().as_secs_f64() * 1e6 / ops as f64;
    Ok((insert, update))
}

fn stream(db: &Database, start: Start) -> Result<ChangeStream, odm_engine::Error> {
    ChangeStream::open(
        db,
        Scope::Collection("items".into()),
        ChangeStreamOptions {
            start,
            db_name: "bench".into(),
            ..ChangeStreamOptions::default()
        },
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Commit start -> event in a waiting reader, µs, for `n` single inserts.
fn latency(db: &Database, n: usize) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let mut reader = stream(db, Start::Now)?;
    let (ready, go) = mpsc::channel::<()>();
    let (arrived, arrivals) = mpsc::channel::<Instant>();
    let handle = std::thread::spawn(move || -> Result<(), odm_engine::Error> {
        let _ = ready.send(());
        let mut got = 0;
        while got < n {
            let batch = reader.next_batch(1, Duration::from_secs(30))?;
            for _ in &batch {
                let _ = arrived.send(Instant::now());
            }
            got += batch.len();
            if batch.is_empty() {
                break;
            }
        }
        Ok(())
    });
    go.recv()?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let sent = Instant::now();
        db.write_with(Durability::Eventual, |w| {
            w.insert_one("items", doc! {"_id": format!("l{i}"), "n": i as i64})
        })?;
        let at = arrivals.recv_timeout(Duration::from_secs(30))?;
        out.push(at.duration_since(sent).as_secs_f64() * 1e6);
    }
    handle.join().map_err(|_| "the reader panicked")??;
    out.sort_by(f64::total_cmp);
    Ok(out)
}

/// Writes `n` events, then times a stream that resumes before them and reads them all.
fn resume(db: &Database, n: usize) -> Result<(f64, usize), Box<dyn std::error::Error>> {
    let before = stream(db, Start::Now)?.resume_token();
    for chunk in 0..n.div_ceil(1_000) {
        db.write_with(Durability::Eventual, |w| {
            let docs = (chunk * 1_000..((chunk + 1) * 1_000).min(n))
                .map(|i| doc! {"_id": format!("r{i}"), "n": i as i64});
            w.insert_many("items", docs, true).map(drop)
        })?;
    }
    let start = Instant::now();
    let mut s = stream(db, Start::ResumeAfter(before))?;
    let mut read = 0;
    loop {
        let batch = s.try_next_batch(1_000)?;
        if batch.is_empty() {
            break;
        }
        read += batch.len();
    }
    Ok((start.elapsed().as_secs_f64() * 1e3, read))
}

pub fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let dir = scratch()?;
    let ops = (options.docs / 100).clamp(100, 2_000);
    println!(
        "bench changes ({}): {ops} durable single inserts and updates per run, log off then on, {} runs",
        crate::report::build(),
        options.runs
    );
    let (mut on_off_insert, mut on_off_update) = (Vec::new(), Vec::new());
    for run in 0..options.runs {
        let off = durable(&fresh(&dir, &format!("off{run}.odm"), false)?, ops)?;
        let on = durable(&fresh(&dir, &format!("on{run}.odm"), true)?, ops)?;
        println!(
            "  run {run}: insert {:.1} / {:.1} µs, update {:.1} / {:.1} µs (off / on)",
            off.0, on.0, off.1, on.1
        );
        on_off_insert.push(on.0 / off.0);
        on_off_update.push(on.1 / off.1);
    }
    let db = fresh(&dir, "latency.odm", true)?;
    let samples = latency(&db, ops)?;
    let (ms, read) = resume(&db, options.docs)?;
    println!(
        "event latency, commit start to a waiting reader ({} events): p50 {:.1} µs, p99 {:.1} µs",
        samples.len(),
        percentile(&samples, 50.0),
        percentile(&samples, 99.0)
    );
    println!(
        "resume after {read} events: {ms:.1} ms to read them all ({:.2} µs an event)",
        ms * 1e3 / read.max(1) as f64
    );
    println!(
        "ratio changelog on/off durable_insert={:.2} durable_update={:.2}",
        median(on_off_insert),
        median(on_off_update)
    );
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
