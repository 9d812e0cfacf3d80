//! Decoding stored bytes: arbitrary bytes through the engine's decoder (what a damaged file
//! gives it), as a document and as a model of the shape the typed layer's derive gives (its
//! `_id` under another name, nested and optional fields, read with its schema version in one
//! pass). Never a panic; where both the engine's decoder and the bson crate's deserializer
//! accept the bytes, they agree (the decoder's law: it stands in for that deserializer,
//! extended-JSON readings of `$` field names included).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Model {
    id: i64,
    name: String,
    tags: Vec<String>,
    inner: Option<Inner>,
    score: f64,
    when: Option<bson::DateTime>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Inner {
    a: i32,
    b: Vec<Inner>,
}

fuzz_target!(|data: &[u8]| {
    let ours = odm_engine::decode::from_slice_with_id::<bson::Document>(data, None);
    let theirs = bson::deserialize_from_slice::<bson::Document>(data);
    if let (Ok(ours), Ok(theirs)) = (&ours, &theirs) {
        // Compared as bytes: `==` on documents holding NaN is false.
        let bytes = |d: &bson::Document| bson::RawDocumentBuf::try_from(d).map(|r| r.into_bytes());
        assert_eq!(bytes(ours).ok(), bytes(theirs).ok());
    }
    let _ = odm_engine::decode::from_slice_with_id::<Model>(data, Some("id"));
    let _ = odm_engine::decode::from_slice_versioned::<Model>(data, Some("id"));
});
