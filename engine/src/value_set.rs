//! Sets and maps of BSON values under MongoDB's equality (`1`, `1.0` and `NumberLong(1)` are
//! one value; strings under a collation when there is one): `distinct`, `$addToSet` and `$group`
//! keys. Without a collation, equal values have equal key encodings ([`crate::keys`]), so
//! membership is a hash lookup of the encoding; under a collation strings compare by the
//! collator, and membership is a comparison with each member.

use std::collections::HashMap;

use bson::{Bson, RawBson};

use crate::collation::Collation;
use crate::keys::{self, Direction};
use crate::order::compare_in;

/// Positions of distinct values, by value.
#[derive(Debug, Default)]
pub(crate) struct ValueIndex {
    by_encoding: HashMap<Vec<u8>, usize>,
    /// Under a collation: the members, compared one by one.
    members: Vec<RawBson>,
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
        match collation {
            None => {
                let mut encoded = Vec::new();
                // A value the encoding refuses (none in practice) is a value of its own.
                if keys::encode_bson_into(&mut encoded, value, Direction::Ascending).is_err() {
                    return (next, true);
                }
                if let Some(&p) = self.by_encoding.get(&encoded) {
                    (p, false)
                } else {
                    self.by_encoding.insert(encoded, next);
                    (next, true)
                }
            }
            Some(c) => {
                let Ok(raw) = RawBson::try_from(value.clone()) else {
                    return (next, true);
                };
                let found = self.members.iter().position(|m| {
                    compare_in(m.as_raw_bson_ref(), raw.as_raw_bson_ref(), Some(c)).is_eq()
                });
                if let Some(p) = found {
                    (p, false)
                } else {
                    self.members.push(raw);
                    (next, true)
                }
            }
        }
    }
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
}
