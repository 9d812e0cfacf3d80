//! Sort specifications and MongoDB's sort order for documents.
//!
//! Each sort field is read like an index key path (arrays of subdocuments traversed, a missing
//! field sorting as null, an empty array below null); when a field holds several values (an
//! array), an ascending sort uses the smallest and a descending sort the largest. Documents
//! that compare equal keep their storage order (`_id` order for a collection scan).

use std::cmp::Ordering;

use bson::{Bson, Document, RawBsonRef, RawDocument};

use crate::code::ErrorCode;
use crate::error::FilterError;
use crate::keys::Direction;
use std::sync::Arc;

use crate::collation::Collation;
use crate::order::compare_in;
use crate::path::{Path, key_values};

/// A parsed sort document, `{a: 1, b: -1}`, with the collation its strings compare under.
#[derive(Debug, Clone)]
pub struct Sort {
    fields: Vec<(Path, Direction)>,
    collation: Option<Arc<Collation>>,
    /// Where `{$meta: "textScore"}` stands among the fields (before `fields[i]`): results sort
    /// by their text score there, highest first (see [`Sort::compare`]).
    text_score: Option<usize>,
    /// Whether results sort first by their distance from a `$near` point, nearest first: the
    /// distance each carries in [`crate::geo::DISTANCE_FIELD`] (see [`Sort::nearest`]).
    distance: bool,
}

impl PartialEq for Sort {
    fn eq(&self, other: &Sort) -> bool {
        self.fields == other.fields
            && self.text_score == other.text_score
            && self.distance == other.distance
            && self.collation.as_ref().map(|c| c.spec())
                == other.collation.as_ref().map(|c| c.spec())
    }
}

impl Sort {
    pub fn parse(spec: &Document) -> Result<Sort, FilterError> {
        let bad = |path: &str, reason: &str| FilterError::new(path, "sort", reason);
        let mut fields = Vec::new();
        let mut text_score = None;
        for (path, direction) in spec {
            if let Bson::Document(meta) = direction {
                if meta.len() == 1 && meta.get_str("$meta").ok() == Some("textScore") {
                    if text_score.is_some() {
                        return Err(bad(path, "the text score is sorted by once"));
                    }
                    text_score = Some(fields.len());
                    continue;
                }
                return Err(bad(path, "$meta for sort must be {$meta: \"textScore\"}")
                    .with_code(ErrorCode::location(17312)));
            }
            let direction = match direction {
                Bson::Int32(1) | Bson::Int64(1) => Direction::Ascending,
                Bson::Int32(-1) | Bson::Int64(-1) => Direction::Descending,
                Bson::Double(d) if (*d - 1.0).abs() < f64::EPSILON => Direction::Ascending,
                Bson::Double(d) if (*d + 1.0).abs() < f64::EPSILON => Direction::Descending,
                // MongoDB: 15975 for another number, 15974 for anything else.
                other => {
                    let numeric = matches!(
                        other,
                        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
                    );
                    let code = if numeric { 15975 } else { 15974 };
                    return Err(bad(path, "sort direction must be 1 or -1")
                        .with_code(ErrorCode::location(code)));
                }
            };
            if path == "$natural" {
                // Natural order is a collection's storage order, here its `_id` order: this
                // engine keeps no insertion sequence (see ARCHITECTURE.md).
                if spec.len() > 1 {
                    return Err(
                        bad(path, "a $natural sort cannot be combined with other keys")
                            .with_code(ErrorCode::BAD_VALUE),
                    );
                }
                fields.push((Path::new("_id"), direction));
                continue;
            }
            let parsed = Path::parse(path).map_err(|e| bad(path, &e.to_string()))?;
            fields.push((parsed, direction));
        }
        Ok(Sort {
            fields,
            collation: None,
            text_score,
            distance: false,
        })
    }

    /// The order of a near query without a sort of its own: nearest first.
    pub(crate) fn nearest() -> Sort {
        Sort {
            fields: Vec::new(),
            collation: None,
            text_score: None,
            distance: true,
        }
    }

    /// Whether it sorts by distance from a `$near` point, which only a near query gives.
    pub fn needs_distance(&self) -> bool {
        self.distance
    }

    /// Whether it sorts by the text score, which only a `$text` query gives.
    pub fn needs_text_score(&self) -> bool {
        self.text_score.is_some()
    }

    /// This sort with strings compared under `collation`.
    #[must_use]
    pub fn collated(mut self, collation: Option<Arc<Collation>>) -> Sort {
        self.collation = collation;
        self
    }

