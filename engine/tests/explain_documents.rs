//! Explain documents read back into the typed form (`Explain::from_document`), as the typed
//! layer's MongoDB back end reads a server's explain: this engine's own documents round-trip,
//! and documents in the shapes MongoDB servers write (classic plans, slot-based plans nested
//! under `queryPlan`, express plans, a `mongos` wrapping shards) read as the same plan. Index
//! documents round-trip through `IndexSpec::from_document`, and what it cannot build is refused.

use bson::{Document, doc};
use odm_engine::aggregate::{AggregateExplain, AggregateOptions};
use odm_engine::query::{Explain, FindOptions, Routing};
use odm_engine::{CollectionOptions, Database, IndexSpec, IndexSpecError, ShardKey};

fn people() -> Database {
    let db = Database::in_memory().unwrap();
    db.write(|t| {
        t.create_collection_with(
            "people",
            CollectionOptions::default().with_shard_key(ShardKey::range(["region", "name"])?),
        )?;
        t.create_index("people", IndexSpec::ascending("age")?)?;
        t.create_index(
            "people",
            IndexSpec::from_keys_document(&doc! { "region": 1, "name": 1 })?,
        )?;
        for i in 0..40 {
            t.insert_one(
                "people",
                doc! { "_id": i, "name": format!("p{i}"), "age": i % 30, "region": if i % 2 == 0 { "eu" } else { "us" } },
            )?;
        }
        Ok::<_, odm_engine::Error>(())
    })
    .unwrap();
    db
}

fn explain(db: &Database, filter: Document, options: &FindOptions) -> Explain {
    let txn = db.read().unwrap();
    let people = txn.collection("people").unwrap().unwrap();
    people.explain(&filter, options).unwrap()
}

/// What a reader of an explain relies on.
fn summary(
    e: &Explain,
) -> (
    Option<String>,
    bool,
    bool,
    Option<Routing>,
    u64,
    u64,
    u64,
    String,
) {
    (
        e.index_used().map(str::to_owned),
        e.in_memory_sort,
        e.covered,
        e.routing.as_ref().map(|(_, r)| *r),
        e.keys_examined,
        e.docs_examined,
        e.returned,
        e.collection.clone(),
    )
}

#[test]
fn this_engines_explain_documents_read_back_as_the_same_plan() {
    let db = people();
    let sorted = FindOptions {
        sort: Some(doc! { "name": 1 }),
        ..FindOptions::default()
    };
    let backward = FindOptions {
        sort: Some(doc! { "age": -1 }),
        limit: Some(3),
        ..FindOptions::default()
    };
    let covered = FindOptions {
        projection: Some(doc! { "age": 1, "_id": 0 }),
        ..FindOptions::default()
    };
    let cases = [
        (doc! {}, FindOptions::default()),
        (doc! { "_id": 7 }, FindOptions::default()),
        (doc! { "age": { "$gte": 20 } }, FindOptions::default()),
        (doc! { "age": { "$gte": 20 } }, sorted),
        (doc! { "age": { "$lt": 25 } }, backward),
        (doc! { "age": 3 }, covered),
        (
            doc! { "region": "eu", "name": "p2" },
            FindOptions::default(),
        ),
        (
            doc! { "$or": [{ "age": 1 }, { "region": "us", "name": "p3" }] },
            FindOptions::default(),
        ),
    ];
    for (filter, options) in cases {
        let typed = explain(&db, filter.clone(), &options);
        let read = Explain::from_document(&typed.to_document(), None);
        assert_eq!(
            summary(&read),
            summary(&typed),
            "{filter}: {}",
            typed.to_document()
        );
        assert_eq!(read.rejected.len(), typed.rejected.len(), "{filter}");
        assert_eq!(
            std::mem::discriminant(&read.winning.access),
            std::mem::discriminant(&typed.winning.access),
            "{filter}"
        );
    }
}

