//! MongoDB's hash of a BSON value (`BSONElementHasher::hash64` with seed 0): the key a hashed
//! index stores, what a hashed shard key routes by, and `$toHashedIndexKey`. Computing the same
//! 64 bits as the server is what lets routing predictions agree with a real cluster.
//!
//! The hash is MD5 over the seed (an int32, little-endian) and the value: its canonical type
//! (an int32), then for a number its value as an int64 (every numeric type hashes alike; see
//! `number_for_hash`), for a document, array or code with scope each child as canonical type,
//! field name with its NUL and value, closed by four zero bytes, and for any other type its BSON
//! value bytes as stored. The first eight digest bytes, little-endian, are the hash.

use bson::{Bson, Decimal128, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::collation::Collation;
use md5::{Digest, Md5};

use crate::number::Number;

/// MongoDB's `DEFAULT_HASH_SEED`.
const SEED: i32 = 0;

/// The hash of `value`, as MongoDB's hashed indexes store it.
pub fn hash(value: RawBsonRef<'_>) -> i64 {
    hash_collated(value, None)
}

/// The hash of `value` as a hashed index under `collation` stores it: as MongoDB's, it hashes
/// each string (at any depth) as the string of its sort key, so strings equal under the
/// collation hash alike.
pub(crate) fn hash_collated(value: RawBsonRef<'_>, collation: Option<&Collation>) -> i64 {
    let mut md5 = Md5::new();
    md5.update(SEED.to_le_bytes());
    feed(&mut md5, collation, None, value);
    let digest = md5.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_le_bytes(first)
}

/// The hash of an owned value; see [`hash`].
pub fn hash_bson(value: &Bson) -> i64 {
    match bson::RawBson::try_from(value.clone()) {
        Ok(raw) => hash(raw.as_raw_bson_ref()),
        // Every `Bson` converts; a failure would be a bson crate bug, hashed as null.
        Err(_) => hash(RawBsonRef::Null),
    }
}

/// Feeds a value: its canonical type, its field name with the NUL (inside documents and
/// arrays; a top-level value has none), then its payload.
fn feed(md5: &mut Md5, collation: Option<&Collation>, name: Option<&str>, value: RawBsonRef<'_>) {
    md5.update(canonical_type(value).to_le_bytes());
    if let Some(name) = name {
        md5.update(name.as_bytes());
        md5.update([0]);
    }
    match value {
        RawBsonRef::String(s) if let Some(collation) = collation => {
            // A string's payload: its length with the NUL, its bytes, the NUL.
            let key = collation.sort_key(s);
            let length = i32::try_from(key.len() + 1).unwrap_or(i32::MAX);
            md5.update(length.to_le_bytes());
            md5.update(&key);
            md5.update([0]);
        }
        RawBsonRef::Double(_)
        | RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Decimal128(_) => md5.update(number_for_hash(value).to_le_bytes()),
        RawBsonRef::Document(d) => feed_children(md5, collation, d),
        RawBsonRef::Array(a) => {
            // A malformed element ends the array; stored documents were checked whole.
            for (i, element) in a.into_iter().map_while(Result::ok).enumerate() {
                feed(md5, collation, Some(&i.to_string()), element);
            }
            md5.update(0i32.to_le_bytes());
        }
        RawBsonRef::JavaScriptCodeWithScope(c) => {
            md5.update(c.code.as_bytes());
            md5.update([0]);
            feed_children(md5, None, c.scope);
        }
        other => md5.update(value_bytes(other)),
    }
}

fn feed_children(md5: &mut Md5, collation: Option<&Collation>, doc: &RawDocument) {
    for (name, element) in doc.iter().map_while(Result::ok) {
        feed(md5, collation, Some(name.as_str()), element);
    }
    md5.update(0i32.to_le_bytes());
}

/// A value's bytes as BSON stores them after the field name.
fn value_bytes(value: RawBsonRef<'_>) -> Vec<u8> {
    let mut doc = RawDocumentBuf::new();
    doc.append(bson::raw::cstr!(""), value);
    let bytes = doc.as_bytes();
    // length (4), type (1), empty name's NUL (1) ... value ... document's closing NUL (1)
    bytes[6..bytes.len() - 1].to_vec()
}

/// MongoDB's canonical type order, as the hash feeds it.
fn canonical_type(value: RawBsonRef<'_>) -> i32 {
    match value {
        RawBsonRef::MinKey => -1,
        RawBsonRef::Undefined => 0,
        RawBsonRef::Null => 5,
        RawBsonRef::Double(_)
        | RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Decimal128(_) => 10,
        RawBsonRef::String(_) | RawBsonRef::Symbol(_) => 15,
        RawBsonRef::Document(_) => 20,
        RawBsonRef::Array(_) => 25,
        RawBsonRef::Binary(_) => 30,
        RawBsonRef::ObjectId(_) => 35,
        RawBsonRef::Boolean(_) => 40,
        RawBsonRef::DateTime(_) => 45,
        RawBsonRef::Timestamp(_) => 47,
        RawBsonRef::RegularExpression(_) => 50,
        RawBsonRef::DbPointer(_) => 55,
        RawBsonRef::JavaScriptCode(_) => 60,
        RawBsonRef::JavaScriptCodeWithScope(_) => 65,
        RawBsonRef::MaxKey => 127,
    }
}

/// A number as the hash sees it (MongoDB's `safeNumberLongForHash`): integers as they are, a
/// double truncated toward zero and clamped to the int64 range (NaN is 0, and exactly 2^63 is
/// `i64::MIN`, a quirk MongoDB keeps for data already on disk), a decimal rounded half to
/// even and clamped.
fn number_for_hash(value: RawBsonRef<'_>) -> i64 {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    match value {
        RawBsonRef::Int32(i) => i64::from(i),
        RawBsonRef::Int64(i) => i,
        RawBsonRef::Double(d) if d.is_nan() => 0,
        RawBsonRef::Double(d) if d == TWO_POW_63 => i64::MIN,
        // `as` truncates toward zero and saturates, which is the rule for every other double.
        RawBsonRef::Double(d) => d as i64,
        RawBsonRef::Decimal128(d) => decimal_for_hash(d),
        _ => 0,
    }
}

