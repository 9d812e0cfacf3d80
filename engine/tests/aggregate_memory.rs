//! Aggregation streams and bounds what it holds: stages pull documents one at a time, `$group`
//! keeps running accumulators rather than documents, and only what must be held (a `$sort`'s
//! documents, a `$push`'s values) counts against the memory bound.

use bson::doc;
use odm_engine::aggregate::AggregateOptions;
use odm_engine::{Database, Error};

/// 110 documents of 1 MiB each: more than the 100 MiB a blocking stage may hold.
fn big_collection() -> Database {
    let db = Database::in_memory().unwrap();
    db.write(|t| {
        for i in 0..110 {
            t.insert_one(
                "c",
                doc! { "_id": i, "g": i % 3, "pad": "x".repeat(1 << 20) },
            )?;
        }
        Ok::<_, Error>(())
    })
    .unwrap();
    db
}

#[test]
fn group_keeps_running_totals_not_documents() {
    let db = big_collection();
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let groups = c
        .aggregate(
            &[
                doc! { "$group": { "_id": "$g", "n": { "$sum": 1 }, "avg": { "$avg": "$_id" }, "first": { "$first": "$_id" }, "max": { "$max": "$_id" } } },
                doc! { "$sort": { "_id": 1 } },
            ],
            &AggregateOptions::default(),
        )
        .unwrap();
    assert_eq!(groups.len(), 3);
    assert_eq!(
        groups[0],
        doc! { "_id": 0, "n": 37, "avg": 54.0, "first": 0, "max": 108 }
    );
    // One group holding the values themselves passes the bound, which spilling cannot help:
    // MongoDB's 146 (`ExceededMemoryLimit`).
    let err = c
        .aggregate(
            &[doc! { "$group": { "_id": null, "all": { "$push": "$pad" } } }],
            &AggregateOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), 146, "{err}");
    // A sort past the bound spills (disk use is allowed by default); without disk use it
    // fails, and says which stage did.
    let sort = [
        doc! { "$project": { "pad": 1 } },
        doc! { "$sort": { "pad": 1 } },
    ];
    let sorted = c.aggregate(&sort, &AggregateOptions::default()).unwrap();
    assert_eq!(sorted.len(), 110);
    let no_disk = AggregateOptions {
        allow_disk_use: Some(false),
        ..AggregateOptions::default()
    };
    let err = c.aggregate(&sort, &no_disk).unwrap_err();
    assert!(
        matches!(&err, Error::AggregateMemoryExceeded { stage, .. } if stage == "$sort"),
        "{err}"
    );
    // `$count` counts, holding nothing.
    let counted = c
        .aggregate(
            &[doc! { "$project": { "pad": 1 } }, doc! { "$count": "n" }],
            &AggregateOptions::default(),
        )
        .unwrap();
    assert_eq!(counted, [doc! { "n": 110 }]);
}

#[test]
fn stages_pull_documents_one_at_a_time() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! { "_id": 1, "d": 1 }).unwrap();
    c.insert_one(doc! { "_id": 2, "d": "not a number" })
        .unwrap();
    let txn = db.read().unwrap();
    let rc = txn.collection("c").unwrap().unwrap();
    // The second document would fail `$abs`; a `$limit` after the `$project` never pulls it.
    let pipeline = [
        doc! { "$project": { "v": { "$abs": "$d" } } },
        doc! { "$limit": 1 },
    ];
    let docs = rc
        .aggregate(&pipeline, &AggregateOptions::default())
        .unwrap();
    assert_eq!(docs, [doc! { "_id": 1, "v": 1 }]);
    // Pulled one by one, the failure comes with the document that causes it.
    let mut stream = rc
        .aggregate_iter(&pipeline[..1], &AggregateOptions::default())
        .unwrap();
    assert_eq!(stream.next().unwrap().unwrap(), doc! { "_id": 1, "v": 1 });
    assert!(stream.next().unwrap().is_err());
    // A `$skip` does not swallow an error in a skipped position.
    let err = rc.aggregate(
        &[
            doc! { "$project": { "v": { "$abs": "$d" } } },
            doc! { "$skip": 5 },
        ],
        &AggregateOptions::default(),
    );
    assert!(err.is_err());
}

#[test]
fn add_to_set_and_distinct_use_mongodb_equality() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    for (i, v) in [
        bson::Bson::Int32(1),
        bson::Bson::Double(1.0),
        bson::Bson::Int64(2),
        bson::Bson::String("1".into()),
    ]
    .into_iter()
    .enumerate()
    {
        c.insert_one(doc! { "_id": i as i32, "v": v }).unwrap();
    }
    let txn = db.read().unwrap();
    let rc = txn.collection("c").unwrap().unwrap();
    let set = rc
        .aggregate(
            &[doc! { "$group": { "_id": null, "s": { "$addToSet": "$v" } } }],
            &AggregateOptions::default(),
        )
        .unwrap();
    assert_eq!(set[0].get_array("s").unwrap().len(), 3);
    assert_eq!(rc.distinct_with("v", &doc! {}, None).unwrap().len(), 3);
}

