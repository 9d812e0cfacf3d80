//! Key encoding: for the values of the input's documents, the encoding's byte order is
//! MongoDB's order (`keys::encode(a).cmp(&keys::encode(b)) == order::compare(a, b)`), each
//! encoding's length is recoverable, and a key with its key types decodes to the exact value.
#![no_main]

use bson::{Bson, RawBson};
use libfuzzer_sys::fuzz_target;
use odm_engine::keys::{self, Direction};
use odm_engine::order;

fuzz_target!(|data: &[u8]| {
    let values: Vec<RawBson> = odm_fuzz::documents(data)
        .into_iter()
        .flat_map(|d| d.into_iter().map(|(_, v)| v))
        .take(12)
        .filter_map(|v| RawBson::try_from(v).ok())
        .collect();
    for a in &values {
        let ka = keys::encode(a.as_raw_bson_ref());
        assert_eq!(keys::encoded_len(&ka, Direction::Ascending), Some(ka.len()));
        for b in &values {
            let kb = keys::encode(b.as_raw_bson_ref());
            assert_eq!(
                ka.cmp(&kb),
                order::compare(a.as_raw_bson_ref(), b.as_raw_bson_ref()),
                "{a:?} vs {b:?}"
            );
        }
        let mut types = Vec::new();
        keys::types_of([(a.as_raw_bson_ref(), false)], &mut types);
        if types != [keys::UNDECODABLE] {
            let decoded = keys::decode_with_types(&ka, &[Direction::Ascending], &types)
                .expect("a decodable key decodes");
            let want = Bson::try_from(a.clone()).ok();
            let got = decoded.into_iter().next().flatten();
            // Compared as documents' bytes: exact types and bits, but for NaN, which MongoDB
            // holds as one value whatever its payload (a key keeps no payload).
            let bytes = |v: Option<Bson>| {
                v.map(canonical_nan)
                    .and_then(|v| bson::RawDocumentBuf::try_from(&bson::doc! { "v": v }).ok())
                    .map(|d| d.as_bytes().to_vec())
            };
            assert_eq!(bytes(got), bytes(want), "{a:?}");
        }
    }
});

/// `v` with every NaN, at any depth, the canonical one.
fn canonical_nan(v: Bson) -> Bson {
    match v {
        Bson::Double(d) if d.is_nan() => Bson::Double(f64::NAN),
        Bson::Array(items) => Bson::Array(items.into_iter().map(canonical_nan).collect()),
        Bson::Document(d) => {
            Bson::Document(d.into_iter().map(|(k, v)| (k, canonical_nan(v))).collect())
        }
        other => other,
    }
}
