//! MongoDB's limits, each refused with a clear error and no change: BSON nesting depth, array
//! padding by an update, and every integer argument that becomes an index, a length or a count.
//! Also panic containment: a panic inside a write closure aborts the transaction, the database
//! stays usable and the file reopens without repair.

use bson::{Bson, Document, doc};
use odm_engine::aggregate::AggregateOptions;
use odm_engine::query::FindOptions;
use odm_engine::update::UpdateOptions;
use odm_engine::{Database, DocumentError, Error, IndexSpec};

fn nested(depth: usize) -> Document {
    // `depth` levels of objects under the top-level document, MongoDB's way of counting: the
    // top-level document is level 0, each embedded object or array one more.
    let mut value = Bson::Int32(1);
    for _ in 0..depth {
        value = Bson::Document(doc! { "a": value });
    }
    doc! { "_id": 1, "x": value }
}

fn collection_bytes(db: &Database, name: &str) -> Vec<Vec<u8>> {
    let txn = db.read().unwrap();
    let Some(c) = txn.collection(name).unwrap() else {
        return Vec::new();
    };
    c.scan()
        .unwrap()
        .map(|d| d.unwrap().bytes().to_vec())
        .collect()
}

#[test]
fn nesting_deeper_than_100_levels_is_refused() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(nested(99)).unwrap();
    let err = c
        .insert_one(doc! { "_id": 2, "x": nested(100).remove("x").unwrap() })
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidDocument {
                source: DocumentError::TooDeep { max: 100 },
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.code(), 15, "{err}");
    // Thousands of levels: refused, not a stack overflow.
    assert!(c.insert_one(nested(1_000)).is_err());
    assert_eq!(c.count().unwrap(), 1);
}

#[test]
fn an_update_cannot_nest_past_the_limit() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! { "_id": 1 }).unwrap();
    let before = collection_bytes(&db, "c");
    let deep = nested(150).remove("x").unwrap();
    let err = c
        .update_one(
            &doc! { "_id": 1 },
            doc! { "$set": { "y": deep } },
            &UpdateOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), 15, "{err}");
    assert_eq!(collection_bytes(&db, "c"), before);
}

#[test]
fn deeply_nested_filters_updates_and_pipelines_are_refused_not_overflowed() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! { "_id": 1, "a": 1 }).unwrap();
    let mut filter = doc! { "a": 1 };
    for _ in 0..1_000 {
        filter = doc! { "$and": [filter] };
    }
    let txn = db.read().unwrap();
    let rc = txn.collection("c").unwrap().unwrap();
    assert!(rc.find(&filter, &FindOptions::default()).is_err());
    let deep_expr = || {
        let mut expr = Bson::String("$a".into());
        for _ in 0..1_000 {
            expr = Bson::Document(doc! { "$abs": expr });
        }
        expr
    };
    let pipeline = vec![doc! { "$project": { "v": deep_expr() } }];
    assert!(
        rc.aggregate(&pipeline, &AggregateOptions::default())
            .is_err()
    );
    drop(txn);
    assert!(
        c.update_one(
            &doc! {},
            vec![doc! { "$set": { "v": deep_expr() } }],
            &UpdateOptions::default()
        )
        .is_err()
    );
}

#[test]
fn huge_array_positions_in_update_paths_are_refused() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! { "_id": 1, "a": [1, 2] }).unwrap();
    let before = collection_bytes(&db, "c");
    for path in [
        "a.18446744073709551615",
        "a.18446744073709551616",
        "a.20000000",
        "a.1500002",
        "a.9223372036854775807.b",
    ] {
        let err = c
            .update_one(
                &doc! { "_id": 1 },
                doc! { "$set": { path: 1 } },
                &UpdateOptions::default(),
            )
            .unwrap_err();
        assert!(matches!(err, Error::InvalidUpdate(_)), "{path}: {err}");
        assert_eq!(collection_bytes(&db, "c"), before, "{path}");
    }
    // Padding up to the limit is allowed (1,500,000 new elements at most).
    c.update_one(
        &doc! { "_id": 1 },
        doc! { "$set": { "a.1500001": 1 } },
        &UpdateOptions::default(),
    )
    .unwrap();
}

