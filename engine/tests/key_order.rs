//! The key-order law: for any BSON values `a` and `b`,
//! `keys::encode(a).cmp(&keys::encode(b)) == order::compare(a, b)`, in both directions and for
//! compound keys; and every encoding's length is recoverable (`keys::encoded_len`).

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
