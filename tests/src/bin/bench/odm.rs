//! `bench odm`: the typed layer against the engine with raw documents, side by side on the
//! same data: the same serde struct, serialized by hand and passed to the engine as BSON on one
//! side, through `#[derive(Document)]`, typed filters and updates on the other. Ends with one
//! `ratio` line per operation (typed / engine). Then the cost of query sampling (MongoDB's
//! `configureQueryAnalyzer` at its highest rate, 50 a second) on the same typed finds and
//! updates: one `ratio sampling on/off` line. Last, populating references: products holding
//! five `Ref<Part>`s each, loaded with their parts by the typed `populate`, by the same
//! `$lookup` written by hand against the engine, and by one `get` per reference (the N+1
//! pattern `populate` avoids): one `ratio populate` line.

use bson::doc;
use odm::{Document, Embedded, Filter, Ref};
use odm_engine::query::FindOptions;
use odm_engine::{IndexSpec, update::UpdateOptions};
use odm_tests::rng::Rng;
use serde::{Deserialize, Serialize};

use crate::Options;
use crate::report::{median, per_op};

/// The benchmark's model. Its id field is called `id` in Rust and stored as `_id`, the case
/// where the typed layer renames on the way in and out.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Document)]
#[odm(collection = "items")]
struct Item {
    #[odm(id)]
    id: i64,
    #[odm(index)]
    user: String,
    hits: i32,
    title: String,
    tags: Vec<String>,
}

/// The same fields with the id named `_id`, as the engine side stores them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct RawItem {
    #[serde(rename = "_id")]
    id: i64,
    user: String,
    hits: i32,
    title: String,
    tags: Vec<String>,
}

const USERS: u64 = 500;
const BATCH: usize = 1_000;
const OPS: usize = 10_000;

fn item(id: i64, rng: &mut Rng) -> Item {
    Item {
        id,
        user: format!("user{:04}", rng.below(USERS)),
        hits: 0,
        title: format!("the title of item {id}, long enough to look like a real one"),
        tags: (0..5).map(|i| format!("tag{}", (id + i) % 40)).collect(),
    }
}

fn raw(item: &Item) -> RawItem {
    RawItem {
        id: item.id,
        user: item.user.clone(),
        hits: item.hits,
        title: item.title.clone(),
        tags: item.tags.clone(),
    }
}

/// A table row: label, key of the ratio line, and the timing it reads.
type Row = (&'static str, &'static str, fn(&Timings) -> f64);

#[derive(Default)]
struct Timings {
    insert: f64,
    get: f64,
    find: f64,
    update: f64,
}

