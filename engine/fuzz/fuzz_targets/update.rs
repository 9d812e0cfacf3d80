//! Update parse and apply: never a panic; after every update, committed or refused, the
//! indexes equal their recomputation (`verify`), and a refused update changes nothing.
#![no_main]

use bson::Document;
use libfuzzer_sys::fuzz_target;
use odm_engine::update::{UpdateModifications, UpdateOptions};
use odm_engine::{Database, IndexSpec};

fn contents(db: &Database) -> Vec<Vec<u8>> {
    let txn = db.read().expect("a snapshot opens");
    let Ok(Some(c)) = txn.collection("c") else {
        return Vec::new();
    };
    c.scan()
        .map(|rows| {
            rows.filter_map(Result::ok)
                .map(|d| d.bytes().to_vec())
                .collect()
        })
        .unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    let docs = odm_fuzz::documents(data);
    if docs.len() < 2 {
        return;
    }
    let (filter, update, docs) = (&docs[0], &docs[1], &docs[2..]);
    let db = odm_fuzz::collection(docs, &[], false);
    let c = db.collection("c");
    for spec in [
        IndexSpec::ascending("a"),
        IndexSpec::ascending("a.b"),
        IndexSpec::from_keys_document(&bson::doc! { "b": 1, "c": -1 }),
        IndexSpec::hashed("h"),
    ]
    .into_iter()
    .flatten()
    {
        let _ = c.create_index(spec);
    }
    let _ = c.create_index(IndexSpec::ascending("u").expect("valid").unique().sparse());
    // The update document may also be a pipeline: its values, when they are all documents.
    let pipeline: Option<Vec<Document>> = update
        .values()
        .map(|v| v.as_document().cloned())
        .collect::<Option<_>>()
        .filter(|stages: &Vec<Document>| {
            !stages.is_empty() && update.keys().all(|k| k.parse::<usize>().is_ok())
        });
    let modifications = match pipeline {
        Some(stages) => UpdateModifications::Pipeline(stages),
        None => UpdateModifications::Document(update.clone()),
    };
    let before = contents(&db);
    let options = UpdateOptions {
        upsert: filter.contains_key("_upsert"),
        ..UpdateOptions::default()
    };
    let outcome = c.update_many(filter, modifications, &options);
    if outcome.is_err() {
        assert_eq!(
            contents(&db),
            before,
            "a refused update changed the collection"
        );
    }
    let report = db.verify().expect("verify runs");
    assert!(
        report.is_clean(),
        "indexes differ from their recomputation: {report:?}"
    );
});
