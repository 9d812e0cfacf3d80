//! `$out` and `$merge` through `Database::aggregate`: results written in one transaction, all or
//! nothing, indexes kept and consistent.

use bson::{Document, doc};
use odm_engine::aggregate::AggregateOptions;
use odm_engine::query::FindOptions;
use odm_engine::{Database, Error, IndexSpec};

fn database() -> Database {
    let db = Database::in_memory().unwrap();
    let sales = db.collection("sales");
    for (id, item, qty) in [(1, "a", 2), (2, "b", 1), (3, "a", 5), (4, "c", 7)] {
        sales
            .insert_one(&doc! { "_id": id, "item": item, "qty": qty })
            .unwrap();
    }
    db
}

fn all(db: &Database, collection: &str) -> Vec<Document> {
    let txn = db.read().unwrap();
    let Some(coll) = txn.collection(collection).unwrap() else {
        return Vec::new();
    };
    let options = FindOptions {
        sort: Some(doc! { "_id": 1 }),
        ..FindOptions::default()
    };
    coll.find(&doc! {}, &options)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn totals() -> Vec<Document> {
    vec![
        doc! { "$group": { "_id": "$item", "total": { "$sum": "$qty" } } },
        doc! { "$sort": { "_id": 1 } },
    ]
}

#[test]
fn out_replaces_the_target_documents_and_keeps_its_indexes() {
    let db = database();
    let totals_coll = db.collection("totals");
    totals_coll
        .insert_one(&doc! { "_id": "old", "total": 0 })
        .unwrap();
    totals_coll
        .create_index(IndexSpec::ascending("total").unwrap())
        .unwrap();
    let mut pipeline = totals();
    pipeline.push(doc! { "$out": "totals" });
    let returned = db
        .aggregate("sales", &pipeline, &AggregateOptions::default())
        .unwrap();
    assert!(returned.is_empty());
    assert_eq!(
        all(&db, "totals"),
        [
            doc! { "_id": "a", "total": 7 },
            doc! { "_id": "b", "total": 1 },
            doc! { "_id": "c", "total": 7 },
        ]
    );
    let names: Vec<String> = db
        .read()
        .unwrap()
        .list_indexes("totals")
        .iter()
        .map(|s| s.name().to_owned())
        .collect();
    assert_eq!(names, ["_id_", "total_1"]);
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn a_failing_out_leaves_the_target_as_it_was() {
    let db = database();
    let target = db.collection("by_qty");
    target.insert_one(&doc! { "_id": 1, "keep": true }).unwrap();
    target
        .create_index(IndexSpec::ascending("item").unwrap().unique())
        .unwrap();
    // Two results share item "a": the unique index refuses the second.
    let pipeline = [
        doc! { "$project": { "item": 1 } },
        doc! { "$out": "by_qty" },
    ];
    let err = db
        .aggregate("sales", &pipeline, &AggregateOptions::default())
        .unwrap_err();
    assert!(matches!(err, Error::DuplicateKey { .. }), "{err}");
    assert_eq!(all(&db, "by_qty"), [doc! { "_id": 1, "keep": true }]);
}

#[test]
fn merge_follows_when_matched_and_when_not_matched() {
    let db = database();
    let target = db.collection("totals");
    target
        .insert_one(&doc! { "_id": "a", "total": 100, "note": "kept" })
        .unwrap();
    let run = |merge: Document| {
        let mut pipeline = totals();
        pipeline.push(doc! { "$merge": merge });
        db.aggregate("sales", &pipeline, &AggregateOptions::default())
    };
    // The default: merge fields into a match, insert the rest.
    run(doc! { "into": "totals" }).unwrap();
    assert_eq!(
        all(&db, "totals"),
        [
            doc! { "_id": "a", "total": 7, "note": "kept" },
            doc! { "_id": "b", "total": 1 },
            doc! { "_id": "c", "total": 7 },
        ]
    );
    // Replace matches, discard the others.
    db.collection("totals")
        .delete_many(&doc! { "_id": { "$ne": "a" } })
        .unwrap();
    run(doc! { "into": "totals", "whenMatched": "replace", "whenNotMatched": "discard" }).unwrap();
    assert_eq!(all(&db, "totals"), [doc! { "_id": "a", "total": 7 }]);
    // Fail on a match: nothing of the run is written.
    let err = run(doc! { "into": "totals", "whenMatched": "fail" }).unwrap_err();
    // MongoDB's answer: a duplicate key on the `on` fields, with its pattern and value.
    assert!(
        matches!(&err, odm_engine::Error::DuplicateKey { key_pattern, .. } if **key_pattern == doc! { "_id": 1 }),
        "{err}"
    );
    assert_eq!(all(&db, "totals"), [doc! { "_id": "a", "total": 7 }]);
    // Merge on another field.
    let on_item = db.collection("on_item");
    on_item
        .insert_one(&doc! { "_id": 1, "item": "b", "total": 0 })
        .unwrap();
    let pipeline = [
        doc! { "$group": { "_id": "$item", "total": { "$sum": "$qty" } } },
        doc! { "$project": { "_id": 0, "item": "$_id", "total": 1 } },
        doc! { "$merge": { "into": "on_item", "on": "item", "whenNotMatched": "discard" } },
    ];
    db.aggregate("sales", &pipeline, &AggregateOptions::default())
        .unwrap();
    assert_eq!(
        all(&db, "on_item"),
        [doc! { "_id": 1, "item": "b", "total": 1 }]
    );
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn output_stages_are_refused_where_they_cannot_write() {
    let db = database();
    let txn = db.read().unwrap();
    let coll = txn.collection("sales").unwrap().unwrap();
    let err = coll
        .aggregate(&[doc! { "$out": "x" }], &AggregateOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("last stage"), "{err}");
    drop(txn);
    for bad in [
        doc! { "$out": { "db": "other", "coll": "x" } },
        doc! { "$merge": { "into": "x", "whenMatched": [{ "$set": { "a": 1 } }] } },
        doc! { "$merge": { "into": "x", "whenNotMatched": "upsert" } },
        doc! { "$merge": { "into": "x", "on": 5 } },
    ] {
        assert!(
            db.aggregate(
                "sales",
                std::slice::from_ref(&bad),
                &AggregateOptions::default()
            )
            .is_err(),
            "{bad}"
        );
    }
    // `$out` in the middle is refused too.
    assert!(
        db.aggregate(
            "sales",
            &[doc! { "$out": "x" }, doc! { "$match": {} }],
            &AggregateOptions::default()
        )
        .is_err()
    );
    assert_eq!(all(&db, "x"), Vec::<Document>::new());
}

#[test]
fn a_check_accepts_a_final_output_stage_and_refuses_one_elsewhere() {
    let options = AggregateOptions::default();
    assert!(options.check(&[doc! { "$out": "x" }]).is_ok());
    assert!(
        options
            .check(&[doc! { "$match": {} }, doc! { "$merge": { "into": "x" } }])
            .is_ok()
    );
    assert!(
        options
            .check(&[doc! { "$out": "x" }, doc! { "$match": {} }])
            .is_err()
    );
    assert!(
        options.check(&[doc! { "$out": 5 }]).is_err(),
        "a malformed $out"
    );
}
