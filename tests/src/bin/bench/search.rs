//! `bench search`: geospatial and text queries through their indexes against a scan computing
//! the same answer, on real data: MongoDB's zip codes (`datasets/zips.json`) and the seed
//! documents (`seeds/`) split into paragraphs.
//!
//! Kinds, each run over the same queries on both sides, answers compared:
//! - `near`: the 10 zip codes nearest a point (`$near` on a `2dsphere` index; the scan
//!   measures every document's distance with the engine's exact geometry and keeps the 10
//!   nearest);
//! - `within 5 km`: `$geoWithin` a `$centerSphere` (the scan: the same query on a collection
//!   without the index);
//! - `within a state`: `$geoWithin` a state's bounding polygon (likewise);
//! - `text`: `$text` for one word (the scan: every paragraph judged by the same search).
//!
//! Prints queries per second of each side, the ratio, and the keys and documents one query
//! examines (from explain). Ends with one `ratio` line per kind: index / scan speed.

use std::collections::BTreeSet;

use bson::{Bson, Document, RawDocumentBuf, doc};
use odm_engine::geo::{GeoCondition, Near, document_distance};
use odm_engine::query::FindOptions;
use odm_engine::text::TextMatch;
use odm_engine::{Database, IndexSpec, ReadCollection};
use odm_tests::rng::Rng;

use crate::Options;
use crate::report::{build, median};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared");
/// Queries a kind: fewer in a debug build, whose run only checks that the sides agree.
const QUERIES: usize = if cfg!(debug_assertions) { 5 } else { 50 };
const WORDS: [&str; 10] = [
    "schema",
    "bucket",
    "shard",
    "index",
    "message",
    "document",
    "query",
    "inbox",
    "write",
    "collection",
];

fn zips() -> Result<Vec<Document>> {
    let text = std::fs::read_to_string(format!("{SHARED}/datasets/zips.json"))?;
    let mut seen = BTreeSet::new();
    let mut docs = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line)?;
        let Bson::Document(doc) = Bson::try_from(value)? else {
            return Err("a zip code line is no document".into());
        };
        // The sample repeats three `_id`s: the first of each is kept.
        if seen.insert(doc.get_str("_id")?.to_owned()) {
            docs.push(doc);
        }
    }
    Ok(docs)
}

fn paragraphs() -> Result<Vec<Document>> {
    let mut docs = Vec::new();
    let mut files: Vec<_> =
        std::fs::read_dir(format!("{SHARED}/seeds"))?.collect::<std::io::Result<_>>()?;
    files.sort_by_key(std::fs::DirEntry::file_name);
    for file in files {
        let text = std::fs::read_to_string(file.path())?;
        for paragraph in text.split("\n\n").map(str::trim).filter(|p| p.len() > 40) {
            docs.push(doc! { "_id": docs.len() as i64, "body": paragraph });
        }
    }
    Ok(docs)
}

fn load(db: &Database, name: &str, docs: &[Document], index: Option<Document>) -> Result<()> {
    let c = db.collection(name);
    if let Some(keys) = index {
        c.create_index(IndexSpec::from_keys_document(&keys)?)?;
    }
    for batch in docs.chunks(1_000) {
        c.insert_many(batch.iter().cloned(), true)?;
    }
    Ok(())
}

/// The answer of one query: ids in order.
fn run_find(c: &ReadCollection<'_>, filter: &Document, limit: Option<u64>) -> Result<Vec<Bson>> {
    let options = FindOptions {
        limit,
        ..FindOptions::default()
    };
    Ok(c.find(filter, &options)?
        .map(|d| d.map(|d| d.get("_id").cloned().unwrap_or(Bson::Null)))
        .collect::<std::result::Result<_, _>>()?)
}

fn sorted(mut ids: Vec<Bson>) -> Vec<String> {
    let mut out: Vec<String> = ids.drain(..).map(|b| b.to_string()).collect();
    out.sort();
    out
}