fn decimal_for_hash(d: Decimal128) -> i64 {
    let rounded = match crate::update::decimal::to_places(d, 0, true) {
        Bson::Decimal128(r) => r,
        _ => d,
    };
    match Number::from_decimal128(rounded) {
        Number::NaN => 0,
        Number::NegInfinity => i64::MIN,
        Number::PosInfinity => i64::MAX,
        Number::Finite(f) => {
            // `0.digits × 10^exp`, an integer after rounding.
            if f.is_zero() {
                return 0;
            }
            let exp = usize::try_from(f.exp).unwrap_or(0);
            if exp > 19 {
                return if f.negative { i64::MIN } else { i64::MAX };
            }
            let mut magnitude: i128 = 0;
            for i in 0..exp {
                magnitude = magnitude * 10 + i128::from(f.digits.get(i).copied().unwrap_or(0));
            }
            let signed = if f.negative { -magnitude } else { magnitude };
            i64::try_from(signed).unwrap_or(if f.negative { i64::MIN } else { i64::MAX })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, oid::ObjectId, spec::BinarySubtype};

    fn h(value: Bson) -> i64 {
        hash_bson(&value)
    }

    /// Vectors from MongoDB's own hasher tests and docs (seed 0).
    #[test]
    fn hashes_agree_with_mongodb() {
        assert_eq!(h(Bson::Int32(42)), -944_302_157_085_130_861);
        assert_eq!(h(Bson::Int64(42)), -944_302_157_085_130_861);
        assert_eq!(h(Bson::Double(42.123)), -944_302_157_085_130_861);
        assert_eq!(h(Bson::Double(0.456)), 4_854_801_880_128_277_513);
        assert_eq!(h(Bson::Double(f64::NAN)), 4_854_801_880_128_277_513);
        assert_eq!(h(Bson::Double(-0.0)), 4_854_801_880_128_277_513);
        assert_eq!(h(Bson::Int32(1)), 5_902_408_780_260_971_510);
        assert_eq!(h(Bson::Double(-1.789)), 1_140_205_862_565_771_219);
        assert_eq!(h(Bson::Int32(i32::MIN)), 6_165_898_260_261_354_870);
        assert_eq!(h(Bson::Int32(i32::MAX)), 1_143_184_177_162_245_883);
        assert_eq!(h(Bson::Double(f64::MAX)), 921_523_596_458_303_250);
        assert_eq!(h(Bson::Int64(i64::MAX)), 921_523_596_458_303_250);
        assert_eq!(h(Bson::Double(-f64::MAX)), 4_532_067_210_535_695_462);
        assert_eq!(h(Bson::Int64(i64::MIN)), 4_532_067_210_535_695_462);
        assert_eq!(
            h(Bson::Double(9_223_372_036_854_775_808.0)),
            4_532_067_210_535_695_462
        );
        assert_eq!(h(Bson::MinKey), 7_961_148_599_568_647_290);
        assert_eq!(h(Bson::MaxKey), 5_504_842_513_779_440_750);
        assert_eq!(h(Bson::Undefined), 40_158_834_000_849_533);
        assert_eq!(h(Bson::Null), 2_338_878_944_348_059_895);
        assert_eq!(h(Bson::String("abc".into())), 8_478_485_326_885_698_097);
        assert_eq!(h(Bson::Symbol("abc".into())), 8_478_485_326_885_698_097);
        assert_eq!(h(Bson::String(String::new())), 2_049_396_243_249_673_340);
        assert_eq!(
            h(Bson::Document(doc! { "a": "abc", "b": 123_i64 })),
            4_771_603_801_758_380_216
        );
        assert_eq!(h(Bson::Document(doc! {})), 7_980_500_913_326_740_417);
        assert_eq!(
            h(Bson::Array(vec!["bar".into(), "baz".into(), "qux".into()])),
            -2_938_911_267_422_831_539
        );
        assert_eq!(h(Bson::Array(vec![])), 8_849_948_234_993_459_283);
        assert_eq!(
            h(Bson::Binary(bson::Binary {
                subtype: BinarySubtype::Generic,
                bytes: vec![0, 1, 2, 3, 4, 6],
            })),
            7_252_465_090_394_235_301
        );
        assert_eq!(
            h(Bson::ObjectId(
                ObjectId::parse_str("010203040506070809101112").unwrap()
            )),
            -5_588_663_249_627_035_708
        );
        assert_eq!(h(Bson::Boolean(true)), 6_405_873_908_747_105_701);
        assert_eq!(h(Bson::Boolean(false)), 6_289_544_573_401_934_092);
        assert_eq!(
            h(Bson::DateTime(bson::DateTime::from_millis(
                0x5566_7788_1122_3344
            ))),
            4_476_222_765_095_560_467
        );
        assert_eq!(
            h(Bson::Timestamp(bson::Timestamp {
                time: 0x5566_7788,
                increment: 0x1122_3344
            })),
            4_873_046_866_288_452_390
        );
        assert_eq!(
            h(Bson::RegularExpression(bson::Regex {
                pattern: "mongodb".try_into().unwrap(),
                options: "".try_into().unwrap()
            })),
            -7_275_792_090_268_217_043
        );
        assert_eq!(
            h(Bson::JavaScriptCode("func f() { return 1; }".into())),
            6_861_638_109_178_014_270
        );
        assert_eq!(
            h(Bson::JavaScriptCodeWithScope(
                bson::JavaScriptCodeWithScope {
                    code: "func f() { return 1; }".into(),
                    scope: doc! { "c": true },
                }
            )),
            501_342_939_894_575_968
        );
        // The manual's `$toHashedIndexKey` and zone-sharding examples.
        assert_eq!(
            h(Bson::String("string to hash".into())),
            763_543_691_661_428_748
        );
        assert_eq!(h(Bson::Int32(5)), 4_470_791_281_878_691_347);
        assert_eq!(h(Bson::Int32(10)), 7_766_103_514_953_448_109);
    }

    #[test]
    fn decimals_round_half_to_even_before_hashing() {
        let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
        assert_eq!(h(dec("42")), h(Bson::Int32(42)));
        assert_eq!(h(dec("2.5")), h(Bson::Int32(2)));
        assert_eq!(h(dec("3.5")), h(Bson::Int32(4)));
        assert_eq!(h(dec("-2.7")), h(Bson::Int32(-3)));
        assert_eq!(h(dec("NaN")), h(Bson::Int32(0)));
        assert_eq!(h(dec("1E+30")), h(Bson::Int64(i64::MAX)));
        assert_eq!(h(dec("-Infinity")), h(Bson::Int64(i64::MIN)));
    }
}
