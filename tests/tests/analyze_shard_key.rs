//! MongoDB's `analyzeShardKey` and `configureQueryAnalyzer` on an embedded file (S6, S17),
//! checked on data whose answers are known by construction: a key that grows with insertion
//! order is monotonic (and one that shrinks), a shuffled or hashed one is not, a key with one
//! hot value shows it first, missing fields count as null, arrays are refused, and a known mix
//! of sampled reads and writes gives known percentages.

use bson::{Bson, Document, RawDocumentBuf, doc};
use odm::Document as _;
use odm_advisor::{AnalyzeError, AnalyzeOptions, Monotonicity, analyze_shard_key};
use odm_engine::sampling::{AnalyzerMode, SampledCommand};
use odm_engine::{Database, IndexSpec, ShardKey};
use serde::{Deserialize, Serialize};

const N: i64 = 2000;

fn key(d: Document) -> ShardKey {
    ShardKey::from_document(&d).unwrap()
}

/// An ObjectId made at second `n` after a fixed time: ids made later sort later, as a
/// driver's do.
fn oid(n: i64) -> bson::oid::ObjectId {
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&(1_700_000_000 + n as u32).to_be_bytes());
    bson::oid::ObjectId::from_bytes(bytes)
}

/// `N` documents inserted in `_id` (ObjectId) order: `t` grows with it, `down` shrinks, `r` is a
/// shuffle, `hot` is "hot" on half of them and distinct elsewhere, `m` is missing on every
/// other one, `k` is a coarse prefix of `t` (ten values).
fn events() -> Database {
    let db = Database::in_memory().unwrap();
    db.write(|t| {
        for i in 0..N {
            let mut d = doc! {
                "_id": oid(i),
                "t": i,
                "down": N - i,
                "r": (i * 7919) % N,
                "hot": if i % 2 == 0 { Bson::from("hot") } else { Bson::from(format!("v{i}")) },
                "k": i / (N / 10),
            };
            if i % 2 == 1 {
                d.insert("m", i);
            }
            t.insert_one("events", RawDocumentBuf::try_from(&d).unwrap())?;
        }
        for spec in [
            IndexSpec::ascending("t").unwrap(),
            IndexSpec::ascending("down").unwrap(),
            IndexSpec::ascending("hot").unwrap(),
            IndexSpec::ascending("m").unwrap(),
            IndexSpec::from_keys_document(&doc! { "r": "hashed" }).unwrap(),
            IndexSpec::from_keys_document(&doc! { "k": 1, "t": 1 }).unwrap(),
        ] {
            t.create_index("events", spec)?;
        }
        Ok::<_, odm_engine::Error>(())
    })
    .unwrap();
    db
}

/// The key characteristics of `k` on `collection` (asked for alone).
fn characteristics(
    db: &Database,
    collection: &str,
    k: Document,
) -> odm_advisor::KeyCharacteristics {
    analyze_shard_key(db, collection, &key(k), &characteristics_only())
        .unwrap()
        .key_characteristics
        .unwrap()
}

fn characteristics_only() -> AnalyzeOptions {
    AnalyzeOptions {
        read_write_distribution: false,
        ..AnalyzeOptions::default()
    }
}

#[test]
fn keys_that_follow_insertion_order_either_way_are_monotonic_shuffled_and_hashed_ones_are_not() {
    let db = events();
    let analyze = |k: Document| characteristics(&db, "events", k);
    let t = analyze(doc! { "t": 1 });
    assert_eq!(t.monotonicity, Monotonicity::Monotonic);
    assert_eq!(t.correlation, Some(1.0));
    assert_eq!(
        (t.num_docs_total, t.num_distinct_values),
        (N as u64, N as u64)
    );
    assert!(!t.is_unique, "the index on t is not unique");
    let down = analyze(doc! { "down": 1 });
    assert_eq!(down.monotonicity, Monotonicity::Monotonic);
    assert_eq!(down.correlation, Some(-1.0));
    // A coarse prefix before the time: still in insertion order.
    let kt = analyze(doc! { "k": 1, "t": 1 });
    assert_eq!(kt.monotonicity, Monotonicity::Monotonic);
    // `_id` is the record order itself, and its index is unique.
    let id = analyze(doc! { "_id": 1 });
    assert!(id.is_unique);
    assert_eq!(id.monotonicity, Monotonicity::Monotonic);
    // A shuffle: |correlation| well under 0.7.
    let r = characteristics(&db, "events", doc! { "r": 1 });
    // The only index on r is hashed: no order to compare, as MongoDB says.
    assert_eq!(
        (r.monotonicity, r.correlation),
        (Monotonicity::Unknown, None)
    );
    let hashed = analyze(doc! { "r": "hashed" });
    assert_eq!(
        (hashed.monotonicity, hashed.correlation),
        (Monotonicity::NotMonotonic, Some(0.0))
    );
    assert_eq!(hashed.num_distinct_values, N as u64);
    let shown = hashed.clone();
    let d = odm_advisor::ShardKeyAnalysis {
        key: key(doc! { "r": "hashed" }),
        key_characteristics: Some(shown),
        read_distribution: None,
        write_distribution: None,
    }
    .to_document();
    let kc = d.get_document("keyCharacteristics").unwrap();
    assert_eq!(kc.get_i64("numDocsTotal").unwrap(), N);
    assert_eq!(
        kc.get_document("monotonicity")
            .unwrap()
            .get_str("type")
            .unwrap(),
        "not monotonic"
    );
}