pub fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = Rng::new(5);
    let items: Vec<Item> = (0..options.docs as i64)
        .map(|i| item(i, &mut rng))
        .collect();
    let raws: Vec<RawItem> = items.iter().map(raw).collect();
    let mut typed_runs = Vec::new();
    let mut engine_runs = Vec::new();
    let mut sampling_runs = Vec::new();
    for run in 0..options.runs {
        let mut ops = Rng::new(50 + run as u64);
        let ids: Vec<i64> = (0..OPS)
            .map(|_| ops.below(options.docs as u64) as i64)
            .collect();
        let users: Vec<String> = (0..OPS / 10)
            .map(|_| format!("user{:04}", ops.below(USERS)))
            .collect();
        typed_runs.push(typed(&items, &ids, &users)?);
        engine_runs.push(engine(&raws, &ids, &users)?);
        sampling_runs.push(sampling(&items, &ids)?);
    }
    let median_of = |runs: &[Timings], f: fn(&Timings) -> f64| median(runs.iter().map(f).collect());
    println!(
        "bench odm: {} documents, index user_1, {OPS} gets and updates, {} finds of ~{} documents, {} runs; {}",
        options.docs,
        OPS / 10,
        options.docs as u64 / USERS,
        options.runs,
        super::report::build()
    );
    println!(
        "{:<34}{:>14}{:>14}{:>10}",
        "operation (median µs per op)", "typed", "engine", "ratio"
    );
    let rows: [Row; 4] = [
        ("insert, 1,000 per transaction", "insert", |t| t.insert),
        ("get by _id", "get", |t| t.get),
        ("find by indexed field", "find", |t| t.find),
        ("$inc by _id, 100 per transaction", "update", |t| t.update),
    ];
    let mut lines = Vec::new();
    for (label, key, f) in rows {
        let (t, e) = (median_of(&typed_runs, f), median_of(&engine_runs, f));
        println!("{label:<34}{t:>14.3}{e:>14.3}{:>10.2}", t / e);
        lines.push(format!("{key}={:.2}", t / e));
    }
    println!("ratio typed/engine {}", lines.join(" "));
    println!(
        "\nquery sampling: the same typed finds and $inc updates with the analyzer off, then on at 50 samples a second"
    );
    println!(
        "{:<34}{:>14}{:>14}{:>10}",
        "operation (median µs per op)", "off", "on", "ratio"
    );
    let mut lines = Vec::new();
    for (label, key, off, on) in [
        ("find one by _id", "find", 0, 1),
        ("$inc by _id, one per transaction", "update", 2, 3),
    ] {
        let off = median(sampling_runs.iter().map(|r| r.0[off]).collect());
        let on = median(sampling_runs.iter().map(|r| r.0[on]).collect());
        println!("{label:<34}{off:>14.3}{on:>14.3}{:>10.2}", on / off);
        lines.push(format!("{key}={:.2}", on / off));
    }
    let sampled = median(sampling_runs.iter().map(|r| r.1 as f64).collect());
    println!("samples taken per run (median): {sampled:.0}");
    println!("ratio sampling on/off {}", lines.join(" "));
    populate_report(options)
}

/// A part products reference.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Document)]
#[odm(collection = "parts")]
struct Part {
    #[odm(id)]
    sku: String,
    cost: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Document)]
#[odm(collection = "products")]
struct Product {
    #[odm(id)]
    id: i64,
    parts: Vec<Ref<Part>>,
}

/// A product with its parts loaded in place of their ids.
#[derive(Debug, Serialize, Deserialize, Embedded)]
struct Assembled {
    #[serde(rename = "_id")]
    id: i64,
    parts: Vec<Part>,
}

/// A joined part as stored: its id is `_id`, as the hand-written `$lookup` returns it.
#[derive(Debug, Deserialize)]
struct StoredPart {
    #[serde(rename = "_id")]
    _sku: String,
    #[serde(rename = "cost")]
    _cost: i64,
}

#[derive(Debug, Deserialize)]
struct RawAssembled {
    #[serde(rename = "_id")]
    _id: i64,
    parts: Vec<StoredPart>,
}

const PARTS: u64 = 2_000;
const PARTS_PER_PRODUCT: u64 = 5;

/// The populate section: µs per product for the typed populate, the hand-written `$lookup`
/// and the N+1 gets, medians over the runs.
fn populate_report(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let products = (options.docs / 10).max(100);
    let mut runs = Vec::new();
    for _ in 0..options.runs {
        runs.push(populate_run(products)?);
    }
    let at = |i: usize| median(runs.iter().map(|r: &[f64; 3]| r[i]).collect());
    let (typed, hand, gets) = (at(0), at(1), at(2));
    println!(
        "\npopulate: {products} products of {PARTS_PER_PRODUCT} Ref<Part> each over {PARTS} parts, all loaded at once"
    );
    println!("{:<34}{:>14}", "way (median µs per product)", "");
    for (label, t) in [
        ("typed populate (one $lookup)", typed),
        ("hand-written $lookup, engine", hand),
        ("one get per reference (N+1)", gets),
    ] {
        println!("{label:<34}{t:>14.3}");
    }
    println!(
        "ratio populate typed/lookup={:.2} n_plus_one/populate={:.2}",
        typed / hand,
        gets / typed
    );
    Ok(())
}

