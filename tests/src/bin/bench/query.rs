//! `bench query`: indexed queries of five kinds on 100,000 documents, the engine (planner,
//! index scan, fetch, matcher, decode) against a hand-written redb range scan over an index
//! table of the same shape (fetch and decode included), plus a collection scan for scale.
//! Ends with one `ratio` line per query kind, with the engine's keys examined and documents
//! returned per query from explain.
//!
//! Instruction counts, stable where times are not, for one side of one kind:
//! `valgrind --tool=callgrind --toggle-collect='*query::engine_queries*' bench query --runs 1
//! --docs 20000 --kind range` (or `*query::raw_queries*`).

use std::path::Path;

use bson::{Bson, doc};
use odm_engine::query::FindOptions;
use odm_engine::{Database, Direction, Durability, IndexSpec};
use odm_tests::rng::Rng;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use crate::Options;
use crate::core::{Item, USERS, fresh, item, to_raw, user_key};
use crate::report::{median, per_op};

const DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("docs");
const BY_USER: TableDefinition<&[u8], ()> = TableDefinition::new("by_user");
const BY_CATEGORY_SCORE: TableDefinition<&[u8], ()> = TableDefinition::new("by_category_score");

/// The query kinds, with how many queries of each one run.
const KINDS: [(&str, usize); 6] = [
    ("eq", 1000),
    ("range", 100),
    ("in", 300),
    ("prefix", 100),
    ("sorted_limit", 1000),
    ("collection_scan", 3),
];

fn category_key(category: i32) -> [u8; 4] {
    ((category as u32) ^ 0x8000_0000).to_be_bytes()
}

/// Doubles ordered as unsigned integers, then inverted for a descending field.
fn score_desc(score: f64) -> [u8; 8] {
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    (!ordered).to_be_bytes()
}

struct Raw {
    db: redb::Database,
}

impl Raw {
    fn load(path: &Path, items: &[Item]) -> Result<Raw, redb::Error> {
        let db = redb::Database::create(path)?;
        for batch in items.chunks(10_000) {
            let txn = db.begin_write()?;
            {
                let mut docs = txn.open_table(DOCS)?;
                let mut by_user = txn.open_table(BY_USER)?;
                let mut by_cs = txn.open_table(BY_CATEGORY_SCORE)?;
                for it in batch {
                    let id = it.id as u64;
                    docs.insert(id, bson::serialize_to_vec(it).expect("encode").as_slice())?;
                    by_user.insert(user_key(&it.user, id).as_slice(), ())?;
                    let key = [
                        &category_key(it.category)[..],
                        &score_desc(it.score),
                        &id.to_be_bytes(),
                    ]
                    .concat();
                    by_cs.insert(key.as_slice(), ())?;
                }
            }
            txn.commit()?;
        }
        Ok(Raw { db })
    }

    /// Fetches and decodes the documents whose index keys lie in `[lower, upper)`, at most `limit`.
    fn scan(
        &self,
        table: TableDefinition<&[u8], ()>,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
        keep: impl Fn(&Item) -> bool,
    ) -> usize {
        let txn = self.db.begin_read().expect("read");
        let docs = txn.open_table(DOCS).expect("docs");
        let index = txn.open_table(table).expect("index");
        let mut found = 0;
        for row in index.range(lower..upper).expect("range") {
            let (key, _) = row.expect("row");
            let key = key.value();
            let id = u64::from_be_bytes(key[key.len() - 8..].try_into().expect("8 bytes"));
            let doc = docs.get(id).expect("get").expect("present");
            let it: Item = bson::deserialize_from_slice(doc.value()).expect("decode");
            if keep(&it) {
                found += 1;
                if found == limit {
                    break;
                }
            }
        }
        found
    }

    fn collection_scan(&self, keep: impl Fn(&Item) -> bool) -> usize {
        let txn = self.db.begin_read().expect("read");
        let docs = txn.open_table(DOCS).expect("docs");
        docs.iter()
            .expect("iter")
            .map(|r| {
                bson::deserialize_from_slice::<Item>(r.expect("row").1.value()).expect("decode")
            })
            .filter(|it| keep(it))
            .count()
    }
}

fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

/// One query of a kind, as a filter and options for the engine and a closure for raw redb.
fn engine_query(kind: &str, rng: &mut Rng) -> (bson::Document, FindOptions) {
    let user = |rng: &mut Rng| format!("user{:05}", rng.below(USERS));
    let category = rng.below(495) as i32;
    match kind {
        "eq" => (doc! { "user": user(rng) }, FindOptions::default()),
        "range" => (
            doc! { "category": { "$gte": category, "$lt": category + 5 } },
            FindOptions::default(),
        ),
        "in" => (
            doc! { "user": { "$in": [user(rng), user(rng), user(rng)] } },
            FindOptions::default(),
        ),
        "prefix" => (
            doc! { "user": { "$regex": format!("^user00{}", 10 + rng.below(89)) } },
            FindOptions::default(),
        ),
        "sorted_limit" => (
            doc! { "category": category },
            FindOptions {
                sort: Some(doc! { "score": -1 }),
                limit: Some(10),
                ..FindOptions::default()
            },
        ),
        _ => (doc! { "score": { "$gt": 9_990.0 } }, FindOptions::default()),
    }
}