#[test]
fn a_mongodb_servers_explain_reads_as_its_plan() {
    // A replica set member, classic engine, `executionStats`.
    let classic = doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": "app.people",
            "parsedQuery": { "age": { "$gte": 20 } },
            "winningPlan": {
                "stage": "SORT",
                "sortPattern": { "name": 1 },
                "inputStage": {
                    "stage": "FETCH",
                    "inputStage": {
                        "stage": "IXSCAN", "keyPattern": { "age": 1 }, "indexName": "age_1",
                        "isMultiKey": false, "direction": "backward",
                        "indexBounds": { "age": ["[MaxKey, 20]"] },
                    },
                },
            },
            "rejectedPlans": [{ "stage": "COLLSCAN", "direction": "forward" }],
        },
        "executionStats": {
            "executionSuccess": true, "nReturned": 12, "executionTimeMillis": 0,
            "totalKeysExamined": 12_i64, "totalDocsExamined": 12,
        },
        "ok": 1.0,
    };
    let e = Explain::from_document(&classic, None);
    assert_eq!(e.collection, "people");
    assert_eq!(e.index_used(), Some("age_1"));
    assert!(e.in_memory_sort && !e.covered);
    assert_eq!((e.keys_examined, e.docs_examined, e.returned), (12, 12, 12));
    assert_eq!(e.rejected.len(), 1);
    assert!(e.to_string().contains("age in [MaxKey, 20]"), "{e}");

    // The slot-based engine nests the classic tree under `queryPlan`; a projection answered
    // from the index alone has no FETCH.
    let sbe = doc! {
        "queryPlanner": {
            "namespace": "app.people",
            "winningPlan": { "queryPlan": {
                "stage": "PROJECTION_COVERED",
                "inputStage": { "stage": "IXSCAN", "indexName": "age_1", "direction": "forward",
                                "indexBounds": { "age": ["[3, 3]"] } },
            }, "slotBasedPlan": { "stages": "..." } },
            "rejectedPlans": [],
        },
        "executionStats": { "nReturned": 1, "totalKeysExamined": 1, "totalDocsExamined": 0 },
    };
    let e = Explain::from_document(&sbe, None);
    assert_eq!(e.index_used(), Some("age_1"));
    assert!(e.covered && !e.in_memory_sort);

    // MongoDB 8's express path for an `_id` equality.
    let express = doc! {
        "queryPlanner": { "namespace": "app.people", "winningPlan": {
            "stage": "EXPRESS_IXSCAN", "keyPattern": "{ _id: 1 }", "indexName": "_id_",
        } },
        "executionStats": { "nReturned": 1, "totalKeysExamined": 1, "totalDocsExamined": 1 },
    };
    let e = Explain::from_document(&express, None);
    assert!(
        matches!(e.winning.access, odm_engine::query::Access::IdLookup { .. }),
        "{e}"
    );

    // Through a mongos: one shard, or a merge over several.
    let key = ShardKey::range(["region", "name"]).unwrap();
    let through_mongos = |stage: &str| {
        doc! {
            "queryPlanner": { "mongosPlannerVersion": 1, "winningPlan": {
                "stage": stage,
                "shards": [{ "shardName": "shard-a", "namespace": "app.people", "winningPlan": {
                    "stage": "FETCH",
                    "inputStage": { "stage": "IXSCAN", "indexName": "region_1_name_1",
                                    "indexBounds": { "region": ["[\"eu\", \"eu\"]"], "name": ["[\"p2\", \"p2\"]"] } },
                } }],
            } },
            "executionStats": { "nReturned": 1, "totalKeysExamined": 1, "totalDocsExamined": 1 },
        }
    };
    let single = Explain::from_document(&through_mongos("SINGLE_SHARD"), Some(&key));
    assert_eq!(single.index_used(), Some("region_1_name_1"));
    assert_eq!(single.routing.map(|(_, r)| r), Some(Routing::SingleShard));
    let merged = Explain::from_document(&through_mongos("SHARD_MERGE"), Some(&key));
    assert_eq!(merged.routing.map(|(_, r)| r), Some(Routing::Broadcast));
    // Without a declared key there is nothing to route by.
    assert!(
        Explain::from_document(&through_mongos("SINGLE_SHARD"), None)
            .routing
            .is_none()
    );
}

