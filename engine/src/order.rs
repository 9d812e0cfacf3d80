//! MongoDB's total order over BSON values, the order of `sort` and of index keys.
//!
//! Values of different types compare by their type bracket first:
//! MinKey < undefined < null < numbers < strings (and symbols) < objects < arrays < binData <
//! ObjectId < bool < date < timestamp < regex < DBPointer < JavaScript < JavaScript with scope <
//! MaxKey. Within a bracket: numbers by exact value across int32, int64, double and decimal128
//! (NaN lowest, -0 equal to 0); strings by their UTF-8 bytes; objects element by element (type
//! bracket, then field name, then value), a shorter object first; arrays element by element;
//! binData by length, then subtype, then bytes; regexes by pattern, then options.
//!
//! [`crate::keys`] must encode values so that byte order equals this order; the property test
//! `engine/tests/key_order.rs` checks that law, so this module is written independently of it.
//! A malformed element inside a nested document (only possible with damaged bytes) ends that
//! document for comparison purposes: comparing never panics.

use std::cmp::Ordering;

use bson::{RawArray, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::collation::Collation;
use crate::number::{Number, cmp_i64_f64};

/// The type bracket of a value; values in different brackets never compare equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bracket {
    MinKey,
    Undefined,
    Null,
    Number,
    String,
    Object,
    Array,
    Binary,
    ObjectId,
    Bool,
    Date,
    Timestamp,
    Regex,
    DbPointer,
    Code,
    CodeWithScope,
    MaxKey,
}

pub fn bracket(v: &RawBsonRef<'_>) -> Bracket {
    match v {
        RawBsonRef::MinKey => Bracket::MinKey,
        RawBsonRef::Undefined => Bracket::Undefined,
        RawBsonRef::Null => Bracket::Null,
        RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Double(_)
        | RawBsonRef::Decimal128(_) => Bracket::Number,
        RawBsonRef::String(_) | RawBsonRef::Symbol(_) => Bracket::String,
        RawBsonRef::Document(_) => Bracket::Object,
        RawBsonRef::Array(_) => Bracket::Array,
        RawBsonRef::Binary(_) => Bracket::Binary,
        RawBsonRef::ObjectId(_) => Bracket::ObjectId,
        RawBsonRef::Boolean(_) => Bracket::Bool,
        RawBsonRef::DateTime(_) => Bracket::Date,
        RawBsonRef::Timestamp(_) => Bracket::Timestamp,
        RawBsonRef::RegularExpression(_) => Bracket::Regex,
        RawBsonRef::DbPointer(_) => Bracket::DbPointer,
        RawBsonRef::JavaScriptCode(_) => Bracket::Code,
        RawBsonRef::JavaScriptCodeWithScope(_) => Bracket::CodeWithScope,
        RawBsonRef::MaxKey => Bracket::MaxKey,
    }
}