#[test]
fn extreme_slice_skip_and_limit_arguments_do_not_overflow() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! { "_id": 1, "a": [1, 2, 3] }).unwrap();
    let txn = db.read().unwrap();
    let rc = txn.collection("c").unwrap().unwrap();
    for slice in [
        Bson::Array(vec![Bson::Int32(1), Bson::Int64(i64::MAX)]),
        Bson::Array(vec![Bson::Int64(i64::MIN), Bson::Int64(i64::MAX)]),
        Bson::Array(vec![Bson::Int64(i64::MAX), Bson::Int32(1)]),
        Bson::Int64(i64::MIN),
        Bson::Int64(i64::MAX),
    ] {
        let options = FindOptions {
            projection: Some(doc! { "a": { "$slice": slice.clone() } }),
            ..FindOptions::default()
        };
        // Either answer is fine; a panic is not.
        let _ = rc
            .find(&doc! {}, &options)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>);
    }
    let extremes = [
        Bson::Int64(i64::MAX),
        Bson::Int64(i64::MIN),
        Bson::Int64(i64::MAX - 1),
        Bson::Double(1e300),
    ];
    for n in &extremes {
        for stage in [
            doc! { "$skip": n.clone() },
            doc! { "$limit": n.clone() },
            doc! { "$project": { "v": { "$slice": ["$a", n.clone()] } } },
            doc! { "$project": { "v": { "$slice": ["$a", n.clone(), n.clone()] } } },
            doc! { "$project": { "v": { "$slice": ["$a", -1, n.clone()] } } },
            doc! { "$project": { "v": { "$arrayElemAt": ["$a", n.clone()] } } },
            doc! { "$project": { "v": { "$substrCP": ["abc", n.clone(), n.clone()] } } },
            doc! { "$project": { "v": { "$substrBytes": ["abc", n.clone(), n.clone()] } } },
            doc! { "$project": { "v": { "$substr": ["abc", n.clone(), n.clone()] } } },
            doc! { "$project": { "v": { "$range": [0, n.clone(), n.clone()] } } },
            doc! { "$project": { "v": { "$range": [n.clone(), 0, -1] } } },
        ] {
            let _ = rc.aggregate(&[doc! { "$skip": 0 }, stage], &AggregateOptions::default());
        }
    }
    // `$range` producing more than the memory bound is refused, not allocated.
    let err = rc
        .aggregate(
            &[doc! { "$project": { "v": { "$range": [0, i64::from(i32::MAX)] } } }],
            &AggregateOptions::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("$range"), "{err}");
}

#[test]
fn a_skip_past_every_document_returns_nothing() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! { "_id": 1 }).unwrap();
    let txn = db.read().unwrap();
    let rc = txn.collection("c").unwrap().unwrap();
    let docs = rc
        .aggregate(
            &[doc! { "$skip": i64::MAX }, doc! { "$skip": i64::MAX }],
            &AggregateOptions::default(),
        )
        .unwrap();
    assert!(docs.is_empty());
}

#[test]
fn a_panic_in_a_write_closure_aborts_and_the_database_stays_usable() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.insert_one(doc! { "_id": 1 }).unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = db.write(|t| -> Result<(), Error> {
            t.insert_one("c", doc! { "_id": 2 })?;
            panic!("user code fails inside the transaction");
        });
    }));
    assert!(result.is_err());
    assert_eq!(
        c.count().unwrap(),
        1,
        "the panicking transaction left nothing"
    );
    c.insert_one(doc! { "_id": 3 }).unwrap();
    assert_eq!(c.count().unwrap(), 2);
    assert!(db.verify().unwrap().is_clean());
}

#[test]
fn a_file_reopens_without_repair_after_a_panic_in_a_write() {
    let dir = std::env::temp_dir().join(format!("odm-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("panic.odm");
    let _ = std::fs::remove_file(&path);
    {
        let db = Database::open(&path).unwrap();
        db.collection("c").insert_one(doc! { "_id": 1 }).unwrap();
        db.collection("c")
            .create_index(IndexSpec::ascending("a").unwrap())
            .unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = db.write(|t| -> Result<(), Error> {
                t.insert_one("c", doc! { "_id": 2, "a": 5 })?;
                panic!("boom");
            });
        }));
        assert!(result.is_err());
        db.collection("c").insert_one(doc! { "_id": 3 }).unwrap();
    }
    // redb reports a file that needs repair through `Database::builder().open` failing or
    // taking the repair path; a clean file opens with no repair callback invoked.
    let repaired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = repaired.clone();
    let raw = redb::Database::builder()
        .set_repair_callback(move |_| flag.store(true, std::sync::atomic::Ordering::SeqCst))
        .open(&path)
        .unwrap();
    drop(raw);
    assert!(
        !repaired.load(std::sync::atomic::Ordering::SeqCst),
        "the file needed repair"
    );
    let db = Database::open(&path).unwrap();
    assert_eq!(db.collection("c").count().unwrap(), 2);
    assert!(db.verify().unwrap().is_clean());
    let _ = std::fs::remove_dir_all(&dir);
}
