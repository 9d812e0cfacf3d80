//! `bench spill`: `$sort`, `$group`, `$bucketAuto`, `$sample` (of half the documents) and
//! `$setWindowFields` (1,000 partitions) over 1 GB of documents the pipeline generates (a
//! million documents of about 1 KiB), three ways each: spilling past the 100 MiB budget
//! (`allowDiskUse`, the default), refused without disk use (MongoDB's 292, timed until the
//! error), and in memory with the budget raised past the data. Each row gives the wall time,
//! the peak resident memory of the run (the high-water mark is reset before each run through
//! `/proc/self/clear_refs`, Linux only) and what the stage wrote to disk.
//!
//! `--docs N` changes the number of documents (default 1,000,000; a multiple of 1,000).

use std::time::Instant;

use bson::{Document, doc};
use odm_engine::Database;
use odm_engine::aggregate::AggregateOptions;

use crate::Options;

/// The pipeline that makes `docs` documents of about 1 KiB: `i`, a key `k` spread over about
/// a million values, and 1,000 bytes of padding.
fn generated(docs: usize) -> Vec<Document> {
    let outer = i64::try_from(docs / 1000).unwrap_or(1).max(1);
    vec![
        doc! { "$project": { "_id": 0, "a": { "$range": [0, outer] } } },
        doc! { "$unwind": "$a" },
        doc! { "$project": { "a": 1, "b": { "$range": [0, 1000] } } },
        doc! { "$unwind": "$b" },
        doc! { "$project": {
            "i": { "$add": [{ "$multiply": ["$a", 1000] }, "$b"] },
            "pad": { "$literal": "x".repeat(1000) },
        } },
        doc! { "$addFields": { "k": { "$mod": [{ "$multiply": ["$i", 7919] }, 1_000_003] } } },
    ]
}

/// Peak resident memory since the last reset, in MiB (`None` off Linux).
fn peak_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

struct Outcome {
    seconds: f64,
    peak: Option<f64>,
    result: String,
}

fn measure(db: &Database, stage: &Document, docs: usize, options: &AggregateOptions) -> Outcome {
    let mut pipeline = generated(docs);
    pipeline.push(stage.clone());
    reset_peak();
    let start = Instant::now();
    let result = (|| -> odm_engine::Result<String> {
        let txn = db.read()?;
        let Some(c) = txn.collection("seed")? else {
            return Ok("no collection".into());
        };
        let explained = c.explain_aggregate(&pipeline, options)?;
        let last = explained.stages.last().map(|s| (s.returned, s.spill));
        Ok(match last {
            Some((returned, spill)) => format!(
                "{returned} out; spills {}, {:.0} MiB written",
                spill.spills,
                spill.spilled_bytes as f64 / 1_048_576.0
            ),
            None => "no stage".into(),
        })
    })();
    Outcome {
        seconds: start.elapsed().as_secs_f64(),
        peak: peak_mib(),
        result: result.unwrap_or_else(|e| format!("error {} ({})", e.code(), e.code_name())),
    }
}

pub fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let docs = if options.docs == 100_000 {
        1_000_000
    } else {
        options.docs
    };
    let dir = std::env::temp_dir().join(format!("odm-bench-spill-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = Database::open(dir.join("spill.odm"))?;
    db.collection("seed").insert_one(doc! { "_id": 1 })?;
    println!(
        "bench spill: {docs} generated documents of about 1 KiB ({:.2} GB), {}",
        docs as f64 * 1_040.0 / 1e9,
        crate::report::build()
    );
    let sample = i64::try_from(docs / 2).unwrap_or(i64::MAX);
    let stages = [
        ("$sort", doc! { "$sort": { "k": 1 } }),
        (
            "$group",
            doc! { "$group": { "_id": "$k", "n": { "$sum": 1 }, "pads": { "$push": "$pad" } } },
        ),
        (
            "$bucketAuto",
            doc! { "$bucketAuto": { "groupBy": "$k", "buckets": 100 } },
        ),
        ("$sample", doc! { "$sample": { "size": sample } }),
        (
            "$setWindowFields",
            doc! { "$setWindowFields": {
                "partitionBy": { "$mod": ["$k", 1000] },
                "sortBy": { "i": 1 },
                "output": { "rank": { "$rank": {} } },
            } },
        ),
    ];
    let ways = [
        ("allowDiskUse (default)", AggregateOptions::default()),
        (
            "allowDiskUse: false",
            AggregateOptions {
                allow_disk_use: Some(false),
                ..AggregateOptions::default()
            },
        ),
        (
            "in memory, limit raised",
            AggregateOptions {
                memory_limit: Some(usize::MAX / 2),
                ..AggregateOptions::default()
            },
        ),
    ];
    println!(
        "{:<17} {:<26} {:>10} {:>14}  result",
        "stage", "run", "seconds", "peak RSS MiB"
    );
    for (name, stage) in &stages {
        for (way, aggregate_options) in &ways {
            let outcome = measure(&db, stage, docs, aggregate_options);
            println!(
                "{name:<17} {way:<26} {:>10.2} {:>14}  {}",
                outcome.seconds,
                outcome
                    .peak
                    .map_or_else(|| "n/a".to_owned(), |p| format!("{p:.0}")),
                outcome.result
            );
        }
    }
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