/// The scan side of `near`: every document's distance, the `limit` nearest.
fn scan_near(c: &ReadCollection<'_>, near: &Near, limit: usize) -> Result<Vec<Bson>> {
    let mut all: Vec<(f64, Bson)> = Vec::new();
    for doc in c.find_raw(&doc! {}, &FindOptions::default())? {
        let doc: RawDocumentBuf = doc?;
        if let Some(d) = document_distance(near, &doc, &["loc".to_owned()]) {
            let id = Bson::try_from(doc.get("_id")?.ok_or("no _id")?)?;
            all.push((d, id));
        }
    }
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(all.into_iter().take(limit).map(|(_, id)| id).collect())
}

/// The scan side of `text`: every paragraph judged by the search.
fn scan_text(c: &ReadCollection<'_>, search: &TextMatch) -> Result<Vec<Bson>> {
    let mut found = Vec::new();
    for doc in c.find_raw(&doc! {}, &FindOptions::default())? {
        let doc: RawDocumentBuf = doc?;
        if search.matches(&doc).map_err(|e| e.to_string())? {
            found.push(Bson::try_from(doc.get("_id")?.ok_or("no _id")?)?);
        }
    }
    Ok(found)
}

/// One kind's figures: queries per second through the index and by the scan, and what one
/// indexed query examines.
struct Figures {
    kind: &'static str,
    indexed_qps: f64,
    scan_qps: f64,
    keys: f64,
    docs: f64,
}

fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, f64)> {
    let start = std::time::Instant::now();
    let out = f()?;
    Ok((out, start.elapsed().as_secs_f64()))
}

/// How one kind is run and judged: its filters, the collection explained, each side's run,
/// whether answers are in order, the limit explain runs with.
struct Kind<'a> {
    name: &'static str,
    filters: Vec<Document>,
    on: &'a ReadCollection<'a>,
    indexed: &'a dyn Fn(&Document) -> Result<Vec<Bson>>,
    scan: &'a dyn Fn(&Document) -> Result<Vec<Bson>>,
    ordered: bool,
    limit: Option<u64>,
}

/// Runs one kind on both sides `runs` times, checking they agree, and what explain reports.
fn measure(kind: &Kind<'_>, runs: usize) -> Result<Figures> {
    let (mut fast, mut slow) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (answers, t) = timed(|| {
            kind.filters
                .iter()
                .map(kind.indexed)
                .collect::<Result<Vec<_>>>()
        })?;
        fast.push(t);
        let (expected, t) = timed(|| {
            kind.filters
                .iter()
                .map(kind.scan)
                .collect::<Result<Vec<_>>>()
        })?;
        slow.push(t);
        for (got, want) in answers.into_iter().zip(expected) {
            let same = if kind.ordered {
                got == want
            } else {
                sorted(got) == sorted(want)
            };
            if !same {
                return Err(format!("{}: the index and the scan disagree", kind.name).into());
            }
        }
    }
    let (mut keys, mut docs) = (0u64, 0u64);
    for filter in &kind.filters {
        let options = FindOptions {
            limit: kind.limit,
            ..FindOptions::default()
        };
        let explained = kind.on.explain(filter, &options)?;
        keys += explained.keys_examined;
        docs += explained.docs_examined;
    }
    let n = kind.filters.len() as f64;
    Ok(Figures {
        kind: kind.name,
        indexed_qps: n / median(fast),
        scan_qps: n / median(slow),
        keys: keys as f64 / n,
        docs: docs as f64 / n,
    })
}

