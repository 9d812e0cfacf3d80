//! `bench natural`: what an insertion sequence (MongoDB's record ids, which give a
//! collection its natural order) would cost this engine, measured on the engine itself.
//!
//! Today a collection's documents live in one table keyed by `_id`, so its storage ("natural")
//! order is `_id` order. Two layouts would keep insertion order, and the engine's own parts
//! model both, on documents whose `_id`s arrive in random order (strings, as in the ODM suites
//! whose natural-order tests fail); `seq` is an insertion counter with an ascending index:
//!
//! - writes: inserting with the `seq` index (a sequence entry per document, which either
//!   layout writes) against inserting without it;
//! - point reads: by `_id` (one lookup in the documents' table) against by `seq` (an index
//!   lookup, then the fetch: what a read by `_id` costs in MongoDB's layout, documents keyed by
//!   record id and found through the `_id` index);
//! - scans: the whole collection in `_id` order against in `seq` order (the index walked, each
//!   document fetched: what a natural-order scan costs if documents stay keyed by `_id` and a
//!   sequence table is kept beside them).
//!
//! Ends with one `ratio` line per phase: sequence / today's.

use bson::{Bson, doc};
use odm_engine::query::FindOptions;
use odm_engine::{Database, IndexSpec};
use odm_tests::rng::Rng;

use crate::Options;
use crate::report::{Row, build, median, per_op, print_table};

const POINT_READS: usize = 2_000;

/// The documents: random string `_id`s, an insertion counter, a payload of ~200 bytes.
fn documents(n: usize) -> Vec<bson::Document> {
    let mut rng = Rng::new(7);
    (0..n)
        .map(|i| {
            doc! {
                "_id": format!("u{:016x}", rng.next_u64()),
                "seq": i as i64,
                "name": format!("user {i}"),
                "payload": "x".repeat(180),
            }
        })
        .collect()
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn load(docs: &[bson::Document], with_sequence: bool) -> Result<Database> {
    let db = Database::in_memory()?;
    let c = db.collection("c");
    if with_sequence {
        c.create_index(IndexSpec::ascending("seq")?)?;
    }
    for batch in docs.chunks(1_000) {
        c.insert_many(batch.iter().cloned(), true)?;
    }
    Ok(db)
}

fn point_reads(db: &Database, docs: &[bson::Document], by_seq: bool) -> Result<usize> {
    let txn = db.read()?;
    let c = txn.collection("c")?.ok_or("no collection")?;
    let step = (docs.len() / POINT_READS).max(1);
    let mut found = 0;
    for d in docs.iter().step_by(step).take(POINT_READS) {
        let filter = if by_seq {
            doc! { "seq": d.get("seq").cloned().unwrap_or(Bson::Null) }
        } else {
            doc! { "_id": d.get("_id").cloned().unwrap_or(Bson::Null) }
        };
        found += c.find_raw(&filter, &FindOptions::default())?.count();
    }
    Ok(found)
}

fn scan(db: &Database, by_seq: bool) -> Result<usize> {
    let txn = db.read()?;
    let c = txn.collection("c")?.ok_or("no collection")?;
    let options = FindOptions {
        sort: by_seq.then(|| doc! { "seq": 1 }),
        ..FindOptions::default()
    };
    Ok(c.find_raw(&doc! {}, &options)?.count())
}

pub fn run(options: &Options) -> Result<()> {
    let n = options.docs;
    let docs = documents(n);
    println!(
        "bench natural: {n} documents, {} runs, {}",
        options.runs,
        build()
    );
    let (mut insert, mut point, mut scans) = ([vec![], vec![]], [vec![], vec![]], [vec![], vec![]]);
    for _ in 0..options.runs {
        for (side, sequence) in [(0, false), (1, true)] {
            let (db, t) = per_op(n, || load(&docs, sequence));
            let db = db?;
            insert[side].push(t);
            let (found, t) = per_op(POINT_READS, || point_reads(&db, &docs, sequence));
            if found? != POINT_READS.min(n) {
                return Err("a point read missed its document".into());
            }
            point[side].push(t);
            let (seen, t) = per_op(n, || scan(&db, sequence));
            if seen? != n {
                return Err("a scan missed documents".into());
            }
            scans[side].push(t);
        }
    }
    let rows: Vec<Row> = [
        ("insert", &insert),
        ("point read", &point),
        ("full scan, per document", &scans),
    ]
    .into_iter()
    .map(|(phase, sides)| Row {
        phase,
        unit: "µs",
        values: sides.iter().map(|s| median(s.clone())).collect(),
    })
    .collect();
    print_table(&["_id order", "sequence"], &rows);
    for row in &rows {
        println!(
            "ratio {} sequence/_id-order {:.2}",
            row.phase,
            row.values[1] / row.values[0]
        );
    }
    Ok(())
}
