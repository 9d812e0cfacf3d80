//! Whether a document matches a [`Filter`]: the sole judge of a match.
//!
//! Path resolution follows MongoDB: walking `a.b`, a subdocument continues the path; an array
//! continues it into each subdocument element (and into the element at a numeric segment, as in
//! `a.0.b`); a missing field, or a path running into a scalar, is "missing". At the end of the
//! path, a predicate holds if the value satisfies it or, when the value is an array, if the
//! array as a whole or any one element does (`$size`, `$elemMatch` and `$all` look at the array
//! itself). Comparisons never cross type brackets (`{$gt: 1}` ignores strings) unless the operand
//! is MinKey or MaxKey. Missing satisfies only equality with null (`$eq`, `$gte`, `$lte`, `$in`
//! holding null). Negations apply to the field as a whole: `$ne: 1` is "no value equals 1".

use std::cmp::Ordering;

use bson::{RawArray, RawBsonRef, RawDocument};

use crate::expr::{ExprError, truthy};

use super::filter::{ElemMatch, Filter, Pattern, Predicate, QueryRegex, TypeSpec};
use crate::collation::Collation;
use crate::number::Number;
use crate::order::{Bracket, bracket, compare_in, exact_number};

impl Filter {
    /// Whether `doc` matches this filter; an `$expr` that fails on it does not match (see
    /// [`Filter::try_matches`]).
    pub fn matches(&self, doc: &RawDocument) -> bool {
        self.try_matches(doc).unwrap_or(false)
    }

    /// Whether `doc` matches this filter, or why an `$expr` could not be evaluated on it (an
    /// operator applied to a value of the wrong type), which fails a query as in MongoDB.
    pub fn try_matches(&self, doc: &RawDocument) -> Result<bool, ExprError> {
        self.try_matches_in(doc, None)
    }

    fn try_matches_in(&self, doc: &RawDocument, cx: Option<&Collation>) -> Result<bool, ExprError> {
        Ok(match self {
            Filter::And(filters) => {
                for f in filters {
                    if !f.try_matches_in(doc, cx)? {
                        return Ok(false);
                    }
                }
                true
            }
            Filter::Or(filters) => {
                for f in filters {
                    if f.try_matches_in(doc, cx)? {
                        return Ok(true);
                    }
                }
                false
            }
            Filter::Nor(filters) => {
                for f in filters {
                    if f.try_matches_in(doc, cx)? {
                        return Ok(false);
                    }
                }
                true
            }
            Filter::Field(path, predicate) => {
                field_matches(cx, RawBsonRef::Document(doc), &path.segments, predicate)
            }
            Filter::Collated(collation, inner) => inner.try_matches_in(doc, Some(collation))?,
            Filter::Expr(expr) => {
                let decoded = bson::Document::try_from(doc).map_err(|e| {
                    crate::expr::error("$expr", format!("the document cannot be read: {e}"))
                })?;
                truthy(expr.evaluate_collated(&decoded, cx)?.as_ref())
            }
        })
    }
}

/// `cx`: the collation strings compare under, if any.
fn field_matches(
    cx: Option<&Collation>,
    root: RawBsonRef<'_>,
    segments: &[String],
    predicate: &Predicate,
) -> bool {
    match predicate {
        Predicate::Not(inner) => !inner.iter().all(|p| field_matches(cx, root, segments, p)),
        _ => walk(cx, root, segments, predicate),
    }
}

/// Whether any value at `segments` below `value` satisfies a positive predicate.
fn walk(
    cx: Option<&Collation>,
    value: RawBsonRef<'_>,
    segments: &[String],
    predicate: &Predicate,
) -> bool {
    let Some((first, rest)) = segments.split_first() else {
        return matches_value_in(cx, value, predicate);
    };
    match value {
        RawBsonRef::Document(d) => match d.get(first) {
            Ok(Some(child)) => walk(cx, child, rest, predicate),
            _ => matches_missing(predicate),
        },
        RawBsonRef::Array(array) => walk_array(cx, array, first, segments, rest, predicate),
        _ => matches_missing(predicate),
    }
}