fn populate_run(products: usize) -> Result<[f64; 3], Box<dyn std::error::Error>> {
    let db = odm::Database::in_memory()?;
    let (parts, catalogue) = (db.collection::<Part>()?, db.collection::<Product>()?);
    let all_parts: Vec<Part> = (0..PARTS)
        .map(|i| Part {
            sku: format!("sku{i:05}"),
            cost: i as i64 % 97,
        })
        .collect();
    parts.insert_many(&all_parts)?;
    let mut rng = Rng::new(77);
    let made: Vec<Product> = (0..products as i64)
        .map(|id| Product {
            id,
            parts: (0..PARTS_PER_PRODUCT)
                .map(|_| Ref::new(format!("sku{:05}", rng.below(PARTS))))
                .collect(),
        })
        .collect();
    for batch in made.chunks(BATCH) {
        catalogue.insert_many(batch)?;
    }
    let (f, a) = (Product::fields(), Assembled::fields());
    let (typed, t_typed) = per_op(products, || {
        let assembled = catalogue
            .aggregate()
            .populate(&parts, &f.parts, &a.parts)
            .to_vec()
            .expect("populate");
        assembled.iter().map(|p| p.parts.len()).sum::<usize>()
    });
    let engine = db.engine().expect("an embedded database");
    let lookup = [doc! { "$lookup": {
        "from": "parts", "localField": "parts", "foreignField": "_id", "as": "parts",
    } }];
    let (hand, t_hand) = per_op(products, || {
        let txn = engine.read().expect("read");
        let coll = txn.collection("products").expect("open").expect("exists");
        coll.aggregate(&lookup, &odm_engine::aggregate::AggregateOptions::default())
            .expect("aggregate")
            .into_iter()
            .map(|d| bson::deserialize_from_document::<RawAssembled>(d).expect("decode"))
            .map(|p| p.parts.len())
            .sum::<usize>()
    });
    let (gets, t_gets) = per_op(products, || {
        let mut loaded = 0;
        for product in catalogue.find(Filter::all()).to_vec().expect("find") {
            for part in &product.parts {
                loaded += usize::from(part.get(&parts).expect("get").is_some());
            }
        }
        loaded
    });
    // A product naming one part twice joins it once; the gets load it twice.
    assert_eq!(typed, hand);
    assert!(gets >= typed && typed > 0);
    Ok([t_typed, t_hand, t_gets])
}

/// Typed finds and single updates with sampling off, then on at 50 a second: their times
/// (off find, on find, off update, on update) and how many samples were taken.
fn sampling(items: &[Item], ids: &[i64]) -> Result<([f64; 4], u64), Box<dyn std::error::Error>> {
    let db = odm::Database::in_memory()?;
    let coll = db.collection::<Item>()?;
    let f = Item::fields();
    for batch in items.chunks(BATCH) {
        coll.insert_many(batch)?;
    }
    let mut times = [0.0; 4];
    for (on, slot) in [(false, 0), (true, 1)] {
        if on {
            coll.configure_query_analyzer(
                odm_engine::sampling::AnalyzerMode::Full,
                Some(odm_engine::sampling::MAX_SAMPLES_PER_SECOND),
            )?;
        }
        // The cheapest sampled query, a find of one document by `_id`, shows the cost best.
        let (n, find) = per_op(ids.len(), || {
            ids.iter()
                .map(|id| coll.find(f.id.eq(*id)).to_vec().expect("find").len())
                .sum::<usize>()
        });
        assert_eq!(n, ids.len());
        times[slot] = find;
        // In-memory commits: what is measured is the update's own work and the sampler's.
        let updates = &ids[..ids.len() / 10];
        ((), times[slot + 2]) = per_op(updates.len(), || {
            for id in updates {
                coll.update_one(f.id.eq(*id), f.hits.inc(1))
                    .expect("update");
            }
        });
    }
    let sampled = db.engine().map_or(0, |e| e.sampler_stats().sampled);
    Ok((times, sampled))
}

