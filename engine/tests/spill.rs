//! Blocking stages past their memory budget spill to temporary files when disk use is allowed
//! (the default), and give what an in-memory run gives; without disk use they fail with
//! MongoDB's 292. The files go when the stage ends, however it ends, and a database emptied
//! its spill folder when it opened. Tests lower the budget (`memory_limit`) so that a few
//! kilobytes spill.

mod common;

use bson::{Bson, Document, doc};
use odm_engine::aggregate::AggregateOptions;
use odm_engine::query::FindOptions;
use odm_engine::{Database, Error};
use proptest::prelude::*;

/// A file-backed database holding `docs` in `c`, and its spill folder.
fn database(name: &str, docs: &[Document]) -> (Database, std::path::PathBuf) {
    let path = common::temp_path(name);
    let mut spill = path.clone().into_os_string();
    spill.push("-spill");
    let db = Database::open(&path).unwrap();
    if !docs.is_empty() {
        db.collection("c").insert_many(docs.to_vec(), true).unwrap();
    }
    (db, spill.into())
}

fn files_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, Iterator::count)
}

fn small(allow_disk_use: Option<bool>) -> AggregateOptions {
    AggregateOptions {
        memory_limit: Some(2048),
        allow_disk_use,
        ..AggregateOptions::default()
    }
}

fn numbered(n: i32) -> Vec<Document> {
    (0..n)
        .map(|i| doc! { "_id": i, "k": (i * 7919) % 37, "s": format!("v{}", i % 11), "pad": "x".repeat(100) })
        .collect()
}

fn run(
    db: &Database,
    pipeline: &[Document],
    options: &AggregateOptions,
) -> Result<Vec<Document>, Error> {
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    c.aggregate(pipeline, options)
}

#[test]
fn a_sort_past_the_budget_spills_and_stays_stable() {
    let (db, spill) = database("sort.odm", &numbered(500));
    let pipeline = [
        doc! { "$project": { "k": 1 } },
        doc! { "$sort": { "k": 1 } },
    ];
    let in_memory = run(&db, &pipeline, &AggregateOptions::default()).unwrap();
    let spilled = run(&db, &pipeline, &small(None)).unwrap();
    assert_eq!(spilled, in_memory);
    // Stable: equal keys keep `_id` order.
    assert!(spilled.windows(2).all(|w| {
        let (a, b) = (&w[0], &w[1]);
        a.get_i32("k").unwrap() < b.get_i32("k").unwrap()
            || (a.get_i32("k").ok() == b.get_i32("k").ok()
                && a.get_i32("_id").unwrap() < b.get_i32("_id").unwrap())
    }));
    assert_eq!(
        files_in(&spill),
        0,
        "the runs are removed when the sort ends"
    );
    let err = run(&db, &pipeline, &small(Some(false))).unwrap_err();
    assert_eq!(err.code(), 292, "{err}");
    assert_eq!(err.code_name(), "QueryExceededMemoryLimitNoDiskUseAllowed");
    assert_eq!(
        err.to_string(),
        "Exceeded memory limit of 2048 bytes for $sort, but didn't allow external sort. Pass allowDiskUse:true to opt in."
    );
}

