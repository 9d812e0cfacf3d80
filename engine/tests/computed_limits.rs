//! The values expressions compute are held to bounds as they are built (see `expr::bounds`):
//! nesting past 200 levels is `Overflow` (15), a string past 16 MiB `BSONObjectTooLarge`
//! (10334), an array or document past 256 MiB of memory `ExceededMemoryLimit` (146), and so are
//! the values one evaluation holds at once past 1 GiB. Each
//! growth operator is driven past its bound, alone and nested in the others, on a test thread
//! of the default stack size; the process's peak resident memory stays under a stated figure.
//! The tests take turns (one lock), so that the peak is one test's, not their sum.

use bson::{Bson, Document, bson, doc};
use odm_engine::Database;
use odm_engine::aggregate::AggregateOptions;
use proptest::prelude::*;

/// Held by each test while it runs.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What one `$project` of `expr` over the document `{_id: 1, a: 1, s: "ab"}` gives: the
/// computed value, or the error's code.
fn project(expr: Bson) -> Result<Option<Bson>, i32> {
    let db = Database::in_memory().unwrap();
    db.collection("c")
        .insert_one(doc! { "_id": 1, "a": 1, "s": "ab" })
        .unwrap();
    let txn = db.read().unwrap();
    let rc = txn.collection("c").unwrap().unwrap();
    let out: Vec<Document> = rc
        .aggregate(
            &[doc! { "$project": { "_id": 0, "v": expr } }],
            &AggregateOptions::default(),
        )
        .map_err(|e| e.code())?;
    Ok(out.into_iter().next().and_then(|d| d.get("v").cloned()))
}

fn range(n: i64) -> Bson {
    bson!({ "$range": [0, n] })
}

/// The process's peak resident memory, in KiB (`VmHWM` of `/proc/self/status`).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Below every test of this file: what one evaluation may hold at once (1 GiB as the bounds
/// measure it), with room for what the measure leaves out (the allocator's own overhead, a
/// vector's spare capacity, the copy of a value an operator makes while the original is still
/// held) and for the test harness. Three `$zip`s nested in each other, each repeating its input
/// on 512 rows, reached 1.65 GB, past the earlier figure of 1.5 GiB.
const PEAK_RSS_LIMIT_KIB: u64 = 2560 * 1024;

#[test]
fn a_reduce_that_nests_its_value_stops_at_200_levels_instead_of_overflowing_a_stack() {
    let _turn = one_at_a_time();
    let wrap = bson!({ "$reduce": {
        "input": range(100_000), "initialValue": [], "in": ["$$value"]
    }});
    assert_eq!(project(wrap), Err(15));
    let wrap_in_object = bson!({ "$reduce": {
        "input": range(100_000), "initialValue": {}, "in": { "x": "$$value" }
    }});
    assert_eq!(project(wrap_in_object), Err(15));
    // Within the bound, the same expression answers.
    let shallow =
        bson!({ "$reduce": { "input": range(150), "initialValue": [], "in": ["$$value"] }});
    assert!(project(shallow).is_ok());
    assert!(
        peak_rss_kib() < PEAK_RSS_LIMIT_KIB,
        "{} KiB",
        peak_rss_kib()
    );
}

#[test]
fn strings_stop_at_16_mib() {
    let _turn = one_at_a_time();
    let doubling = bson!({ "$reduce": {
        "input": range(40), "initialValue": "ab", "in": { "$concat": ["$$value", "$$value"] }
    }});
    assert_eq!(project(doubling), Err(10334));
    let replacing = bson!({ "$reduce": {
        "input": range(40), "initialValue": "ab",
        "in": { "$replaceAll": { "input": "$$value", "find": "a", "replacement": "aaaa" } }
    }});
    assert_eq!(project(replacing), Err(10334));
    // 2^23 bytes is within the bound.
    let eight_mib = bson!({ "$strLenBytes": { "$reduce": {
        "input": range(22), "initialValue": "ab", "in": { "$concat": ["$$value", "$$value"] }
    }}});
    assert_eq!(project(eight_mib), Ok(Some(Bson::Int32(1 << 23))));
    assert!(
        peak_rss_kib() < PEAK_RSS_LIMIT_KIB,
        "{} KiB",
        peak_rss_kib()
    );
}

#[test]
fn arrays_stop_at_256_mib_of_memory_before_they_are_built() {
    let _turn = one_at_a_time();
    // Ten million elements: refused from the count alone.
    assert_eq!(project(range(10_000_000)), Err(146));
    // Each element fits; the second one joining does not.
    let map_of_ranges = bson!({ "$map": { "input": range(1_000), "in": range(1_500_000) } });
    assert_eq!(project(map_of_ranges), Err(146));
    let concat_doubling = bson!({ "$reduce": {
        "input": range(40), "initialValue": range(1_200_000),
        "in": { "$concatArrays": ["$$value", "$$value"] }
    }});
    assert_eq!(project(concat_doubling), Err(146));
    let union = bson!({ "$setUnion": [range(1_500_000), range(1_500_000)] });
    assert_eq!(project(union), Err(146));
    // `$zip` repeats a default on every row past a shorter input's end.
    let big = bson!({ "$reduce": {
        "input": range(22), "initialValue": "ab", "in": { "$concat": ["$$value", "$$value"] }
    }});
    let zipped = bson!({ "$zip": {
        "inputs": [range(1_000_000), []], "useLongestLength": true, "defaults": [0, big]
    }});
    assert_eq!(project(zipped), Err(146));
    // Within the bound: a million elements.
    let million = bson!({ "$size": range(1_000_000) });
    assert_eq!(project(million), Ok(Some(Bson::Int32(1_000_000))));
    assert!(
        peak_rss_kib() < PEAK_RSS_LIMIT_KIB,
        "{} KiB",
        peak_rss_kib()
    );
}