#[test]
fn a_document_that_is_no_explain_reads_as_an_empty_plan_without_failing() {
    for document in [
        doc! {},
        doc! { "queryPlanner": 1 },
        doc! { "queryPlanner": { "winningPlan": { "stage": "OR", "inputStages": [1, "x"] } } },
        doc! { "executionStats": { "nReturned": -5, "totalKeysExamined": "many" } },
    ] {
        let e = Explain::from_document(&document, None);
        assert_eq!((e.returned, e.keys_examined), (0, 0), "{document}");
    }
    // A tree nested past any real plan's depth ends the walk instead of the stack.
    let mut deep = doc! { "stage": "IXSCAN", "indexName": "deep" };
    for _ in 0..500 {
        deep = doc! { "stage": "FETCH", "inputStage": deep };
    }
    let e = Explain::from_document(&doc! { "queryPlanner": { "winningPlan": deep } }, None);
    assert_eq!(e.index_used(), None);
}

#[test]
fn aggregate_explains_read_back_with_their_stages() {
    let db = people();
    let pipeline = [
        doc! { "$match": { "age": { "$gte": 10 } } },
        doc! { "$group": { "_id": "$region", "n": { "$sum": 1 } } },
    ];
    let txn = db.read().unwrap();
    let people = txn.collection("people").unwrap().unwrap();
    let typed = people
        .explain_aggregate(&pipeline, &AggregateOptions::default())
        .unwrap();
    let read = AggregateExplain::from_document(&typed.to_document(), None);
    assert_eq!(
        read.cursor.as_ref().and_then(Explain::index_used),
        Some("age_1")
    );
    assert_eq!(read.stages.len(), typed.stages.len());
    for (r, t) in read.stages.iter().zip(&typed.stages) {
        assert_eq!((&r.spec, r.returned), (&t.spec, t.returned));
    }
}

#[test]
fn a_collated_index_lists_its_collation_as_mongodb_does() {
    // Every field, defaults filled in; the short form given lists the same.
    let listed = doc! { "v": 2, "key": { "s": 1 }, "name": "s_1", "collation": {
    "locale": "fr", "caseLevel": false, "caseFirst": "off", "strength": 2,
    "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
    "normalization": false, "backwards": false, "version": "57.1" } };
    assert_eq!(
        IndexSpec::from_document(&listed).unwrap().to_document(),
        listed
    );
    let short = doc! { "key": { "s": 1 }, "collation": { "locale": "fr", "strength": 2 } };
    assert_eq!(
        IndexSpec::from_document(&short).unwrap().to_document(),
        listed
    );
    let unknown = doc! { "key": { "s": 1 }, "collation": { "locale": "xx-nowhere" } };
    let err = IndexSpec::from_document(&unknown).unwrap_err();
    assert!(
        matches!(&err, IndexSpecError::BadOption { option, .. } if option == "collation"),
        "{err}"
    );
}

