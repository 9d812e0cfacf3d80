//! Whether a document matches a [`Filter`]: the sole judge of a match.
//!
//! Path resolution follows MongoDB 7.0/8.0: walking `a.b`, a subdocument continues the path;
//! an array continues it into each subdocument element (one level: arrays nested in it are not
//! entered) and, at a numeric segment (`0`, not `01`), into the element at that position, as in
//! `a.0.b`. A field missing from a subdocument, or a path running into a scalar, is "missing";
//! an array is never missing itself, it gives what its elements give (so `{"a.b": null}` does
//! not match `a: []` or `a: [1]`). At the end of the path, a predicate holds if the value
//! satisfies it or, when the value is an array, if the array as a whole or any one element
//! does; an element reached by its position is taken whole (`{"a.0": 1}` does not match
//! `a: [[1]]`). `$size`, `$elemMatch` and the `$elemMatch` of `$all` look at the array itself,
//! and the conditions inside `$elemMatch` look at each element alone. Comparisons never cross
//! type brackets (`{$gt: 1}` ignores strings) unless the operand is MinKey or MaxKey. Missing
//! satisfies only equality with null (`$eq`, `$gte`, `$lte`, `$in` holding null). Negations
//! apply to the field as a whole: `$ne: 1` is "no value equals 1".
//!
//! A match also records, as MongoDB's matcher does for the positional `$`, the position in
//! the outermost array that a path went through on its way to the value that satisfied it
//! (implicitly: positions named in the path record nothing). Under `$and` the last condition
//! that records one wins; `$or` (unless it has one branch, or only equalities on one path, which
//! MongoDB rewrites as `$in`), `$nor`, negations and `$expr` record none.

use std::cmp::Ordering;

use bson::{RawArray, RawBsonRef, RawDocument};

use crate::expr::{ExprError, truthy};

use super::filter::{ElemMatch, Filter, Pattern, Predicate, QueryRegex, TypeSpec};
use crate::collation::Collation;
use crate::order::{Bracket, bracket, compare_in, is_nan};

/// MongoDB's words for `$text` on a collection without a text index.
pub(crate) const TEXT_INDEX_REQUIRED: &str = "text index required for $text query";

/// A condition that held, with the array position it recorded (see the module documentation).
type Hit = Option<usize>;

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

    /// [`Filter::try_matches`] with strings compared under `collation`.
    pub(crate) fn try_matches_in(
        &self,
        doc: &RawDocument,
        collation: Option<&Collation>,
    ) -> Result<bool, ExprError> {
        Ok(self.try_match_in(doc, collation)?.is_some())
    }

    /// The array position the match of `doc` recorded, for the positional `$`; `None` when
    /// `doc` does not match or the match recorded none.
    pub(crate) fn matched_position_in(
        &self,
        doc: &RawDocument,
        collation: Option<&Collation>,
    ) -> Option<usize> {
        self.try_match_in(doc, collation).ok().flatten().flatten()
    }

    fn try_match_in(
        &self,
        doc: &RawDocument,
        cx: Option<&Collation>,
    ) -> Result<Option<Hit>, ExprError> {
        Ok(match self {
            Filter::And(filters) => {
                let mut position = None;
                for f in filters {
                    match f.try_match_in(doc, cx)? {
                        None => return Ok(None),
                        Some(hit) => position = hit.or(position),
                    }
                }
                Some(position)
            }
            Filter::Or(filters) => {
                if let [only] = filters.as_slice() {
                    return only.try_match_in(doc, cx);
                }
                let mut matched = false;
                for f in filters {
                    if f.try_match_in(doc, cx)?.is_some() {
                        matched = true;
                        break;
                    }
                }
                matched.then(|| or_as_in(filters).and_then(|f| f.try_match_in(doc, cx).ok()??))
            }
            Filter::Nor(filters) => {
                for f in filters {
                    if f.try_match_in(doc, cx)?.is_some() {
                        return Ok(None);
                    }
                }
                Some(None)
            }
            Filter::Field(path, predicate) => {
                field_matches(cx, RawBsonRef::Document(doc), path.segments(), predicate)
            }
            Filter::Expr(expr) => {
                let decoded = bson::Document::try_from(doc).map_err(|e| {
                    crate::expr::error("$expr", format!("the document cannot be read: {e}"))
                })?;
                truthy(expr.evaluate_collated(&decoded, cx)?.as_ref()).then_some(None)
            }
            Filter::JsonSchema(schema) => schema.matches(doc).then_some(None),
            Filter::Text(text) => {
                let Some(bound) = &text.bound else {
                    return Err(crate::expr::error("$text", TEXT_INDEX_REQUIRED));
                };
                let matched = bound
                    .matches(doc)
                    .map_err(|e| crate::expr::error("$text", e))?;
                matched.then_some(None)
            }
        })
    }
}