#[test]
fn what_one_evaluation_holds_at_once_stops_at_1_gib() {
    let _turn = one_at_a_time();
    // Each argument is well within its bound (about 220 MiB); a call held them all before it
    // ran, and an intersection's result never passes the bound: twelve were 2.6 GB held.
    let r = || range(2_000_000);
    let intersection = bson!({ "$size": {
        "$setIntersection": (0..12).map(|_| r()).collect::<Vec<_>>()
    }});
    assert_eq!(project(intersection), Err(146));
    let bound = bson!({ "$let": {
        "vars": { "a": r(), "b": r(), "c": r(), "d": r(), "e": r(), "f": r() },
        "in": { "$size": "$$a" }
    }});
    assert_eq!(project(bound), Err(146));
    // Arrays nested in arrays hold every level's elements while the inner ones are built.
    let mut nested = bson!([r()]);
    for _ in 0..8 {
        nested = bson!([r(), nested]);
    }
    assert_eq!(project(bson!({ "$size": [nested] })), Err(146));
    // Within the bound, the same shapes answer.
    let m = || range(1_000_000);
    let three = bson!({ "$size": { "$setIntersection": [m(), m(), m()] } });
    assert_eq!(project(three), Ok(Some(Bson::Int32(1_000_000))));
    let two = bson!({ "$let": { "vars": { "a": m(), "b": m() }, "in": { "$size": "$$b" } } });
    assert_eq!(project(two), Ok(Some(Bson::Int32(1_000_000))));
    assert!(
        peak_rss_kib() < PEAK_RSS_LIMIT_KIB,
        "{} KiB",
        peak_rss_kib()
    );
}

/// A growth operator applied to `inner`, chosen by `pick`. Each evaluates `inner` at most four
/// times, so that nesting eight of them stays quick; the two that always pass a bound (a
/// `$reduce` nesting 250 levels, a string doubled 26 times) stop at their first step past it.
fn grow(pick: u8, inner: Bson) -> Bson {
    match pick % 9 {
        0 => {
            bson!({ "$reduce": { "input": range(250), "initialValue": [], "in": ["$$value", inner] } })
        }
        1 => bson!({ "$concatArrays": [[inner.clone()], [inner.clone()], [inner]] }),
        2 => bson!({ "$map": { "input": range(4), "in": inner } }),
        3 => bson!({ "$zip": { "inputs": [[inner.clone()], range(512)], "useLongestLength": true,
                                "defaults": [inner, 0] } }),
        4 => bson!({ "$setUnion": [[inner.clone()], [[inner]]] }),
        5 => {
            bson!({ "$concat": [{ "$toString": { "$size": { "$objectToArray": { "x": inner } } } }, "$s"] })
        }
        6 => bson!({ "$reduce": { "input": range(26),
            "initialValue": { "$concat": ["$s", { "$toString": { "$size": { "$objectToArray": { "x": inner } } } }] },
            "in": { "$concat": ["$$value", "$$value"] } } }),
        7 => bson!({ "$mergeObjects": [{ "a": inner.clone() }, { "b": [inner] }] }),
        _ => bson!({ "$setField": { "field": "f", "input": {}, "value": inner } }),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Growth operators nested in each other, up to eight deep: the answer is a value or an
    /// error with a code, never a panic, an overflowed stack or an allocation past the bounds.
    #[test]
    fn nested_growth_answers_or_refuses(picks in proptest::collection::vec(any::<u8>(), 1..9)) {
        let _turn = one_at_a_time();
        let mut expr = Bson::String("$a".to_owned());
        for pick in picks {
            expr = grow(pick, expr);
        }
        match project(expr) {
            Ok(_) => {}
            Err(code) => prop_assert!(code > 0, "an error without a code"),
        }
        prop_assert!(peak_rss_kib() < PEAK_RSS_LIMIT_KIB, "{} KiB", peak_rss_kib());
    }
}

/// A document a pipeline hands out is held to MongoDB's 16 MiB like a stored one, even when
/// each of its values is within the bounds on computed values: `BSONObjectTooLarge` (10334).
#[test]
fn a_produced_document_past_16_mib_is_refused() {
    let _turn = one_at_a_time();
    // 1.5 million strings of ten bytes: about 33 MB of BSON, well within 256 MiB of memory.
    let wide = bson!({ "$map": { "input": range(1_500_000), "in": "abcdefghij" } });
    assert_eq!(project(wide), Err(10334));
    // Half a million of them (11 MB) is a document like any other.
    let within = bson!({ "$size": { "$map": { "input": range(500_000), "in": "abcdefghij" } } });
    assert_eq!(project(within), Ok(Some(Bson::Int32(500_000))));
    let db = Database::in_memory().unwrap();
    db.collection("c").insert_one(doc! { "_id": 1 }).unwrap();
    let txn = db.read().unwrap();
    let rc = txn.collection("c").unwrap().unwrap();
    let eleven_mib = bson!({ "$map": { "input": range(500_000), "in": "abcdefghij" } });
    let out = rc
        .aggregate(
            &[doc! { "$project": { "v": eleven_mib } }],
            &AggregateOptions::default(),
        )
        .unwrap();
    assert_eq!(out.len(), 1);
    assert!(
        peak_rss_kib() < PEAK_RSS_LIMIT_KIB,
        "{} KiB",
        peak_rss_kib()
    );
}
