//! What of a filter the matcher still has to check once a plan is chosen (MongoDB's exact
//! bounds).
//!
//! An index scan's bounds sometimes decide a field's conditions exactly: every entry inside
//! them satisfies the conditions and every document that satisfies them has an entry inside.
//! Checking those conditions again on each fetched document is then wasted work, so the
//! matcher gets the rest of the filter. The rule is kept narrow, every part of it needed:
//! - no collation, of the query or of the index (which holds binary strings then);
//! - an index scan over an index that is not multikey (a field holding one value, so the value
//!   the entry holds is the value the matcher would read), not sparse, not partial, not hashed;
//! - per bounded field, its conditions (top-level, through `$and`) are either one equality, or
//!   one `$in` of values and literal-prefix regexes, or one such regex, or ranges
//!   (`$gt`, `$gte`, `$lt`, `$lte`) in one type bracket: the shapes whose bounds the planner
//!   builds from every one of them (see `plan::field_intervals`);
//! - every operand is a number other than NaN, a string, an ObjectId, a boolean or a date: the
//!   brackets where index order and equality are the matcher's (no `null`, which matches
//!   missing fields; no documents, arrays, regex values or MinKey/MaxKey); and a range of numbers
//!   has a lower bound (a number range open below starts where NaN sorts).
//!
//! The law, tested by `engine/tests/plan_vs_scan.rs`: a query returns what a collection scan
//! matching the whole filter returns.

use bson::RawBson;

use super::filter::{Filter, Pattern, Predicate, QueryRegex};
use super::plan::{Access, Plan, bound_conditions, regex_prefix};
use crate::catalog::CollectionMeta;
use crate::order::{Bracket, bracket, is_nan};

/// The filter left to the matcher under `plan`, when its bounds decide some conditions
/// exactly; `None` when they decide none (the whole filter is checked).
pub(crate) fn residual(
    filter: &Filter,
    plan: &Plan,
    meta: &CollectionMeta,
    collated: bool,
) -> Option<Filter> {
    let Access::IndexScan(scan) = &plan.access else {
        return None;
    };
    let index = meta.index(&scan.index)?;
    let spec = &index.spec;
    if collated
        || spec.collation().is_some()
        || index.multikey
        || spec.is_sparse()
        || spec.partial_filter().is_some()
        || spec.keys_values_differently()
    {
        return None;
    }
    let conds = bound_conditions(filter, false);
    let decided: Vec<&str> = scan
        .bounds
        .iter()
        .map(|(field, _)| field.as_str())
        .filter(|field| {
            let on_field: Vec<_> = conds.iter().filter(|c| c.path.as_str() == *field).collect();
            // An `$elemMatch`'s own conditions (grouped) never make a field decided: on its
            // own path the `$elemMatch` itself is among the conditions and has no exact shape,
            // and on a path below it the `$elemMatch` stays in the residual, on its array's path.
            exact_shape(&on_field.iter().map(|c| c.predicate).collect::<Vec<_>>())
        })
        .collect();
    if decided.is_empty() {
        return None;
    }
    Some(without_fields(filter, &decided))
}

/// Whether the planner bounds a field by exactly these conditions.
fn exact_shape(predicates: &[&Predicate]) -> bool {
    match predicates {
        [] => false,
        [Predicate::Eq(v)] => exact_operand(v).is_some(),
        [Predicate::Regex(r)] => exact_regex(r),
        [Predicate::In(patterns)] => patterns.iter().all(|p| match p {
            Pattern::Value(v) => exact_operand(v).is_some(),
            Pattern::Regex(r) => exact_regex(r),
            Pattern::ElemMatch(_) => false,
        }),
        ranges => {
            let mut brackets = ranges.iter().map(|p| match p {
                Predicate::Gt(v) | Predicate::Gte(v) | Predicate::Lt(v) | Predicate::Lte(v) => {
                    exact_operand(v)
                }
                _ => None,
            });
            let Some(Some(first)) = brackets.next() else {
                return false;
            };
            // Without a lower bound a number range starts at the bracket's start, where NaN
            // sorts, and no range matches NaN.
            let has_lower = ranges
                .iter()
                .any(|p| matches!(p, Predicate::Gt(_) | Predicate::Gte(_)));
            brackets.all(|b| b == Some(first)) && (first != Bracket::Number || has_lower)
        }
    }
}

/// The bracket of an operand whose index order and equality are the matcher's.
fn exact_operand(v: &RawBson) -> Option<Bracket> {
    let v = v.as_raw_bson_ref();
    let b = bracket(&v);
    let kept = matches!(
        b,
        Bracket::Number | Bracket::String | Bracket::ObjectId | Bracket::Bool | Bracket::Date
    );
    (kept && !is_nan(v)).then_some(b)
}

/// Whether a regex is bounded exactly: anchored, all literal after the anchor, and without
/// the options that widen a literal (`i`, `m`, `x`). Its bounds are then the strings that
/// start with the literal (each of which it matches, as it does symbols, which index as
/// strings) and the one stored regex equal to it.
fn exact_regex(r: &QueryRegex) -> bool {
    regex_prefix(r).is_some_and(|prefix| r.pattern.strip_prefix('^') == Some(prefix.as_str()))
}

/// `filter` without its top-level conditions (through `$and`) on the given fields.
fn without_fields(filter: &Filter, fields: &[&str]) -> Filter {
    match filter {
        Filter::Field(path, _) if fields.contains(&path.as_str()) => Filter::And(Vec::new()),
        Filter::And(parts) => Filter::And(
            parts
                .iter()
                .map(|p| without_fields(p, fields))
                .filter(|p| !matches!(p, Filter::And(inner) if inner.is_empty()))
                .collect(),
        ),
        other => other.clone(),
    }
}
