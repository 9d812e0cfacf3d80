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
//! The documents are sorted through the operation's external sort (`crate::spill`): past the
//! memory budget it spills, or fails with MongoDB's 292 without disk use. A bucket is folded
//! as its documents come, holding only its accumulators' states; one bucket's states past the
//! budget fail with MongoDB's 146, as one `$group` group does.
//!
//! With `granularity`, boundaries are numbers of a preferred-number series (Renard R5 to R80,
//! 1-2-5, E6 to E192, each scaled by powers of ten) or powers of two: the first bucket starts
//! at its least value rounded down (to the series' greatest number below it), each bucket ends
//! at its greatest value rounded up (to the least number above it) and takes in the following
//! values below that end, and the next bucket starts where it ends. The values must then be
//! non-negative numbers.

use bson::{Bson, Document, doc};

use super::group::{self, Accumulator};
use super::{Documents, Stage, accumulator_fields, deferred};
use crate::budget::Budget;
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::error::{Error, Result};
use crate::expr::{Env, Expr, Scope, compare_bson, error, eval_in, type_alias};
use crate::order::compare_in;
use crate::spill::{self, Sorter};

const NAME: &str = "$bucketAuto";

fn failure(code: ErrorCode, reason: impl std::fmt::Display) -> Error {
    Error::from(error(NAME, reason).with_code(code))
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
    let mut granularity = None;
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
            "buckets" => buckets = Some(parse_buckets(value)?),
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
            "granularity" => granularity = Some(parse_granularity(value)?),
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
        granularity,
    })
}

/// `buckets`: a positive whole number that fits in 32 bits.
fn parse_buckets(value: &Bson) -> Result<usize> {
    let c = ErrorCode::location;
    let n = match value {
        Bson::Int32(i) => i64::from(*i),
        Bson::Int64(i) if i32::try_from(*i).is_ok() => *i,
        Bson::Double(f) if f.fract() == 0.0 && f.abs() <= f64::from(i32::MAX) => *f as i64,
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
            format!("the $bucketAuto 'buckets' field must be greater than 0, but found: {n}"),
        ));
    }
    Ok(n as usize)
}

/// `granularity`: the name of a series (see [`Rounder::named`]).
fn parse_granularity(value: &Bson) -> Result<Rounder> {
    let c = ErrorCode::location;
    let Bson::String(name) = value else {
        return Err(failure(
            c(40261),
            "the $bucketAuto 'granularity' field must be a string",
        ));
    };
    Rounder::named(name)
        .ok_or_else(|| failure(c(40257), format!("unknown rounding granularity '{name}'")))
}

