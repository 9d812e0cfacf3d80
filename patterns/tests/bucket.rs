//! `Bucket<K, T>` against a model: random pushes, removals, retention, deletions of old
//! buckets and compactions under every closing policy and both ways of finding the open bucket;
//! after each step every read (both orders, pages, time and summary ranges, counts, streaming,
//! every owner) equals the model's answer, and the stored buckets keep their laws (summaries
//! bound the items, a bucket keeps its limits, one open bucket per owner and span).

use std::collections::BTreeMap;
use std::time::Duration;

use bson::DateTime;
use odm::{Document, Embedded};
use odm_patterns::{Bucket, BucketDoc, BucketOptions, PatternError, Span};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Reading {
    n: i64,
    at: DateTime,
    v: i32,
    note: String,
}

/// An item's bytes against a budget: its encoding and the array's 12 bytes per element.
fn encoded_len(r: &Reading) -> i64 {
    let encoded = bson::serialize_to_document(r).unwrap().to_vec().unwrap();
    encoded.len() as i64 + 12
}

#[derive(Debug, Clone)]
struct Config {
    max_items: Option<u32>,
    span_ms: Option<i64>,
    max_bytes: Option<u32>,
    sequence: bool,
    index_item_times: bool,
}

impl Config {
    fn options(&self) -> BucketOptions<Reading> {
        let r = Reading::fields();
        let mut o = BucketOptions::new().time(&r.at).summary(&r.v);
        if let Some(n) = self.max_items {
            o = o.max_items(n);
        }
        if let Some(ms) = self.span_ms {
            o = o.span(Span::Fixed(Duration::from_millis(ms as u64)), &r.at);
        }
        if let Some(b) = self.max_bytes {
            o = o.max_bytes(b);
        }
        if self.sequence {
            o = o.sequence();
        }
        if self.index_item_times {
            o = o.index_item_times();
        }
        o
    }
}

fn configs() -> impl Strategy<Value = Config> {
    prop_oneof![
        (
            proptest::option::of(1_u32..5),
            proptest::option::of(100_i64..400),
            proptest::option::of(60_u32..300),
            any::<bool>()
        )
            .prop_map(|(max_items, span_ms, max_bytes, index_item_times)| Config {
                max_items,
                span_ms,
                max_bytes,
                sequence: false,
                index_item_times,
            }),
        (1_u32..5, any::<bool>()).prop_map(|(n, index_item_times)| Config {
            max_items: Some(n),
            span_ms: None,
            max_bytes: None,
            sequence: true,
            index_item_times,
        }),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Push {
        owner: u8,
        at: i64,
        v: i32,
        note: usize,
    },
    Remove {
        owner: u8,
        pick: usize,
    },
    Mark {
        owner: u8,
        pick: usize,
    },
    RemoveBefore {
        owner: Option<u8>,
        cutoff: i64,
    },
    DeleteBucketsBefore {
        owner: Option<u8>,
        cutoff: i64,
    },
    DeleteBucketsBelow {
        owner: u8,
        seq: i64,
    },
    Compact {
        owner: u8,
    },
}

fn ops() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0_u8..3, 0_i64..1_000, -20_i32..20, 0_usize..40)
            .prop_map(|(owner, at, v, note)| Op::Push { owner, at, v, note }),
        2 => (0_u8..3, any::<usize>()).prop_map(|(owner, pick)| Op::Remove { owner, pick }),
        1 => (0_u8..3, any::<usize>()).prop_map(|(owner, pick)| Op::Mark { owner, pick }),
        1 => (proptest::option::of(0_u8..3), 0_i64..1_000)
            .prop_map(|(owner, cutoff)| Op::RemoveBefore { owner, cutoff }),
        1 => (proptest::option::of(0_u8..3), 0_i64..1_000)
            .prop_map(|(owner, cutoff)| Op::DeleteBucketsBefore { owner, cutoff }),
        1 => (0_u8..3, 0_i64..4).prop_map(|(owner, seq)| Op::DeleteBucketsBelow { owner, seq }),
        1 => (0_u8..3).prop_map(|owner| Op::Compact { owner }),
    ]
}

fn owner(o: u8) -> String {
    format!("o{o}")
}

