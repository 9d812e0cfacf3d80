//! Aggregation pipeline parse and run over arbitrary documents: never a panic. The first
//! document's values are the stages; the rest are the collection, and a second collection
//! `d` (the same documents) gives `$lookup` something to join. The same bytes also build a
//! pipeline of the operators that grow values, nested in each other (`odm_fuzz::grow`), run
//! over a small collection: it answers or fails, within the bounds on computed values and
//! its time limit.
#![no_main]

use bson::Document;
use libfuzzer_sys::fuzz_target;
use odm_engine::aggregate::AggregateOptions;

fuzz_target!(|data: &[u8]| {
    let docs = odm_fuzz::documents(data);
    let Some((stages, docs)) = docs.split_first() else {
        return;
    };
    let pipeline: Vec<Document> = stages
        .values()
        .filter_map(|v| v.as_document().cloned())
        .collect();
    let db = odm_fuzz::collection(docs, &["a".to_owned()], true);
    let d = db.collection("d");
    for doc in docs {
        let _ = d.insert_one(doc);
    }
    let txn = db.read().expect("a snapshot opens");
    if let Ok(Some(c)) = txn.collection("c") {
        let _ = c.aggregate(&pipeline, &AggregateOptions::default());
    }
    drop(txn);
    // Through `Database::aggregate` as well, which runs a final `$out` or `$merge`.
    let _ = db.aggregate("c", &pipeline, &AggregateOptions::default());
    let report = db.verify().expect("verify runs");
    assert!(report.is_clean(), "{report:?}");

    let grown = odm_fuzz::grow::pipeline(&mut odm_fuzz::grow::Choices::new(data));
    if std::env::var_os("ODM_FUZZ_SHOW").is_some() {
        eprintln!("{grown:?}");
    }
    let db = odm_fuzz::growth_collections();
    let _ = db.aggregate("c", &grown, &odm_fuzz::grow::options());
});