/// The preferred-number series, as whole numbers to be scaled by powers of ten (ISO 3's Renard
/// series, the 1-2-5 series, IEC 60063's E series).
const R5: &[f64] = &[10.0, 16.0, 25.0, 40.0, 63.0];
const R10: &[f64] = &[
    100.0, 125.0, 160.0, 200.0, 250.0, 315.0, 400.0, 500.0, 630.0, 800.0,
];
const R20: &[f64] = &[
    100.0, 112.0, 125.0, 140.0, 160.0, 180.0, 200.0, 224.0, 250.0, 280.0, 315.0, 355.0, 400.0,
    450.0, 500.0, 560.0, 630.0, 710.0, 800.0, 900.0,
];
const R40: &[f64] = &[
    100.0, 106.0, 112.0, 118.0, 125.0, 132.0, 140.0, 150.0, 160.0, 170.0, 180.0, 190.0, 200.0,
    212.0, 224.0, 236.0, 250.0, 265.0, 280.0, 300.0, 315.0, 355.0, 375.0, 400.0, 425.0, 450.0,
    475.0, 500.0, 530.0, 560.0, 600.0, 630.0, 670.0, 710.0, 750.0, 800.0, 850.0, 900.0, 950.0,
];
const R80: &[f64] = &[
    103.0, 109.0, 115.0, 122.0, 128.0, 136.0, 145.0, 155.0, 165.0, 175.0, 185.0, 195.0, 206.0,
    218.0, 230.0, 243.0, 258.0, 272.0, 290.0, 307.0, 325.0, 345.0, 365.0, 387.0, 412.0, 437.0,
    462.0, 487.0, 515.0, 545.0, 575.0, 615.0, 650.0, 690.0, 730.0, 775.0, 825.0, 875.0, 925.0,
    975.0,
];
const ONE_TWO_FIVE: &[f64] = &[10.0, 20.0, 50.0];
const E6: &[f64] = &[10.0, 15.0, 22.0, 33.0, 47.0, 68.0];
const E12: &[f64] = &[
    10.0, 12.0, 15.0, 18.0, 22.0, 27.0, 33.0, 39.0, 47.0, 56.0, 68.0, 82.0,
];
const E24: &[f64] = &[
    10.0, 11.0, 12.0, 13.0, 15.0, 16.0, 18.0, 20.0, 22.0, 24.0, 27.0, 30.0, 33.0, 36.0, 39.0, 43.0,
    47.0, 51.0, 56.0, 62.0, 68.0, 75.0, 82.0, 91.0,
];
const E48: &[f64] = &[
    100.0, 105.0, 110.0, 115.0, 121.0, 127.0, 133.0, 140.0, 147.0, 154.0, 162.0, 169.0, 178.0,
    187.0, 196.0, 205.0, 215.0, 226.0, 237.0, 249.0, 261.0, 274.0, 287.0, 301.0, 316.0, 332.0,
    348.0, 365.0, 383.0, 402.0, 422.0, 442.0, 464.0, 487.0, 511.0, 536.0, 562.0, 590.0, 619.0,
    649.0, 681.0, 715.0, 750.0, 787.0, 825.0, 866.0, 909.0, 953.0,
];
const E96: &[f64] = &[
    100.0, 102.0, 105.0, 107.0, 110.0, 113.0, 115.0, 118.0, 121.0, 124.0, 127.0, 130.0, 133.0,
    137.0, 140.0, 143.0, 147.0, 150.0, 154.0, 158.0, 162.0, 165.0, 169.0, 174.0, 178.0, 182.0,
    187.0, 191.0, 196.0, 200.0, 205.0, 210.0, 215.0, 221.0, 226.0, 232.0, 237.0, 243.0, 249.0,
    255.0, 261.0, 267.0, 274.0, 280.0, 287.0, 294.0, 301.0, 309.0, 316.0, 324.0, 332.0, 340.0,
    348.0, 357.0, 365.0, 374.0, 383.0, 392.0, 402.0, 412.0, 422.0, 432.0, 442.0, 453.0, 464.0,
    475.0, 487.0, 499.0, 511.0, 523.0, 536.0, 549.0, 562.0, 576.0, 590.0, 604.0, 619.0, 634.0,
    649.0, 665.0, 681.0, 698.0, 715.0, 732.0, 750.0, 768.0, 787.0, 806.0, 825.0, 845.0, 866.0,
    887.0, 909.0, 931.0, 953.0, 976.0,
];
const E192: &[f64] = &[
    100.0, 101.0, 102.0, 104.0, 105.0, 106.0, 107.0, 109.0, 110.0, 111.0, 113.0, 114.0, 115.0,
    117.0, 118.0, 120.0, 121.0, 123.0, 124.0, 126.0, 127.0, 129.0, 130.0, 132.0, 133.0, 135.0,
    137.0, 138.0, 140.0, 142.0, 143.0, 145.0, 147.0, 149.0, 150.0, 152.0, 154.0, 156.0, 158.0,
    160.0, 162.0, 164.0, 165.0, 167.0, 169.0, 172.0, 174.0, 176.0, 178.0, 180.0, 182.0, 184.0,
    187.0, 189.0, 191.0, 193.0, 196.0, 198.0, 200.0, 203.0, 205.0, 208.0, 210.0, 213.0, 215.0,
    218.0, 221.0, 223.0, 226.0, 229.0, 232.0, 234.0, 237.0, 240.0, 243.0, 246.0, 249.0, 252.0,
    255.0, 258.0, 261.0, 264.0, 267.0, 271.0, 274.0, 277.0, 280.0, 284.0, 287.0, 291.0, 294.0,
    298.0, 301.0, 305.0, 309.0, 312.0, 316.0, 320.0, 324.0, 328.0, 332.0, 336.0, 340.0, 344.0,
    348.0, 352.0, 357.0, 361.0, 365.0, 370.0, 374.0, 379.0, 383.0, 388.0, 392.0, 397.0, 402.0,
    407.0, 412.0, 417.0, 422.0, 427.0, 432.0, 437.0, 442.0, 448.0, 453.0, 459.0, 464.0, 470.0,
    475.0, 481.0, 487.0, 493.0, 499.0, 505.0, 511.0, 517.0, 523.0, 530.0, 536.0, 542.0, 549.0,
    556.0, 562.0, 569.0, 576.0, 583.0, 590.0, 597.0, 604.0, 612.0, 619.0, 626.0, 634.0, 642.0,
    649.0, 657.0, 665.0, 673.0, 681.0, 690.0, 698.0, 706.0, 715.0, 723.0, 732.0, 741.0, 750.0,
    759.0, 768.0, 777.0, 787.0, 796.0, 806.0, 816.0, 825.0, 835.0, 845.0, 856.0, 866.0, 876.0,
    887.0, 898.0, 909.0, 920.0, 931.0, 942.0, 953.0, 965.0, 976.0, 988.0,
];