fn t(ms: i64) -> DateTime {
    DateTime::from_millis(1_700_000_000_000 + ms)
}

/// A bucket as the model keeps it: its summaries are those of every item pushed into it.
#[derive(Debug, Clone)]
struct MBucket {
    owner: String,
    seq: i64,
    start: Option<DateTime>,
    count: u32,
    bytes: i64,
    closed: bool,
    earliest: DateTime,
    latest: DateTime,
    items: Vec<Reading>,
}

struct Model {
    config: Config,
    buckets: Vec<MBucket>,
    counters: BTreeMap<String, i64>,
}

const DEFAULT_BUDGET: i64 = 1 << 20;

impl Model {
    fn push(&mut self, owner: &str, item: Reading) {
        let c = self.config.clone();
        let size = encoded_len(&item);
        let seq = if c.sequence {
            let n = self.counters.entry(owner.to_owned()).or_default();
            *n += 1;
            (*n - 1) / i64::from(c.max_items.unwrap())
        } else {
            let start = c
                .span_ms
                .map(|s| DateTime::from_millis(item.at.timestamp_millis().div_euclid(s) * s));
            let budget = match (c.max_bytes, c.max_items) {
                (Some(b), _) => Some(i64::from(b)),
                (None, None) => Some(DEFAULT_BUDGET),
                (None, Some(_)) => None,
            };
            let open: Vec<usize> = (0..self.buckets.len())
                .filter(|&i| {
                    let b = &self.buckets[i];
                    b.owner == owner && b.start == start && !b.closed
                })
                .collect();
            assert!(open.len() <= 1, "two open buckets for one span: {open:?}");
            if let Some(&i) = open.first() {
                let b = &self.buckets[i];
                if c.max_items.is_none_or(|n| b.count < n)
                    && budget.is_none_or(|budget| b.bytes + size <= budget)
                {
                    self.put(i, item, size);
                    return;
                }
                self.buckets[i].closed = true;
            }
            let seq = self
                .buckets
                .iter()
                .filter(|b| b.owner == owner)
                .map(|b| b.seq + 1)
                .max()
                .unwrap_or(0);
            self.buckets.push(MBucket {
                owner: owner.to_owned(),
                seq,
                start,
                count: 0,
                bytes: 0,
                closed: false,
                earliest: item.at,
                latest: item.at,
                items: Vec::new(),
            });
            let i = self.buckets.len() - 1;
            self.put(i, item, size);
            return;
        };
        let existing = self
            .buckets
            .iter()
            .position(|b| b.owner == owner && b.seq == seq);
        let i = if let Some(i) = existing {
            i
        } else {
            self.buckets.push(MBucket {
                owner: owner.to_owned(),
                seq,
                start: None,
                count: 0,
                bytes: 0,
                closed: false,
                earliest: item.at,
                latest: item.at,
                items: Vec::new(),
            });
            self.buckets.len() - 1
        };
        self.put(i, item, size);
    }

    fn put(&mut self, i: usize, item: Reading, size: i64) {
        let c = &self.config;
        // Bytes are counted under a byte budget: one chosen, or the default without a count.
        let counted = c.max_bytes.is_some() || c.max_items.is_none();
        let b = &mut self.buckets[i];
        b.count += 1;
        b.bytes += if counted { size } else { 0 };
        b.earliest = b.earliest.min(item.at);
        b.latest = b.latest.max(item.at);
        b.items.push(item);
    }

    /// The owner's buckets in `seq` order.
    fn of(&self, owner: &str) -> Vec<&MBucket> {
        let mut out: Vec<&MBucket> = self.buckets.iter().filter(|b| b.owner == owner).collect();
        out.sort_by_key(|b| b.seq);
        out
    }

    fn items(&self, owner: &str) -> Vec<Reading> {
        self.of(owner)
            .into_iter()
            .flat_map(|b| b.items.clone())
            .collect()
    }

    fn owned(b: &MBucket, owner: Option<&str>) -> bool {
        owner.is_none_or(|o| b.owner == o)
    }
}

