//! The blocking stages over six times their memory budget keep resident memory well below the
//! data: 200 MB of documents (made by the pipeline, so that no collection holds them)
//! sorted, grouped, bucketed, sampled (a third of them) and windowed (one partition) under a
//! 32 MiB budget keep the peak resident memory of this process (`VmHWM`, Linux) under 150 MiB,
//! well below the data (measured: 78 to 110 MiB). One test in its own binary, so no other
//! test's memory counts. A smaller budget than MongoDB's 100 MiB keeps the debug build's run
//! short: the bound is on the budget's multiple, not on its size.

use bson::{Bson, Document, doc};
use odm_engine::Database;
use odm_engine::aggregate::AggregateOptions;

/// The memory limit of each blocking stage: a third of what the pipeline makes.
const BUDGET_MIB: usize = 32;

/// The pipeline that makes 200,000 documents of about 1 KiB with a key spread over most of
/// them.
fn generated() -> Vec<Document> {
    vec![
        doc! { "$project": { "_id": 0, "a": { "$range": [0, 200] } } },
        doc! { "$unwind": "$a" },
        doc! { "$project": { "a": 1, "b": { "$range": [0, 1000] } } },
        doc! { "$unwind": "$b" },
        doc! { "$project": {
            "i": { "$add": [{ "$multiply": ["$a", 1000] }, "$b"] },
            "pad": { "$literal": "x".repeat(1000) },
        } },
        doc! { "$addFields": { "k": { "$mod": [{ "$multiply": ["$i", 7919] }, 200_003] } } },
    ]
}

fn peak_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[test]
fn blocking_stages_over_200_mb_stay_under_150_mib_resident() {
    let db = Database::in_memory().unwrap();
    db.collection("seed").insert_one(doc! { "_id": 1 }).unwrap();
    let txn = db.read().unwrap();
    let c = txn.collection("seed").unwrap().unwrap();
    // Each stage, and how many documents it gives at least.
    let stages = [
        (doc! { "$sort": { "k": 1 } }, 199_000),
        (
            doc! { "$group": { "_id": "$k", "pads": { "$push": "$pad" } } },
            199_000,
        ),
        (
            doc! { "$bucketAuto": { "groupBy": "$k", "buckets": 10 } },
            10,
        ),
        (doc! { "$sample": { "size": 66_000 } }, 66_000),
        (
            doc! { "$setWindowFields": { "sortBy": { "k": 1 }, "output": { "rank": { "$rank": {} } } } },
            199_000,
        ),
    ];
    let options = AggregateOptions {
        memory_limit: Some(BUDGET_MIB << 20),
        ..AggregateOptions::default()
    };
    for (stage, expected) in stages {
        let mut pipeline = generated();
        pipeline.push(stage.clone());
        let mut n = 0u64;
        let mut last_key = None;
        for doc in c.aggregate_iter(&pipeline, &options).unwrap() {
            let doc = doc.unwrap();
            if stage.contains_key("$sort") || stage.contains_key("$setWindowFields") {
                let k = match doc.get("k") {
                    Some(Bson::Int32(k)) => i64::from(*k),
                    Some(Bson::Int64(k)) => *k,
                    other => panic!("a key {other:?}"),
                };
                assert!(last_key.is_none_or(|last| last <= k), "sorted");
                last_key = Some(k);
            }
            n += 1;
        }
        assert!(n >= expected, "{stage}: {n}");
        let Some(peak) = peak_mib() else {
            return;
        };
        eprintln!("{stage}: a peak of {peak} MiB resident");
        assert!(peak < 150, "{stage}: a peak of {peak} MiB resident");
    }
}