/// An `$or` of equalities (or `$in`s) on one path as the `$in` MongoDB rewrites it to, which
/// records a position.
fn or_as_in(filters: &[Filter]) -> Option<Filter> {
    let mut path = None;
    let mut patterns = Vec::new();
    for f in filters {
        let Filter::Field(p, predicate) = f else {
            return None;
        };
        if path.is_some_and(|seen| seen != p) {
            return None;
        }
        path = Some(p);
        match predicate {
            Predicate::Eq(v) => patterns.push(Pattern::Value(v.clone())),
            Predicate::In(values) => patterns.extend(values.iter().cloned()),
            _ => return None,
        }
    }
    Some(Filter::Field(path?.clone(), Predicate::In(patterns)))
}

/// `cx`: the collation strings compare under, if any.
fn field_matches(
    cx: Option<&Collation>,
    root: RawBsonRef<'_>,
    segments: &[String],
    predicate: &Predicate,
) -> Option<Hit> {
    match predicate {
        Predicate::Not(inner) => (!inner
            .iter()
            .all(|p| field_matches(cx, root, segments, p).is_some()))
        .then_some(None),
        // `$all` is the `$and` of one condition per pattern: through an array of documents on
        // the path, each pattern may be met by a different element. The last position wins.
        Predicate::All(patterns) if segments.len() > 1 && patterns.len() > 1 => {
            let mut position = None;
            for pattern in patterns {
                let one = Predicate::All(vec![pattern.clone()]);
                position = walk(cx, root, segments, &one, true)?.or(position);
            }
            Some(position)
        }
        _ => walk(cx, root, segments, predicate, true),
    }
}

/// Whether some value at `segments` below `value` satisfies a positive predicate; `expand`:
/// whether an array at the end of the path also offers its elements.
fn walk(
    cx: Option<&Collation>,
    value: RawBsonRef<'_>,
    segments: &[String],
    predicate: &Predicate,
    expand: bool,
) -> Option<Hit> {
    let Some((first, rest)) = segments.split_first() else {
        return leaf(cx, value, predicate, expand);
    };
    match value {
        RawBsonRef::Document(d) => match crate::raw::get(d, first).ok().flatten() {
            Some(child) => walk(cx, child, rest, predicate, true),
            None => missing(predicate),
        },
        RawBsonRef::Array(array) => walk_array(cx, array, first, segments, predicate),
        _ => missing(predicate),
    }
}

fn walk_array(
    cx: Option<&Collation>,
    array: &RawArray,
    first: &str,
    segments: &[String],
    predicate: &Predicate,
) -> Option<Hit> {
    if let Some(position) = array_position(first)
        && let Ok(Some(element)) = array.get(position)
        && let Some(hit) = walk(cx, element, &segments[1..], predicate, false)
    {
        return Some(hit);
    }
    array
        .into_iter()
        .map_while(Result::ok)
        .enumerate()
        .find_map(|(i, element)| match element {
            RawBsonRef::Document(_) => {
                walk(cx, element, segments, predicate, true).map(|_| Some(i))
            }
            _ => None,
        })
}

/// The array position a path segment names: decimal digits without a leading zero (`01` is a
/// field name).
fn array_position(segment: &str) -> Option<usize> {
    let digits = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
    if !digits || (segment.len() > 1 && segment.starts_with('0')) {
        return None;
    }
    segment.parse().ok()
}

fn missing(predicate: &Predicate) -> Option<Hit> {
    matches_missing(predicate).then_some(None)
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
    leaf(None, value, predicate, true).is_some()
}

/// A predicate on the value at the end of a path (see [`walk`] for `expand`).
fn leaf(
    cx: Option<&Collation>,
    value: RawBsonRef<'_>,
    predicate: &Predicate,
    expand: bool,
) -> Option<Hit> {
    match predicate {
        Predicate::ElemMatch(em) => elem_match(cx, value, em),
        Predicate::Size(_) => single(cx, value, predicate).then_some(None),
        // An `$and` of one condition per pattern: the last position recorded wins.
        Predicate::All(patterns) if !patterns.is_empty() => {
            let mut position = None;
            for pattern in patterns {
                position = pattern_leaf(cx, value, pattern, expand)?.or(position);
            }
            Some(position)
        }
        Predicate::Not(inner) => {
            (!inner.iter().all(|p| leaf(cx, value, p, expand).is_some())).then_some(None)
        }
        // A geo value is read whole: a legacy pair is an array, and so is a list of geometries.
        Predicate::Geo(condition) => condition.matches(value).then_some(None),
        _ => offered(value, expand, |v| single(cx, v, predicate)),
    }
}