fn walk_array(
    cx: Option<&Collation>,
    array: &RawArray,
    first: &str,
    segments: &[String],
    rest: &[String],
    predicate: &Predicate,
) -> bool {
    let mut found = false;
    if let Some(position) = array_position(first)
        && let Ok(Some(element)) = array.get(position)
    {
        found = true;
        if walk(cx, element, rest, predicate) {
            return true;
        }
    }
    for element in array.into_iter().map_while(Result::ok) {
        if let RawBsonRef::Document(_) = element {
            found = true;
            if walk(cx, element, segments, predicate) {
                return true;
            }
        }
    }
    !found && matches_missing(predicate)
}

fn array_position(segment: &str) -> Option<usize> {
    if segment.is_empty() || !segment.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    segment.parse().ok()
}

/// Whether a missing field satisfies a positive predicate: only equality with null does.
fn matches_missing(predicate: &Predicate) -> bool {
    match predicate {
        Predicate::Eq(v) | Predicate::Gte(v) | Predicate::Lte(v) => is_null(v.as_raw_bson_ref()),
        Predicate::In(patterns) => patterns
            .iter()
            .any(|p| matches!(p, Pattern::Value(v) if is_null(v.as_raw_bson_ref()))),
        Predicate::All(patterns) => {
            !patterns.is_empty()
                && patterns
                    .iter()
                    .all(|p| matches!(p, Pattern::Value(v) if is_null(v.as_raw_bson_ref())))
        }
        Predicate::Not(inner) => !inner.iter().all(matches_missing),
        _ => false,
    }
}

fn is_null(v: RawBsonRef<'_>) -> bool {
    matches!(v, RawBsonRef::Null)
}

/// Whether the value at the end of a path satisfies a predicate, counting array elements.
pub(crate) fn matches_value(value: RawBsonRef<'_>, predicate: &Predicate) -> bool {
    matches_value_in(None, value, predicate)
}

fn matches_value_in(cx: Option<&Collation>, value: RawBsonRef<'_>, predicate: &Predicate) -> bool {
    match predicate {
        Predicate::Eq(x) => any_element(value, |v| equal(cx, v, x.as_raw_bson_ref())),
        Predicate::Gt(x) => any_element(value, |v| {
            compare_op(cx, v, x.as_raw_bson_ref(), Ordering::is_gt)
        }),
        Predicate::Gte(x) => any_element(value, |v| {
            compare_op(cx, v, x.as_raw_bson_ref(), Ordering::is_ge)
        }),
        Predicate::Lt(x) => any_element(value, |v| {
            compare_op(cx, v, x.as_raw_bson_ref(), Ordering::is_lt)
        }),
        Predicate::Lte(x) => any_element(value, |v| {
            compare_op(cx, v, x.as_raw_bson_ref(), Ordering::is_le)
        }),
        Predicate::In(patterns) => patterns.iter().any(|p| pattern_matches(cx, value, p)),
        Predicate::All(patterns) => {
            !patterns.is_empty() && patterns.iter().all(|p| pattern_matches(cx, value, p))
        }
        Predicate::Size(n) => {
            matches!(value, RawBsonRef::Array(a) if a.into_iter().count() as u64 == *n)
        }
        Predicate::Exists => true,
        Predicate::Type(types) => any_element(value, |v| types.iter().any(|t| has_type(v, *t))),
        Predicate::Mod { divisor, remainder } => {
            any_element(value, |v| modulo(v, *divisor) == Some(*remainder))
        }
        Predicate::Regex(r) => any_element(value, |v| regex_matches(v, r)),
        Predicate::ElemMatch(em) => match value {
            RawBsonRef::Array(a) => a
                .into_iter()
                .map_while(Result::ok)
                .any(|e| elem_matches(cx, e, em)),
            _ => false,
        },
        Predicate::Not(inner) => !inner.iter().all(|p| matches_value_in(cx, value, p)),
    }
}

