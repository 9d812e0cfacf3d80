//! `$bucketAuto`: documents into `buckets` groups of about equal size by the `groupBy` value,
//! as MongoDB computes them:
//! - the documents are sorted by their value (a missing one counts as null, so nulls first);
//! - each bucket takes `round(N / buckets)` documents (at least 1), the last one all that remain,
//!   and then every following document of the same value: equal values are never split;
//! - a bucket's `_id` is `{min, max}`: `max` is the next bucket's `min`, and for the last
//!   bucket its own largest value; there may be fewer buckets than asked;
//! - each bucket's `output` accumulators (default `count: {$sum: 1}`) see its documents in
//!   value order.
//!
//! `granularity` (rounding boundaries to a preferred-number series) is refused as not yet
//! supported.

use bson::{Bson, Document, doc};

use super::group::{self, Accumulator};
use super::{Documents, Stage, accumulator_fields, blocking};
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::error::{Error, Result};
use crate::expr::{Env, Expr, Scope, compare_bson, error, eval_in, type_alias};
use crate::query::SORT_MEMORY_LIMIT;

fn failure(code: ErrorCode, reason: impl std::fmt::Display) -> Error {
    Error::from(error("$bucketAuto", reason).with_code(code))
}

pub(super) fn parse(arg: &Bson, scope: &Scope) -> Result<Stage> {
    let c = ErrorCode::location;
    let Bson::Document(spec) = arg else {
        return Err(failure(
            c(40240),
            format!(
                "the argument to $bucketAuto must be an object, but found type: {}",
                type_alias(Some(arg))
            ),
        ));
    };
    let mut group_by = None;
    let mut buckets = None;
    let mut fields = None;
    for (key, value) in spec {
        match key.as_str() {
            "groupBy" => {
                if !super::desugar::is_group_by(value) {
                    return Err(failure(
                        c(40239),
                        format!(
                            "the $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: {value}"
                        ),
                    ));
                }
                group_by = Some(Expr::parse(value, scope)?);
            }
            "buckets" => {
                let n = match value {
                    Bson::Int32(i) => i64::from(*i),
                    Bson::Int64(i) if i32::try_from(*i).is_ok() => *i,
                    Bson::Double(f) if f.fract() == 0.0 && f.abs() <= f64::from(i32::MAX) => {
                        *f as i64
                    }
                    Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                        return Err(failure(
                            c(40242),
                            format!(
                                "the $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found {value}"
                            ),
                        ));
                    }
                    other => {
                        return Err(failure(
                            c(40241),
                            format!(
                                "the $bucketAuto 'buckets' field must be a numeric value, but found type: {}",
                                type_alias(Some(other))
                            ),
                        ));
                    }
                };
                if n <= 0 {
                    return Err(failure(
                        c(40243),
                        format!(
                            "the $bucketAuto 'buckets' field must be greater than 0, but found: {n}"
                        ),
                    ));
                }
                buckets = Some(n as usize);
            }
            "output" => {
                let Bson::Document(output) = value else {
                    return Err(failure(
                        c(40244),
                        format!(
                            "the $bucketAuto 'output' field must be an object, but found type: {}",
                            type_alias(Some(value))
                        ),
                    ));
                };
                fields = Some(accumulator_fields("$bucketAuto", output, scope)?);
            }
            "granularity" => {
                if !matches!(value, Bson::String(_)) {
                    return Err(failure(
                        c(40261),
                        "the $bucketAuto 'granularity' field must be a string",
                    ));
                }
                return Err(failure(
                    ErrorCode::NOT_IMPLEMENTED,
                    "'granularity' (preferred-number boundaries) is not supported yet",
                ));
            }
            other => {
                return Err(failure(
                    c(40245),
                    format!("unrecognized option to $bucketAuto: {other}"),
                ));
            }
        }
    }
    let (Some(group_by), Some(buckets)) = (group_by, buckets) else {
        return Err(failure(
            c(40246),
            "$bucketAuto requires 'groupBy' and 'buckets' to be specified",
        ));
    };
    let fields = match fields {
        Some(fields) => fields,
        None => accumulator_fields("$bucketAuto", &doc! {"count": {"$sum": 1}}, scope)?,
    };
    Ok(Stage::BucketAuto {
        group_by,
        buckets,
        fields,
    })
}

pub(super) fn run(
    input: Documents<'_>,
    group_by: Expr,
    buckets: usize,
    fields: Vec<(String, Accumulator, Expr)>,
    collation: Option<std::sync::Arc<Collation>>,
) -> Documents<'_> {
    blocking(move || {
        let cx = collation.as_deref();
        let mut keyed: Vec<(Bson, Document)> = Vec::new();
        let mut held = 0usize;
        for doc in input {
            let doc = doc?;
            let key = eval_in(&group_by, &Env::collated(&doc, cx))?.unwrap_or(Bson::Null);
            held += bson::RawDocumentBuf::try_from(&doc).map_or(0, |r| r.as_bytes().len());
            if held > SORT_MEMORY_LIMIT {
                return Err(Error::AggregateMemoryExceeded {
                    stage: "$bucketAuto".to_owned(),
                    limit: SORT_MEMORY_LIMIT,
                });
            }
            keyed.push((key, doc));
        }
        keyed.sort_by(|(a, _), (b, _)| compare_bson(a, b, cx));
        let total = keyed.len();
        let size = ((total as f64 / buckets as f64).round() as usize).max(1);
        let mut out = Vec::new();
        let mut rest = keyed.into_iter().peekable();
        let mut number = 0;
        while rest.peek().is_some() && number < buckets {
            number += 1;
            let last = number == buckets;
            let mut members: Vec<(Bson, Document)> = Vec::new();
            while let Some(next) = rest.peek() {
                let full = !last && members.len() >= size;
                let same = members
                    .last()
                    .is_some_and(|(k, _)| compare_bson(k, &next.0, cx).is_eq());
                if full && !same {
                    break;
                }
                members.extend(rest.next());
            }
            let min = members.first().map_or(Bson::Null, |(k, _)| k.clone());
            let max = match rest.peek() {
                Some((next, _)) => next.clone(),
                None => members.last().map_or(Bson::Null, |(k, _)| k.clone()),
            };
            let grouped = group::group(
                members.into_iter().map(|(_, d)| Ok(d)),
                &Expr::Literal(Bson::Null),
                &fields,
                cx,
            )?;
            let mut bucket = doc! {"_id": {"min": min, "max": max}};
            if let Some(first) = grouped.into_iter().next() {
                bucket.extend(first.into_iter().filter(|(k, _)| k != "_id"));
            }
            out.push(bucket);
        }
        Ok(out)
    })
}