/// How `granularity` rounds boundaries.
#[derive(Debug, Clone, Copy)]
pub(super) enum Rounder {
    Series(&'static [f64]),
    PowersOfTwo,
}

impl Rounder {
    fn named(name: &str) -> Option<Rounder> {
        Some(Rounder::Series(match name {
            "R5" => R5,
            "R10" => R10,
            "R20" => R20,
            "R40" => R40,
            "R80" => R80,
            "1-2-5" => ONE_TWO_FIVE,
            "E6" => E6,
            "E12" => E12,
            "E24" => E24,
            "E48" => E48,
            "E96" => E96,
            "E192" => E192,
            "POWERSOF2" => return Some(Rounder::PowersOfTwo),
            _ => return None,
        }))
    }

    /// The value as a non-negative number, with MongoDB's codes for what is not one.
    fn checked(self, v: &Bson) -> Result<f64> {
        let c = ErrorCode::location;
        let (not_number, nan, negative) = match self {
            Rounder::Series(_) => (40262, 40263, 40268),
            Rounder::PowersOfTwo => (40265, 40266, 40267),
        };
        let n = match v {
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                crate::expr::as_f64(v).unwrap_or(f64::NAN)
            }
            other => {
                return Err(failure(
                    c(not_number),
                    format!(
                        "a granularity rounder can only round numeric values, but found type: {}",
                        type_alias(Some(other))
                    ),
                ));
            }
        };
        if n.is_nan() {
            return Err(failure(c(nan), "a granularity rounder cannot round NaN"));
        }
        if n < 0.0 {
            return Err(failure(
                c(negative),
                "a granularity rounder can only round non-negative numbers",
            ));
        }
        Ok(n)
    }

    /// The least number of the series above `v` (`up`), or the greatest below it; zero stays.
    fn round(self, v: &Bson, up: bool) -> Result<Bson> {
        let n = self.checked(v)?;
        if n == 0.0 {
            return Ok(v.clone());
        }
        let rounded = match self {
            Rounder::Series(series) => Bson::Double(if up {
                series_up(series, n)
            } else {
                series_down(series, n)
            }),
            Rounder::PowersOfTwo => {
                let exponent: i64 = match v {
                    Bson::Int32(_) | Bson::Int64(_) => {
                        let whole = crate::expr::as_i64(v).unwrap_or(1).max(1);
                        let bits = i64::from(64 - whole.leading_zeros());
                        if up {
                            bits
                        } else if whole.count_ones() == 1 {
                            bits - 2
                        } else {
                            bits - 1
                        }
                    }
                    _ if up => n.log2().floor() as i64 + 1,
                    _ => n.log2().ceil() as i64 - 1,
                };
                // 2 to that power with `$pow`'s types: an int when it fits, a double when
                // the power is negative.
                let power = Expr::Call(
                    crate::expr::Func::Pow,
                    vec![
                        Expr::Literal(Bson::Int32(2)),
                        Expr::Literal(Bson::Int64(exponent)),
                    ],
                );
                let p = eval_in(&power, &Env::constant())?.unwrap_or(Bson::Null);
                match (v, p) {
                    (Bson::Int32(_) | Bson::Double(_), Bson::Int64(p)) => {
                        i32::try_from(p).map_or(Bson::Int64(p), Bson::Int32)
                    }
                    (_, p) => p,
                }
            }
        };
        Ok(match v {
            Bson::Decimal128(_) => crate::expr::as_f64(&rounded)
                .and_then(|f| f.to_string().parse().ok())
                .map_or(rounded, Bson::Decimal128),
            _ => rounded,
        })
    }
}