#[test]
fn index_documents_round_trip_and_what_cannot_be_built_is_refused() {
    let documents = [
        doc! { "v": 2, "key": { "a": 1 }, "name": "a_1" },
        doc! { "v": 2, "key": { "a": 1, "b": -1 }, "name": "ab", "unique": true },
        doc! { "v": 2, "key": { "t": 1 }, "name": "t_1", "expireAfterSeconds": 3600_i64 },
        doc! { "v": 2, "key": { "e": 1 }, "name": "e_1", "sparse": true,
        "partialFilterExpression": { "e": { "$exists": true } } },
        doc! { "v": 2, "key": { "u": "hashed" }, "name": "u_hashed" },
    ];
    for document in documents {
        let spec = IndexSpec::from_document(&document).unwrap();
        assert_eq!(spec.to_document(), document);
    }
    // A server's spelling of the same index: numbers for flags, a 32-bit TTL, `ns`.
    let server = doc! { "v": 2, "key": { "t": 1 }, "name": "t_1", "expireAfterSeconds": 3600,
    "ns": "app.c", "background": true, "unique": 0 };
    assert_eq!(
        IndexSpec::from_document(&server).unwrap(),
        IndexSpec::from_document(&documents_ttl()).unwrap()
    );
    let refusals: [(Document, Expected); 10] = [
        (doc! { "name": "x" }, |e| {
            matches!(e, IndexSpecError::MissingKey)
        }),
        (doc! { "key": "a", "name": "x" }, |e| {
            matches!(e, IndexSpecError::WrongType { option: "key", .. })
        }),
        (doc! { "key": { "a": 1 }, "name": 1 }, |e| {
            matches!(
                e,
                IndexSpecError::WrongType {
                    option: "name",
                    found: "int",
                    ..
                }
            )
        }),
        (doc! { "key": { "a": 1 }, "unique": "yes" }, |e| {
            matches!(
                e,
                IndexSpecError::WrongType {
                    option: "unique",
                    ..
                }
            )
        }),
        (doc! { "key": { "a": 1 }, "sparse": null }, |e| {
            matches!(
                e,
                IndexSpecError::WrongType {
                    option: "sparse",
                    ..
                }
            )
        }),
        (
            doc! { "key": { "a": 1 }, "partialFilterExpression": [] },
            |e| {
                matches!(
                    e,
                    IndexSpecError::WrongType {
                        option: "partialFilterExpression",
                        ..
                    }
                )
            },
        ),
        (
            doc! { "key": { "a": 1 }, "expireAfterSeconds": -1 },
            |e| matches!(e, IndexSpecError::BadOption { option, .. } if option == "expireAfterSeconds"),
        ),
        (
            doc! { "key": { "a": 1 }, "hidden": true },
            |e| matches!(e, IndexSpecError::UnsupportedOption { option } if option == "hidden"),
        ),
        (
            doc! { "key": { "a": 1 }, "colation": { "locale": "fr" } },
            |e| matches!(e, IndexSpecError::UnknownOption { option } if option == "colation"),
        ),
        (doc! { "key": { "a": "geoHaystack" } }, |e| {
            matches!(e, IndexSpecError::UnsupportedKind { .. })
        }),
    ];
    for (document, expected) in refusals {
        let err = IndexSpec::from_document(&document).unwrap_err();
        assert!(expected(&err), "{document}: {err}");
    }
    // MongoDB's codes and words: FailedToParse for no key, TypeMismatch for a wrong type.
    let code = |document: Document| IndexSpec::from_document(&document).unwrap_err();
    let missing = code(doc! { "name": "x" });
    assert_eq!(missing.code().code, 9);
    assert_eq!(
        missing.to_string(),
        "The 'key' field is a required property of an index specification"
    );
    let wrong = code(doc! { "key": { "a": 1 }, "name": 1 });
    assert_eq!(wrong.code().code, 14);
    assert_eq!(
        wrong.to_string(),
        "The field 'name' must be a string, but got int"
    );
}

/// What a refusal must be.
type Expected = fn(&IndexSpecError) -> bool;

fn documents_ttl() -> Document {
    doc! { "v": 2, "key": { "t": 1 }, "name": "t_1", "expireAfterSeconds": 3600_i64 }
}

#[test]
fn shard_keys_read_as_mongodb_spells_them_and_others_are_refused() {
    assert_eq!(
        ShardKey::from_document(&doc! { "a": 1, "b": 1.0 }).unwrap(),
        ShardKey::range(["a", "b"]).unwrap()
    );
    assert_eq!(
        ShardKey::from_document(&doc! { "a": "hashed" }).unwrap(),
        ShardKey::hashed("a").unwrap()
    );
    for document in [
        doc! { "a": -1 },
        doc! { "a": "hashed", "b": 1 },
        doc! { "a": 2 },
        doc! {},
    ] {
        assert!(ShardKey::from_document(&document).is_err(), "{document}");
    }
}