fn pattern_leaf(
    cx: Option<&Collation>,
    value: RawBsonRef<'_>,
    pattern: &Pattern,
    expand: bool,
) -> Option<Hit> {
    match pattern {
        Pattern::Value(x) => offered(value, expand, |v| equal(cx, v, x.as_raw_bson_ref())),
        Pattern::Regex(r) => offered(value, expand, |v| regex_matches(v, r)),
        Pattern::ElemMatch(em) => elem_match(cx, value, em),
    }
}

/// The elements of an array at the end of a path (when `expand`), then the value itself: the
/// first that passes `test`, with its position.
fn offered(
    value: RawBsonRef<'_>,
    expand: bool,
    test: impl Fn(RawBsonRef<'_>) -> bool,
) -> Option<Hit> {
    if expand && let RawBsonRef::Array(a) = value {
        let found = a.into_iter().map_while(Result::ok).position(&test);
        if found.is_some() {
            return Some(found);
        }
    }
    test(value).then_some(None)
}

/// `$elemMatch`: the position of the first element of the array that matches.
fn elem_match(cx: Option<&Collation>, value: RawBsonRef<'_>, em: &ElemMatch) -> Option<Hit> {
    let RawBsonRef::Array(a) = value else {
        return None;
    };
    a.into_iter()
        .map_while(Result::ok)
        .position(|e| elem_matches(cx, e, em))
        .map(Some)
}

/// A predicate on one value alone, arrays taken whole.
fn single(cx: Option<&Collation>, v: RawBsonRef<'_>, predicate: &Predicate) -> bool {
    match predicate {
        Predicate::Eq(x) => equal(cx, v, x.as_raw_bson_ref()),
        Predicate::Gt(x) => compare_op(cx, v, x.as_raw_bson_ref(), Ordering::is_gt),
        Predicate::Gte(x) => compare_op(cx, v, x.as_raw_bson_ref(), Ordering::is_ge),
        Predicate::Lt(x) => compare_op(cx, v, x.as_raw_bson_ref(), Ordering::is_lt),
        Predicate::Lte(x) => compare_op(cx, v, x.as_raw_bson_ref(), Ordering::is_le),
        Predicate::In(patterns) => patterns.iter().any(|p| pattern_single(cx, v, p)),
        Predicate::All(patterns) => {
            !patterns.is_empty() && patterns.iter().all(|p| pattern_single(cx, v, p))
        }
        Predicate::Size(n) => {
            matches!(v, RawBsonRef::Array(a) if a.into_iter().count() as u64 == *n)
        }
        Predicate::Exists => true,
        Predicate::Type(types) => types.iter().any(|t| has_type(v, *t)),
        Predicate::Mod { divisor, remainder } => modulo(v, *divisor) == Some(*remainder),
        Predicate::Bits(bits) => bits.matches(v),
        Predicate::Regex(r) => regex_matches(v, r),
        Predicate::ElemMatch(em) => elem_match(cx, v, em).is_some(),
        Predicate::Not(inner) => !inner.iter().all(|p| single(cx, v, p)),
        Predicate::Geo(condition) => condition.matches(v),
    }
}

fn pattern_single(cx: Option<&Collation>, v: RawBsonRef<'_>, pattern: &Pattern) -> bool {
    match pattern {
        Pattern::Value(x) => equal(cx, v, x.as_raw_bson_ref()),
        Pattern::Regex(r) => regex_matches(v, r),
        Pattern::ElemMatch(em) => elem_match(cx, v, em).is_some(),
    }
}

/// One element against `$elemMatch`: operators test the element alone; a filter tests a
/// subdocument, or an array as the document of its positions (`{"0": .., "1": ..}`).
fn elem_matches(cx: Option<&Collation>, element: RawBsonRef<'_>, em: &ElemMatch) -> bool {
    match em {
        ElemMatch::Value(predicates) => predicates.iter().all(|p| single(cx, element, p)),
        ElemMatch::Document(filter) => {
            let doc = match element {
                RawBsonRef::Document(d) => d,
                RawBsonRef::Array(a) => match RawDocument::from_bytes(a.as_bytes()) {
                    Ok(d) => d,
                    Err(_) => return false,
                },
                _ => return false,
            };
            filter.try_match_in(doc, cx).ok().flatten().is_some()
        }
    }
}

fn equal(cx: Option<&Collation>, a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> bool {
    compare_in(a, b, cx) == Ordering::Equal
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

pub(crate) fn type_code(v: RawBsonRef<'_>) -> i32 {
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

pub(crate) fn has_type(v: RawBsonRef<'_>, spec: TypeSpec) -> bool {
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
        // A match stopped at its backtracking limit does not match, as past MongoDB's PCRE
        // match limit.
        RawBsonRef::String(s) | RawBsonRef::Symbol(s) => r.compiled.is_match(s).unwrap_or(false),
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
        // An array gives only what its elements give: scalars give nothing (7.0/8.0).
        assert_eq!(ids(doc! { "a.b": null }, &docs), [1, 2, 3, 5]);
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