/// A `groupBy` value when a granularity rounds the boundaries: a non-negative number.
fn check_granular(v: &Bson) -> Result<()> {
    let c = ErrorCode::location;
    let n = match v {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
            crate::expr::as_f64(v).unwrap_or(f64::NAN)
        }
        other => {
            return Err(failure(
                c(40258),
                format!(
                    "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: {}",
                    type_alias(Some(other))
                ),
            ));
        }
    };
    if n.is_infinite() {
        return Err(failure(
            c(11_785_400),
            format!("$bucketAuto cannot round the infinite value {v} to a granularity"),
        ));
    }
    if n.is_nan() {
        return Err(failure(
            c(40259),
            "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN",
        ));
    }
    if n < 0.0 {
        return Err(failure(
            c(40260),
            format!(
                "$bucketAuto can specify a 'granularity' with non-negative numbers only, but found {v}"
            ),
        ));
    }
    Ok(())
}

/// The least number of the series (scaled by a power of ten) strictly above `n`.
fn series_up(series: &[f64], n: f64) -> f64 {
    let (first, last) = (series[0], series[series.len() - 1]);
    let mut multiplier = 1.0;
    while n >= last * multiplier && multiplier.is_finite() {
        multiplier *= 10.0;
    }
    while n < first * multiplier {
        let previous_min = first * multiplier;
        multiplier /= 10.0;
        if n >= last * multiplier {
            return previous_min;
        }
    }
    series
        .iter()
        .find(|s| n < *s * multiplier)
        .map_or(last * multiplier, |s| s * multiplier)
}

/// The greatest number of the series (scaled by a power of ten) strictly below `n`.
fn series_down(series: &[f64], n: f64) -> f64 {
    let (first, last) = (series[0], series[series.len() - 1]);
    let mut multiplier = 1.0;
    while n <= first * multiplier && multiplier > 0.0 {
        multiplier /= 10.0;
    }
    // Below every scaled number a double can hold: zero is the greatest below.
    if multiplier == 0.0 {
        return 0.0;
    }
    while n > last * multiplier {
        let previous_max = last * multiplier;
        multiplier *= 10.0;
        if n <= first * multiplier {
            return previous_max;
        }
    }
    series
        .iter()
        .rev()
        .find(|s| *s * multiplier < n)
        .map_or(first * multiplier, |s| s * multiplier)
}

/// The stage over `input`: the documents sorted by their value through the stage's external
/// sort (spilling past the budget, or failing without disk use), then folded into buckets one
/// at a time as the sorted documents come (see the module documentation).
pub(super) fn run(
    input: Documents<'_>,
    group_by: Expr,
    buckets: usize,
    fields: Vec<(String, Accumulator, Expr)>,
    granularity: Option<Rounder>,
    collation: Option<std::sync::Arc<Collation>>,
    budget: Budget,
) -> Documents<'_> {
    deferred(move || {
        let (total, sorted) = sorted_by_value(
            input,
            &group_by,
            granularity,
            collation.clone(),
            budget.clone(),
        )?;
        let mut state = Buckets {
            sorted,
            next: None,
            size: ((total as f64 / buckets as f64).round() as usize).max(1),
            wanted: buckets,
            number: 0,
            previous_max: None,
            fields,
            granularity,
            collation,
            budget,
        };
        state.advance()?;
        let mut failed = false;
        Ok(Box::new(std::iter::from_fn(move || {
            if failed {
                return None;
            }
            let bucket = state.next_bucket().transpose();
            failed = matches!(bucket, Some(Err(_)));
            bucket
        })))
    })
}

/// Documents in value order (ties in input order), each with its value, and how many there are.
type Sorted<'a> = Box<dyn Iterator<Item = Result<(Bson, Document)>> + 'a>;