#[test]
fn a_shuffled_key_with_an_ordered_index_is_not_monotonic() {
    let db = events();
    db.write(|t| {
        t.create_index("events", IndexSpec::ascending("r").unwrap())
            .map(drop)
    })
    .unwrap();
    let r = characteristics(&db, "events", doc! { "r": 1 });
    assert_eq!(r.monotonicity, Monotonicity::NotMonotonic);
    assert!(r.correlation.unwrap().abs() < 0.7, "{:?}", r.correlation);
}

#[test]
fn a_hot_value_leads_the_most_common_values_and_missing_fields_count_as_null() {
    let db = events();
    let hot = characteristics(&db, "events", doc! { "hot": 1 });
    assert_eq!(hot.num_distinct_values, 1 + N as u64 / 2);
    assert_eq!(
        hot.most_common_values[0],
        (doc! { "hot": "hot" }, N as u64 / 2)
    );
    assert_eq!(hot.most_common_values.len(), 5);
    assert!(hot.most_common_values[1..].iter().all(|(_, n)| *n == 1));
    let m = characteristics(&db, "events", doc! { "m": 1 });
    assert_eq!(
        m.most_common_values[0],
        (doc! { "m": Bson::Null }, N as u64 / 2)
    );
}

#[test]
fn sampling_reads_an_even_share_of_the_documents() {
    let db = events();
    let options = AnalyzeOptions {
        sample_size: Some(100),
        ..characteristics_only()
    };
    let t = analyze_shard_key(&db, "events", &key(doc! { "t": 1 }), &options)
        .unwrap()
        .key_characteristics
        .unwrap();
    assert_eq!((t.num_docs_total, t.num_docs_sampled), (N as u64, 100));
    assert_eq!(t.monotonicity, Monotonicity::Monotonic);
    let rate = AnalyzeOptions {
        sample_rate: Some(0.25),
        ..characteristics_only()
    };
    let t = analyze_shard_key(&db, "events", &key(doc! { "t": 1 }), &rate)
        .unwrap()
        .key_characteristics
        .unwrap();
    assert_eq!(t.num_docs_sampled, N as u64 / 4);
}