fn typed(
    items: &[Item],
    ids: &[i64],
    users: &[String],
) -> Result<Timings, Box<dyn std::error::Error>> {
    let db = odm::Database::in_memory()?;
    let coll = db.collection::<Item>()?;
    let f = Item::fields();
    let mut t = Timings::default();
    ((), t.insert) = per_op(items.len(), || {
        for batch in items.chunks(BATCH) {
            coll.insert_many(batch).expect("insert");
        }
    });
    let (found, get) = per_op(ids.len(), || {
        ids.iter()
            .filter(|id| coll.get(**id).expect("get").is_some())
            .count()
    });
    assert_eq!(found, ids.len());
    t.get = get;
    let (n, find) = per_op(users.len(), || {
        users
            .iter()
            .map(|u| {
                coll.find(f.user.eq(u.as_str()))
                    .to_vec()
                    .expect("find")
                    .len()
            })
            .sum::<usize>()
    });
    assert!(n > 0);
    t.find = find;
    ((), t.update) = per_op(ids.len(), || {
        for batch in ids.chunks(100) {
            db.write(|tx| {
                for id in batch {
                    tx.update_one(f.id.eq(*id), f.hits.inc(1), &UpdateOptions::default())?;
                }
                Ok(())
            })
            .expect("update");
        }
    });
    let total: i64 = coll
        .find(Filter::all())
        .to_vec()?
        .iter()
        .map(|i| i64::from(i.hits))
        .sum();
    assert_eq!(total, ids.len() as i64);
    Ok(t)
}

fn engine(
    items: &[RawItem],
    ids: &[i64],
    users: &[String],
) -> Result<Timings, Box<dyn std::error::Error>> {
    let db = odm_engine::Database::in_memory()?;
    db.collection("items")
        .create_index(IndexSpec::ascending("user")?)?;
    let mut t = Timings::default();
    ((), t.insert) = per_op(items.len(), || {
        for batch in items.chunks(BATCH) {
            db.write(|tx| {
                let raws = batch
                    .iter()
                    .map(|i| bson::serialize_to_raw_document_buf(i).expect("serialize"));
                tx.insert_many("items", raws, true)
            })
            .expect("insert");
        }
    });
    let (found, get) = per_op(ids.len(), || {
        ids.iter()
            .filter(|id| {
                let txn = db.read().expect("read");
                let coll = txn.collection("items").expect("open").expect("exists");
                coll.get(&bson::Bson::Int64(**id))
                    .expect("get")
                    .map(|d| d.decode::<RawItem>().expect("decode"))
                    .is_some()
            })
            .count()
    });
    assert_eq!(found, ids.len());
    t.get = get;
    let (n, find) = per_op(users.len(), || {
        users
            .iter()
            .map(|u| {
                let txn = db.read().expect("read");
                let coll = txn.collection("items").expect("open").expect("exists");
                coll.find_as::<RawItem>(&doc! { "user": u.as_str() }, &FindOptions::default())
                    .expect("find")
                    .collect::<odm_engine::Result<Vec<_>>>()
                    .expect("decode")
                    .len()
            })
            .sum::<usize>()
    });
    assert!(n > 0);
    t.find = find;
    ((), t.update) = per_op(ids.len(), || {
        for batch in ids.chunks(100) {
            db.write(|tx| {
                for id in batch {
                    tx.update_one(
                        "items",
                        &doc! { "_id": *id },
                        &doc! { "$inc": { "hits": 1 } },
                        &UpdateOptions::default(),
                    )?;
                }
                Ok::<_, odm_engine::Error>(())
            })
            .expect("update");
        }
    });
    Ok(t)
}