/// Compares two values in MongoDB's order.
pub fn compare(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> Ordering {
    compare_in(a, b, None)
}

/// Compares two values in MongoDB's order, strings and symbols (at any depth) under a
/// collation when one is given.
pub fn compare_in(a: RawBsonRef<'_>, b: RawBsonRef<'_>, collation: Option<&Collation>) -> Ordering {
    let by_bracket = bracket(&a).cmp(&bracket(&b));
    if by_bracket != Ordering::Equal {
        return by_bracket;
    }
    match (a, b) {
        (x, y) if bracket(&x) == Bracket::Number => compare_numbers(x, y),
        (
            RawBsonRef::String(x) | RawBsonRef::Symbol(x),
            RawBsonRef::String(y) | RawBsonRef::Symbol(y),
        ) if collation.is_some() => collation.map_or(Ordering::Equal, |c| c.compare_strings(x, y)),
        // Same bracket, so a string never meets code here.
        (
            RawBsonRef::String(x) | RawBsonRef::Symbol(x) | RawBsonRef::JavaScriptCode(x),
            RawBsonRef::String(y) | RawBsonRef::Symbol(y) | RawBsonRef::JavaScriptCode(y),
        ) => x.as_bytes().cmp(y.as_bytes()),
        (RawBsonRef::Document(x), RawBsonRef::Document(y)) => compare_documents_in(x, y, collation),
        (RawBsonRef::Array(x), RawBsonRef::Array(y)) => compare_arrays_in(x, y, collation),
        (RawBsonRef::Binary(x), RawBsonRef::Binary(y)) => x
            .bytes
            .len()
            .cmp(&y.bytes.len())
            .then_with(|| u8::from(x.subtype).cmp(&u8::from(y.subtype)))
            .then_with(|| x.bytes.cmp(y.bytes)),
        (RawBsonRef::ObjectId(x), RawBsonRef::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (RawBsonRef::Boolean(x), RawBsonRef::Boolean(y)) => x.cmp(&y),
        (RawBsonRef::DateTime(x), RawBsonRef::DateTime(y)) => {
            x.timestamp_millis().cmp(&y.timestamp_millis())
        }
        (RawBsonRef::Timestamp(x), RawBsonRef::Timestamp(y)) => {
            (x.time, x.increment).cmp(&(y.time, y.increment))
        }
        (RawBsonRef::RegularExpression(x), RawBsonRef::RegularExpression(y)) => x
            .pattern
            .as_str()
            .as_bytes()
            .cmp(y.pattern.as_str().as_bytes())
            .then_with(|| {
                x.options
                    .as_str()
                    .as_bytes()
                    .cmp(y.options.as_str().as_bytes())
            }),
        (RawBsonRef::DbPointer(_), RawBsonRef::DbPointer(_)) => {
            db_pointer_parts(a).cmp(&db_pointer_parts(b))
        }
        (RawBsonRef::JavaScriptCodeWithScope(x), RawBsonRef::JavaScriptCodeWithScope(y)) => x
            .code
            .as_bytes()
            .cmp(y.code.as_bytes())
            .then_with(|| compare_documents(x.scope, y.scope)),
        // MinKey, MaxKey, null and undefined have a single value each.
        _ => Ordering::Equal,
    }
}

fn compare_numbers(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> Ordering {
    match (a, b) {
        (RawBsonRef::Int32(x), RawBsonRef::Int32(y)) => x.cmp(&y),
        (RawBsonRef::Int32(x), RawBsonRef::Int64(y)) => i64::from(x).cmp(&y),
        (RawBsonRef::Int64(x), RawBsonRef::Int32(y)) => x.cmp(&i64::from(y)),
        (RawBsonRef::Int64(x), RawBsonRef::Int64(y)) => x.cmp(&y),
        (RawBsonRef::Double(x), RawBsonRef::Double(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        },
        (RawBsonRef::Int32(x), RawBsonRef::Double(y)) => cmp_i64_f64(i64::from(x), y),
        (RawBsonRef::Int64(x), RawBsonRef::Double(y)) => cmp_i64_f64(x, y),
        (RawBsonRef::Double(x), RawBsonRef::Int32(y)) => cmp_i64_f64(i64::from(y), x).reverse(),
        (RawBsonRef::Double(x), RawBsonRef::Int64(y)) => cmp_i64_f64(y, x).reverse(),
        _ => exact_number(a).cmp(&exact_number(b)),
    }
}

/// The exact value of a number; callers pass only values in the number bracket.
pub(crate) fn exact_number(v: RawBsonRef<'_>) -> Number {
    match v {
        RawBsonRef::Int32(x) => Number::from_i64(i64::from(x)),
        RawBsonRef::Int64(x) => Number::from_i64(x),
        RawBsonRef::Double(x) => Number::from_f64(x),
        RawBsonRef::Decimal128(x) => Number::from_decimal128(x),
        _ => Number::NaN,
    }
}

/// Whether a value is a NaN (a double's, or a decimal128's); reads a double's bits, and only a
/// decimal128 through its exact value.
pub(crate) fn is_nan(v: RawBsonRef<'_>) -> bool {
    match v {
        RawBsonRef::Double(x) => x.is_nan(),
        RawBsonRef::Decimal128(_) => exact_number(v) == Number::NaN,
        _ => false,
    }
}

/// Field by field: the value's type bracket, then the field name, then the value.
pub fn compare_documents(a: &RawDocument, b: &RawDocument) -> Ordering {
    compare_documents_in(a, b, None)
}

fn compare_documents_in(
    a: &RawDocument,
    b: &RawDocument,
    collation: Option<&Collation>,
) -> Ordering {
    compare_sequences(
        a.iter().map_while(Result::ok),
        b.iter().map_while(Result::ok),
        |(ka, va), (kb, vb)| {
            bracket(&va)
                .cmp(&bracket(&vb))
                .then_with(|| ka.as_str().as_bytes().cmp(kb.as_str().as_bytes()))
                .then_with(|| compare_in(va, vb, collation))
        },
    )
}

/// Element by element.
pub fn compare_arrays(a: &RawArray, b: &RawArray) -> Ordering {
    compare_arrays_in(a, b, None)
}

fn compare_arrays_in(a: &RawArray, b: &RawArray, collation: Option<&Collation>) -> Ordering {
    compare_sequences(
        a.into_iter().map_while(Result::ok),
        b.into_iter().map_while(Result::ok),
        |x, y| compare_in(x, y, collation),
    )
}

/// Lexicographic order, a sequence that is a prefix of the other first.
fn compare_sequences<T>(
    mut a: impl Iterator<Item = T>,
    mut b: impl Iterator<Item = T>,
    mut cmp: impl FnMut(T, T) -> Ordering,
) -> Ordering {
    loop {
        match (a.next(), b.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = cmp(x, y);
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

/// The namespace and ObjectId of a (deprecated) DBPointer, read from its BSON encoding because
/// the bson crate keeps those fields private: `int32 length, namespace bytes, NUL, 12-byte id`.
pub(crate) fn db_pointer_parts(v: RawBsonRef<'_>) -> (Vec<u8>, [u8; 12]) {
    let mut holder = RawDocumentBuf::new();
    holder.append(bson::raw::cstr!("p"), v);
    let bytes = holder.as_bytes();
    // Document header (4) + element type (1) + "p\0" (2) = 7 bytes before the value.
    let value = bytes.get(7..bytes.len().saturating_sub(1)).unwrap_or(&[]);
    if value.len() < 4 + 1 + 12 {
        return (Vec::new(), [0; 12]);
    }
    let ns = &value[4..value.len() - 12 - 1];
    let mut id = [0u8; 12];
    id.copy_from_slice(&value[value.len() - 12..]);
    (ns.to_vec(), id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Bson, RawBson, doc};

    fn raw(b: Bson) -> RawBson {
        RawBson::try_from(b).unwrap()
    }

    fn cmp(a: Bson, b: Bson) -> Ordering {
        compare(raw(a).as_raw_bson_ref(), raw(b).as_raw_bson_ref())
    }

    #[test]
    fn brackets_follow_mongodb() {
        let ascending = [
            Bson::MinKey,
            Bson::Undefined,
            Bson::Null,
            Bson::Int32(1),
            Bson::String("a".into()),
            Bson::Document(doc! {}),
            Bson::Array(vec![]),
            Bson::Binary(bson::Binary {
                subtype: bson::spec::BinarySubtype::Generic,
                bytes: vec![],
            }),
            Bson::ObjectId(bson::oid::ObjectId::from_bytes([0; 12])),
            Bson::Boolean(false),
            Bson::DateTime(bson::DateTime::from_millis(0)),
            Bson::Timestamp(bson::Timestamp {
                time: 0,
                increment: 0,
            }),
            Bson::RegularExpression(bson::Regex {
                pattern: "a".try_into().unwrap(),
                options: "".try_into().unwrap(),
            }),
            Bson::JavaScriptCode("x".into()),
            Bson::MaxKey,
        ];
        for pair in ascending.windows(2) {
            assert_eq!(
                cmp(pair[0].clone(), pair[1].clone()),
                Ordering::Less,
                "{pair:?}"
            );
        }
    }

    #[test]
    fn numbers_compare_by_value_across_types() {
        assert_eq!(cmp(Bson::Int32(1), Bson::Double(1.0)), Ordering::Equal);
        assert_eq!(cmp(Bson::Int64(2), Bson::Double(1.5)), Ordering::Greater);
        assert_eq!(
            cmp(Bson::Double(f64::NAN), Bson::Double(f64::NEG_INFINITY)),
            Ordering::Less
        );
        assert_eq!(cmp(Bson::Double(-0.0), Bson::Int32(0)), Ordering::Equal);
        let d = Bson::Decimal128("1.5".parse().unwrap());
        assert_eq!(cmp(d.clone(), Bson::Double(1.5)), Ordering::Equal);
        assert_eq!(cmp(d, Bson::Int32(2)), Ordering::Less);
    }

    #[test]
    fn objects_compare_bracket_then_name_then_value() {
        assert_eq!(
            cmp(
                Bson::Document(doc! {"a": 1}),
                Bson::Document(doc! {"a": "x"})
            ),
            Ordering::Less
        );
        assert_eq!(
            cmp(Bson::Document(doc! {"b": 1}), Bson::Document(doc! {"a": 2})),
            Ordering::Greater
        );
        assert_eq!(
            cmp(
                Bson::Document(doc! {"a": 1}),
                Bson::Document(doc! {"a": 1, "b": 0})
            ),
            Ordering::Less
        );
    }

    #[test]
    fn binary_by_length_first() {
        let bin = |bytes: Vec<u8>| {
            Bson::Binary(bson::Binary {
                subtype: bson::spec::BinarySubtype::Generic,
                bytes,
            })
        };
        assert_eq!(cmp(bin(vec![9]), bin(vec![0, 0])), Ordering::Less);
    }
}