#[test]
fn the_finds_blocking_sort_spills_and_reports_it() {
    let (db, spill) = database("find.odm", &numbered(400));
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let options = |allow, limit: Option<u64>| FindOptions {
        sort: Some(doc! { "s": -1, "k": 1 }),
        memory_limit: Some(4096),
        allow_disk_use: allow,
        limit,
        ..FindOptions::default()
    };
    let in_memory: Vec<Document> = c
        .find(
            &doc! {},
            &FindOptions {
                sort: Some(doc! { "s": -1, "k": 1 }),
                ..FindOptions::default()
            },
        )
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let cursor = c.find(&doc! {}, &options(None, None)).unwrap();
    let spill_report = cursor.spill();
    assert!(
        spill_report.used_disk && spill_report.spills > 1 && spill_report.spilled_bytes > 40_000
    );
    let spilled: Vec<Document> = cursor.collect::<Result<_, _>>().unwrap();
    assert_eq!(spilled, in_memory);
    // With a limit, only the best are kept (and merged).
    let top: Vec<Document> = c
        .find(&doc! {}, &options(None, Some(150)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(top, in_memory[..150]);
    assert_eq!(files_in(&spill), 0);
    // A limit whose documents fit the budget needs no disk: only the best are held, and a
    // document that cannot be among them is not held at all.
    let top: Vec<Document> = c
        .find(&doc! {}, &options(Some(false), Some(10)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(top, in_memory[..10]);
    let err = c.find(&doc! {}, &options(Some(false), None)).unwrap_err();
    assert_eq!(err.code(), 292, "{err}");
    assert!(
        err.to_string().starts_with(
            "Sort exceeded memory limit of 4096 bytes, but did not opt in to external sorting"
        ),
        "{err}"
    );
}

fn every_accumulator() -> Document {
    doc! {
        "_id": "$k",
        "n": { "$sum": 1 },
        "sum": { "$sum": "$_id" },
        "count": { "$count": {} },
        "avg": { "$avg": "$_id" },
        "min": { "$min": "$s" },
        "max": { "$max": "$s" },
        "first": { "$first": "$_id" },
        "last": { "$last": "$_id" },
        "push": { "$push": "$_id" },
        "set": { "$addToSet": "$s" },
        "merged": { "$mergeObjects": { "a": "$s", "b": "$_id" } },
        "concat": { "$concatArrays": { "$range": [0, { "$mod": ["$_id", 3] }] } },
        "union": { "$setUnion": { "$range": [0, { "$mod": ["$_id", 4] }] } },
        "firstN": { "$firstN": { "input": "$_id", "n": 3 } },
        "lastN": { "$lastN": { "input": "$_id", "n": 3 } },
        "minN": { "$minN": { "input": "$s", "n": 2 } },
        "maxN": { "$maxN": { "input": "$_id", "n": 2 } },
        "top": { "$top": { "sortBy": { "s": 1 }, "output": "$_id" } },
        "bottomN": { "$bottomN": { "sortBy": { "s": 1 }, "output": "$_id", "n": 2 } },
        "median": { "$median": { "input": "$_id", "method": "approximate" } },
        "p": { "$percentile": { "input": "$_id", "p": [0.1, 0.9], "method": "approximate" } },
        "dev": { "$stdDevPop": "$_id" },
        "devSamp": { "$stdDevSamp": "$_id" },
    }
}

/// The groups sorted by key, with the standard deviations rounded (a merge of Welford
/// triples rounds differently than one pass).
fn comparable(mut groups: Vec<Document>) -> Vec<Document> {
    for g in &mut groups {
        for field in ["dev", "devSamp"] {
            if let Some(Bson::Double(x)) = g.get(field) {
                let rounded = (x * 1e6).round() / 1e6;
                g.insert(field, rounded);
            }
        }
    }
    groups.sort_by(|a, b| {
        odm_engine::order::compare_in(
            bson::RawBson::try_from(a.get("_id").cloned().unwrap_or(Bson::Null))
                .unwrap()
                .as_raw_bson_ref(),
            bson::RawBson::try_from(b.get("_id").cloned().unwrap_or(Bson::Null))
                .unwrap()
                .as_raw_bson_ref(),
            None,
        )
    });
    groups
}

#[test]
fn a_group_past_the_budget_merges_partial_states_of_every_accumulator() {
    let (db, spill) = database("group.odm", &numbered(600));
    let pipeline = [doc! { "$group": every_accumulator() }];
    let in_memory = run(&db, &pipeline, &AggregateOptions::default()).unwrap();
    let options = AggregateOptions {
        memory_limit: Some(20_000),
        ..AggregateOptions::default()
    };
    let spilled = run(&db, &pipeline, &options).unwrap();
    assert_eq!(in_memory.len(), 37);
    assert_eq!(comparable(spilled), comparable(in_memory));
    assert_eq!(files_in(&spill), 0);
    let options = AggregateOptions {
        allow_disk_use: Some(false),
        ..options
    };
    let err = run(&db, &pipeline, &options).unwrap_err();
    assert_eq!(err.code(), 292, "{err}");
}

#[test]
fn one_group_past_the_budget_is_mongodbs_exceeded_memory_limit() {
    let (db, _) = database("one_group.odm", &numbered(200));
    let err = run(
        &db,
        &[doc! { "$group": { "_id": null, "all": { "$push": "$pad" } } }],
        &small(None),
    )
    .unwrap_err();
    assert_eq!(err.code(), 146, "{err}");
}

#[test]
fn files_go_when_a_merge_is_abandoned_or_fails() {
    let (db, spill) = database("abandon.odm", &numbered(500));
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let pipeline = [doc! { "$sort": { "k": -1 } }];
    // Runs larger than the buffer each is read through, so that reading goes on from disk.
    let options = AggregateOptions {
        memory_limit: Some(20_000),
        ..AggregateOptions::default()
    };
    let mut stream = c.aggregate_iter(&pipeline, &options).unwrap();
    stream.next().unwrap().unwrap();
    assert_eq!(files_in(&spill), 1, "the runs are on disk while merging");
    drop(stream);
    assert_eq!(files_in(&spill), 0, "abandoned: removed");
    // Damaged while merging: an error, never a panic, and the file still goes.
    let mut stream = c.aggregate_iter(&pipeline, &options).unwrap();
    stream.next().unwrap().unwrap();
    let file = std::fs::read_dir(&spill)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let len = std::fs::metadata(&file).unwrap().len();
    std::fs::write(&file, vec![0xff; usize::try_from(len).unwrap()]).unwrap();
    let rest: Vec<Result<Document, Error>> = stream.by_ref().collect();
    assert!(
        rest.last().is_some_and(Result::is_err),
        "bad bytes read back are an error"
    );
    drop(stream);
    assert_eq!(files_in(&spill), 0);
}

#[test]
fn opening_a_database_removes_stale_spill_files() {
    let (db, spill) = database("stale.odm", &[]);
    let path = common::temp_path("stale.odm");
    drop(db);
    std::fs::create_dir_all(&spill).unwrap();
    std::fs::write(spill.join("1-0.bson"), b"left by a crash").unwrap();
    let db = Database::open(&path).unwrap();
    assert_eq!(files_in(&spill), 0);
    // Closing the database removes its empty folder.
    drop(db);
    assert!(!spill.exists());
}

fn value() -> impl Strategy<Value = Bson> {
    prop_oneof![
        (0i32..6).prop_map(Bson::Int32),
        (0i64..6).prop_map(Bson::Int64),
        prop::sample::select(vec!["a", "A", "b", "B", "á", ""])
            .prop_map(|s| Bson::String(s.into())),
        Just(Bson::Null),
        prop::collection::vec((0i32..3).prop_map(Bson::Int32), 0..3).prop_map(Bson::Array),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random documents with many ties, sorted, grouped (every accumulator), bucketed and
    /// windowed under a random collation: a budget small enough to spill gives what memory
    /// gives (or, for one group, bucket or partition alone past it, MongoDB's error).
    #[test]
    fn spilled_equals_in_memory(
        docs in prop::collection::vec((value(), value(), -50i32..50), 1..150),
        collated in any::<bool>(),
        limit in 6000usize..16000,
        buckets in 1i32..7,
    ) {
        let docs: Vec<Document> = docs
            .into_iter()
            .enumerate()
            .map(|(i, (k, s, n))| doc! { "_id": i as i32, "k": k, "s": s, "n": n })
            .collect();
        let db = Database::in_memory().unwrap();
        db.collection("c").insert_many(docs, true).unwrap();
        let collation = collated.then(|| doc! { "locale": "en", "strength": 2 });
        let memory = AggregateOptions { collation: collation.clone(), ..AggregateOptions::default() };
        let spilling = AggregateOptions { memory_limit: Some(limit), ..memory.clone() };
        let sort = [doc! { "$sort": { "k": 1, "s": -1 } }];
        prop_assert_eq!(run(&db, &sort, &spilling).unwrap(), run(&db, &sort, &memory).unwrap());
        let mut group = every_accumulator();
        group.insert("_id", "$k");
        group.insert("sum", doc! { "$sum": "$n" });
        let pipeline = [doc! { "$group": group }];
        let spilled = run(&db, &pipeline, &spilling);
        let in_memory = run(&db, &pipeline, &memory).unwrap();
        match spilled {
            Ok(spilled) => prop_assert_eq!(comparable(spilled), comparable(in_memory)),
            // One group alone past the small budget cannot spill.
            Err(e) => prop_assert_eq!(e.code(), 146, "{}", e),
        }
        // The stages that sort through the same external sort, under a quarter of the budget.
        let spilling = AggregateOptions { memory_limit: Some(limit / 4), ..memory.clone() };
        for pipeline in sorting_stages(buckets) {
            match (run(&db, &pipeline, &spilling), run(&db, &pipeline, &memory)) {
                (Ok(spilled), Ok(in_memory)) => prop_assert_eq!(spilled, in_memory),
                (Err(a), Err(b)) => prop_assert_eq!(a.code(), b.code(), "{} / {}", a, b),
                // One bucket's states, or one partition, past the small budget.
                (Err(e), Ok(_)) => prop_assert!([146, 5_414_201].contains(&e.code()), "{}", e),
                (Ok(_), Err(e)) => prop_assert!(false, "only in memory: {}", e),
            }
        }
    }
}

/// `$bucketAuto` (with and without a granularity) and `$setWindowFields` over the documents of
/// `spilled_equals_in_memory`.
fn sorting_stages(buckets: i32) -> [Vec<Document>; 3] {
    [
        vec![doc! { "$bucketAuto": {
            "groupBy": "$k", "buckets": buckets,
            "output": { "n": { "$sum": 1 }, "ids": { "$push": "$_id" }, "s": { "$addToSet": "$s" } },
        } }],
        vec![
            doc! { "$bucketAuto": { "groupBy": { "$abs": "$n" }, "buckets": buckets, "granularity": "1-2-5" } },
        ],
        vec![doc! { "$setWindowFields": {
            "partitionBy": { "$mod": ["$n", 4] }, "sortBy": { "k": 1, "s": -1 },
            "output": {
                "rank": { "$denseRank": {} },
                "near": { "$push": "$_id", "window": { "documents": [-1, 1] } },
                "sum": { "$sum": "$n" },
            },
        } }],
    ]
}

#[test]
fn explain_reports_what_sorts_and_groups_wrote_to_disk() {
    let (db, _) = database("explain.odm", &numbered(400));
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let pipeline = [
        doc! { "$project": { "k": 1, "pad": 1 } },
        doc! { "$sort": { "k": 1 } },
        doc! { "$group": { "_id": "$_id", "n": { "$sum": 1 } } },
    ];
    let explained = c.explain_aggregate(&pipeline, &small(None)).unwrap();
    let [project, sort, group] = &explained.stages[..] else {
        panic!("three stages: {explained:?}");
    };
    assert!(!project.spill.used_disk);
    for stage in [sort, group] {
        assert!(stage.spill.used_disk && stage.spill.spills > 1, "{stage:?}");
        assert!(stage.spill.spilled_bytes > 10_000, "{stage:?}");
    }
    let shown = explained.to_document();
    let stages = shown.get_array("stages").unwrap();
    let sort_entry = stages[2].as_document().unwrap();
    assert_eq!(sort_entry.get_bool("usedDisk").ok(), Some(true));
    assert!(sort_entry.get_i32("spills").unwrap() > 1);
    assert!(sort_entry.get_i32("spilledBytes").unwrap() > 10_000);
    // In memory: nothing written.
    let in_memory = c
        .explain_aggregate(&pipeline, &AggregateOptions::default())
        .unwrap();
    assert!(!in_memory.stages[1].spill.used_disk);
    // The find's blocking sort.
    let options = FindOptions {
        sort: Some(doc! { "k": 1 }),
        memory_limit: Some(4096),
        ..FindOptions::default()
    };
    let explained = c.explain(&doc! {}, &options).unwrap();
    assert!(explained.spill.used_disk && explained.spill.spills > 1);
    let stats = explained.to_document();
    let stats = stats.get_document("executionStats").unwrap();
    assert_eq!(stats.get_bool("usedDisk").ok(), Some(true));
}

#[test]
fn a_lookup_gathering_more_than_the_budget_is_mongodbs_4568() {
    let (db, _) = database("lookup.odm", &numbered(100));
    let pipeline = [
        doc! { "$limit": 1 },
        doc! { "$lookup": { "from": "c", "pipeline": [], "as": "all" } },
    ];
    // 100 documents of about 150 bytes: within 100 MiB, past 2 KiB.
    let joined = run(&db, &pipeline, &AggregateOptions::default()).unwrap();
    assert_eq!(joined[0].get_array("all").unwrap().len(), 100);
    let err = run(&db, &pipeline, &small(None)).unwrap_err();
    assert_eq!(err.code(), 4568, "{err}");
    assert!(
        err.to_string().contains(
            "Total size of documents in c matching pipeline's $lookup stage exceeds 2048 bytes"
        ),
        "{err}"
    );
}

/// `$facet` and `$graphLookup` hold what they gather against the operation's budget; they do
/// not spill.
#[test]
fn facet_and_graph_lookup_hold_within_the_budget() {
    let (db, _) = database("facet.odm", &numbered(100));
    let facet = [doc! { "$facet": { "all": [{ "$count": "n" }] } }];
    assert_eq!(
        run(&db, &facet, &AggregateOptions::default())
            .unwrap()
            .len(),
        1
    );
    let err = run(&db, &facet, &small(None)).unwrap_err();
    assert_eq!(err.code(), 292, "{err}");
    let graph = [
        doc! { "$limit": 1 },
        doc! { "$graphLookup": { "from": "c", "startWith": "$k", "connectFromField": "k", "connectToField": "k", "as": "g" } },
    ];
    assert_eq!(
        run(&db, &graph, &AggregateOptions::default())
            .unwrap()
            .len(),
        1
    );
    // Three documents of about 150 bytes found: past 200 bytes.
    let tiny = AggregateOptions {
        memory_limit: Some(200),
        ..AggregateOptions::default()
    };
    let err = run(&db, &graph, &tiny).unwrap_err();
    assert_eq!(err.code(), 40099, "{err}");
}

/// The stage's spill figures in explain, by the stage's name.
fn explained_spill(
    db: &Database,
    pipeline: &[Document],
    options: &AggregateOptions,
    stage: &str,
) -> Document {
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let shown = c
        .explain_aggregate(pipeline, options)
        .unwrap()
        .to_document();
    let stages = shown.get_array("stages").unwrap();
    stages
        .iter()
        .filter_map(Bson::as_document)
        .find(|s| s.contains_key(stage))
        .cloned()
        .unwrap_or_else(|| panic!("no {stage} in {shown}"))
}

fn budget(limit: usize, allow_disk_use: Option<bool>) -> AggregateOptions {
    AggregateOptions {
        memory_limit: Some(limit),
        allow_disk_use,
        ..AggregateOptions::default()
    }
}

#[test]
fn a_bucket_auto_sorts_through_the_spilling_sort() {
    let (db, spill) = database("bucket_auto.odm", &numbered(500));
    let pipeline = [doc! { "$bucketAuto": {
        "groupBy": "$k",
        "buckets": 5,
        "output": { "n": { "$sum": 1 }, "ids": { "$push": "$_id" } },
    } }];
    let in_memory = run(&db, &pipeline, &AggregateOptions::default()).unwrap();
    assert_eq!(in_memory.len(), 5);
    let spilled = run(&db, &pipeline, &budget(20_000, None)).unwrap();
    assert_eq!(spilled, in_memory);
    assert_eq!(files_in(&spill), 0);
    let shown = explained_spill(&db, &pipeline, &budget(20_000, None), "$bucketAuto");
    assert_eq!(shown.get_bool("usedDisk").ok(), Some(true), "{shown}");
    assert!(shown.get_i32("spills").unwrap() > 1, "{shown}");
    assert!(shown.get_i32("spilledBytes").unwrap() > 20_000, "{shown}");
    let err = run(&db, &pipeline, &budget(20_000, Some(false))).unwrap_err();
    assert_eq!(err.code(), 292, "{err}");
    assert_eq!(
        err.to_string(),
        "Exceeded memory limit of 20000 bytes for $bucketAuto, but didn't allow external sort. Pass allowDiskUse:true to opt in."
    );
    // One bucket's accumulators cannot spill: MongoDB's 146, as for one group.
    let one = [
        doc! { "$bucketAuto": { "groupBy": "$k", "buckets": 1, "output": { "all": { "$push": "$pad" } } } },
    ];
    let err = run(&db, &one, &budget(20_000, None)).unwrap_err();
    assert_eq!(err.code(), 146, "{err}");
    assert!(err.to_string().contains("$bucketAuto"), "{err}");
}

#[test]
fn a_sample_is_a_sort_by_random_keys_that_keeps_its_size() {
    let docs = numbered(500);
    let (db, spill) = database("sample.odm", &docs);
    // Larger than the budget: spilled with disk use, every document once.
    let all = [doc! { "$sample": { "size": 1000 } }];
    let mut sampled = run(&db, &all, &budget(4096, None)).unwrap();
    assert_eq!(sampled.len(), 500);
    sampled.sort_by_key(|d| d.get_i32("_id").unwrap());
    assert_eq!(sampled, docs);
    assert_eq!(files_in(&spill), 0);
    let shown = explained_spill(&db, &all, &budget(4096, None), "$sample");
    assert_eq!(shown.get_bool("usedDisk").ok(), Some(true), "{shown}");
    let err = run(&db, &all, &budget(4096, Some(false))).unwrap_err();
    assert_eq!(err.code(), 292, "{err}");
    assert!(err.to_string().contains("for $sample"), "{err}");
    // Ten documents fit in the budget without disk use: only the best ten random keys are
    // held, never the input.
    let ten = [doc! { "$sample": { "size": 10 } }];
    let picked = run(&db, &ten, &budget(2048, Some(false))).unwrap();
    assert_eq!(picked.len(), 10);
    let ids: std::collections::BTreeSet<i32> =
        picked.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids.len(), 10, "distinct documents");
    assert!(picked.iter().all(|d| docs.contains(d)));
    assert!(
        (0..5).any(|_| run(&db, &ten, &budget(2048, Some(false))).unwrap() != picked),
        "another run picks others"
    );
}

#[test]
fn a_spilled_sample_picks_each_document_about_as_often() {
    let docs = numbered(10);
    let (db, _) = database("sample_uniform.odm", &docs);
    let pipeline = [doc! { "$sample": { "size": 3 } }];
    let mut counts = [0u32; 10];
    // 300 samples of 3 of 10 documents: each picked about 90 times.
    for _ in 0..300 {
        for d in run(&db, &pipeline, &budget(200, None)).unwrap() {
            counts[usize::try_from(d.get_i32("_id").unwrap()).unwrap()] += 1;
        }
    }
    assert!(counts.iter().all(|n| (45..=150).contains(n)), "{counts:?}");
}

#[test]
fn set_window_fields_sorts_its_input_through_the_spilling_sort() {
    let (db, spill) = database("window.odm", &numbered(500));
    let pipeline = [doc! { "$setWindowFields": {
        "partitionBy": "$k",
        "sortBy": { "_id": -1 },
        "output": {
            "sum": { "$sum": "$_id" },
            "rank": { "$rank": {} },
            "running": { "$push": "$_id", "window": { "documents": ["unbounded", "current"] } },
        },
    } }];
    let in_memory = run(&db, &pipeline, &AggregateOptions::default()).unwrap();
    assert_eq!(in_memory.len(), 500);
    let spilled = run(&db, &pipeline, &budget(20_000, None)).unwrap();
    assert_eq!(spilled, in_memory);
    assert_eq!(files_in(&spill), 0);
    let shown = explained_spill(&db, &pipeline, &budget(20_000, None), "$setWindowFields");
    assert_eq!(shown.get_bool("usedDisk").ok(), Some(true), "{shown}");
    assert!(shown.get_i32("spills").unwrap() > 1, "{shown}");
    let err = run(&db, &pipeline, &budget(20_000, Some(false))).unwrap_err();
    assert_eq!(err.code(), 292, "{err}");
    assert!(err.to_string().contains("for $setWindowFields"), "{err}");
}

/// The partition being computed is held against the budget; past it the partition goes to
/// disk, and windows read it back by position.
#[test]
fn a_window_partition_past_the_budget_spills_or_is_mongodbs_error() {
    let (db, spill) = database("window_partition.odm", &numbered(300));
    // No partitionBy: the whole input one partition.
    let whole = [
        doc! { "$setWindowFields": { "sortBy": { "_id": 1 }, "output": {
            "n": { "$count": {} },
            "near": { "$push": "$_id", "window": { "documents": [-2, 1] } },
            "before": { "$shift": { "output": "$_id", "by": -1, "default": "none" } },
            "last": { "$locf": "$k" },
        } } },
    ];
    let in_memory = run(&db, &whole, &AggregateOptions::default()).unwrap();
    assert_eq!(in_memory.len(), 300);
    assert_eq!(
        in_memory[5].get_array("near").unwrap(),
        &vec![
            Bson::Int32(3),
            Bson::Int32(4),
            Bson::Int32(5),
            Bson::Int32(6)
        ]
    );
    let spilled = run(&db, &whole, &budget(20_000, None)).unwrap();
    assert_eq!(spilled, in_memory);
    assert_eq!(files_in(&spill), 0, "the partition's file goes with it");
    let shown = explained_spill(&db, &whole, &budget(20_000, None), "$setWindowFields");
    assert_eq!(shown.get_bool("usedDisk").ok(), Some(true), "{shown}");
    assert!(shown.get_i32("spills").unwrap() > 1, "{shown}");
    // Sorted and partitioned, with range windows reading the sort values.
    let sorted = [doc! { "$setWindowFields": {
        "partitionBy": "$s",
        "sortBy": { "k": 1 },
        "output": {
            "rank": { "$rank": {} },
            "around": { "$sum": "$_id", "window": { "range": [-3, 3] } },
            "all": { "$max": "$_id" },
        },
    } }];
    let in_memory = run(&db, &sorted, &AggregateOptions::default()).unwrap();
    // Partitions of about 4 KB, each spilled past 3.5 KB; what the outputs make first (a rank
    // and a sort value per document) fits beside the rest.
    assert_eq!(run(&db, &sorted, &budget(3500, None)).unwrap(), in_memory);
    let shown = explained_spill(&db, &sorted, &budget(3500, None), "$setWindowFields");
    assert!(shown.get_i32("spills").unwrap() > 11, "{shown}");
    // No sortBy either: nothing to sort, the partition held as it comes.
    let unsorted = [doc! { "$setWindowFields": { "output": { "n": { "$count": {} } } } }];
    let in_memory = run(&db, &unsorted, &AggregateOptions::default()).unwrap();
    assert_eq!(run(&db, &unsorted, &budget(4096, None)).unwrap(), in_memory);
    let err = run(&db, &unsorted, &budget(4096, Some(false))).unwrap_err();
    assert_eq!(err.code(), 5_643_011, "{err}");
    assert!(
        err.to_string()
            .contains("Max allowed memory: 4096 bytes. Set 'allowDiskUse: true' to spill to disk"),
        "{err}"
    );
    // A partition within the budget whose outputs, made ahead, pass it: its documents go to
    // disk to make room (without disk use, MongoDB's 5414201).
    let ranked = [
        doc! { "$setWindowFields": { "sortBy": { "_id": 1 }, "output": { "rank": { "$rank": {} } } } },
    ];
    let in_memory = run(&db, &ranked, &AggregateOptions::default()).unwrap();
    assert_eq!(run(&db, &ranked, &budget(50_000, None)).unwrap(), in_memory);
    let err = run(&db, &ranked, &budget(50_000, Some(false))).unwrap_err();
    assert_eq!(err.code(), 5_414_201, "{err}");
    // An accumulator's state counts while it is computed, and cannot spill: the 300 values of
    // a `$push` over the whole partition (each document gets a copy as it goes out) fit 20 KB,
    // not 8 KB.
    let pushed = [
        doc! { "$project": { "_id": 1 } },
        doc! { "$setWindowFields": { "output": { "all": { "$push": "$_id" } } } },
    ];
    let count = |limit| run(&db, &pushed, &budget(limit, None)).map(|docs| docs.len());
    assert_eq!(count(20_000).ok(), Some(300));
    let err = count(8000).unwrap_err();
    assert_eq!(err.code(), 5_414_201, "{err}");
    assert!(
        err.to_string()
            .contains("Exceeded memory limit in DocumentSourceSetWindowFields"),
        "{err}"
    );
}

/// A partition read back from a damaged file is an error, never a panic, and the file goes
/// when the stage does.
#[test]
fn a_damaged_partition_file_is_an_error_and_goes() {
    let (db, spill) = database("window_damaged.odm", &numbered(300));
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let pipeline = [doc! { "$setWindowFields": { "output": { "n": { "$count": {} } } } }];
    let mut stream = c.aggregate_iter(&pipeline, &budget(20_000, None)).unwrap();
    stream.next().unwrap().unwrap();
    let files: Vec<_> = std::fs::read_dir(&spill)
        .unwrap()
        .map(|f| f.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "the partition is on disk");
    let len = std::fs::metadata(&files[0]).unwrap().len();
    std::fs::write(&files[0], vec![0xff; usize::try_from(len).unwrap()]).unwrap();
    let rest: Vec<Result<Document, Error>> = stream.by_ref().collect();
    assert!(rest.last().is_some_and(Result::is_err));
    drop(stream);
    assert_eq!(files_in(&spill), 0);
}

/// `$densify` holds its input and what it adds against the operation's budget: it does not
/// spill, so past the budget it is MongoDB's 292 naming it, with or without disk use.
#[test]
fn densify_holds_within_the_operations_budget() {
    let (db, _) = database("densify.odm", &numbered(100));
    let pipeline =
        [doc! { "$densify": { "field": "k", "range": { "step": 1, "bounds": "full" } } }];
    assert!(run(&db, &pipeline, &AggregateOptions::default()).is_ok());
    let err = run(&db, &pipeline, &budget(4096, None)).unwrap_err();
    assert_eq!(err.code(), 292, "{err}");
    assert!(
        err.to_string()
            .contains("Exceeded memory limit of 4096 bytes for $densify"),
        "{err}"
    );
    // Two documents, and about 1,000 added: past the budget by what is added.
    let (db, _) = database(
        "densify_added.odm",
        &[doc! { "_id": 0, "v": 0 }, doc! { "_id": 1, "v": 1000 }],
    );
    let pipeline =
        [doc! { "$densify": { "field": "v", "range": { "step": 1, "bounds": "full" } } }];
    assert_eq!(
        run(&db, &pipeline, &AggregateOptions::default())
            .unwrap()
            .len(),
        1001
    );
    let err = run(&db, &pipeline, &budget(4096, None)).unwrap_err();
    assert_eq!(err.code(), 292, "{err}");
    assert!(err.to_string().contains("4096 bytes for $densify"), "{err}");
}
