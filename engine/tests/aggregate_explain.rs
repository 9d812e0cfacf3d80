//! Explain of a pipeline: the find its head runs as, then each stage with what it passed on;
//! and the plans the head takes for a `$group` (only the fields it reads; an index read in key
//! order when the key is one indexed field).

use bson::{Bson, Document, doc};
use odm_engine::aggregate::{AggregateExplain, AggregateOptions};
use odm_engine::{Database, Direction, IndexSpec};

/// Fifty documents over five states, with a population each.
fn zips() -> Database {
    let db = Database::in_memory().unwrap();
    let states = ["CA", "NY", "TX", "MA", "WA"];
    for i in 0..50 {
        db.collection("zips")
            .insert_one(&doc! { "_id": i, "state": states[i as usize % 5], "pop": i * 100, "city": format!("c{i}") })
            .unwrap();
    }
    db
}

fn explain(db: &Database, pipeline: &[Document]) -> AggregateExplain {
    let txn = db.read().unwrap();
    let c = txn.collection("zips").unwrap().unwrap();
    c.explain_aggregate(pipeline, &AggregateOptions::default())
        .unwrap()
}

fn run(db: &Database, pipeline: &[Document]) -> Vec<Document> {
    let txn = db.read().unwrap();
    let c = txn.collection("zips").unwrap().unwrap();
    c.aggregate(pipeline, &AggregateOptions::default()).unwrap()
}

#[test]
fn each_stage_reports_what_it_passed_on() {
    let db = zips();
    let pipeline = [
        doc! { "$match": { "pop": { "$gte": 1000 } } },
        doc! { "$project": { "state": 1, "pop": 1 } },
        doc! { "$group": { "_id": "$state", "total": { "$sum": "$pop" } } },
        doc! { "$limit": 3 },
    ];
    let explained = explain(&db, &pipeline);
    let cursor = explained.cursor.as_ref().unwrap();
    assert_eq!(cursor.returned, 40);
    let names: Vec<&str> = explained
        .stages
        .iter()
        .map(|s| s.spec.keys().next().unwrap().as_str())
        .collect();
    assert_eq!(names, ["$project", "$group", "$limit"]);
    let returned: Vec<u64> = explained.stages.iter().map(|s| s.returned).collect();
    // Each stage passes on what the next one pulls: `$limit` stops after 3 of the 5 groups.
    assert_eq!(returned, [40, 3, 3]);
    // MongoDB's shape: a `$cursor` entry, then each stage with its counts.
    let shown = explained.to_document();
    let stages = shown.get_array("stages").unwrap();
    assert_eq!(stages.len(), 4);
    let first = stages[0].as_document().unwrap();
    assert!(
        first
            .get_document("$cursor")
            .unwrap()
            .contains_key("queryPlanner")
    );
    assert_eq!(first.get_i32("nReturned").ok(), Some(40));
    let group = stages[2].as_document().unwrap();
    assert!(group.contains_key("$group"));
    assert_eq!(group.get_i32("nReturned").ok(), Some(3));
    // Explain runs the pipeline; the results are the pipeline's own.
    assert_eq!(run(&db, &pipeline).len(), 3);
}

#[test]
fn a_pipeline_that_is_all_find_explains_as_the_find() {
    let db = zips();
    let explained = explain(
        &db,
        &[
            doc! { "$match": { "state": "CA" } },
            doc! { "$sort": { "pop": -1 } },
            doc! { "$limit": 2 },
        ],
    );
    assert!(explained.stages.is_empty());
    let shown = explained.to_document();
    assert!(shown.contains_key("queryPlanner"), "{shown}");
    assert_eq!(explained.cursor.unwrap().returned, 2);
}

#[test]
fn group_on_an_indexed_field_reads_the_index_in_key_order() {
    let db = zips();
    let pipeline = [doc! { "$group": { "_id": "$state", "n": { "$sum": 1 } } }];
    let unindexed = explain(&db, &pipeline);
    assert!(!unindexed.stages[0].in_key_order);
    let mut expected = run(&db, &pipeline);
    expected.sort_by_key(|d| d.get_str("_id").unwrap().to_owned());

    db.collection("zips")
        .create_index(IndexSpec::new([("state", Direction::Ascending)]).unwrap())
        .unwrap();
    let explained = explain(&db, &pipeline);
    let cursor = explained.cursor.as_ref().unwrap();
    assert_eq!(cursor.index_used(), Some("state_1"));
    // `state` is all the group reads, and the index holds it: no document is read.
    assert!(cursor.covered, "{cursor}");
    assert_eq!(cursor.docs_examined, 0);
    assert!(explained.stages[0].in_key_order);
    // Groups come out in key order; they are the groups of the scan.
    assert_eq!(run(&db, &pipeline), expected);
    let shown = explained.to_document();
    let group = shown.get_array("stages").unwrap()[1].as_document().unwrap();
    assert_eq!(group.get_bool("inKeyOrder").ok(), Some(true));
}

#[test]
fn sort_by_count_on_an_indexed_field_reads_the_index_in_key_order() {
    let db = zips();
    db.collection("zips")
        .create_index(
            IndexSpec::new([
                ("state", Direction::Descending),
                ("pop", Direction::Ascending),
            ])
            .unwrap(),
        )
        .unwrap();
    let pipeline = [doc! { "$sortByCount": "$state" }];
    let explained = explain(&db, &pipeline);
    assert!(explained.stages[0].in_key_order);
    assert!(explained.cursor.as_ref().unwrap().covered);
    let counts = run(&db, &pipeline);
    assert_eq!(counts.len(), 5);
    assert!(
        counts
            .iter()
            .all(|d| d.get("count") == Some(&Bson::Int32(10)))
    );
}

