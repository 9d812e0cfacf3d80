//! The shard-key advisor on data whose answers are known by construction (S6, S17): a
//! monotonic key sends every recent insert to one shard, a hashed or random key spreads them,
//! a key of one value cannot split, arrays cannot be placed, queries route by the key; and,
//! for any data, every document is placed once and the balancer leaves counts within its
//! threshold.

use bson::{Document, RawDocumentBuf, doc, oid::ObjectId};
use odm_advisor::{Advisor, InsertOrder};
use odm_engine::ShardKey;
use proptest::prelude::*;

fn raw(d: &Document) -> RawDocumentBuf {
    RawDocumentBuf::try_from(d).unwrap()
}

/// S17's uploads: increasing ObjectIds, an MD5-like random hex string, the month.
fn uploads(n: u32) -> Vec<RawDocumentBuf> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (0..n)
        .map(|i| {
            // xorshift: a fixed pseudo-random stream, so the figures are the same every run.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut id = [0u8; 12];
            id[..4].copy_from_slice(&i.to_be_bytes());
            raw(&doc! {
                "_id": ObjectId::from_bytes(id),
                "md5": format!("{state:016x}"),
                "month": i * 12 / n,
                "data": "x".repeat(200),
            })
        })
        .collect()
}

/// Whether one shard took every insert counted (and there was one).
fn all_on_one_shard(per_shard: &[u64]) -> bool {
    let total: u64 = per_shard.iter().sum();
    total > 0 && per_shard.contains(&total)
}

fn key(d: Document) -> ShardKey {
    ShardKey::from_document(&d).unwrap()
}

#[test]
fn s17_a_monotonic_key_sends_recent_inserts_to_one_shard_hashed_and_random_keys_spread_them() {
    let report = Advisor::new(4)
        .analyze(
            uploads(4000),
            &[
                key(doc! { "_id": 1 }),
                key(doc! { "_id": "hashed" }),
                key(doc! { "md5": 1 }),
                key(doc! { "month": 1, "md5": 1 }),
            ],
            &[],
        )
        .unwrap();
    let [monotonic, hashed, random, segmented] = report.candidates.as_slice() else {
        panic!("four candidates");
    };
    assert!(all_on_one_shard(&monotonic.recent_inserts), "{report}");
    assert!(hashed.hottest_recent().1 < 0.4, "{report}");
    assert!(random.hottest_recent().1 < 0.5, "{report}");
    // A coarse time prefix keeps each month's inserts together: they go to fewer shards than
    // a random key's, yet the documents spread as a monotonic key's do.
    assert!(
        segmented.recent_segments() < random.recent_segments(),
        "{report}"
    );
    for c in &report.candidates {
        assert_eq!(c.documents.iter().sum::<u64>(), 4000);
        let (most, least) = (
            c.chunks.iter().max().unwrap(),
            c.chunks.iter().min().unwrap(),
        );
        let threshold = if c.chunks.iter().sum::<usize>() < 20 {
            2
        } else {
            4
        };
        assert!(most - least < threshold, "{:?}: {:?}", c.key, c.chunks);
    }
    let text = report.to_string();
    println!("{text}");
    assert!(text.contains("{ \"_id\": \"hashed\" }"), "{text}");
    let svg = report.to_svg();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<rect").count(), 1 + 2 + 4 * 4 * 2, "{svg}");
}

#[test]
fn a_hashed_key_starts_pre_split_two_chunks_per_shard() {
    let report = Advisor::new(3)
        .analyze(
            Vec::new(),
            &[key(doc! { "user": "hashed" }), key(doc! { "user": 1 })],
            &[],
        )
        .unwrap();
    assert_eq!(report.candidates[0].chunks, [2, 2, 2]);
    assert_eq!(report.candidates[1].chunks, [1, 0, 0]);
}

#[test]
fn one_key_value_makes_a_jumbo_chunk_and_arrays_cannot_be_placed() {
    let mut docs: Vec<RawDocumentBuf> = (0..500)
        .map(|i| raw(&doc! { "_id": i, "status": "new", "tags": ["a"], "pad": "y".repeat(100) }))
        .collect();
    docs.push(raw(&doc! { "_id": 500, "status": ["new", "old"] }));
    let report = Advisor::new(2)
        .analyze(
            docs,
            &[key(doc! { "status": 1 }), key(doc! { "tags": 1 })],
            &[],
        )
        .unwrap();
    let status = &report.candidates[0];
    assert_eq!(status.chunks, [1, 0]);
    assert_eq!(status.jumbo, 1);
    assert_eq!(status.unplaceable, 1);
    assert_eq!(status.documents, [500, 0]);
    assert_eq!(report.candidates[1].unplaceable, 500);
    assert!(report.to_string().contains("jumbo"), "{report}");
}