/// The filters of each geo kind, around zip codes drawn at random.
fn geo_filters(zips: &[Document]) -> [Vec<Document>; 3] {
    let mut rng = Rng::new(11);
    let centers: Vec<(f64, f64)> = (0..QUERIES)
        .map(|_| {
            let z = &zips[(rng.next_u64() % zips.len() as u64) as usize];
            let loc = z.get_array("loc").expect("loc");
            (
                loc[0].as_f64().unwrap_or(0.0),
                loc[1].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    let near = centers
        .iter()
        .map(|&(x, y)| doc! { "loc": { "$near": { "$geometry": { "type": "Point", "coordinates": [x, y] } } } })
        .collect();
    let within = centers
        .iter()
        .map(|&(x, y)| doc! { "loc": { "$geoWithin": { "$centerSphere": [[x, y], 5_000.0 / 6_378_100.0] } } })
        .collect();
    let colorado = doc! { "loc": { "$geoWithin": { "$geometry": { "type": "Polygon", "coordinates": [[
        [-109.05, 37.0], [-102.05, 37.0], [-102.05, 41.0], [-109.05, 41.0], [-109.05, 37.0]
    ]] } } } };
    [near, within, vec![colorado; QUERIES]]
}

fn print(figures: &[Figures]) {
    println!(
        "{:<28}{:>14}{:>14}{:>10}{:>14}{:>14}",
        "kind", "index q/s", "scan q/s", "ratio", "keys/query", "docs/query"
    );
    for f in figures {
        println!(
            "{:<28}{:>14.1}{:>14.1}{:>10.1}{:>14.1}{:>14.1}",
            f.kind,
            f.indexed_qps,
            f.scan_qps,
            f.indexed_qps / f.scan_qps,
            f.keys,
            f.docs
        );
    }
    for f in figures {
        println!(
            "ratio {} index/scan {:.2}",
            f.kind,
            f.indexed_qps / f.scan_qps
        );
    }
}

pub fn run(options: &Options) -> Result<()> {
    let zips = zips()?;
    let prose = paragraphs()?;
    let db = Database::in_memory()?;
    load(&db, "zips", &zips, Some(doc! { "loc": "2dsphere" }))?;
    load(&db, "zips_plain", &zips, None)?;
    load(&db, "prose", &prose, Some(doc! { "body": "text" }))?;
    println!(
        "bench search: {} zip codes, {} paragraphs, {QUERIES} queries a kind, {} runs, {}",
        zips.len(),
        prose.len(),
        options.runs,
        build()
    );
    let text_index = db
        .collection("prose")
        .list_indexes()?
        .into_iter()
        .find(|spec| spec.text().is_some())
        .ok_or("no text index")?;
    let txn = db.read()?;
    let indexed = txn.collection("zips")?.ok_or("no zips")?;
    let plain = txn.collection("zips_plain")?.ok_or("no zips")?;
    let text = txn.collection("prose")?.ok_or("no prose")?;
    let [near, within, state] = geo_filters(&zips);
    let find_indexed = |f: &Document| run_find(&indexed, f, None);
    let find_plain = |f: &Document| run_find(&plain, f, None);
    let kinds = [
        Kind {
            name: "near (nearest 10)",
            filters: near,
            on: &indexed,
            indexed: &|f| run_find(&indexed, f, Some(10)),
            scan: &|f| scan_near(&plain, &near_of(f)?, 10),
            ordered: true,
            limit: Some(10),
        },
        Kind {
            name: "within 5 km",
            filters: within,
            on: &indexed,
            indexed: &find_indexed,
            scan: &find_plain,
            ordered: false,
            limit: None,
        },
        Kind {
            name: "within a state's polygon",
            filters: state,
            on: &indexed,
            indexed: &find_indexed,
            scan: &find_plain,
            ordered: false,
            limit: None,
        },
        Kind {
            name: "text (one word)",
            filters: (0..QUERIES)
                .map(|i| doc! { "$text": { "$search": WORDS[i % WORDS.len()] } })
                .collect(),
            on: &text,
            indexed: &|f| run_find(&text, f, None),
            scan: &|f| {
                let search = TextMatch::of_index(&text_index, f.get("$text").ok_or("no $text")?)?
                    .ok_or("no text index")?;
                scan_text(&text, &search)
            },
            ordered: false,
            limit: None,
        },
    ];
    let figures = kinds
        .iter()
        .map(|kind| measure(kind, options.runs))
        .collect::<Result<Vec<_>>>()?;
    print(&figures);
    Ok(())
}

/// The near condition of a `$near` filter on `loc`.
fn near_of(filter: &Document) -> Result<Near> {
    let operators = filter.get_document("loc")?;
    match GeoCondition::near(operators, false)? {
        GeoCondition::Near(near) => Ok(near),
        _ => Err("not a near condition".into()),
    }
}