#[test]
// Long on purpose: a list of refusals and MongoDB's code for each: a table, read row by row.
#[allow(clippy::too_many_lines)]
fn mongodb_refusals_carry_its_codes() {
    let db = events();
    let code = |k: Document, options: AnalyzeOptions| {
        analyze_shard_key(&db, "events", &key(k), &options)
            .unwrap_err()
            .code()
            .code
    };
    // No supporting index: an error when only the characteristics are asked for.
    assert_eq!(code(doc! { "nothere": 1 }, characteristics_only()), 20);
    let without = analyze_shard_key(
        &db,
        "events",
        &key(doc! { "nothere": 1 }),
        &AnalyzeOptions {
            num_ranges: 2,
            ..AnalyzeOptions::default()
        },
    );
    // With the distribution asked for, the characteristics are left out (one value, null,
    // is the split point of two ranges).
    let without = without.unwrap();
    assert!(without.key_characteristics.is_none());
    assert_eq!(without.read_distribution.as_ref().unwrap().total(), 0);
    assert_eq!(
        without
            .to_document()
            .get_document("readDistribution")
            .unwrap(),
        &doc! { "sampleSize": { "total": 0_i64, "find": 0_i64, "aggregate": 0_i64, "count": 0_i64, "distinct": 0_i64 } }
    );
    let both_off = AnalyzeOptions {
        key_characteristics: false,
        read_write_distribution: false,
        ..AnalyzeOptions::default()
    };
    assert_eq!(code(doc! { "t": 1 }, both_off), 72);
    let both_samples = AnalyzeOptions {
        sample_rate: Some(0.5),
        sample_size: Some(10),
        ..AnalyzeOptions::default()
    };
    assert_eq!(code(doc! { "t": 1 }, both_samples), 72);
    let too_few = AnalyzeOptions {
        sample_size: Some(3),
        ..characteristics_only()
    };
    assert_eq!(code(doc! { "t": 1 }, too_few), 72);
    let bad_rate = AnalyzeOptions {
        sample_rate: Some(1.5),
        ..characteristics_only()
    };
    assert_eq!(code(doc! { "t": 1 }, bad_rate), 2);
    // Too few distinct values for MongoDB's 100 ranges: 10 values of k.
    assert_eq!(
        code(
            doc! { "k": 1 },
            AnalyzeOptions {
                key_characteristics: false,
                ..AnalyzeOptions::default()
            }
        ),
        4_952_606
    );
    let missing = analyze_shard_key(&db, "nope", &key(doc! { "t": 1 }), &characteristics_only());
    assert_eq!(missing.unwrap_err().code().code, 26);
    db.write(|t| t.create_collection("empty").map(drop))
        .unwrap();
    let empty = analyze_shard_key(&db, "empty", &key(doc! { "t": 1 }), &characteristics_only());
    assert!(matches!(empty, Err(AnalyzeError::EmptyCollection)));
    // An array in a key field is refused by name.
    db.write(|t| {
        // The smallest ObjectId: the first document, always in the sample of split points.
        let first = bson::oid::ObjectId::from_bytes([0; 12]);
        t.insert_one(
            "events",
            RawDocumentBuf::try_from(&doc! { "_id": first, "t": [1, 2] }).unwrap(),
        )
        .map(drop)
    })
    .unwrap();
    let arrays = analyze_shard_key(
        &db,
        "events",
        &key(doc! { "k": 1 }),
        &AnalyzeOptions {
            key_characteristics: false,
            num_ranges: 2,
            ..AnalyzeOptions::default()
        },
    );
    assert!(arrays.is_ok(), "k holds no array: {arrays:?}");
    let arrays = analyze_shard_key(
        &db,
        "events",
        &key(doc! { "t": 1 }),
        &AnalyzeOptions {
            key_characteristics: false,
            ..AnalyzeOptions::default()
        },
    );
    match arrays {
        Err(e @ AnalyzeError::ArrayInKey(_)) => {
            assert_eq!(e.to_string(), "The shard key contains an array field 't'");
            assert_eq!(e.code().code, 2);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn uniqueness_needs_a_unique_index_of_exactly_the_keys_fields() {
    let db = events();
    db.write(|t| {
        t.create_index(
            "events",
            IndexSpec::from_keys_document(&doc! { "down": 1, "t": 1 })
                .unwrap()
                .unique(),
        )?;
        t.create_index("events", IndexSpec::ascending("r").unwrap().unique())
    })
    .unwrap();
    let unique = |k: Document| characteristics(&db, "events", k).is_unique;
    assert!(unique(doc! { "r": 1 }));
    assert!(
        !unique(doc! { "down": 1 }),
        "the unique index has more fields"
    );
    assert!(unique(doc! { "down": 1, "t": 1 }));
}

#[derive(Debug, Clone, Serialize, Deserialize, odm::Document)]
#[odm(collection = "items", shard_key(x))]
struct Item {
    #[odm(id)]
    id: i64,
    #[odm(index)]
    x: i64,
    y: i64,
}

/// A known mix through the typed layer, sampled, under the key `x` and under `x` hashed.
#[test]
// Long on purpose: one known mix of reads and writes, then each percentage it must give: the setup
// and its arithmetic belong together.
#[allow(clippy::too_many_lines)]
fn a_known_mix_of_reads_and_writes_gives_known_percentages() {
    use odm::Filter;
    let db = odm::Database::in_memory().unwrap();
    let items = db.collection::<Item>().unwrap();
    let all: Vec<Item> = (0..N)
        .map(|i| Item {
            id: i,
            x: i,
            y: i % 7,
        })
        .collect();
    items.insert_many(&all).unwrap();
    let configured = items
        .configure_query_analyzer(AnalyzerMode::Full, Some(50.0))
        .unwrap();
    assert_eq!(
        configured,
        doc! { "newConfiguration": { "mode": "full", "samplesPerSecond": 50.0 } }
    );
    let f = Item::fields();
    // Reads: 10 single shard, 5 ranges, 5 without the key.
    for i in 0..5 {
        items.find(f.x.eq(i * 10)).to_vec().unwrap();
        items
            .aggregate()
            .filter(f.x.eq(i * 10 + 1))
            .to_vec()
            .unwrap();
        items.count(f.x.gte(N - 100 * i)).unwrap();
        items.distinct(&f.y, Filter::all()).unwrap();
    }
    // Writes: 4 by the key, 2 multi without it, 2 single without it, 2 that change the key.
    for i in 0..4 {
        items.update_one(f.x.eq(i), f.y.inc(1)).unwrap();
    }
    for _ in 0..2 {
        items.update_many(f.y.gt(100), f.y.set(0)).unwrap();
        items.delete_one(f.y.eq(1_000)).unwrap();
    }
    for i in 0..2 {
        items
            .find_one_and_update(
                f.x.eq(100 + i),
                f.x.set(100_000 + i),
                &odm::ModifyOptions::default(),
            )
            .unwrap();
    }
    let engine = db.engine().unwrap();
    let samples = engine.sampled_queries(Some("items")).unwrap();
    assert_eq!(
        samples.len(),
        30,
        "every query of the mix is sampled at 50 per second"
    );
    let kinds = |c: SampledCommand| samples.iter().filter(|s| s.command == c).count();
    // A typed count is sampled as the aggregate the MongoDB back end sends for it.
    assert_eq!(
        SampledCommand::ALL.map(kinds),
        [5, 10, 0, 5, 6, 2, 2],
        "find, aggregate, count, distinct, update, delete, findAndModify"
    );
    let analysis = items.analyze_shard_key(&AnalyzeOptions::default()).unwrap();
    let reads = analysis.read_distribution.as_ref().unwrap();
    assert_eq!(reads.total(), 20);
    assert_eq!(
        (
            reads.targets.single_shard,
            reads.targets.multi_shard,
            reads.targets.scatter_gather
        ),
        (10, 5, 5)
    );
    // Each single-shard read reaches one range, each scatter-gather read all 100.
    assert_eq!(reads.targets.by_range.len(), 100);
    let reached: u64 = reads.targets.by_range.iter().sum();
    assert!(reached >= 10 + 5 + 5 * 100, "{reached}");
    let writes = analysis.write_distribution.as_ref().unwrap();
    assert_eq!(writes.total(), 10);
    assert_eq!(
        (writes.targets.single_shard, writes.targets.scatter_gather),
        (6, 4)
    );
    assert_eq!(writes.shard_key_updates, 2);
    assert_eq!(writes.single_writes_without_shard_key, 2);
    assert_eq!(writes.multi_writes_without_shard_key, 2);
    let shown = analysis.to_document();
    // MongoDB's tests allow percentages 1e-9 apart.
    let percent = |d: &Document, field: &str, expected: f64| {
        let found = d.get_f64(field).unwrap();
        assert!((found - expected).abs() < 1e-9, "{field}: {found}");
    };
    let r = shown.get_document("readDistribution").unwrap();
    percent(r, "percentageOfSingleShardReads", 50.0);
    percent(r, "percentageOfScatterGatherReads", 25.0);
    let w = shown.get_document("writeDistribution").unwrap();
    percent(w, "percentageOfShardKeyUpdates", 20.0);
    percent(w, "percentageOfMultiWritesWithoutShardKey", 20.0);
    // The same samples under the key hashed: ranges on it reach every range.
    let hashed = db
        .analyze_shard_key(
            "items",
            &key(doc! { "x": "hashed" }),
            &AnalyzeOptions {
                key_characteristics: false,
                ..AnalyzeOptions::default()
            },
        )
        .unwrap();
    let reads = hashed.read_distribution.unwrap();
    assert_eq!(
        (
            reads.targets.single_shard,
            reads.targets.multi_shard,
            reads.targets.scatter_gather
        ),
        (10, 0, 10)
    );
    // MongoDB's invariant for a hashed key: each read reaches one range or all of them.
    assert_eq!(
        reads.targets.by_range.iter().sum::<u64>(),
        reads.targets.single_shard + 100 * reads.targets.scatter_gather
    );
    // What was sampled round-trips through the reply's typed form.
    let back = odm_advisor::ShardKeyAnalysis::from_document(analysis.key.clone(), &shown).unwrap();
    assert_eq!(back, analysis);
}

#[test]
fn configuration_follows_mongodb_and_survives_a_restart_with_its_samples() {
    let dir = std::env::temp_dir().join(format!("odm-analyzer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("a.odm");
    {
        let db = Database::open(&path).unwrap();
        db.write(|t| {
            t.insert_one("c", RawDocumentBuf::try_from(&doc! { "_id": 1 }).unwrap())
                .map(drop)
        })
        .unwrap();
        let err = |mode, rate| {
            db.configure_query_analyzer("c", mode, rate)
                .unwrap_err()
                .code()
        };
        assert_eq!(err(AnalyzerMode::Off, Some(1.0)), 72);
        assert_eq!(err(AnalyzerMode::Full, None), 72);
        assert_eq!(err(AnalyzerMode::Full, Some(0.0)), 72);
        assert_eq!(err(AnalyzerMode::Full, Some(50.5)), 72);
        assert_eq!(
            db.configure_query_analyzer("none", AnalyzerMode::Full, Some(1.0))
                .unwrap_err()
                .code(),
            26
        );
        // MongoDB's sequence of old and new configurations.
        let step = |mode, rate| {
            db.configure_query_analyzer("c", mode, rate)
                .unwrap()
                .to_document()
        };
        assert_eq!(
            step(AnalyzerMode::Off, None),
            doc! { "newConfiguration": { "mode": "off" } }
        );
        assert_eq!(
            step(AnalyzerMode::Full, Some(50.0)),
            doc! { "newConfiguration": { "mode": "full", "samplesPerSecond": 50.0 } }
        );
        assert_eq!(
            step(AnalyzerMode::Full, Some(0.2)),
            doc! {
                "newConfiguration": { "mode": "full", "samplesPerSecond": 0.2 },
                "oldConfiguration": { "mode": "full", "samplesPerSecond": 50.0 },
            }
        );
        assert_eq!(
            step(AnalyzerMode::Off, None),
            doc! {
                "newConfiguration": { "mode": "off" },
                "oldConfiguration": { "mode": "full", "samplesPerSecond": 0.2 },
            }
        );
        assert_eq!(
            step(AnalyzerMode::Full, Some(1.0)),
            doc! {
                "newConfiguration": { "mode": "full", "samplesPerSecond": 1.0 },
                "oldConfiguration": { "mode": "off", "samplesPerSecond": 0.2 },
            }
        );
        // At one per second, a burst of 100 queries is sampled once or twice, not 100 times.
        let taken = (0..100)
            .filter(|i| {
                db.sample_query("c", SampledCommand::Find, |_| {
                    odm_engine::sampling::read_command(&doc! { "_id": i }, None, None)
                })
            })
            .count();
        assert!((1..=2).contains(&taken), "{taken}");
        // Not yet written: the last handle's drop writes them.
    }
    let db = Database::open(&path).unwrap();
    let analyzer = db.query_analyzer("c").unwrap();
    assert_eq!(
        (analyzer.mode, analyzer.samples_per_second),
        (AnalyzerMode::Full, Some(1.0))
    );
    let samples = db.sampled_queries(Some("c")).unwrap();
    assert!((1..=2).contains(&samples.len()));
    assert_eq!(
        samples[0].cmd,
        doc! { "filter": { "_id": 0 }, "collation": {} }
    );
    let listed = samples[0].to_document("app");
    assert_eq!(listed.get_str("ns").unwrap(), "app.c");
    assert_eq!(listed.get_str("cmdName").unwrap(), "find");
    // A dropped collection's samples are not a new one's.
    db.write(|t| {
        t.drop_collection("c")?;
        t.insert_one("c", RawDocumentBuf::try_from(&doc! { "_id": 1 }).unwrap())
            .map(drop)
    })
    .unwrap();
    assert!(db.query_analyzer("c").is_none());
    db.configure_query_analyzer("c", AnalyzerMode::Full, Some(1.0))
        .unwrap();
    assert!(odm_advisor::current_samples(&db, "c").unwrap().is_empty());
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// ObjectIds made as a driver makes them increase with time: a key of them is monotonic, and
/// the same ids hashed are not.
#[test]
fn driver_made_object_ids_are_a_monotonic_key() {
    let db = Database::in_memory().unwrap();
    db.write(|t| {
        for i in 0..300 {
            let d = doc! { "_id": bson::oid::ObjectId::new(), "i": i };
            t.insert_one("uploads", RawDocumentBuf::try_from(&d).unwrap())?;
        }
        Ok::<_, odm_engine::Error>(())
    })
    .unwrap();
    let analyze = |k: Document| characteristics(&db, "uploads", k);
    let ids = analyze(doc! { "_id": 1 });
    assert_eq!(ids.monotonicity, Monotonicity::Monotonic);
    assert!(ids.is_unique);
    let hashed = analyze(doc! { "_id": "hashed" });
    assert_eq!(hashed.monotonicity, Monotonicity::NotMonotonic);
    assert_eq!(hashed.num_distinct_values, 300);
}

/// Record order is insertion order only when every `_id` is an ObjectId; with other ids it is
/// unknown, and so is monotonicity (MongoDB's answer for a clustered collection).
#[test]
fn without_object_ids_record_order_and_monotonicity_are_unknown() {
    let db = Database::in_memory().unwrap();
    db.write(|t| {
        for i in 0..200_i64 {
            // Random string ids: `_id` order is not insertion order.
            let d = doc! { "_id": format!("{:016x}", (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)), "t": i };
            t.insert_one("c", RawDocumentBuf::try_from(&d).unwrap())?;
        }
        t.create_index("c", IndexSpec::ascending("t").unwrap())
    })
    .unwrap();
    let t = characteristics(&db, "c", doc! { "t": 1 });
    assert_eq!(
        (t.monotonicity, t.correlation),
        (Monotonicity::Unknown, None)
    );
    let shown = odm_advisor::ShardKeyAnalysis {
        key: key(doc! { "t": 1 }),
        key_characteristics: Some(t),
        read_distribution: None,
        write_distribution: None,
    }
    .to_document();
    assert_eq!(
        shown
            .get_document("keyCharacteristics")
            .unwrap()
            .get_document("monotonicity")
            .unwrap(),
        &doc! { "type": "unknown" }
    );
}

/// The bounds of sampling: waiting samples past their bound are dropped and counted, stored
/// ones past theirs go oldest first, and expired ones are neither listed nor kept.
#[test]
fn sampling_keeps_within_its_bounds() {
    use odm_engine::sampling::SamplingLimits;
    let db = Database::in_memory().unwrap();
    db.write(|t| {
        t.insert_one("c", RawDocumentBuf::try_from(&doc! { "_id": 1 }).unwrap())
            .map(drop)
    })
    .unwrap();
    db.configure_query_analyzer("c", AnalyzerMode::Full, Some(50.0))
        .unwrap();
    let offer = |i: i32| {
        db.sample_query("c", SampledCommand::Find, |_| {
            odm_engine::sampling::read_command(&doc! { "i": i }, None, None)
        })
    };
    db.set_sampling_limits(SamplingLimits {
        max_pending: 2,
        ..SamplingLimits::default()
    });
    assert!(offer(0) && offer(1));
    assert!(!offer(2), "the third waiting sample is dropped");
    assert_eq!(db.sampler_stats().dropped, 1);
    // Listed while waiting, without a write.
    assert_eq!(db.sampled_queries(Some("c")).unwrap().len(), 2);
    db.set_sampling_limits(SamplingLimits {
        max_stored: 3,
        ..SamplingLimits::default()
    });
    db.flush_sampled_queries().unwrap();
    for i in 3..8 {
        assert!(offer(i));
        db.flush_sampled_queries().unwrap();
    }
    let kept: Vec<Document> = db
        .sampled_queries(Some("c"))
        .unwrap()
        .into_iter()
        .map(|s| s.cmd.get_document("filter").unwrap().clone())
        .collect();
    assert_eq!(
        kept,
        [doc! { "i": 5 }, doc! { "i": 6 }, doc! { "i": 7 }],
        "the newest three"
    );
    db.set_sampling_limits(SamplingLimits {
        expiration: std::time::Duration::from_millis(1),
        ..SamplingLimits::default()
    });
    assert!(offer(8));
    std::thread::sleep(std::time::Duration::from_millis(5));
    let listed: Vec<Document> = db
        .sampled_queries(Some("c"))
        .unwrap()
        .into_iter()
        .map(|s| s.cmd.get_document("filter").unwrap().clone())
        .collect();
    assert_eq!(
        listed.len(),
        3,
        "the expired sample is not listed: {listed:?}"
    );
}