/// Grouped by a field an index orders (here `_id`), `$group` reads the index in key order and
/// passes each group on when the key changes: it holds one group at a time, so the 110 MiB
/// of pushed values that a group holding every group at once could not hold go through.
#[test]
fn group_in_key_order_holds_one_group_at_a_time() {
    let db = big_collection();
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let pipeline = [
        doc! { "$group": { "_id": "$_id", "pads": { "$push": "$pad" } } },
        doc! { "$project": { "size": { "$strLenBytes": { "$arrayElemAt": ["$pads", 0] } } } },
    ];
    let groups = c
        .aggregate(&pipeline, &AggregateOptions::default())
        .unwrap();
    assert_eq!(groups.len(), 110);
    assert!(
        groups
            .iter()
            .all(|g| g.get_i32("size").ok() == Some(1 << 20))
    );
    // The same groups keyed by an expression no index orders must hold them all: they spill,
    // and without disk use they cannot.
    let unordered =
        [doc! { "$group": { "_id": { "$add": ["$_id", 0] }, "pads": { "$push": "$pad" } } }];
    let spilled = c
        .aggregate(&unordered, &AggregateOptions::default())
        .unwrap();
    assert_eq!(spilled.len(), 110);
    let no_disk = AggregateOptions {
        allow_disk_use: Some(false),
        ..AggregateOptions::default()
    };
    let err = c.aggregate(&unordered, &no_disk).unwrap_err();
    assert!(
        matches!(err, Error::AggregateMemoryExceeded { .. }),
        "{err}"
    );
}

/// In key order the bound still holds for the one group held: three groups of about 37
/// documents, each pushing 3 MiB, pass 100 MiB. One group cannot spill: MongoDB's 146
/// (`ExceededMemoryLimit`), as for one group past the budget of a `$group` in memory.
#[test]
fn a_group_in_key_order_past_the_bound_fails() {
    let db = big_collection();
    db.collection("c")
        .create_index(odm_engine::IndexSpec::ascending("g").unwrap())
        .unwrap();
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let pipeline = [
        doc! { "$group": { "_id": "$g", "pads": { "$push": { "a": "$pad", "b": "$pad", "c": "$pad" } } } },
    ];
    let explained = c
        .explain_aggregate(
            &[doc! { "$group": { "_id": "$g", "n": { "$sum": 1 } } }],
            &AggregateOptions::default(),
        )
        .unwrap();
    assert!(explained.stages[0].in_key_order);
    let err = c
        .aggregate(&pipeline, &AggregateOptions::default())
        .unwrap_err();
    assert_eq!(err.code(), 146, "{err}");
    assert!(err.to_string().contains("$group"), "{err}");
}

/// `$densify` adds at most MongoDB's 500,000 documents (`internalQueryMaxAllowedDensifyDocs`):
/// a wide range with a small step is error 5897900, not an exhausted memory (the fuzz target
/// `aggregate` found a range of 0 to 536,873,472 by 2 over three partitions).
#[test]
fn densify_refuses_to_add_more_than_mongodbs_limit_of_documents() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    for (id, val, part) in [(0, 0, 0), (1, 536_873_472, 1), (2, 4, 0)] {
        c.insert_one(&doc! { "_id": id, "val": val, "part": part })
            .unwrap();
    }
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    let pipeline = [doc! { "$densify": {
        "field": "val",
        "partitionByFields": ["part"],
        "range": { "step": 2, "bounds": "full" },
    } }];
    let err = coll
        .aggregate(&pipeline, &AggregateOptions::default())
        .unwrap_err();
    assert_eq!(err.code(), 5_897_900, "{err}");
    // Within the limit it fills as before.
    let small =
        [doc! { "$densify": { "field": "val", "range": { "step": 1, "bounds": [0, 10] } } }];
    let c2 = coll
        .aggregate(&small, &AggregateOptions::default())
        .unwrap();
    assert!(c2.len() >= 10);
}

/// A window function's value is copied into every document's output: `$push` over the whole
/// partition gives each of 20,000 documents the 20,000 values, some 12 GB of values from a
/// collection of half a megabyte. The stage holds the one accumulated value and makes each
/// copy as its document goes out, so a caller reading a few documents holds a few copies.
/// The accumulator's state counts while it is computed: past the budget, MongoDB's 5414201.
#[test]
fn window_values_copied_into_each_document_are_made_as_it_goes_out() {
    let db = Database::in_memory().unwrap();
    let docs: Vec<_> = (0..20_000).map(|i| doc! { "_id": i }).collect();
    db.collection("c").insert_many(docs, true).unwrap();
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let pipeline = [doc! { "$setWindowFields": { "output": { "all": { "$push": "$_id" } } } }];
    let first: Vec<_> = c
        .aggregate_iter(&pipeline, &AggregateOptions::default())
        .unwrap()
        .take(3)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(first.len(), 3);
    assert!(
        first
            .iter()
            .all(|d| d.get_array("all").unwrap().len() == 20_000)
    );
    // The 20,000 values pass a budget of 100 KB (the documents, 600 KB, go to disk).
    let small = AggregateOptions {
        memory_limit: Some(100_000),
        ..AggregateOptions::default()
    };
    let err = c.aggregate(&pipeline, &small).unwrap_err();
    assert_eq!(err.code(), 5_414_201, "{err}");
    // A window of a few documents around each stays small.
    let near = c
        .aggregate(
            &[doc! { "$setWindowFields": { "sortBy": { "_id": 1 }, "output": { "near": { "$push": "$_id", "window": { "documents": [-2, 2] } } } } }],
            &small,
        )
        .unwrap();
    assert_eq!(near.len(), 20_000);
    assert_eq!(near[0].get_array("near").unwrap().len(), 3);
}
