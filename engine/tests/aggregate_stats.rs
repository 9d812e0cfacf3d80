//! `$collStats` and `$indexStats`: what they report agrees with the collection and with the
//! operations run on it.

use bson::{Bson, Document, doc};
use odm_engine::aggregate::AggregateOptions;
use odm_engine::query::FindOptions;
use odm_engine::{Database, IndexSpec};

fn aggregate(db: &Database, pipeline: &[Document]) -> Vec<Document> {
    db.aggregate("items", pipeline, &AggregateOptions::default())
        .unwrap()
}

fn database() -> Database {
    let db = Database::in_memory().unwrap();
    let items = db.collection("items");
    for i in 0..50 {
        items
            .insert_one(&doc! { "_id": i, "k": i % 5, "text": "x".repeat(100) })
            .unwrap();
    }
    items
        .create_index(IndexSpec::ascending("k").unwrap())
        .unwrap();
    db
}

#[test]
fn coll_stats_counts_and_sizes_agree_with_database_stats() {
    let db = database();
    let out = aggregate(
        &db,
        &[doc! { "$collStats": { "count": {}, "storageStats": { "scale": 1 } } }],
    );
    assert_eq!(out.len(), 1);
    let report = &out[0];
    assert_eq!(
        report.get_document("count").unwrap().get_i64("count").ok(),
        Some(50)
    );
    let storage = report.get_document("storageStats").unwrap();
    let stats = db.stats().unwrap();
    let items = stats
        .collections
        .iter()
        .find(|c| c.name == "items")
        .unwrap();
    assert_eq!(storage.get_i64("count").ok(), Some(50));
    assert_eq!(storage.get_i64("size").ok(), Some(items.data_bytes as i64));
    assert_eq!(
        storage.get_i64("storageSize").ok(),
        Some(items.storage_bytes as i64)
    );
    // MongoDB counts and lists the `_id` index, whose pages are the documents' own.
    assert_eq!(
        storage.get_i32("nindexes").ok(),
        Some(items.indexes.len() as i32 + 1)
    );
    let sizes = storage.get_document("indexSizes").unwrap();
    assert_eq!(sizes.get_i64("_id_").ok(), Some(0));
    for index in &items.indexes {
        assert_eq!(
            sizes.get_i64(&index.name).ok(),
            Some(index.storage_bytes as i64)
        );
    }
    // A scale divides every size.
    let scaled = aggregate(
        &db,
        &[doc! { "$collStats": { "storageStats": { "scale": 1024 } } }],
    );
    let scaled = scaled[0].get_document("storageStats").unwrap();
    assert_eq!(
        scaled.get_i64("size").ok(),
        Some(items.data_bytes as i64 / 1024)
    );
    // Later stages see the report; `$collStats` anywhere else is refused.
    let projected = aggregate(
        &db,
        &[
            doc! { "$collStats": { "count": {} } },
            doc! { "$project": { "_id": 0, "n": "$count.count" } },
        ],
    );
    assert_eq!(projected, [doc! { "n": 50_i64 }]);
    let misplaced = db.aggregate(
        "items",
        &[doc! { "$match": {} }, doc! { "$collStats": {} }],
        &AggregateOptions::default(),
    );
    assert!(misplaced.is_err());
    // Latencies are not measured, so they are refused rather than made up.
    assert!(
        db.aggregate(
            "items",
            &[doc! { "$collStats": { "latencyStats": {} } }],
            &AggregateOptions::default(),
        )
        .is_err()
    );
}

#[test]
fn index_stats_count_the_operations_that_read_each_index() {
    let db = database();
    let ops = |db: &Database| -> Vec<(String, i64)> {
        aggregate(db, &[doc! { "$indexStats": {} }])
            .iter()
            .map(|d| {
                let accesses = d.get_document("accesses").unwrap();
                assert!(matches!(accesses.get("since"), Some(Bson::DateTime(_))));
                (
                    d.get_str("name").unwrap().to_owned(),
                    accesses.get_i64("ops").unwrap(),
                )
            })
            .collect()
    };
    // Every index, the `_id` index first, as MongoDB lists them.
    assert_eq!(ops(&db), [("_id_".to_owned(), 0), ("k_1".to_owned(), 0)]);
    let txn = db.read().unwrap();
    let items = txn.collection("items").unwrap().unwrap();
    for k in 0..3 {
        let found: Vec<_> = items
            .find(&doc! { "k": k }, &FindOptions::default())
            .unwrap()
            .collect();
        assert_eq!(found.len(), 10);
    }
    // A query the index cannot serve does not count.
    let _ = items
        .find(&doc! { "text": "y" }, &FindOptions::default())
        .unwrap()
        .count();
    // A lookup by `_id` counts for the `_id` index.
    let by_id = items
        .find(&doc! { "_id": 1 }, &FindOptions::default())
        .unwrap()
        .count();
    assert_eq!(by_id, 1);
    drop(items);
    drop(txn);
    assert_eq!(ops(&db), [("_id_".to_owned(), 1), ("k_1".to_owned(), 3)]);
    let stats = aggregate(&db, &[doc! { "$indexStats": {} }]);
    assert_eq!(
        stats[0]
            .get_document("spec")
            .unwrap()
            .get_document("key")
            .unwrap(),
        &doc! { "_id": 1 }
    );
    let spec = stats[1].get_document("spec").unwrap().clone();
    assert_eq!(spec.get_document("key").unwrap(), &doc! { "k": 1 });
}

/// An `$or` whose branches both read one index is one operation on it, as MongoDB counts.
#[test]
fn an_or_reading_one_index_twice_counts_one_operation() {
    let db = database();
    let txn = db.read().unwrap();
    let items = txn.collection("items").unwrap().unwrap();
    let filter = doc! { "$or": [{ "k": 0 }, { "k": 1 }] };
    let explained = items.explain(&filter, &FindOptions::default()).unwrap();
    assert_eq!(explained.winning.indexes(), ["k_1"], "{explained:?}");
    let found = items
        .find(&filter, &FindOptions::default())
        .unwrap()
        .count();
    assert_eq!(found, 20);
    drop(items);
    drop(txn);
    let k = aggregate(&db, &[doc! { "$indexStats": {} }])
        .into_iter()
        .find(|d| d.get_str("name").is_ok_and(|n| n == "k_1"))
        .unwrap();
    assert_eq!(
        k.get_document("accesses").unwrap().get_i64("ops").unwrap(),
        1
    );
}
