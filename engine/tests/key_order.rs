//! The key-order law: for any BSON values `a` and `b`,
//! `keys::encode(a).cmp(&keys::encode(b)) == order::compare(a, b)`, in both directions and for
//! compound keys; every encoding's length is recoverable (`keys::encoded_len`); and a key with its
//! key types decodes back to the exact values (`keys::decode_with_types`).

mod common;

use std::cmp::Ordering;

use bson::{Bson, RawBson};
use odm_engine::keys::{self, Direction};
use odm_engine::order;
use proptest::prelude::*;

fn raw(v: &Bson) -> RawBson {
    RawBson::try_from(v.clone()).expect("generated values convert")
}

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![Just(Direction::Ascending), Just(Direction::Descending)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn encoding_order_equals_value_order(a in common::value(), b in common::value()) {
        let (ra, rb) = (raw(&a), raw(&b));
        let by_value = order::compare(ra.as_raw_bson_ref(), rb.as_raw_bson_ref());
        let by_bytes = keys::encode(ra.as_raw_bson_ref()).cmp(&keys::encode(rb.as_raw_bson_ref()));
        prop_assert_eq!(by_value, by_bytes, "a = {:?}, b = {:?}", a, b);
        prop_assert_eq!(order::compare(rb.as_raw_bson_ref(), ra.as_raw_bson_ref()), by_value.reverse());
    }

    #[test]
    fn numbers_of_every_type_order_by_value(a in common::number(), b in common::number()) {
        let (ra, rb) = (raw(&a), raw(&b));
        let by_value = order::compare(ra.as_raw_bson_ref(), rb.as_raw_bson_ref());
        let by_bytes = keys::encode(ra.as_raw_bson_ref()).cmp(&keys::encode(rb.as_raw_bson_ref()));
        prop_assert_eq!(by_value, by_bytes, "a = {:?}, b = {:?}", a, b);
    }

    #[test]
    fn close_numbers_order_by_value((a, b) in common::close_numbers()) {
        let (ra, rb) = (raw(&a), raw(&b));
        let by_value = order::compare(ra.as_raw_bson_ref(), rb.as_raw_bson_ref());
        let by_bytes = keys::encode(ra.as_raw_bson_ref()).cmp(&keys::encode(rb.as_raw_bson_ref()));
        prop_assert_eq!(by_value, by_bytes, "a = {:?}, b = {:?}", a, b);
    }

    #[test]
    fn compound_keys_compare_field_by_field(
        fields in prop::collection::vec((common::value(), common::value(), direction()), 1..4)
    ) {
        let mut left = Vec::new();
        let mut right = Vec::new();
        let mut expected = Ordering::Equal;
        for (a, b, direction) in &fields {
            let (ra, rb) = (raw(a), raw(b));
            keys::encode_into(&mut left, ra.as_raw_bson_ref(), *direction);
            keys::encode_into(&mut right, rb.as_raw_bson_ref(), *direction);
            let field = order::compare(ra.as_raw_bson_ref(), rb.as_raw_bson_ref());
            let field = if *direction == Direction::Descending { field.reverse() } else { field };
            expected = expected.then(field);
        }
        prop_assert_eq!(left.cmp(&right), expected);
    }

    #[test]
    fn encoded_len_recovers_each_field(v in common::value(), direction in direction(), tail in prop::collection::vec(any::<u8>(), 0..4)) {
        let mut bytes = Vec::new();
        keys::encode_into(&mut bytes, raw(&v).as_raw_bson_ref(), direction);
        let len = bytes.len();
        bytes.extend_from_slice(&tail);
        prop_assert_eq!(keys::encoded_len(&bytes, direction), Some(len));
    }

    #[test]
    fn keys_decode_back_to_their_values_with_their_types(
        fields in prop::collection::vec((prop::option::of(common::value()), direction()), 1..4),
        tail in prop::collection::vec(any::<u8>(), 0..4),
    ) {
        // `None` is a missing field, indexed as null.
        let values: Vec<(RawBson, bool)> = fields
            .iter()
            .map(|(v, _)| v.as_ref().map_or((RawBson::Null, true), |v| (raw(v), false)))
            .collect();
        let directions: Vec<Direction> = fields.iter().map(|(_, d)| *d).collect();
        let mut key = Vec::new();
        for ((v, _), d) in values.iter().zip(&directions) {
            keys::encode_into(&mut key, v.as_raw_bson_ref(), *d);
        }
        key.extend_from_slice(&tail);
        let mut types = Vec::new();
        keys::types_of(values.iter().map(|(v, missing)| (v.as_raw_bson_ref(), *missing)), &mut types);
        let decoded = keys::decode_with_types(&key, &directions, &types);
        if types == [keys::UNDECODABLE] {
            prop_assert!(decoded.is_none());
        } else {
            let decoded = decoded.expect("a decodable key decodes");
            let as_doc = |fields: Vec<Option<Bson>>| -> bson::RawDocumentBuf {
                let mut d = bson::Document::new();
                for (i, f) in fields.into_iter().enumerate() {
                    if let Some(v) = f {
                        d.insert(i.to_string(), v);
                    }
                }
                bson::RawDocumentBuf::try_from(&d).expect("converts")
            };
            let expected: Vec<Option<Bson>> = fields.iter().map(|(v, _)| v.clone()).collect();
            let (got, want) = (as_doc(decoded), as_doc(expected));
            prop_assert_eq!(got.as_bytes(), want.as_bytes(), "{:?}", fields);
        }
    }

    #[test]
    fn key_decoding_never_panics_on_arbitrary_bytes(
        key in prop::collection::vec(any::<u8>(), 0..40),
        types in prop::collection::vec(any::<u8>(), 0..8),
    ) {
        let _ = keys::decode_with_types(&key, &[Direction::Ascending, Direction::Descending], &types);
    }

    #[test]
    fn encoded_len_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        let _ = keys::encoded_len(&bytes, Direction::Ascending);
        let _ = keys::encoded_len(&bytes, Direction::Descending);
    }
}

#[test]
fn sorting_by_order_sorts_the_encodings() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let values: Vec<RawBson> = (0..2000)
        .map(|_| raw(&common::value().new_tree(&mut runner).unwrap().current()))
        .collect();
    let mut sorted = values.clone();
    sorted.sort_by(|a, b| order::compare(a.as_raw_bson_ref(), b.as_raw_bson_ref()));
    let encoded: Vec<Vec<u8>> = sorted
        .iter()
        .map(|v| keys::encode(v.as_raw_bson_ref()))
        .collect();
    assert!(encoded.windows(2).all(|w| w[0] <= w[1]));
}
