//! `$densify`: documents added where a sequence of numbers or dates has gaps.
//!
//! The rules, from MongoDB's manual and jstests: the documents are split by
//! `partitionByFields`; in each partition the values of `field` are stepped through by `step`
//! (for dates, `step` whole `unit`s), from the range's start: `bounds: [lo, hi]` (`hi`
//! excluded; every partition gets the range), `"full"` (from the least to the greatest value of
//! all partitions, both included, every partition getting it) or `"partition"` (each partition
//! its own least to greatest). A step that lands on an existing value adds nothing (and the
//! sequence takes on that value's type); a value off the steps stays and does not move them.
//! An added document holds only the partition fields and `field`. Documents whose field is
//! null or missing pass through. The stage holds its input in memory, and what it adds,
//! counted against the operation's memory budget (see `crate::budget`); it does not spill, and
//! past the budget it fails with MongoDB's 292 naming `$densify`.

use std::cmp::Ordering;

use bson::{Bson, Document};

use super::{Documents, Stage, set_output};
use crate::budget::Budget;
use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::expr::{Env, Expr, Func, compare_bson, error, eval_in, is_unit, shift_utc};
use crate::path::Path;

const NAME: &str = "$densify";

/// MongoDB's `internalQueryMaxAllowedDensifyDocs`: the most documents one `$densify` adds,
/// across its partitions. Bytes alone would not bound it: a few bytes of BSON are a few hundred
/// in memory, and a wide range with a small step asks for millions.
pub const MAX_DENSIFY_DOCUMENTS: usize = 500_000;

fn fail(code: ErrorCode, reason: impl std::fmt::Display) -> Error {
    Error::from(error(NAME, reason).with_code(code))
}

fn location(code: i32, reason: impl std::fmt::Display) -> Error {
    fail(ErrorCode::location(code), reason)
}

/// What the documents `$densify` adds may still take, across its partitions.
struct Allowance<'b> {
    bytes: usize,
    documents: usize,
    /// The operation's budget the bytes come from (for its error).
    limits: &'b Budget,
}

enum Bounds {
    Explicit(Box<(Bson, Bson)>),
    Full,
    Partition,
}

/// A parsed `$densify`.
pub(super) struct Densify {
    field: Path,
    partition_by: Vec<Path>,
    step: Bson,
    unit: Option<String>,
    bounds: Bounds,
}