#[test]
fn missing_key_fields_place_as_null_and_a_time_order_replays_by_that_field() {
    // Ids descend while times ascend: in time order the newest ids come first.
    let docs: Vec<RawDocumentBuf> = (0..1000)
        .map(|i| raw(&doc! { "_id": 1000 - i, "at": i, "pad": "z".repeat(100) }))
        .collect();
    let by_id = Advisor::new(2)
        .analyze(docs.clone(), &[key(doc! { "at": 1 })], &[])
        .unwrap();
    let by_time = Advisor::new(2)
        .order(InsertOrder::Field("at".into()))
        .analyze(
            docs,
            &[key(doc! { "at": 1 }), key(doc! { "missing": 1 })],
            &[],
        )
        .unwrap();
    // In `at` order the key only grows: every recent insert on one shard. In `_id` order it
    // only falls: the lowest chunk takes them, which the balancer moves away first.
    assert!(
        all_on_one_shard(&by_time.candidates[0].recent_inserts),
        "{by_time}"
    );
    assert_eq!(by_id.candidates[0].documents.iter().sum::<u64>(), 1000);
    let missing = &by_time.candidates[1];
    assert_eq!(missing.unplaceable, 0);
    assert_eq!(missing.documents.iter().sum::<u64>(), 1000);
    assert_eq!(missing.jumbo, 1, "{by_time}");
}

#[test]
fn queries_are_classified_by_how_a_mongos_routes_them() {
    let queries = [
        doc! { "region": "eu", "user": 7 },
        doc! { "region": "eu" },
        doc! { "region": { "$in": ["eu", "us"] }, "user": 7 },
        doc! { "user": 7 },
        doc! { "$or": [{ "region": "eu", "user": 1 }, { "region": "us", "user": 2 }] },
        doc! { "region": { "$bad": 1 } },
    ];
    let report = Advisor::new(2)
        .analyze(
            Vec::new(),
            &[
                key(doc! { "region": 1, "user": 1 }),
                key(doc! { "user": "hashed" }),
            ],
            &queries,
        )
        .unwrap();
    let ranged = report.candidates[0].queries;
    assert_eq!(
        (
            ranged.single,
            ranged.targeted,
            ranged.broadcast,
            ranged.invalid
        ),
        (1, 3, 1, 1)
    );
    let hashed = report.candidates[1].queries;
    assert_eq!(
        (
            hashed.single,
            hashed.targeted,
            hashed.broadcast,
            hashed.invalid
        ),
        (3, 1, 1, 1)
    );
}

#[test]
fn settings_that_cannot_work_are_refused() {
    let keys = [key(doc! { "_id": 1 })];
    assert!(Advisor::new(0).analyze(Vec::new(), &keys, &[]).is_err());
    assert!(Advisor::new(2).analyze(Vec::new(), &[], &[]).is_err());
    assert!(
        Advisor::new(2)
            .recent(0.0)
            .analyze(Vec::new(), &keys, &[])
            .is_err()
    );
    assert!(
        Advisor::new(2)
            .recent(f64::NAN)
            .analyze(Vec::new(), &keys, &[])
            .is_err()
    );
}

#[test]
fn a_sample_replays_every_kth_document() {
    let report = Advisor::new(2)
        .sample(100)
        .analyze(uploads(1000), &[key(doc! { "_id": 1 })], &[])
        .unwrap();
    assert_eq!((report.documents, report.sampled_from), (100, 1000));
    assert!(
        report.to_string().contains("an even sample of 1000"),
        "{report}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every document is placed exactly once (or counted unplaceable), inserts add up, and the
    /// balancer leaves chunk counts within MongoDB's threshold unless a chunk cannot move.
    #[test]
    fn placements_conserve_documents_and_balance(
        values in prop::collection::vec((0i64..50, prop::option::of(0i64..5), 0usize..300), 0..400),
        shards in 1usize..6,
        hashed in any::<bool>(),
        chunk in 200u64..5000,
    ) {
        let docs: Vec<RawDocumentBuf> = values
            .iter()
            .enumerate()
            .map(|(i, (a, b, pad))| {
                let mut d = doc! { "_id": i as i64, "a": a, "pad": "p".repeat(*pad) };
                if let Some(b) = b {
                    d.insert("b", b);
                }
                raw(&d)
            })
            .collect();
        let keys = if hashed {
            vec![key(doc! { "a": "hashed" })]
        } else {
            vec![key(doc! { "a": 1, "b": 1 }), key(doc! { "_id": 1 })]
        };
        let report = Advisor::new(shards).chunk_bytes(chunk).analyze(docs, &keys, &[]).unwrap();
        for c in &report.candidates {
            prop_assert_eq!(c.documents.iter().sum::<u64>() + c.unplaceable, values.len() as u64);
            prop_assert_eq!(c.inserts.iter().sum::<u64>(), c.documents.iter().sum::<u64>());
            prop_assert_eq!(c.bytes.iter().sum::<u64>(), report.bytes);
            let total: usize = c.chunks.iter().sum();
            let threshold = if total < 20 { 2 } else if total < 80 { 4 } else { 8 };
            let (most, least) = (c.chunks.iter().max().unwrap(), c.chunks.iter().min().unwrap());
            prop_assert!(most - least < threshold || c.jumbo > 0, "{:?}", c.chunks);
        }
    }
}