// Long on purpose: every invariant a bucket collection keeps, checked against the model in one
// pass.
#[allow(clippy::too_many_lines)]
fn check(bucket: &Bucket<String, Reading>, model: &Model) -> Result<(), TestCaseError> {
    for o in 0..3 {
        let owner = owner(o);
        let want = model.items(&owner);
        let got = bucket.read(&owner).to_vec().unwrap();
        prop_assert_eq!(&got, &want, "oldest first, {}", owner);
        let mut newest = want.clone();
        newest.reverse();
        prop_assert_eq!(
            &bucket.read(&owner).newest_first().to_vec().unwrap(),
            &newest
        );
        for (skip, limit) in [(0, 1), (0, 3), (2, 2), (3, 10)] {
            let page: Vec<Reading> = newest.iter().skip(skip).take(limit).cloned().collect();
            prop_assert_eq!(
                bucket.newest(&owner, skip as u64, limit as u64).unwrap(),
                page
            );
            let page: Vec<Reading> = want.iter().skip(skip).take(limit).cloned().collect();
            let read = bucket.read(&owner).skip(skip as u64).limit(limit as u64);
            prop_assert_eq!(read.to_vec().unwrap(), page);
        }
        let streamed: Vec<Reading> = bucket
            .read(&owner)
            .newest_first()
            .iter()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        prop_assert_eq!(&streamed, &newest);
        prop_assert_eq!(bucket.count(&owner).unwrap(), want.len() as u64);
        for (from, to) in [(0, 1_000), (250, 500), (600, 610), (999, 1_000)] {
            let range: Vec<Reading> = want
                .iter()
                .filter(|r| r.at >= t(from) && r.at < t(to))
                .cloned()
                .collect();
            let read = bucket.read(&owner).time(t(from), t(to));
            prop_assert_eq!(
                read.to_vec().unwrap(),
                range.clone(),
                "time {}..{}",
                from,
                to
            );
            let read = bucket.read(&owner).time(t(from), t(to));
            prop_assert_eq!(read.count().unwrap(), range.len() as u64);
        }
        for (low, high) in [(-20, 20), (5, 9), (19, 19)] {
            let range: Vec<Reading> = want
                .iter()
                .filter(|r| r.v >= low && r.v <= high)
                .cloned()
                .collect();
            let r = Reading::fields();
            let read = bucket.read(&owner).between(&r.v, low, high).newest_first();
            let mut got = read.to_vec().unwrap();
            got.reverse();
            prop_assert_eq!(got, range, "v in {}..={}", low, high);
        }
        let seqs: Vec<Reading> = model
            .of(&owner)
            .into_iter()
            .filter(|b| (1..3).contains(&b.seq))
            .flat_map(|b| b.items.clone())
            .collect();
        prop_assert_eq!(bucket.read(&owner).seq(1, 3).to_vec().unwrap(), seqs);
    }
    let all: Vec<(String, Reading)> = (0..3)
        .flat_map(|o| {
            let owner = owner(o);
            model
                .items(&owner)
                .into_iter()
                .map(move |r| (owner.clone(), r))
        })
        .collect();
    prop_assert_eq!(bucket.read_all().to_vec_with_owner().unwrap(), all);

    // The stored buckets: laws of their own, and the model's buckets exactly.
    let stored: Vec<BucketDoc<String, Reading>> = bucket
        .collection()
        .find(odm::Filter::all())
        .to_vec()
        .unwrap();
    prop_assert_eq!(stored.len(), model.buckets.len());
    let c = &model.config;
    for b in &stored {
        let m = model
            .buckets
            .iter()
            .find(|m| m.owner == b.owner && m.seq == b.seq)
            .expect("the model has the bucket");
        prop_assert_eq!(&b.items, &m.items);
        prop_assert_eq!((b.count, b.bytes), (i64::from(m.count), m.bytes));
        prop_assert_eq!((b.start, b.closed), (m.start, m.closed));
        prop_assert_eq!(
            (b.control.earliest, b.control.latest),
            (Some(m.earliest), Some(m.latest))
        );
        if let Some(n) = c.max_items {
            prop_assert!(b.count <= i64::from(n));
        }
        if let Some(budget) = c.max_bytes {
            prop_assert!(b.bytes <= i64::from(budget) || b.count == 1, "{:?}", b);
        }
        for item in &b.items {
            prop_assert!(matches!((&b.control.min["v"], &b.control.max["v"]),
                    (bson::Bson::Int32(lo), bson::Bson::Int32(hi)) if *lo <= item.v && item.v <= *hi));
            if let Some(s) = b.start {
                let span = c.span_ms.unwrap();
                prop_assert!(
                    item.at >= s && item.at.timestamp_millis() < s.timestamp_millis() + span
                );
            }
        }
    }
    Ok(())
}

