//! The blocking stages over three times the memory budget hold resident memory near the
//! budget: 300 MB of documents (made by the pipeline, so that no collection holds them)
//! sorted, grouped, bucketed, sampled (a third of them) and windowed (one partition) under the
//! default 100 MiB budget keep the peak resident memory of this process (`VmHWM`, Linux) under
//! 290 MiB. One test in its own binary, so no other test's memory counts.

use bson::{Bson, Document, doc};
use odm_engine::Database;
use odm_engine::aggregate::AggregateOptions;

/// The pipeline that makes 300,000 documents of about 1 KiB with a key spread over most of
/// them.
fn generated() -> Vec<Document> {
    vec![
        doc! { "$project": { "_id": 0, "a": { "$range": [0, 300] } } },
        doc! { "$unwind": "$a" },
        doc! { "$project": { "a": 1, "b": { "$range": [0, 1000] } } },
        doc! { "$unwind": "$b" },
        doc! { "$project": {
            "i": { "$add": [{ "$multiply": ["$a", 1000] }, "$b"] },
            "pad": { "$literal": "x".repeat(1000) },
        } },
        doc! { "$addFields": { "k": { "$mod": [{ "$multiply": ["$i", 7919] }, 300_007] } } },
    ]
}

fn peak_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[test]
fn blocking_stages_over_300_mb_stay_under_290_mib_resident() {
    let db = Database::in_memory().unwrap();
    db.collection("seed").insert_one(doc! { "_id": 1 }).unwrap();
    let txn = db.read().unwrap();
    let c = txn.collection("seed").unwrap().unwrap();
    // Each stage, and how many documents it gives at least.
    let stages = [
        (doc! { "$sort": { "k": 1 } }, 299_000),
        (
            doc! { "$group": { "_id": "$k", "pads": { "$push": "$pad" } } },
            299_000,
        ),
        (
            doc! { "$bucketAuto": { "groupBy": "$k", "buckets": 10 } },
            10,
        ),
        (doc! { "$sample": { "size": 100_000 } }, 100_000),
        (
            doc! { "$setWindowFields": { "sortBy": { "k": 1 }, "output": { "rank": { "$rank": {} } } } },
            299_000,
        ),
    ];
    for (stage, expected) in stages {
        let mut pipeline = generated();
        pipeline.push(stage.clone());
        let mut n = 0u64;
        let mut last_key = None;
        for doc in c
            .aggregate_iter(&pipeline, &AggregateOptions::default())
            .unwrap()
        {
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
        assert!(peak < 290, "{stage}: a peak of {peak} MiB resident");
    }
}