fn sorted_by_value<'a>(
    input: Documents<'a>,
    group_by: &Expr,
    granularity: Option<Rounder>,
    collation: Option<std::sync::Arc<Collation>>,
    budget: Budget,
) -> Result<(usize, Sorted<'a>)> {
    let cx = collation.clone();
    let compare = move |a: &bson::RawDocument, b: &bson::RawDocument| {
        compare_in(spill::key_of(a), spill::key_of(b), cx.as_deref())
    };
    let mut sorter = Sorter::new(budget, NAME, compare, None);
    let mut total = 0usize;
    for doc in input {
        crate::interrupt::check()?;
        let doc = doc?;
        let key =
            eval_in(group_by, &Env::collated(&doc, collation.as_deref()))?.unwrap_or(Bson::Null);
        // With a granularity every value must be a non-negative number.
        if granularity.is_some() {
            check_granular(&key)?;
        }
        total += 1;
        sorter.push(spill::keyed(NAME, key, doc)?)?;
    }
    let sorted = sorter.finish()?.map(|record| spill::unkeyed(&record?));
    Ok((total, Box::new(sorted)))
}

/// The buckets being made from the sorted documents.
struct Buckets<'a> {
    sorted: Sorted<'a>,
    /// The next document in value order, in no bucket yet.
    next: Option<(Bson, Document)>,
    /// The documents a bucket takes before it ends at a change of value.
    size: usize,
    /// The `buckets` asked for: at most this many.
    wanted: usize,
    /// The buckets made so far.
    number: usize,
    /// With a granularity, where the previous bucket ended (the next one's `min`).
    previous_max: Option<Bson>,
    fields: Vec<(String, Accumulator, Expr)>,
    granularity: Option<Rounder>,
    collation: Option<std::sync::Arc<Collation>>,
    budget: Budget,
}

impl Buckets<'_> {
    /// The next document, which the caller puts in a bucket; reads the one after it.
    fn advance(&mut self) -> Result<Option<(Bson, Document)>> {
        let taken = self.next.take();
        self.next = self.sorted.next().transpose()?;
        Ok(taken)
    }

    /// Whether the next document's value is before `end`, or equal to `greatest`.
    fn next_within(&self, end: &Bson, greatest: &Bson) -> bool {
        let cx = self.collation.as_deref();
        self.next.as_ref().is_some_and(|(next, _)| {
            compare_bson(next, end, cx).is_lt() || compare_bson(next, greatest, cx).is_eq()
        })
    }

    fn next_bucket(&mut self) -> Result<Option<Document>> {
        if self.next.is_none() || self.number >= self.wanted {
            return Ok(None);
        }
        self.number += 1;
        let last = self.number == self.wanted;
        let cx = self.collation.clone();
        let grouping = group::Grouping::new(
            Expr::Literal(Bson::Null),
            self.fields.clone(),
            self.collation.clone(),
        );
        let mut fold = group::Fold::new(grouping, self.budget.clone(), NAME)?;
        let mut taken = 0usize;
        let mut first: Option<Bson> = None;
        let mut greatest = Bson::Null;
        while let Some((key, _)) = &self.next {
            let full = !last && taken >= self.size;
            let same = taken > 0 && compare_bson(&greatest, key, cx.as_deref()).is_eq();
            if full && !same {
                break;
            }
            let Some((key, doc)) = self.advance()? else {
                break;
            };
            fold.add(&doc)?;
            taken += 1;
            first.get_or_insert_with(|| key.clone());
            greatest = key;
        }
        let first = first.unwrap_or(Bson::Null);
        let (min, max) = match self.granularity {
            None => (
                first,
                match &self.next {
                    Some((next, _)) => next.clone(),
                    None => greatest,
                },
            ),
            Some(rounder) => {
                let min = match self.previous_max.take() {
                    Some(m) => m,
                    None => rounder.round(&first, false)?,
                };
                let boundary = rounder.round(&greatest, true)?;
                // The values below the rounded end belong to this bucket too.
                while self.next_within(&boundary, &greatest) {
                    if let Some((_, doc)) = self.advance()? {
                        fold.add(&doc)?;
                    }
                }
                let max = match &self.next {
                    // A bucket ending at zero ends where the next one's value rounds down.
                    Some((next, _)) if crate::expr::as_f64(&boundary) == Some(0.0) => {
                        rounder.round(next, false)?
                    }
                    _ => boundary,
                };
                self.previous_max = Some(max.clone());
                (min, max)
            }
        };
        let mut bucket = doc! {"_id": {"min": min, "max": max}};
        bucket.extend(fold.finish());
        Ok(Some(bucket))
    }
}