/// The value itself, or, for an array, any of its elements.
fn any_element(value: RawBsonRef<'_>, test: impl Fn(RawBsonRef<'_>) -> bool) -> bool {
    if test(value) {
        return true;
    }
    match value {
        RawBsonRef::Array(a) => a.into_iter().map_while(Result::ok).any(test),
        _ => false,
    }
}

fn pattern_matches(cx: Option<&Collation>, value: RawBsonRef<'_>, pattern: &Pattern) -> bool {
    match pattern {
        Pattern::Value(x) => any_element(value, |v| equal(cx, v, x.as_raw_bson_ref())),
        Pattern::Regex(r) => any_element(value, |v| regex_matches(v, r)),
        Pattern::ElemMatch(em) => matches_value_in(cx, value, &Predicate::ElemMatch(em.clone())),
    }
}

fn elem_matches(cx: Option<&Collation>, element: RawBsonRef<'_>, em: &ElemMatch) -> bool {
    match em {
        ElemMatch::Value(predicates) => predicates.iter().all(|p| matches_value_in(cx, element, p)),
        ElemMatch::Document(filter) => {
            matches!(element, RawBsonRef::Document(d) if filter.try_matches_in(d, cx).unwrap_or(false))
        }
    }
}

fn equal(cx: Option<&Collation>, a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> bool {
    compare_in(a, b, cx) == Ordering::Equal
}

fn is_nan(v: RawBsonRef<'_>) -> bool {
    bracket(&v) == Bracket::Number && exact_number(v) == Number::NaN
}

/// A range comparison within one type bracket (across brackets only for MinKey and MaxKey
/// operands). NaN equals NaN and is neither above nor below anything.
fn compare_op(
    cx: Option<&Collation>,
    value: RawBsonRef<'_>,
    operand: RawBsonRef<'_>,
    accept: fn(Ordering) -> bool,
) -> bool {
    let operand_bracket = bracket(&operand);
    if matches!(operand_bracket, Bracket::MinKey | Bracket::MaxKey) {
        return accept(compare_in(value, operand, cx));
    }
    if bracket(&value) != operand_bracket {
        return false;
    }
    match (is_nan(value), is_nan(operand)) {
        (false, false) => accept(compare_in(value, operand, cx)),
        (true, true) => accept(Ordering::Equal),
        _ => false,
    }
}

fn type_code(v: RawBsonRef<'_>) -> i32 {
    match v {
        RawBsonRef::Double(_) => 1,
        RawBsonRef::String(_) => 2,
        RawBsonRef::Document(_) => 3,
        RawBsonRef::Array(_) => 4,
        RawBsonRef::Binary(_) => 5,
        RawBsonRef::Undefined => 6,
        RawBsonRef::ObjectId(_) => 7,
        RawBsonRef::Boolean(_) => 8,
        RawBsonRef::DateTime(_) => 9,
        RawBsonRef::Null => 10,
        RawBsonRef::RegularExpression(_) => 11,
        RawBsonRef::DbPointer(_) => 12,
        RawBsonRef::JavaScriptCode(_) => 13,
        RawBsonRef::Symbol(_) => 14,
        RawBsonRef::JavaScriptCodeWithScope(_) => 15,
        RawBsonRef::Int32(_) => 16,
        RawBsonRef::Timestamp(_) => 17,
        RawBsonRef::Int64(_) => 18,
        RawBsonRef::Decimal128(_) => 19,
        RawBsonRef::MinKey => -1,
        RawBsonRef::MaxKey => 127,
    }
}

fn has_type(v: RawBsonRef<'_>, spec: TypeSpec) -> bool {
    match spec {
        TypeSpec::Number => bracket(&v) == Bracket::Number,
        TypeSpec::Code(code) => type_code(v) == code,
    }
}

/// `value % divisor` for numbers (doubles truncated toward zero); `None` for anything else.
fn modulo(v: RawBsonRef<'_>, divisor: i64) -> Option<i64> {
    let n = match v {
        RawBsonRef::Int32(i) => i64::from(i),
        RawBsonRef::Int64(i) => i,
        RawBsonRef::Double(d) if d.is_finite() => d.trunc() as i64,
        RawBsonRef::Decimal128(d) => {
            let x: f64 = d.to_string().parse().ok()?;
            if !x.is_finite() {
                return None;
            }
            x.trunc() as i64
        }
        _ => return None,
    };
    Some(n.wrapping_rem(divisor))
}

fn regex_matches(v: RawBsonRef<'_>, r: &QueryRegex) -> bool {
    match v {
        RawBsonRef::String(s) | RawBsonRef::Symbol(s) => r.compiled.is_match(s),
        RawBsonRef::RegularExpression(stored) => {
            let mut options: Vec<char> = stored.options.as_str().chars().collect();
            options.sort_unstable();
            stored.pattern.as_str() == r.pattern
                && options.into_iter().collect::<String>() == r.options
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use bson::{Document, doc};

    use crate::query::Filter;

    fn ids(filter: Document, docs: &[Document]) -> Vec<i32> {
        let f = Filter::parse(&filter).unwrap();
        docs.iter()
            .filter(|d| f.matches(&bson::RawDocumentBuf::try_from(*d).unwrap()))
            .map(|d| d.get_i32("_id").unwrap())
            .collect()
    }

    #[test]
    fn equality_reaches_into_arrays_and_matches_whole_arrays() {
        let docs = [
            doc! { "_id": 1, "a": [1, 2] },
            doc! { "_id": 2, "a": 1 },
            doc! { "_id": 3, "a": [[1, 2]] },
            doc! { "_id": 4, "a": [2, 1] },
        ];
        assert_eq!(ids(doc! { "a": 1 }, &docs), [1, 2, 4]);
        assert_eq!(ids(doc! { "a": [1, 2] }, &docs), [1, 3]);
        assert_eq!(ids(doc! { "a": { "$ne": 1 } }, &docs), [3]);
        assert_eq!(ids(doc! { "a": 1.0 }, &docs), [1, 2, 4]);
    }

    #[test]
    fn null_matches_missing_and_null() {
        let docs = [
            doc! { "_id": 1, "a": null },
            doc! { "_id": 2 },
            doc! { "_id": 3, "a": 5 },
            doc! { "_id": 4, "a": [null, 1] },
            doc! { "_id": 5, "a": [{ "b": 1 }, { "c": 1 }] },
        ];
        assert_eq!(ids(doc! { "a": null }, &docs), [1, 2, 4]);
        assert_eq!(ids(doc! { "a": { "$ne": null } }, &docs), [3, 5]);
        assert_eq!(ids(doc! { "a": { "$exists": false } }, &docs), [2]);
        assert_eq!(ids(doc! { "a": { "$type": "null" } }, &docs), [1, 4]);
        assert_eq!(ids(doc! { "a.b": null }, &docs), [1, 2, 3, 4, 5]);
        assert_eq!(ids(doc! { "a": { "$gte": null } }, &docs), [1, 2, 4]);
        assert_eq!(ids(doc! { "a": { "$in": [null, 5] } }, &docs), [1, 2, 3, 4]);
    }

    #[test]
    fn ranges_stay_in_their_type_bracket() {
        let docs = [
            doc! { "_id": 1, "a": 5 },
            doc! { "_id": 2, "a": "z" },
            doc! { "_id": 3, "a": [1, 10] },
            doc! { "_id": 4, "a": 2.5 },
            doc! { "_id": 5, "a": f64::NAN },
        ];
        assert_eq!(ids(doc! { "a": { "$gt": 2 } }, &docs), [1, 3, 4]);
        // Each condition may be met by a different element.
        assert_eq!(ids(doc! { "a": { "$gt": 2, "$lt": 4 } }, &docs), [3, 4]);
        assert_eq!(
            ids(
                doc! { "a": { "$elemMatch": { "$gt": 2, "$lt": 4 } } },
                &docs
            ),
            Vec::<i32>::new()
        );
        assert_eq!(ids(doc! { "a": { "$gte": "a" } }, &docs), [2]);
        assert_eq!(ids(doc! { "a": { "$lt": 100 } }, &docs), [1, 3, 4]);
        assert_eq!(ids(doc! { "a": f64::NAN }, &docs), [5]);
        assert_eq!(
            ids(doc! { "a": { "$gt": bson::Bson::MinKey } }, &docs),
            [1, 2, 3, 4, 5]
        );
    }

    #[test]
    fn array_operators() {
        let docs = [
            doc! { "_id": 1, "tags": ["a", "b", "c"], "scores": [{ "s": 8, "p": "x" }, { "s": 3, "p": "y" }] },
            doc! { "_id": 2, "tags": ["a"], "scores": [{ "s": 8, "p": "y" }] },
            doc! { "_id": 3, "tags": "a" },
        ];
        assert_eq!(ids(doc! { "tags": { "$all": ["a", "b"] } }, &docs), [1]);
        assert_eq!(ids(doc! { "tags": { "$all": ["a"] } }, &docs), [1, 2, 3]);
        assert_eq!(
            ids(doc! { "tags": { "$all": [] } }, &docs),
            Vec::<i32>::new()
        );
        assert_eq!(ids(doc! { "tags": { "$size": 1 } }, &docs), [2]);
        assert_eq!(
            ids(
                doc! { "scores": { "$elemMatch": { "s": 8, "p": "y" } } },
                &docs
            ),
            [2]
        );
        assert_eq!(ids(doc! { "scores.s": 8, "scores.p": "y" }, &docs), [1, 2]);
        assert_eq!(ids(doc! { "scores.0.p": "y" }, &docs), [2]);
        assert_eq!(ids(doc! { "tags": { "$nin": ["b", "z"] } }, &docs), [2, 3]);
        assert_eq!(ids(doc! { "tags": { "$type": "array" } }, &docs), [1, 2]);
        assert_eq!(
            ids(
                doc! { "scores": { "$all": [{ "$elemMatch": { "s": { "$lt": 5 } } }] } },
                &docs
            ),
            [1]
        );
    }

    #[test]
    fn regex_mod_type_not_and_logic() {
        let docs = [
            doc! { "_id": 1, "path": "programming/databases/mongodb", "n": 7 },
            doc! { "_id": 2, "path": "Programming/languages", "n": 8 },
            doc! { "_id": 3, "path": ["x", "programming"], "n": 9.9 },
        ];
        assert_eq!(
            ids(doc! { "path": { "$regex": "^programming/" } }, &docs),
            [1]
        );
        assert_eq!(
            ids(
                doc! { "path": { "$regex": "^programming", "$options": "i" } },
                &docs
            ),
            [1, 2, 3]
        );
        assert_eq!(
            ids(doc! { "path": { "$not": { "$regex": "^prog" } } }, &docs),
            [2]
        );
        assert_eq!(ids(doc! { "n": { "$mod": [3, 0] } }, &docs), [3]);
        assert_eq!(
            ids(doc! { "n": { "$type": ["int", "double"] } }, &docs),
            [1, 2, 3]
        );
        assert_eq!(ids(doc! { "n": { "$type": "number" } }, &docs), [1, 2, 3]);
        assert_eq!(ids(doc! { "n": { "$not": { "$gt": 7.5 } } }, &docs), [1]);
        assert_eq!(ids(doc! { "$or": [{ "n": 7 }, { "n": 8 }] }, &docs), [1, 2]);
        assert_eq!(ids(doc! { "$nor": [{ "n": 7 }, { "n": 8 }] }, &docs), [3]);
        assert_eq!(
            ids(
                doc! { "$and": [{ "n": { "$gt": 7 } }, { "n": { "$lt": 9 } }] },
                &docs
            ),
            [2]
        );
        assert_eq!(ids(doc! {}, &docs), [1, 2, 3]);
    }

    #[test]
    fn embedded_documents_compare_whole_and_in_order() {
        let docs = [
            doc! { "_id": 1, "size": { "h": 14, "w": 21 } },
            doc! { "_id": 2, "size": { "w": 21, "h": 14 } },
        ];
        assert_eq!(ids(doc! { "size": { "h": 14, "w": 21 } }, &docs), [1]);
        assert_eq!(ids(doc! { "size.h": 14 }, &docs), [1, 2]);
    }
}