    /// The collation its strings compare under, if any.
    pub fn collation(&self) -> Option<&Collation> {
        self.collation.as_deref()
    }

    pub fn fields(&self) -> &[(Path, Direction)] {
        &self.fields
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.text_score.is_none() && !self.distance
    }

    /// Compares two documents in this sort's order; where it sorts by text score, by the
    /// score each carries (highest first; see [`crate::text::SCORE_FIELD`]).
    pub fn compare(&self, a: &RawDocument, b: &RawDocument) -> Ordering {
        let cx = self.collation.as_deref();
        let score = |d: &RawDocument| d.get_f64(crate::text::SCORE_FIELD).unwrap_or(0.0);
        if self.distance {
            let distance = |d: &RawDocument| {
                d.get_f64(crate::geo::DISTANCE_FIELD)
                    .unwrap_or(f64::INFINITY)
            };
            let order = distance(a).total_cmp(&distance(b));
            if order != Ordering::Equal {
                return order;
            }
        }
        for (i, (path, direction)) in self.fields.iter().enumerate() {
            if self.text_score == Some(i) {
                let order = score(b).total_cmp(&score(a));
                if order != Ordering::Equal {
                    return order;
                }
            }
            let order = directed(
                compare_in(
                    sort_key(cx, a, path, *direction),
                    sort_key(cx, b, path, *direction),
                    cx,
                ),
                *direction,
            );
            if order != Ordering::Equal {
                return order;
            }
        }
        if self.text_score == Some(self.fields.len()) {
            return score(b).total_cmp(&score(a));
        }
        Ordering::Equal
    }
}

impl Sort {
    /// The values a document sorts by, one per field, for sorting values that are not the
    /// documents themselves (`$top`, `$bottomN`, ...); compare them with [`Sort::compare_keys`].
    pub fn keys(&self, doc: &RawDocument, cx: Option<&Collation>) -> Vec<bson::RawBson> {
        self.fields
            .iter()
            .map(|(path, direction)| bson::RawBson::from(sort_key(cx, doc, path, *direction)))
            .collect()
    }

    /// Compares the keys of two documents (from [`Sort::keys`]) in this sort's order.
    pub fn compare_keys(
        &self,
        a: &[bson::RawBson],
        b: &[bson::RawBson],
        cx: Option<&Collation>,
    ) -> Ordering {
        for ((a, b), (_, direction)) in a.iter().zip(b).zip(&self.fields) {
            let order = directed(
                compare_in(a.as_raw_bson_ref(), b.as_raw_bson_ref(), cx),
                *direction,
            );
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    }
}

/// An ascending comparison turned to the field's direction.
fn directed(order: Ordering, direction: Direction) -> Ordering {
    match direction {
        Direction::Ascending => order,
        Direction::Descending => order.reverse(),
    }
}

/// The value a document sorts by on one field: the smallest of its values ascending, the
/// largest descending.
fn sort_key<'a>(
    cx: Option<&Collation>,
    doc: &'a RawDocument,
    path: &Path,
    direction: Direction,
) -> RawBsonRef<'a> {
    let Ok(values) = key_values(doc, path) else {
        return RawBsonRef::Null;
    };
    let pick = values.values.into_iter().reduce(|best, v| {
        let order = compare_in(v, best, cx);
        let better = match direction {
            Direction::Ascending => order == Ordering::Less,
            Direction::Descending => order == Ordering::Greater,
        };
        if better { v } else { best }
    });
    pick.unwrap_or(RawBsonRef::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, rawdoc};

    #[test]
    fn arrays_sort_by_their_smallest_or_largest_element() {
        let sort_asc = Sort::parse(&doc! { "a": 1 }).unwrap();
        let sort_desc = Sort::parse(&doc! { "a": -1 }).unwrap();
        let x = rawdoc! { "a": [1, 10] };
        let y = rawdoc! { "a": 5 };
        assert_eq!(sort_asc.compare(&x, &y), Ordering::Less);
        assert_eq!(sort_desc.compare(&x, &y), Ordering::Less);
        let missing = rawdoc! {};
        let null = rawdoc! { "a": null };
        assert_eq!(sort_asc.compare(&missing, &null), Ordering::Equal);
        assert_eq!(
            sort_asc.compare(&rawdoc! { "a": [] }, &null),
            Ordering::Less
        );
        assert!(Sort::parse(&doc! { "a": 2 }).is_err());
    }
}