// Long on purpose: the model-based test's interpreter: one match arm per operation against the
// model.
#[allow(clippy::too_many_lines)]
fn run(config: Config, steps: Vec<Op>) -> Result<(), TestCaseError> {
    let db = odm::testing::database().unwrap();
    let bucket: Bucket<String, Reading> = Bucket::open(&db, "readings", config.options()).unwrap();
    // A second handle on the same buckets, with a memory of open buckets of its own: pushes
    // alternate between the two, so each finds buckets the other closed, filled or opened.
    let other: Bucket<String, Reading> = Bucket::open(&db, "readings", config.options()).unwrap();
    let mut model = Model {
        config,
        buckets: Vec::new(),
        counters: BTreeMap::new(),
    };
    let mut next = 0;
    for op in steps {
        match op {
            Op::Push {
                owner: o,
                at,
                v,
                note,
            } => {
                next += 1;
                let item = Reading {
                    n: next,
                    at: t(at),
                    v,
                    note: "x".repeat(note),
                };
                let by = if next % 2 == 0 { &bucket } else { &other };
                by.push(&owner(o), &item).unwrap();
                model.push(&owner(o), item);
            }
            Op::Remove { owner: o, pick } => {
                let items = model.items(&owner(o));
                let n = if items.is_empty() {
                    -1
                } else {
                    items[pick % items.len()].n
                };
                let changed = bucket.remove(&owner(o), Reading::fields().n.eq(n)).unwrap();
                let mut want = 0;
                for b in model.buckets.iter_mut().filter(|b| b.owner == owner(o)) {
                    let before = b.items.len();
                    b.items.retain(|r| r.n != n);
                    want += u64::from(b.items.len() != before);
                }
                prop_assert_eq!(changed, want);
            }
            Op::Mark { owner: o, pick } => {
                let items = model.items(&owner(o));
                let n = if items.is_empty() {
                    -1
                } else {
                    items[pick % items.len()].n
                };
                let r = Reading::fields();
                let marked = bucket
                    .update_item(&owner(o), r.n.eq(n), |m| m.note.set("marked"))
                    .unwrap();
                let mut found = false;
                for b in model.buckets.iter_mut().filter(|b| b.owner == owner(o)) {
                    for item in b.items.iter_mut().filter(|r| r.n == n) {
                        "marked".clone_into(&mut item.note);
                        found = true;
                    }
                }
                prop_assert_eq!(marked, found);
            }
            Op::RemoveBefore { owner: o, cutoff } => {
                let who = o.map(owner);
                let deleted = bucket.remove_before(who.as_ref(), t(cutoff)).unwrap();
                let before = model.buckets.len();
                let who = who.as_deref();
                model
                    .buckets
                    .retain(|b| !(Model::owned(b, who) && b.latest < t(cutoff)));
                for b in &mut model.buckets {
                    if Model::owned(b, who) && b.earliest < t(cutoff) {
                        b.items.retain(|r| r.at >= t(cutoff));
                    }
                }
                model
                    .buckets
                    .retain(|b| !(Model::owned(b, who) && b.items.is_empty()));
                prop_assert_eq!(deleted, (before - model.buckets.len()) as u64);
            }
            Op::DeleteBucketsBefore { owner: o, cutoff } => {
                let who = o.map(owner);
                let deleted = bucket
                    .delete_buckets_before(who.as_ref(), t(cutoff))
                    .unwrap();
                let before = model.buckets.len();
                let who = who.as_deref();
                model
                    .buckets
                    .retain(|b| !(Model::owned(b, who) && b.latest < t(cutoff)));
                prop_assert_eq!(deleted, (before - model.buckets.len()) as u64);
            }
            Op::DeleteBucketsBelow { owner: o, seq } => {
                let deleted = bucket.delete_buckets_below(&owner(o), seq).unwrap();
                let before = model.buckets.len();
                model
                    .buckets
                    .retain(|b| !(b.owner == owner(o) && b.seq < seq));
                prop_assert_eq!(deleted, (before - model.buckets.len()) as u64);
            }
            Op::Compact { owner: o } => {
                let count = bucket.compact(&owner(o)).unwrap();
                let items = model.items(&owner(o));
                model.buckets.retain(|b| b.owner != owner(o));
                model.counters.remove(&owner(o));
                for item in items {
                    model.push(&owner(o), item);
                }
                prop_assert_eq!(count, model.of(&owner(o)).len() as u64);
            }
        }
        check(&bucket, &model)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn reads_and_buckets_equal_the_model(config in configs(), steps in proptest::collection::vec(ops(), 1..30)) {
        run(config, steps)?;
    }
}

#[test]
fn options_that_cannot_work_are_refused_and_change_nothing() {
    let db = odm::testing::database().unwrap();
    let r = Reading::fields();
    let refused = |options: BucketOptions<Reading>, why: &str| {
        let err = Bucket::<String, Reading>::open(&db, "refused", options).unwrap_err();
        assert!(matches!(err, PatternError::Refused { .. }), "{err}");
        assert!(err.to_string().contains(why), "{err}");
    };
    refused(BucketOptions::new().max_items(0), "at least one item");
    refused(BucketOptions::new().max_bytes(64 << 20), "byte budget");
    refused(
        BucketOptions::new().retention(Duration::from_mins(1)),
        "item time",
    );
    refused(
        BucketOptions::new().sequence(),
        "closes buckets by a count of items only",
    );
    refused(
        BucketOptions::new()
            .max_items(5)
            .span(Span::Month, &r.at)
            .sequence(),
        "count of items only",
    );
    refused(
        BucketOptions::new().summary(&r.v).summary(&r.v),
        "summarised twice",
    );
    let err = Bucket::<String, Located>::open(
        &db,
        "refused",
        BucketOptions::new()
            .summary(&Located::fields().loc)
            .summary(&Located::fields().loc.lat),
    )
    .unwrap_err();
    assert!(err.to_string().contains("one holds the other"), "{err}");
    assert!(
        db.collection_names()
            .unwrap()
            .iter()
            .all(|n| n != "refused")
    );
    // Reopening with other options is an error naming what changed.
    Bucket::<String, Reading>::open(&db, "kept", BucketOptions::new().max_items(10)).unwrap();
    let err = Bucket::<String, Reading>::open(&db, "kept", BucketOptions::new().max_items(20))
        .unwrap_err();
    assert!(
        matches!(err, PatternError::ParametersChanged { .. }),
        "{err}"
    );
}

#[test]
fn item_updates_may_not_touch_summaries_and_reads_need_a_declared_time() {
    let db = odm::testing::database().unwrap();
    let r = Reading::fields();
    let readings: Bucket<String, Reading> = Bucket::open(
        &db,
        "readings",
        BucketOptions::new().max_items(4).time(&r.at).summary(&r.v),
    )
    .unwrap();
    let item = Reading {
        n: 1,
        at: t(5),
        v: 3,
        note: String::new(),
    };
    readings.push("a", &item).unwrap();
    for err in [
        readings
            .update_item("a", r.n.eq(1), |m| m.v.set(100))
            .unwrap_err(),
        readings
            .update_item("a", r.n.eq(1), |m| m.at.set(t(9)))
            .unwrap_err(),
    ] {
        assert!(matches!(err, PatternError::Refused { .. }), "{err}");
        assert!(err.to_string().contains("summarise"), "{err}");
    }
    assert_eq!(
        readings.read("a").to_vec().unwrap(),
        std::slice::from_ref(&item)
    );
    // A write outside the matched item is refused too.
    let err = readings
        .update_item("a", r.n.eq(1), |_| {
            BucketDoc::<String, Reading>::fields().count.inc(1)
        })
        .unwrap_err();
    assert!(
        err.to_string().contains("outside the matched item"),
        "{err}"
    );
    let stored = readings
        .collection()
        .find(odm::Filter::all())
        .to_vec()
        .unwrap();
    assert_eq!(stored[0].count, 1, "nothing changed");
    // A span read needs a span policy.
    let err = readings.read("a").span(t(5)).to_vec().unwrap_err();
    assert!(err.to_string().contains("no span"), "{err}");
    // An item without the declared time is refused before anything is written.
    let untimed: Bucket<String, Reading> =
        Bucket::open(&db, "untimed", BucketOptions::new().max_items(4)).unwrap();
    untimed.push("a", &item).unwrap();
    let err = untimed.read("a").time(t(0), t(10)).to_vec().unwrap_err();
    assert!(err.to_string().contains("no declared time"), "{err}");
    let err = untimed.delete_buckets_before(None, t(10)).unwrap_err();
    assert!(err.to_string().contains("no declared time"), "{err}");
}

#[test]
fn summaries_skip_buckets_and_spans_bound_time_ranges_through_the_index() {
    let db = odm::testing::database().unwrap();
    let r = Reading::fields();
    let hourly: Bucket<String, Reading> = Bucket::open(
        &db,
        "hourly",
        BucketOptions::new()
            .max_items(1_000)
            .span(Span::Fixed(Duration::from_hours(1)), &r.at)
            .summary(&r.v),
    )
    .unwrap();
    let minute = 60_000;
    for m in 0..600 {
        // Ten hours; the value is the hour, so each bucket's summary is one value.
        let item = Reading {
            n: m,
            at: DateTime::from_millis(m * minute),
            v: (m / 60) as i32,
            note: String::new(),
        };
        hourly.push("s", &item).unwrap();
    }
    let explain = hourly
        .read("s")
        .time(
            DateTime::from_millis(125 * minute),
            DateTime::from_millis(190 * minute),
        )
        .explain()
        .unwrap();
    assert_eq!(
        explain.index_used(),
        Some("owner_1_start_1_closed_1"),
        "{explain}"
    );
    assert_eq!(explain.docs_examined, 2, "{explain}");
    let explain = hourly.read("s").between(&r.v, 7, 8).explain().unwrap();
    assert_eq!(explain.returned, 2, "{explain}");
    assert_eq!(hourly.read("s").between(&r.v, 7, 8).count().unwrap(), 120);
    // Calendar months: the 31st of January and the 1st of February are two buckets.
    let monthly: Bucket<String, Reading> = Bucket::open(
        &db,
        "monthly",
        BucketOptions::new().span(Span::Month, &r.at),
    )
    .unwrap();
    let jan31 = DateTime::parse_rfc3339_str("2026-01-31T23:59:59Z").unwrap();
    let feb1 = DateTime::parse_rfc3339_str("2026-02-01T00:00:00Z").unwrap();
    for (n, at) in [(1, jan31), (2, feb1)] {
        monthly
            .push(
                "bob",
                &Reading {
                    n,
                    at,
                    v: 0,
                    note: String::new(),
                },
            )
            .unwrap();
    }
    let february = monthly.read("bob").span(feb1).to_vec().unwrap();
    assert_eq!(february.iter().map(|r| r.n).collect::<Vec<_>>(), [2]);
    let january = monthly.read("bob").span(jan31).to_vec().unwrap();
    assert_eq!(january.iter().map(|r| r.n).collect::<Vec<_>>(), [1]);
    let starts = monthly.spans("bob").unwrap();
    assert_eq!(
        starts,
        [
            DateTime::parse_rfc3339_str("2026-01-01T00:00:00Z").unwrap(),
            DateTime::parse_rfc3339_str("2026-02-01T00:00:00Z").unwrap()
        ]
    );
}

#[test]
fn a_byte_budget_keeps_buckets_far_from_the_document_limit() {
    let db = odm::testing::database().unwrap();
    let big: Bucket<String, Reading> = Bucket::open(&db, "big", BucketOptions::new()).unwrap();
    // 40 items of 100 KB: 4 MB, in buckets of at most the 1 MiB default budget.
    for n in 0..40 {
        let item = Reading {
            n,
            at: t(n),
            v: 0,
            note: "x".repeat(100_000),
        };
        big.push("a", &item).unwrap();
    }
    let buckets = big.collection().find(odm::Filter::all()).to_vec().unwrap();
    assert_eq!(buckets.len(), 4);
    assert!(buckets.iter().all(|b| b.bytes <= 1 << 20));
    assert_eq!(big.count("a").unwrap(), 40);
    let last = big.newest("a", 0, 1).unwrap();
    assert_eq!(last[0].n, 39);
}

/// S9 as an application writes it on `Bucket` (the `reviews` example): reviews per user in
/// calendar-month buckets, the ten most recent, a month, the five-star ones, one deleted by id.
#[test]
fn s9_reviews_in_monthly_buckets() {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
    struct Review {
        id: i64,
        stars: i32,
        at: DateTime,
    }
    let db = odm::testing::database().unwrap();
    let r = Review::fields();
    let reviews: Bucket<String, Review> = Bucket::open(
        &db,
        "reviews",
        BucketOptions::new()
            .span(Span::Month, &r.at)
            .summary(&r.stars),
    )
    .unwrap();
    let day = |s: &str| DateTime::parse_rfc3339_str(format!("{s}T08:00:00Z")).unwrap();
    let dates = [
        "2012-08-05",
        "2012-08-20",
        "2012-09-01",
        "2012-09-15",
        "2012-09-30",
        "2012-10-10",
        "2012-10-11",
        "2012-10-31",
        "2012-11-01",
        "2012-11-02",
        "2012-11-30",
        "2012-12-24",
    ];
    for (i, date) in dates.iter().enumerate() {
        let review = Review {
            id: i as i64,
            stars: 1 + (i as i32 * 3) % 5,
            at: day(date),
        };
        reviews.push("bob", &review).unwrap();
    }
    assert_eq!(reviews.spans("bob").unwrap().len(), 5);
    let ten: Vec<i64> = reviews
        .newest("bob", 0, 10)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ten, (2..12).rev().collect::<Vec<i64>>());
    let october = reviews
        .read("bob")
        .time(day("2012-10-01"), day("2012-11-01"))
        .to_vec()
        .unwrap();
    assert_eq!(october.iter().map(|r| r.id).collect::<Vec<_>>(), [5, 6, 7]);
    let five: Vec<i64> = reviews
        .read("bob")
        .between(&r.stars, 5, 5)
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    let want: Vec<i64> = (0..12).filter(|i| 1 + (i * 3) % 5 == 5).collect();
    assert_eq!(five, want);
    assert_eq!(reviews.remove("bob", r.id.eq(6)).unwrap(), 1);
    assert_eq!(reviews.count("bob").unwrap(), 11);
    assert_eq!(
        reviews.newest("bob", 5, 1).unwrap()[0].id,
        5,
        "the order holds after a removal"
    );
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Place {
    lat: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Located {
    n: i64,
    #[odm(embedded)]
    loc: Place,
    x: Option<f64>,
    at: DateTime,
}

/// Summaries are kept and compared in BSON's total order, so a null, a NaN or a value of
/// another type in a bucket never hides its other items from a range read.
#[test]
fn summaries_of_nulls_nans_and_mixed_types_never_hide_items() {
    let db = odm::testing::database().unwrap();
    let l = Located::fields();
    let located: Bucket<String, Located> = Bucket::open(
        &db,
        "located",
        BucketOptions::new().max_items(3).summary(&l.x),
    )
    .unwrap();
    let xs = [
        None,
        Some(40.0),
        Some(f64::NAN),
        Some(39.0),
        None,
        Some(-5.0),
    ];
    for (n, x) in xs.into_iter().enumerate() {
        let item = Located {
            n: n as i64,
            loc: Place { lat: 0.0 },
            x,
            at: t(0),
        };
        located.push("a", &item).unwrap();
    }
    let found: Vec<i64> = located
        .read("a")
        .between(&l.x, Some(38.0), Some(100.0))
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|item| item.n)
        .collect();
    assert_eq!(found, [1, 3]);
    assert_eq!(
        located
            .read("a")
            .between(&l.x, Some(-10.0), Some(0.0))
            .count()
            .unwrap(),
        1
    );
}

/// Bounds are values, never paths: a string bound starting with `$` compares as that string,
/// both where summaries skip buckets and where the items of a bucket are kept.
#[test]
fn string_bounds_starting_with_a_dollar_are_values_not_paths() {
    let db = odm::testing::database().unwrap();
    let r = Reading::fields();
    for (name, summarised) in [("notes", false), ("notes_summarised", true)] {
        let options = BucketOptions::new().max_items(2);
        let options = if summarised {
            options.summary(&r.note)
        } else {
            options
        };
        let bucket: Bucket<String, Reading> = Bucket::open(&db, name, options).unwrap();
        for (n, note) in ["$a", "$b", "$c", "b", "$"].into_iter().enumerate() {
            let n = n as i64;
            let item = Reading {
                n,
                at: t(n),
                v: 0,
                note: note.to_owned(),
            };
            bucket.push("o", &item).unwrap();
        }
        let read = || {
            bucket
                .read("o")
                .between(&r.note, "$b".to_owned(), "$c".to_owned())
        };
        let found: Vec<i64> = read().to_vec().unwrap().into_iter().map(|i| i.n).collect();
        assert_eq!(found, [1, 2], "summarised: {summarised}");
        assert_eq!(read().count().unwrap(), 2, "summarised: {summarised}");
    }
}

/// Extreme arguments are answered, never a panic: a page past every item, a time at the
/// first representable instant under a span.
#[test]
fn extreme_pages_and_times_are_answered() {
    let db = odm::testing::database().unwrap();
    let r = Reading::fields();
    let hourly: Bucket<String, Reading> = Bucket::open(
        &db,
        "hourly",
        BucketOptions::new().span(Span::Fixed(Duration::from_hours(1)), &r.at),
    )
    .unwrap();
    let last = DateTime::from_millis(i64::MAX - 1);
    for (n, at) in [(1, DateTime::MIN), (2, t(0)), (3, last)] {
        let item = Reading {
            n,
            at,
            v: 0,
            note: String::new(),
        };
        hourly.push("a", &item).unwrap();
    }
    assert_eq!(hourly.newest("a", 1, u64::MAX).unwrap().len(), 2);
    assert!(hourly.newest("a", u64::MAX, u64::MAX).unwrap().is_empty());
    let first = hourly
        .read("a")
        .time(DateTime::MIN, t(-1))
        .to_vec()
        .unwrap();
    assert_eq!(first.iter().map(|r| r.n).collect::<Vec<_>>(), [1]);
    assert_eq!(hourly.read("a").span(last).count().unwrap(), 1);
}

#[test]
fn a_bucket_remembered_from_a_transaction_that_failed_is_passed_over() {
    let db = odm::testing::database().unwrap();
    let r = Reading::fields();
    let options = BucketOptions::new().time(&r.at).max_items(2);
    let bucket: Bucket<String, Reading> = Bucket::open(&db, "readings", options).unwrap();
    let reading = |n: i64| Reading {
        n,
        at: t(n),
        v: 0,
        note: String::new(),
    };
    // The push opens a bucket (and the handle remembers it); then the transaction fails, so
    // the remembered bucket never existed: the next pushes must find their way without it
    // (through the index) and fill real buckets in order.
    let first = bucket.prepare(reading(1)).unwrap();
    let failed = db.transaction(|txn| {
        bucket.push_prepared(txn, &owner(0), &first)?;
        Err::<(), _>(PatternError::Refused {
            pattern: "test",
            name: "readings".to_owned(),
            reason: "rolled back on purpose".to_owned(),
        })
    });
    assert!(failed.is_err());
    for n in 2..=4 {
        bucket.push(&owner(0), reading(n)).unwrap();
    }
    let newest: Vec<i64> = bucket
        .newest(&owner(0), 0, 10)
        .unwrap()
        .into_iter()
        .map(|r| r.n)
        .collect();
    assert_eq!(newest, [4, 3, 2]);
    let counts: Vec<i64> = bucket
        .collection()
        .find(BucketDoc::<String, Reading>::fields().owner.eq(owner(0)))
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|b| b.count)
        .collect();
    assert_eq!(counts, [2, 1]);
}