fn raw_query(raw: &Raw, filter: &bson::Document) -> usize {
    let text = |v: &Bson| v.as_str().unwrap_or_default().to_owned();
    if let Ok(user) = filter.get_str("user") {
        let lo = user_key(user, 0);
        return raw.scan(BY_USER, &lo, &user_key(user, u64::MAX), usize::MAX, |_| {
            true
        });
    }
    if let Ok(cond) = filter.get_document("user") {
        if let Ok(users) = cond.get_array("$in") {
            let distinct: std::collections::BTreeSet<String> = users.iter().map(text).collect();
            return distinct
                .iter()
                .map(|u| {
                    raw.scan(
                        BY_USER,
                        &user_key(u, 0),
                        &user_key(u, u64::MAX),
                        usize::MAX,
                        |_| true,
                    )
                })
                .sum();
        }
        let prefix = cond
            .get_str("$regex")
            .unwrap_or_default()
            .trim_start_matches('^')
            .as_bytes()
            .to_vec();
        return raw.scan(BY_USER, &prefix, &prefix_end(&prefix), usize::MAX, |_| true);
    }
    if let Ok(cond) = filter.get_document("category") {
        let lo = cond.get_i32("$gte").unwrap_or_default();
        let hi = cond.get_i32("$lt").unwrap_or_default();
        return raw.scan(
            BY_CATEGORY_SCORE,
            &category_key(lo),
            &category_key(hi),
            usize::MAX,
            |_| true,
        );
    }
    if let Ok(category) = filter.get_i32("category") {
        return raw.scan(
            BY_CATEGORY_SCORE,
            &category_key(category),
            &category_key(category + 1),
            10,
            |_| true,
        );
    }
    raw.collection_scan(|it| it.score > 9_990.0)
}

/// The engine's side of a run: every query found and each result decoded, then dropped, as
/// raw redb's side does (kept out of line, so callgrind can count it alone).
#[inline(never)]
fn engine_queries(
    coll: &odm_engine::ReadCollection<'_>,
    queries: &[(bson::Document, FindOptions)],
) -> usize {
    queries
        .iter()
        .map(|(f, o)| {
            let mut found = 0;
            for item in coll.find_as::<Item>(f, o).expect("find") {
                let _decoded: Item = item.expect("decode");
                found += 1;
            }
            found
        })
        .sum()
}

/// Raw redb's side of a run (out of line, as [`engine_queries`]).
#[inline(never)]
fn raw_queries(raw: &Raw, queries: &[(bson::Document, FindOptions)]) -> usize {
    queries.iter().map(|(f, _)| raw_query(raw, f)).sum()
}

pub fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("odm-bench-query-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng::new(7);
    let items: Vec<Item> = (0..options.docs as i64)
        .map(|i| item(i, &mut rng))
        .collect();
    let engine = Database::open(fresh(&dir, "engine.redb"))?;
    let c = engine.collection("items");
    c.create_index(IndexSpec::ascending("user")?)?;
    c.create_index(IndexSpec::new([
        ("category", Direction::Ascending),
        ("score", Direction::Descending),
    ])?)?;
    for batch in items.chunks(10_000) {
        engine.write_with(Durability::Eventual, |t| {
            t.insert_many("items", batch.iter().map(to_raw), true)
        })?;
    }
    engine.write(|t| {
        t.create_collection("flush")
            .or(Ok::<_, odm_engine::Error>(()))
    })?;
    let raw = Raw::load(&fresh(&dir, "raw.redb"), &items)?;
    println!(
        "bench query: {} documents, indexes user_1 and category_1_score_-1, {} runs; {}",
        options.docs,
        options.runs,
        super::report::build()
    );
    println!(
        "{:<16}{:>10}{:>14}{:>14}{:>10}{:>12}{:>12}",
        "kind", "queries", "engine µs/q", "raw µs/q", "ratio", "keys/q", "returned/q"
    );
    let mut lines = Vec::new();
    for (kind, count) in KINDS
        .into_iter()
        .filter(|(k, _)| options.kind.as_deref().is_none_or(|wanted| wanted == *k))
    {
        let mut engine_times = Vec::new();
        let mut raw_times = Vec::new();
        let (mut keys, mut returned) = (0u64, 0u64);
        for run in 0..options.runs {
            let mut qrng = Rng::new(100 + run as u64);
            let queries: Vec<_> = (0..count).map(|_| engine_query(kind, &mut qrng)).collect();
            let txn = engine.read()?;
            let coll = txn.collection("items")?.ok_or("no collection")?;
            let (engine_found, t) = per_op(count, || engine_queries(&coll, &queries));
            engine_times.push(t);
            let (raw_found, t) = per_op(count, || raw_queries(&raw, &queries));
            raw_times.push(t);
            if engine_found != raw_found {
                return Err(
                    format!("{kind}: engine found {engine_found}, raw redb {raw_found}").into(),
                );
            }
            if run == 0 {
                for (f, o) in &queries {
                    let e = coll.explain(f, o)?;
                    keys += e.keys_examined;
                    returned += e.returned;
                }
            }
        }
        let (e, r) = (median(engine_times), median(raw_times));
        let per = |n: u64| n as f64 / count as f64;
        println!(
            "{kind:<16}{count:>10}{e:>14.2}{r:>14.2}{:>10.2}{:>12.1}{:>12.1}",
            e / r,
            per(keys),
            per(returned)
        );
        lines.push(format!(
            "ratio kind={kind} engine/raw={:.2} keys_per_query={:.1} returned_per_query={:.1}",
            e / r,
            per(keys),
            per(returned)
        ));
    }
    for line in lines {
        println!("{line}");
    }
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
