//! Filter parse and match over arbitrary documents: never a panic, and a collection with an
//! index on each filtered path returns exactly what the same collection without them returns
//! (the planner never misses a match).
#![no_main]

use libfuzzer_sys::fuzz_target;
use odm_engine::query::FindOptions;

fuzz_target!(|data: &[u8]| {
    let docs = odm_fuzz::documents(data);
    let Some((filter, docs)) = docs.split_first() else {
        return;
    };
    let mut paths = Vec::new();
    odm_fuzz::paths(filter, &mut paths);
    let run = |indexed: bool| {
        let db = odm_fuzz::collection(docs, &paths, indexed);
        let txn = db.read().expect("a snapshot opens");
        let c = txn.collection("c").expect("the catalog reads")?;
        let stored: Vec<Vec<u8>> = c
            .scan()
            .ok()?
            .filter_map(Result::ok)
            .map(|d| d.bytes().to_vec())
            .collect();
        let found = c
            .find(filter, &FindOptions::default())
            .and_then(|cursor| cursor.collect::<Result<Vec<_>, _>>());
        let count = c.count_matching(filter, 0, 0);
        Some((stored, found.ok(), count.ok()))
    };
    let (Some(plain), Some(indexed)) = (run(false), run(true)) else {
        return;
    };
    // Documents an index refused would differ for a reason of their own.
    if plain.0 != indexed.0 {
        return;
    }
    // Compared as bytes, in byte order: `==` on documents holding NaN is false.
    let sorted = |found: Option<Vec<bson::Document>>| {
        found.map(|docs| {
            let mut bytes: Vec<Vec<u8>> = docs
                .iter()
                .filter_map(|d| bson::RawDocumentBuf::try_from(d).ok())
                .map(bson::RawDocumentBuf::into_bytes)
                .collect();
            bytes.sort();
            bytes
        })
    };
    assert_eq!(sorted(plain.1), sorted(indexed.1), "filter {filter}");
    assert_eq!(plain.2, indexed.2, "count of filter {filter}");
});
