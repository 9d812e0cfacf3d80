//! Sets and maps of BSON values under MongoDB's equality (`1`, `1.0` and `NumberLong(1)` are
//! one value; strings under a collation when there is one): `distinct`, `$addToSet` and `$group`
//! keys. Without a collation, equal values have equal key encodings ([`crate::keys`]), so
//! membership is a hash lookup of the encoding. Under a collation, strings equal to the collator
//! have equal sort keys: a value's bucket is the encoding of the value with each string replaced
//! by its sort key, and the collator's comparison settles membership within the bucket.

use std::collections::HashMap;

use bson::{Bson, RawBson};

use crate::collation::Collation;
use crate::keys::{self, Direction};
use crate::order::compare_in;

/// Positions of distinct values, by value.
#[derive(Debug, Default)]
pub(crate) struct ValueIndex {
    by_encoding: HashMap<Vec<u8>, usize>,
    /// Under a collation: the members by bucket, with their positions.
    buckets: HashMap<Vec<u8>, Vec<(usize, RawBson)>>,
}

impl ValueIndex {
    /// The position `value` was given, or `next` (now given to it) when it is new; the flag
    /// says whether it is new. Callers must number values from 0 in the order they are first
    /// given, each `next` being the count so far.
    pub(crate) fn position(
        &mut self,
        value: &Bson,
        next: usize,
        collation: Option<&Collation>,
    ) -> (usize, bool) {
        let Some(c) = collation else {
            let Some(encoded) = encoding(value) else {
                return (next, true);
            };
            if let Some(&p) = self.by_encoding.get(&encoded) {
                return (p, false);
            }
            self.by_encoding.insert(encoded, next);
            return (next, true);
        };
        let (Some(bucket), Ok(raw)) = (
            collated_encoding(value, c),
            RawBson::try_from(value.clone()),
        ) else {
            return (next, true);
        };
        let members = self.buckets.entry(bucket).or_default();
        let found = members
            .iter()
            .find(|(_, m)| compare_in(m.as_raw_bson_ref(), raw.as_raw_bson_ref(), Some(c)).is_eq());
        if let Some((p, _)) = found {
            return (*p, false);
        }
        members.push((next, raw));
        (next, true)
    }
}

impl ValueIndex {
    /// Whether a value equal to `value` was given (nothing is added).
    pub(crate) fn contains(&self, value: &Bson, collation: Option<&Collation>) -> bool {
        let Some(c) = collation else {
            return encoding(value).is_some_and(|e| self.by_encoding.contains_key(&e));
        };
        let (Some(bucket), Ok(raw)) = (
            collated_encoding(value, c),
            RawBson::try_from(value.clone()),
        ) else {
            return false;
        };
        self.buckets.get(&bucket).is_some_and(|members| {
            members.iter().any(|(_, m)| {
                compare_in(m.as_raw_bson_ref(), raw.as_raw_bson_ref(), Some(c)).is_eq()
            })
        })
    }
}

/// Whether `left` and `right` are one value under the equality [`ValueIndex`] keeps.
pub(crate) fn equal(left: &Bson, right: &Bson, collation: Option<&Collation>) -> bool {
    if collation.is_none() {
        return matches!((encoding(left), encoding(right)), (Some(l), Some(r)) if l == r);
    }
    match (
        RawBson::try_from(left.clone()),
        RawBson::try_from(right.clone()),
    ) {
        (Ok(l), Ok(r)) => compare_in(l.as_raw_bson_ref(), r.as_raw_bson_ref(), collation).is_eq(),
        _ => false,
    }
}

/// The key encoding of a value; `None` for one the encoding refuses (none in practice), which
/// then counts as a value of its own.
fn encoding(value: &Bson) -> Option<Vec<u8>> {
    let mut encoded = Vec::new();
    keys::encode_bson_into(&mut encoded, value, Direction::Ascending).ok()?;
    Some(encoded)
}

/// The key encoding of a value with its strings and symbols, at any depth, as sort keys under
/// `collation`: values equal under it share one (and values that differ may too, which the
/// bucket's comparison then tells apart).
fn collated_encoding(value: &Bson, collation: &Collation) -> Option<Vec<u8>> {
    let raw = RawBson::try_from(value.clone()).ok()?;
    let mut encoded = Vec::new();
    keys::encode_collated_into(
        &mut encoded,
        raw.as_raw_bson_ref(),
        Direction::Ascending,
        Some(collation),
    );
    Some(encoded)
}

/// Distinct values in the order first seen.
#[derive(Debug, Default)]
pub(crate) struct ValueSet {
    index: ValueIndex,
    values: Vec<Bson>,
}

impl ValueSet {
    /// Adds `value` unless an equal one is there; whether it was added.
    pub(crate) fn insert(&mut self, value: Bson, collation: Option<&Collation>) -> bool {
        let (_, new) = self.index.position(&value, self.values.len(), collation);
        if new {
            self.values.push(value);
        }
        new
    }

    pub(crate) fn into_values(self) -> Vec<Bson> {
        self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_equal_across_types_are_one_value() {
        let mut set = ValueSet::default();
        assert!(set.insert(Bson::Int32(1), None));
        assert!(!set.insert(Bson::Double(1.0), None));
        assert!(!set.insert(Bson::Int64(1), None));
        assert!(set.insert(Bson::String("1".into()), None));
        assert_eq!(
            set.into_values(),
            [Bson::Int32(1), Bson::String("1".into())]
        );
    }

    #[test]
    fn strings_equal_under_the_collation_are_one_value() {
        let collation = Collation::parse(&bson::doc! { "locale": "en", "strength": 2 })
            .unwrap()
            .unwrap();
        let mut set = ValueSet::default();
        for s in ["Apple", "apple", "APPLE", "banana", "Banana"] {
            set.insert(Bson::String(s.into()), Some(&collation));
        }
        set.insert(Bson::Array(vec!["X".into()]), Some(&collation));
        set.insert(Bson::Array(vec!["x".into()]), Some(&collation));
        assert_eq!(
            set.into_values(),
            [
                Bson::String("Apple".into()),
                Bson::String("banana".into()),
                Bson::Array(vec!["X".into()])
            ]
        );
    }
}
