//! find's `min` and `max`: a walk of one hinted index from the key `min` (inclusive) to the key
//! `max` (exclusive), as MongoDB's options of those names ask.
//!
//! The rules are MongoDB's (4.2 and later):
//! - `min` and `max`, when both are given, name the same fields in the same order (51176);
//! - a hint names the index to walk (51173 without one);
//! - each bound names exactly the index's key fields, in the index's order, and the index is
//!   not hashed (51174, "not compatible"); under a collation other than the index's, a bound
//!   holding a string is not compatible either, as the index's strings sort another way.
//!
//! The bounds are whole keys compared in the index's order (a compound key compares field by
//! field, a descending field reversed), so they are encoded exactly as the index encodes its
//! entries and walked as one byte range. The filter is checked on every candidate: the bounds
//! decide none of its conditions.

use std::ops::Bound;

use bson::{Bson, Document};

use super::plan::{Access, IndexScan, Plan, hinted_index};
use super::sort::Sort;
use crate::catalog::IndexMeta;
use crate::code::ErrorCode;
use crate::error::FilterError;
use crate::keys;

/// Checks what can be checked before the collection is read: `min` and `max` name the same
/// fields.
pub(crate) fn check(min: Option<&Document>, max: Option<&Document>) -> Result<(), FilterError> {
    if let (Some(min), Some(max)) = (min, max)
        && !min.keys().eq(max.keys())
    {
        return Err(error(51176, "min and max must have the same field names"));
    }
    Ok(())
}

/// The plan walking the hinted index between `min` and `max`.
pub(crate) fn plan(
    hint: Option<&Bson>,
    min: Option<&Document>,
    max: Option<&Document>,
    collated: bool,
    sort: Option<&Sort>,
    indexes: &[IndexMeta],
) -> Result<Plan, FilterError> {
    let Some(hint) = hint else {
        return Err(error(
            51173,
            "When using min()/max() a hint of which index to use must be provided",
        ));
    };
    let index = hinted_index(hint, indexes).ok_or_else(|| {
        FilterError::new("", "hint", format!("hint {hint} does not name an index"))
            .with_code(ErrorCode::BAD_VALUE)
    })?;
    let incompatible = || error(51174, "The index chosen is not compatible with min/max");
    let lower = min
        .map(|b| key(&index, b, collated).ok_or_else(incompatible))
        .transpose()?;
    let upper = max
        .map(|b| key(&index, b, collated).ok_or_else(incompatible))
        .transpose()?;
    let interval = (
        lower.map_or(Bound::Unbounded, Bound::Included),
        upper.map_or(Bound::Unbounded, Bound::Excluded),
    );
    let (provides_sort, reverse) = super::plan::sort_order(&index, 0, 1, sort);
    Ok(Plan::unordered(
        Access::IndexScan(IndexScan::of(&index, vec![interval], reverse, Vec::new())),
        0,
    )
    .providing_sort(provides_sort))
}

/// A bound encoded as the index encodes its keys; `None` when the bound does not fit the index.
fn key(index: &IndexMeta, bound: &Document, collated: bool) -> Option<Vec<u8>> {
    let fields = index.spec.keys();
    let names_fit = bound.len() == fields.len()
        && bound
            .keys()
            .zip(fields)
            .all(|(name, (path, _))| name == path.as_str());
    let strings = || bound.values().any(holds_string);
    if !names_fit || index.spec.keys_values_differently() || (collated && strings()) {
        return None;
    }
    let mut out = Vec::new();
    for (value, (_, direction)) in bound.values().zip(fields) {
        let raw = bson::RawBson::try_from(value.clone()).ok()?;
        keys::encode_into(&mut out, raw.as_raw_bson_ref(), *direction);
    }
    Some(out)
}

fn holds_string(value: &Bson) -> bool {
    match value {
        Bson::String(_) | Bson::Symbol(_) => true,
        Bson::Array(items) => items.iter().any(holds_string),
        Bson::Document(d) => d.values().any(holds_string),
        _ => false,
    }
}

fn error(code: i32, reason: &str) -> FilterError {
    FilterError::new("", "min/max", reason).with_code(ErrorCode::location(code))
}