fn is_number(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

fn path_of(name: &str, what: &str) -> Result<Path> {
    if name.starts_with('$') {
        return Err(location(
            16410,
            format!("{what} `{name}` cannot start with `$`"),
        ));
    }
    Path::checked(name).ok_or_else(|| {
        fail(
            ErrorCode::BAD_VALUE,
            format!("{what} `{name}` is not a field path"),
        )
    })
}

fn missing(name: &str) -> Error {
    fail(
        ErrorCode::IDL_FAILED_TO_PARSE,
        format!("missing required field `{name}`"),
    )
}

fn mismatch(reason: &str) -> Error {
    fail(ErrorCode::TYPE_MISMATCH, reason.to_owned())
}

pub(super) fn parse(arg: &Bson) -> Result<Stage> {
    let Bson::Document(spec) = arg else {
        return Err(mismatch("the $densify specification must be an object"));
    };
    if let Some(unknown) = spec
        .keys()
        .find(|k| !["field", "partitionByFields", "range"].contains(&k.as_str()))
    {
        return Err(location(40415, format!("unknown field `{unknown}`")));
    }
    let field = match spec.get("field") {
        None => return Err(missing("field")),
        Some(Bson::String(f)) => path_of(f, "the field")?,
        Some(_) => return Err(mismatch("`field` must be a string")),
    };
    let partition_by = match spec.get("partitionByFields") {
        None => Vec::new(),
        Some(Bson::Array(items)) => items
            .iter()
            .map(|f| match f {
                Bson::String(f) => path_of(f, "the partition field"),
                _ => Err(mismatch("`partitionByFields` must be an array of strings")),
            })
            .collect::<Result<_>>()?,
        Some(_) => {
            return Err(mismatch("`partitionByFields` must be an array of strings"));
        }
    };
    let Some(range) = spec.get("range") else {
        return Err(missing("range"));
    };
    let Bson::Document(range) = range else {
        return Err(mismatch("`range` must be an object"));
    };
    let (step, unit, bounds) = parse_range(range)?;
    if matches!(bounds, Bounds::Partition) && partition_by.is_empty() {
        return Err(location(
            5_733_408,
            "\"partition\" bounds need `partitionByFields`",
        ));
    }
    if unit.is_some() && crate::expr::as_i64(&step).is_none() {
        return Err(location(
            6_586_400,
            "the step must be a whole number when the unit is a time unit",
        ));
    }
    Ok(Stage::Densify(Box::new(Densify {
        field,
        partition_by,
        step,
        unit,
        bounds,
    })))
}

/// `range`: its `step`, `unit` and `bounds`, each checked as read; then a positive step, and
/// explicit bounds that agree with the step and the unit.
fn parse_range(range: &Document) -> Result<(Bson, Option<String>, Bounds)> {
    if let Some(unknown) = range
        .keys()
        .find(|k| !["step", "bounds", "unit"].contains(&k.as_str()))
    {
        return Err(location(40415, format!("unknown range field `{unknown}`")));
    }
    let step = match range.get("step") {
        None => return Err(missing("range.step")),
        Some(s) if is_number(s) => s.clone(),
        Some(_) => return Err(mismatch("`range.step` must be a number")),
    };
    let unit = match range.get("unit") {
        None => None,
        Some(Bson::String(u)) if is_unit(u) => Some(u.clone()),
        Some(Bson::String(u)) => {
            return Err(fail(
                ErrorCode::BAD_VALUE,
                format!("`{u}` is not a time unit"),
            ));
        }
        Some(_) => return Err(mismatch("`range.unit` must be a string")),
    };
    let bounds = match range.get("bounds") {
        None => return Err(missing("range.bounds")),
        Some(Bson::String(b)) if b == "full" => Bounds::Full,
        Some(Bson::String(b)) if b == "partition" => Bounds::Partition,
        Some(Bson::Array(b)) if b.len() == 2 => {
            Bounds::Explicit(Box::new((b[0].clone(), b[1].clone())))
        }
        Some(Bson::Array(_)) => {
            return Err(location(5_733_403, "`bounds` must hold exactly two values"));
        }
        Some(_) => {
            return Err(fail(
                ErrorCode::BAD_VALUE,
                "`bounds` must be \"full\", \"partition\" or an array of two values",
            ));
        }
    };
    if compare_bson(&step, &Bson::Int32(0), None) != Ordering::Greater {
        return Err(location(5_733_401, "the step must be positive"));
    }
    if let Bounds::Explicit(pair) = &bounds {
        check_explicit_bounds(&pair.0, &pair.1, &step, unit.is_some())?;
    }
    Ok((step, unit, bounds))
}

/// `bounds: [lo, hi]`: both dates (with a `unit`) or both numbers (without one, and with a
/// decimal step when either is a decimal), and `lo` not above `hi`.
fn check_explicit_bounds(lo: &Bson, hi: &Bson, step: &Bson, has_unit: bool) -> Result<()> {
    match (lo, hi) {
        (Bson::DateTime(_), Bson::DateTime(_)) => {
            if !has_unit {
                return Err(location(5_733_402, "date bounds need a `unit`"));
            }
        }
        (l, h) if is_number(l) && is_number(h) => {
            if has_unit {
                return Err(location(5_733_409, "numeric bounds take no `unit`"));
            }
            let decimal = |v: &Bson| matches!(v, Bson::Decimal128(_));
            if (decimal(l) || decimal(h)) && !decimal(step) {
                return Err(location(5_876_900, "decimal bounds need a decimal step"));
            }
        }
        (l, Bson::DateTime(_)) if is_number(l) => {
            return Err(location(
                5_733_406,
                "the bounds must be both numbers or both dates",
            ));
        }
        _ => {
            return Err(location(
                5_733_402,
                "the bounds must be both numbers or both dates",
            ));
        }
    }
    if compare_bson(lo, hi, None) == Ordering::Greater {
        return Err(location(
            5_733_402,
            "the lower bound must not be above the upper bound",
        ));
    }
    Ok(())
}

impl Densify {
    pub(super) fn run(self, input: Documents<'_>, budget: Budget) -> Documents<'_> {
        super::blocking(move || self.all(input, &budget))
    }

    /// The value after `v`.
    fn next(&self, v: &Bson) -> Result<Bson> {
        if let (Bson::DateTime(d), Some(unit)) = (v, &self.unit) {
            let step = crate::expr::as_i64(&self.step).unwrap_or(1);
            shift_utc(d.timestamp_millis(), unit, step)
                .map(|t| Bson::DateTime(bson::DateTime::from_millis(t)))
                .ok_or_else(|| fail(ErrorCode::OVERFLOW, "the next date overflows"))
        } else {
            let sum = Expr::Call(
                Func::Add,
                vec![Expr::Literal(v.clone()), Expr::Literal(self.step.clone())],
            );
            Ok(eval_in(&sum, &Env::constant())?.unwrap_or(Bson::Null))
        }
    }

    /// Whether a value is of the kind the range steps through.
    fn check_kind(&self, v: &Bson) -> Result<()> {
        let ok = match v {
            Bson::DateTime(_) => self.unit.is_some(),
            v if is_number(v) => self.unit.is_none(),
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(location(
                6_053_600,
                format!(
                    "the value {v} does not match the step: {}",
                    if self.unit.is_some() {
                        "a time unit steps through dates"
                    } else {
                        "a number steps through numbers"
                    }
                ),
            ))
        }
    }

    fn all(&self, input: Documents<'_>, limits: &Budget) -> Result<Vec<Document>> {
        let mut passed = Vec::new();
        // Partitions in the order first seen (keys equal by MongoDB's comparison): key,
        // documents with their values.
        let mut partitions: Vec<(Document, Vec<(Bson, Document)>)> = Vec::new();
        let mut index = crate::value_set::ValueIndex::default();
        let mut held = 0usize;
        for doc in input {
            let doc = doc?;
            super::hold(&mut held, &doc, limits, NAME)?;
            let value = match self.field.get(&doc).cloned() {
                None | Some(Bson::Null | Bson::Undefined) => {
                    passed.push(doc);
                    continue;
                }
                Some(v) => v,
            };
            self.check_kind(&value)?;
            let mut key = Document::new();
            for path in &self.partition_by {
                if let Some(v) = path.get(&doc).cloned() {
                    set_output(&mut key, path, v);
                }
            }
            let (at, new) = index.position(&Bson::Document(key.clone()), partitions.len(), None);
            if new {
                partitions.push((key, vec![(value, doc)]));
            } else {
                partitions[at].1.push((value, doc));
            }
        }
        for (_, docs) in &mut partitions {
            docs.sort_by(|(a, _), (b, _)| compare_bson(a, b, None));
        }
        // The range of "full": the least and greatest values of all partitions.
        let extremes = |docs: &[(Bson, Document)]| {
            docs.first()
                .map(|(v, _)| v.clone())
                .zip(docs.last().map(|(v, _)| v.clone()))
        };
        let full = partitions
            .iter()
            .filter_map(|(_, docs)| extremes(docs))
            .reduce(|(lo, hi), (l, h)| {
                (
                    if compare_bson(&l, &lo, None) == Ordering::Less {
                        l
                    } else {
                        lo
                    },
                    if compare_bson(&h, &hi, None) == Ordering::Greater {
                        h
                    } else {
                        hi
                    },
                )
            });
        if let Bounds::Explicit(pair) = &self.bounds {
            self.check_kind(&pair.0)?;
        }
        let mut out = passed;
        // What the added documents take, across every partition, bounded like the input.
        let mut budget = Allowance {
            bytes: limits.limit().saturating_sub(held),
            documents: MAX_DENSIFY_DOCUMENTS,
            limits,
        };
        for (key, docs) in partitions {
            let (start, end, end_included) = match &self.bounds {
                Bounds::Explicit(pair) => (pair.0.clone(), pair.1.clone(), false),
                Bounds::Full => match &full {
                    Some((lo, hi)) => (lo.clone(), hi.clone(), true),
                    None => continue,
                },
                Bounds::Partition => match extremes(&docs) {
                    Some((lo, hi)) => (lo, hi, true),
                    None => continue,
                },
            };
            out.extend(self.fill(&key, docs, start, &end, end_included, &mut budget)?);
        }
        Ok(out)
    }

    /// One partition's documents with the missing steps added, in value order.
    fn fill(
        &self,
        key: &Document,
        docs: Vec<(Bson, Document)>,
        start: Bson,
        end: &Bson,
        end_included: bool,
        budget: &mut Allowance<'_>,
    ) -> Result<Vec<Document>> {
        let mut out = Vec::with_capacity(docs.len());
        let mut existing = docs.into_iter().peekable();
        let mut current = start;
        let before_end = |v: &Bson| match compare_bson(v, end, None) {
            Ordering::Less => true,
            Ordering::Equal => end_included,
            Ordering::Greater => false,
        };
        while before_end(&current) {
            // The documents before this step go out first.
            while let Some((v, _)) = existing.peek() {
                if compare_bson(v, &current, None) == Ordering::Less {
                    out.extend(existing.next().map(|(_, d)| d));
                } else {
                    break;
                }
            }
            let on_step = existing
                .peek()
                .is_some_and(|(v, _)| compare_bson(v, &current, None) == Ordering::Equal);
            if on_step {
                // The sequence goes on from the existing value, in its type (a decimal step
                // keeps the sequence in decimals).
                let decimal_step = matches!(self.step, Bson::Decimal128(_));
                while let Some((v, _)) = existing.peek() {
                    if compare_bson(v, &current, None) == Ordering::Equal {
                        if !decimal_step {
                            current = v.clone();
                        }
                        out.extend(existing.next().map(|(_, d)| d));
                    } else {
                        break;
                    }
                }
            } else {
                let mut added = key.clone();
                set_output(&mut added, &self.field, current.clone());
                let size = crate::document::encoded_size(&added);
                budget.bytes = budget
                    .bytes
                    .checked_sub(size)
                    .ok_or_else(|| budget.limits.exceeded_error(NAME))?;
                let Some(left) = budget.documents.checked_sub(1) else {
                    return Err(location(
                        5_897_900,
                        format!(
                            "Generated documents exceeded the limit of {MAX_DENSIFY_DOCUMENTS} documents in $densify"
                        ),
                    ));
                };
                budget.documents = left;
                out.push(added);
            }
            let next = self.next(&current)?;
            if compare_bson(&next, &current, None) != Ordering::Greater {
                break;
            }
            current = next;
        }
        out.extend(existing.map(|(_, d)| d));
        Ok(out)
    }
}