#[test]
fn a_group_reading_unindexed_fields_fetches_but_still_streams() {
    let db = zips();
    db.collection("zips")
        .create_index(IndexSpec::new([("state", Direction::Ascending)]).unwrap())
        .unwrap();
    let pipeline = [
        doc! { "$group": { "_id": "$state", "total": { "$sum": "$pop" }, "cities": { "$addToSet": "$city" } } },
    ];
    let explained = explain(&db, &pipeline);
    let cursor = explained.cursor.as_ref().unwrap();
    assert!(!cursor.covered);
    assert_eq!(cursor.docs_examined, 50);
    assert!(explained.stages[0].in_key_order);
    let groups = run(&db, &pipeline);
    let ca = groups
        .iter()
        .find(|g| g.get_str("_id").ok() == Some("CA"))
        .unwrap();
    assert_eq!(ca.get_array("cities").unwrap().len(), 10);
    assert_eq!(
        ca.get_i32("total").ok(),
        Some((0..50).filter(|i| i % 5 == 0).map(|i| i * 100).sum())
    );
}

#[test]
fn a_group_on_a_multikey_index_groups_by_hash() {
    let db = zips();
    db.collection("zips")
        .insert_one(&doc! { "_id": 99, "state": ["CA", "NY"], "pop": 1 })
        .unwrap();
    db.collection("zips")
        .create_index(IndexSpec::new([("state", Direction::Ascending)]).unwrap())
        .unwrap();
    let pipeline = [doc! { "$group": { "_id": "$state", "n": { "$sum": 1 } } }];
    assert!(!explain(&db, &pipeline).stages[0].in_key_order);
    // The array is a key of its own.
    assert_eq!(run(&db, &pipeline).len(), 6);
}

#[test]
fn an_error_in_key_order_ends_the_groups_with_it() {
    let db = zips();
    db.collection("zips")
        .insert_one(&doc! { "_id": 100, "state": "NY", "pop": 1, "extra": 5 })
        .unwrap();
    db.collection("zips")
        .create_index(IndexSpec::new([("state", Direction::Ascending)]).unwrap())
        .unwrap();
    // `$mergeObjects` refuses a number (40400): in key order as in a hash group.
    let pipeline = [doc! { "$group": { "_id": "$state", "m": { "$mergeObjects": "$extra" } } }];
    let counted = doc! { "$group": { "_id": "$state", "n": { "$sum": 1 } } };
    assert!(explain(&db, &[counted]).stages[0].in_key_order);
    assert!(run_err(&db, &pipeline).contains("$mergeObjects"));
    assert!(explain_err(&db, &pipeline).contains("$mergeObjects"));
    let txn = db.read().unwrap();
    let c = txn.collection("zips").unwrap().unwrap();
    let results: Vec<_> = c
        .aggregate_iter(&pipeline, &AggregateOptions::default())
        .unwrap()
        .collect();
    // Groups before NY come out; then the error, and nothing after it.
    let failed = results.iter().position(Result::is_err).expect("an error");
    assert_eq!(failed, results.len() - 1, "{results:?}");
    assert!(
        results[..failed]
            .iter()
            .all(|r| r.as_ref().unwrap().get_str("_id").unwrap() < "NY")
    );
}

fn explain_err(db: &Database, pipeline: &[Document]) -> String {
    let txn = db.read().unwrap();
    let c = txn.collection("zips").unwrap().unwrap();
    c.explain_aggregate(pipeline, &AggregateOptions::default())
        .unwrap_err()
        .to_string()
}

fn run_err(db: &Database, pipeline: &[Document]) -> String {
    let txn = db.read().unwrap();
    let c = txn.collection("zips").unwrap().unwrap();
    c.aggregate(pipeline, &AggregateOptions::default())
        .unwrap_err()
        .to_string()
}

#[test]
fn a_final_out_is_listed_not_run() {
    let db = zips();
    let explained = explain(
        &db,
        &[
            doc! { "$match": { "state": "CA" } },
            doc! { "$project": { "pop": 1 } },
            doc! { "$out": "copy" },
        ],
    );
    let last = explained.stages.last().unwrap();
    assert!(last.spec.contains_key("$out"));
    assert_eq!(last.returned, 10);
    // Nothing was written.
    assert!(db.read().unwrap().collection("copy").unwrap().is_none());
    // A malformed one is an error, as it would be when run.
    let err = explain_err(&db, &[doc! { "$merge": { "into": "copy", "bogus": 1 } }]);
    assert!(err.contains("bogus"), "{err}");
}

#[test]
fn a_first_stage_with_its_own_documents_is_listed_first() {
    let db = zips();
    let explained = explain(
        &db,
        &[
            doc! { "$indexStats": {} },
            doc! { "$project": { "name": 1 } },
        ],
    );
    assert!(explained.cursor.is_none());
    let names: Vec<&str> = explained
        .stages
        .iter()
        .map(|s| s.spec.keys().next().unwrap().as_str())
        .collect();
    assert_eq!(names, ["$indexStats", "$project"]);
    assert_eq!(explained.stages[0].returned, 1);
    assert_eq!(explained.stages[1].returned, 1);
}
