//! `$group`: documents into groups by the `_id` expression, each output field a running
//! accumulator. A group holds its key and one state per field, never the documents: a `$sum` is
//! a number, `$first` one value; `$push`, `$addToSet`, `$concatArrays` and `$setUnion` hold
//! values, as their results do; the N family holds at most `n` values; `$median` and
//! `$percentile` hold the numbers. What groups hold is counted as it grows against the
//! operation's memory budget; past it the groups' partial states are written to disk and
//! merged at the end (see `spill`), or, without disk use, the stage fails with
//! [`Error::AggregateMemoryExceeded`] instead of growing on.
//!
//! Rules from MongoDB, per accumulator:
//! - `n` of the N family, and `p` of `$percentile`, are evaluated once per group against the
//!   group's key (`_id` when it is a document, else an empty document), never against an input
//!   document.
//! - `$top`, `$topN`, `$bottom`, `$bottomN` keep null (a missing output counts as null); on a
//!   tie the value seen first wins. `$bottomN` gives its values in `sortBy` order.
//! - `$mergeObjects` skips null and missing and refuses other non-documents (40400);
//!   `$concatArrays` and `$setUnion` skip missing and refuse anything else that is not an array,
//!   null included (14).
//! - `$stdDevPop` and `$stdDevSamp` take numbers only, and give a double, or null with no
//!   numbers (`$stdDevSamp`: fewer than two).
//! - `$median` and `$percentile` take numbers only (NaN ignored). The `approximate` method is
//!   answered exactly: the value at rank `ceil(n·p) − 1` of the sorted numbers, a double, which
//!   is what MongoDB's digest gives on the inputs it holds exactly.

use std::sync::Arc;

use bson::{Bson, Document, RawDocumentBuf};

use crate::budget::Budget;
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::error::{Error, Result};
use crate::expr::take_n::{Kept, Pick, checked_n};
use crate::expr::{
    Env, Expr, ExprError, Func, accumulate_values, as_f64, error, eval_in, type_alias,
};
use crate::query::Sort;
use crate::spill::SpillFile;
use crate::value_set::{self, ValueIndex, ValueSet};

mod spill;

#[derive(Debug, Clone)]
pub(super) enum Accumulator {
    Sum,
    Avg,
    Min,
    Max,
    First,
    Last,
    Push,
    AddToSet,
    Count,
    MergeObjects,
    StdDevPop,
    StdDevSamp,
    ConcatArrays,
    SetUnion,
    /// `$firstN`, `$lastN`, `$minN`, `$maxN`, with `n`.
    TakeN(Pick, Expr),
    /// `$top` and `$bottom` (`n` is `None`: one value, not an array), `$topN` and `$bottomN`.
    Sorted {
        sort: Sort,
        bottom: bool,
        n: Option<Expr>,
    },
    /// `$percentile` (an array, one value per `p`) and `$median` (one value).
    Percentile {
        p: Expr,
        median: bool,
    },
}

impl Accumulator {
    fn name(&self) -> &'static str {
        match self {
            Accumulator::Sum => "$sum",
            Accumulator::Avg => "$avg",
            Accumulator::Min => "$min",
            Accumulator::Max => "$max",
            Accumulator::First => "$first",
            Accumulator::Last => "$last",
            Accumulator::Push => "$push",
            Accumulator::AddToSet => "$addToSet",
            Accumulator::Count => "$count",
            Accumulator::MergeObjects => "$mergeObjects",
            Accumulator::StdDevPop => "$stdDevPop",
            Accumulator::StdDevSamp => "$stdDevSamp",
            Accumulator::ConcatArrays => "$concatArrays",
            Accumulator::SetUnion => "$setUnion",
            Accumulator::TakeN(pick, _) => pick.operator(),
            Accumulator::Sorted {
                bottom: false,
                n: None,
                ..
            } => "$top",
            Accumulator::Sorted {
                bottom: true,
                n: None,
                ..
            } => "$bottom",
            Accumulator::Sorted { bottom: false, .. } => "$topN",
            Accumulator::Sorted { bottom: true, .. } => "$bottomN",
            Accumulator::Percentile { median: true, .. } => "$median",
            Accumulator::Percentile { median: false, .. } => "$percentile",
        }
    }

    /// Whether the accumulator reads the document's sort keys.
    fn sorts(&self) -> bool {
        matches!(self, Accumulator::Sorted { .. })
    }
}

/// One output field's running state.
enum State {
    /// `$sum`, `$count`: the total so far (`None` before any value).
    Sum(Option<Bson>),
    /// `$avg`: the total of the numbers and how many there were.
    Avg(Option<Bson>, u64),
    /// `$min`, `$max`: the extreme so far, nulls and missing ignored.
    Extreme(Option<Bson>),
    /// `$first`, `$last`.
    One(Option<Bson>),
    Push(Vec<Bson>),
    AddToSet(ValueSet),
    Merged(Document),
    /// `$stdDevPop`, `$stdDevSamp`: Welford's running count, mean and sum of squared
    /// differences, in doubles as MongoDB computes them.
    Deviation {
        count: u64,
        mean: f64,
        squares: f64,
    },
    TakeN(Kept),
    /// The `n` best `(sort keys, arrival, output)` under the order (reversed for the bottom
    /// ones), best first.
    Sorted {
        n: usize,
        held: Vec<(Vec<bson::RawBson>, u64, Bson)>,
    },
    Numbers {
        p: Vec<f64>,
        values: Vec<f64>,
    },
}

/// The environment `n` and `p` are evaluated in: the group's key when it is a document.
fn key_env<'a>(key_doc: &'a Document, collation: Option<&'a Collation>) -> Env<'a> {
    Env::collated(key_doc, collation)
}

impl State {
    fn new(accumulator: &Accumulator, env: &Env<'_>) -> Result<State> {
        Ok(match accumulator {
            Accumulator::Sum | Accumulator::Count => State::Sum(None),
            Accumulator::Avg => State::Avg(None, 0),
            Accumulator::Min | Accumulator::Max => State::Extreme(None),
            Accumulator::First | Accumulator::Last => State::One(None),
            Accumulator::Push | Accumulator::ConcatArrays => State::Push(Vec::new()),
            Accumulator::AddToSet | Accumulator::SetUnion => State::AddToSet(ValueSet::default()),
            Accumulator::MergeObjects => State::Merged(Document::new()),
            Accumulator::StdDevPop | Accumulator::StdDevSamp => State::Deviation {
                count: 0,
                mean: 0.0,
                squares: 0.0,
            },
            Accumulator::TakeN(pick, n) => {
                let n = checked_n(pick.operator(), eval_in(n, env)?.as_ref())?;
                State::TakeN(Kept::new(*pick, n))
            }
            Accumulator::Sorted { n, .. } => {
                let n = match n {
                    Some(n) => checked_n(accumulator.name(), eval_in(n, env)?.as_ref())?,
                    None => 1,
                };
                State::Sorted {
                    n,
                    held: Vec::new(),
                }
            }
            Accumulator::Percentile { p, .. } => State::Numbers {
                p: checked_p(eval_in(p, env)?)?,
                values: Vec::new(),
            },
        })
    }

    /// Takes one document's value; returns how many bytes the state grew by (negative when it
    /// let go of more than it took), for the bound.
    fn add(
        &mut self,
        accumulator: &Accumulator,
        value: Option<Bson>,
        sort_keys: Option<&(Vec<bson::RawBson>, u64)>,
        first_time: bool,
        collation: Option<&Collation>,
    ) -> Result<isize> {
        match self {
            State::Sum(total) => {
                // `$sum` ignores what is not a number (an array argument included).
                if let Some(v) = value.filter(is_number) {
                    add_to_total(total, v, collation);
                }
                Ok(0)
            }
            State::Avg(total, count) => {
                if let Some(v) = value.filter(is_number) {
                    *count += 1;
                    add_to_total(total, v, collation);
                }
                Ok(0)
            }
            State::Extreme(best) => {
                let func = if matches!(accumulator, Accumulator::Min) {
                    Func::Min
                } else {
                    Func::Max
                };
                keep_extreme(best, func, value, collation);
                Ok(0)
            }
            State::One(kept) => {
                if first_time || matches!(accumulator, Accumulator::Last) {
                    *kept = Some(value.unwrap_or(Bson::Null));
                }
                Ok(0)
            }
            State::Push(values) => push(values, accumulator, value),
            State::AddToSet(set) => add_to_set(set, accumulator, value, collation),
            State::Merged(merged) => merge_objects(merged, value),
            State::Deviation {
                count,
                mean,
                squares,
            } => {
                if let Some(x) = value.as_ref().and_then(as_f64) {
                    *count += 1;
                    let delta = x - *mean;
                    *mean += delta / *count as f64;
                    *squares += delta * (x - *mean);
                }
                Ok(0)
            }
            State::TakeN(kept) => {
                let grown = value.as_ref().map_or(0, held_size);
                let let_go = kept.add(value, collation);
                Ok(grown - let_go.as_ref().map_or(0, held_size))
            }
            State::Sorted { n, held } => match (accumulator, sort_keys) {
                (Accumulator::Sorted { sort, bottom, .. }, Some(keys)) => {
                    let order = SortOrder {
                        sort,
                        bottom: *bottom,
                        collation,
                    };
                    Ok(keep_sorted(held, *n, &order, keys, value))
                }
                _ => Ok(0),
            },
            State::Numbers { values, .. } => match value.as_ref().and_then(as_f64) {
                Some(x) if !x.is_nan() => {
                    values.push(x);
                    Ok(8)
                }
                _ => Ok(0),
            },
        }
    }

    fn finish(self, accumulator: &Accumulator, collation: Option<&Collation>) -> Bson {
        match self {
            State::Sum(total) => total.unwrap_or(Bson::Int32(0)),
            State::Avg(None, _) | State::Avg(_, 0) => Bson::Null,
            State::Avg(Some(total), count) => average(total, count),
            State::Extreme(best) | State::One(best) => best.unwrap_or(Bson::Null),
            State::Push(values) => Bson::Array(values),
            State::AddToSet(set) => Bson::Array(set.into_values()),
            State::Merged(merged) => Bson::Document(merged),
            State::Deviation { count, squares, .. } => {
                let samp = matches!(accumulator, Accumulator::StdDevSamp);
                let divisor = if samp { count.saturating_sub(1) } else { count };
                if count == 0 || divisor == 0 {
                    if !samp && count == 1 {
                        return Bson::Double(0.0);
                    }
                    return Bson::Null;
                }
                Bson::Double((squares / divisor as f64).max(0.0).sqrt())
            }
            State::TakeN(kept) => Bson::Array(kept.into_values()),
            State::Sorted { held, .. } => {
                let Accumulator::Sorted {
                    sort, bottom, n, ..
                } = accumulator
                else {
                    return Bson::Null;
                };
                let mut held = held;
                if *bottom {
                    // Chosen from the end; given in `sortBy` order (ties in arrival order).
                    held.sort_by(|(a, ia, _), (b, ib, _)| {
                        sort.compare_keys(a, b, collation).then(ia.cmp(ib))
                    });
                }
                let mut values = held.into_iter().map(|(_, _, v)| v);
                if n.is_none() {
                    values.next().unwrap_or(Bson::Null)
                } else {
                    Bson::Array(values.collect())
                }
            }
            State::Numbers { p, mut values } => {
                values.sort_by(f64::total_cmp);
                let at = |p: f64| -> Bson {
                    if values.is_empty() {
                        return Bson::Null;
                    }
                    let n = values.len();
                    let rank = if p >= 1.0 {
                        n - 1
                    } else {
                        ((n as f64 * p).ceil() as usize).saturating_sub(1)
                    };
                    Bson::Double(values[rank.min(n - 1)])
                };
                if matches!(accumulator, Accumulator::Percentile { median: true, .. }) {
                    at(0.5)
                } else {
                    Bson::Array(p.iter().map(|p| at(*p)).collect())
                }
            }
        }
    }
}

/// What a value adds to a state's size, for the bound.
fn held_size(v: &Bson) -> isize {
    approximate_size(v) as isize
}

/// `$sum` and `$avg`: `v` added to the running total (the first value is the total).
fn add_to_total(total: &mut Option<Bson>, v: Bson, collation: Option<&Collation>) {
    *total = Some(match total.take() {
        None => v,
        Some(t) => sum(vec![t, v], collation),
    });
}

/// `$min` and `$max` (`func`): the extreme of `best` and the value; null and missing are
/// ignored.
fn keep_extreme(
    best: &mut Option<Bson>,
    func: Func,
    value: Option<Bson>,
    collation: Option<&Collation>,
) {
    let Some(v) = value.filter(|v| !matches!(v, Bson::Null | Bson::Undefined)) else {
        return;
    };
    *best = Some(match best.take() {
        None => v,
        Some(b) => accumulate_values(func, vec![b, v], collation).unwrap_or(Bson::Null),
    });
}

/// `$push` (the value) and `$concatArrays` (the array's elements; anything else is refused).
/// Missing adds nothing.
fn push(values: &mut Vec<Bson>, accumulator: &Accumulator, value: Option<Bson>) -> Result<isize> {
    match (accumulator, value) {
        (_, None) => Ok(0),
        (Accumulator::ConcatArrays, Some(Bson::Array(items))) => {
            let grown = items.iter().map(held_size).sum();
            values.extend(items);
            Ok(grown)
        }
        (Accumulator::ConcatArrays, Some(other)) => Err(not_an_array("$concatArrays", &other)),
        (_, Some(v)) => {
            let grown = held_size(&v);
            values.push(v);
            Ok(grown)
        }
    }
}

/// `$addToSet` (the value) and `$setUnion` (the array's elements; anything else is refused).
/// Missing adds nothing; only values new to the set grow it.
fn add_to_set(
    set: &mut ValueSet,
    accumulator: &Accumulator,
    value: Option<Bson>,
    collation: Option<&Collation>,
) -> Result<isize> {
    match (accumulator, value) {
        (_, None) => Ok(0),
        (Accumulator::SetUnion, Some(Bson::Array(items))) => {
            let mut grown = 0;
            for v in items {
                let s = held_size(&v);
                if set.insert(v, collation) {
                    grown += s;
                }
            }
            Ok(grown)
        }
        (Accumulator::SetUnion, Some(other)) => Err(not_an_array("$setUnion", &other)),
        (_, Some(v)) => {
            let s = held_size(&v);
            Ok(if set.insert(v, collation) { s } else { 0 })
        }
    }
}

/// `$mergeObjects`: the document's fields over those merged so far; null and missing are
/// skipped, and other values refused (40400).
fn merge_objects(merged: &mut Document, value: Option<Bson>) -> Result<isize> {
    match value {
        None | Some(Bson::Null | Bson::Undefined) => Ok(0),
        Some(Bson::Document(d)) => {
            let grown = held_size(&Bson::Document(d.clone()));
            merged.extend(d);
            Ok(grown)
        }
        Some(other) => Err(error(
            "$mergeObjects",
            format!(
                "$mergeObjects requires object inputs, but input {other} is of type {}",
                type_alias(Some(&other))
            ),
        )
        .with_code(ErrorCode::location(40400))
        .into()),
    }
}

/// The order `$top` and its kin keep their values in: `sortBy`'s, reversed for the bottom ones
/// so that the best is first either way.
struct SortOrder<'a> {
    sort: &'a Sort,
    bottom: bool,
    collation: Option<&'a Collation>,
}

impl SortOrder<'_> {
    fn compare(&self, a: &[bson::RawBson], b: &[bson::RawBson]) -> std::cmp::Ordering {
        let order = self.sort.compare_keys(a, b, self.collation);
        if self.bottom { order.reverse() } else { order }
    }
}

/// `$top` and its kin: the `n` best held best first. A newcomer goes after the equal ones (the
/// first seen wins a tie) and is dropped when it falls past `n`; the size change is returned.
fn keep_sorted(
    held: &mut Vec<(Vec<bson::RawBson>, u64, Bson)>,
    n: usize,
    order: &SortOrder<'_>,
    (keys, arrival): &(Vec<bson::RawBson>, u64),
    value: Option<Bson>,
) -> isize {
    let output = value.unwrap_or(Bson::Null);
    let at = held.partition_point(|(k, _, _)| order.compare(k, keys).is_le());
    if at >= n {
        return 0;
    }
    let grown = held_size(&output) + 32 * keys.len() as isize;
    held.insert(at, (keys.clone(), *arrival, output));
    let mut shrunk = 0;
    if held.len() > n
        && let Some((k, _, v)) = held.pop()
    {
        shrunk = held_size(&v) + 32 * k.len() as isize;
    }
    grown - shrunk
}

/// `p` of `$percentile`: a non-empty array of numbers from 0 to 1.
fn checked_p(value: Option<Bson>) -> Result<Vec<f64>, ExprError> {
    let fail = |code: i32, shown: &str| {
        error(
            "$percentile",
            format!(
                "the 'p' field must be an array of numbers from [0.0, 1.0], but found: {shown}"
            ),
        )
        .with_code(ErrorCode::location(code))
    };
    let items = match value {
        Some(Bson::Array(items)) if !items.is_empty() => items,
        Some(other) => return Err(fail(7_750_301, &other.to_string())),
        None => return Err(fail(7_750_301, "missing")),
    };
    items
        .iter()
        .map(|item| {
            let p = as_f64(item).ok_or_else(|| fail(7_750_302, &item.to_string()))?;
            if (0.0..=1.0).contains(&p) {
                Ok(p)
            } else {
                Err(fail(7_750_303, &item.to_string()))
            }
        })
        .collect()
}

fn not_an_array(op: &str, value: &Bson) -> Error {
    error(
        op,
        format!(
            "{op} requires array inputs, but input {value} is of type {}",
            type_alias(Some(value))
        ),
    )
    .with_code(ErrorCode::TYPE_MISMATCH)
    .into()
}

fn is_number(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

fn sum(values: Vec<Bson>, collation: Option<&Collation>) -> Bson {
    accumulate_values(Func::Sum, values, collation).unwrap_or(Bson::Int32(0))
}

/// A total divided by a count: a decimal for a decimal total, a double otherwise.
fn average(total: Bson, count: u64) -> Bson {
    let count_value = Bson::Int64(i64::try_from(count).unwrap_or(i64::MAX));
    match &total {
        Bson::Decimal128(_) => {
            crate::update::decimal::divide(&total, &count_value).unwrap_or(Bson::Null)
        }
        Bson::Int32(i) => Bson::Double(f64::from(*i) / count as f64),
        Bson::Int64(i) => Bson::Double(*i as f64 / count as f64),
        Bson::Double(d) => Bson::Double(d / count as f64),
        _ => Bson::Null,
    }
}

/// About what a value takes in memory: enough to bound a stage, not an exact figure.
pub(super) fn approximate_size(v: &Bson) -> usize {
    match v {
        Bson::String(s) => 32 + s.len(),
        Bson::Document(d) => {
            32 + d
                .iter()
                .map(|(k, v)| k.len() + approximate_size(v))
                .sum::<usize>()
        }
        Bson::Array(a) => 32 + a.iter().map(approximate_size).sum::<usize>(),
        Bson::Binary(b) => 32 + b.bytes.len(),
        _ => 32,
    }
}

/// One accumulator over a run of documents (a window of `$setWindowFields`), in their order.
/// An empty run gives the accumulator's empty value: 0 for `$sum` and `$count`, `[]` for those
/// that gather, null for the rest. The state may hold about `room` bytes; past them the run
/// fails with `too_big(bytes held)`.
pub(super) fn over<D: std::ops::Deref<Target = Document>>(
    docs: impl Iterator<Item = Result<D>>,
    accumulator: &Accumulator,
    expr: &Expr,
    collation: Option<&Collation>,
    (room, too_big): (usize, &dyn Fn(usize) -> Error),
) -> Result<Bson> {
    let empty = Document::new();
    let mut state = State::new(accumulator, &key_env(&empty, collation))?;
    let mut held = 0isize;
    let sort = match accumulator {
        Accumulator::Sorted { sort, .. } => Some(sort),
        _ => None,
    };
    for (arrival, doc) in docs.enumerate() {
        crate::interrupt::check()?;
        let doc = doc?;
        let value = eval_in(expr, &Env::collated(&doc, collation))?;
        let keys = match sort {
            Some(sort) => {
                let raw = RawDocumentBuf::try_from(&*doc).map_err(|e| {
                    Error::from(error(
                        "$setWindowFields",
                        format!("a document does not encode: {e}"),
                    ))
                })?;
                Some((sort.keys(&raw, collation), arrival as u64))
            }
            None => None,
        };
        held += state.add(accumulator, value, keys.as_ref(), arrival == 0, collation)?;
        let held = usize::try_from(held).unwrap_or(0);
        if held > room {
            return Err(too_big(held));
        }
    }
    Ok(state.finish(accumulator, collation))
}

/// One group: its key and its fields' states.
struct Group {
    key: Bson,
    states: Vec<State>,
    /// Roughly the bytes its states hold: one group cannot spill, so past the budget it fails
    /// (see [`group_too_big`]).
    size: isize,
}

/// The error of one group whose states pass the budget: MongoDB's 146 (`ExceededMemoryLimit`),
/// which `$push` and `$addToSet` give past 100 MiB.
fn group_too_big(budget: &Budget, stage: &str) -> Error {
    error(
        stage,
        format!(
            "one group's accumulators used too much memory and cannot spill to disk. Memory limit: {} bytes",
            budget.limit()
        ),
    )
    .with_code(ErrorCode::EXCEEDED_MEMORY_LIMIT)
    .into()
}

/// What a `$group` stage computes per document: the key, and each field's state.
pub(super) struct Grouping {
    id: Expr,
    fields: Vec<(String, Accumulator, Expr)>,
    collation: Option<Arc<Collation>>,
    /// Where the sorts of `$top` and its kin are, in field order.
    sorted_fields: Vec<usize>,
    /// Documents seen so far: the tie-breaker of the sorted accumulators.
    arrival: u64,
}

impl Grouping {
    pub(super) fn new(
        id: Expr,
        fields: Vec<(String, Accumulator, Expr)>,
        collation: Option<Arc<Collation>>,
    ) -> Grouping {
        let sorted_fields = fields
            .iter()
            .enumerate()
            .filter(|(_, (_, a, _))| a.sorts())
            .map(|(i, _)| i)
            .collect();
        Grouping {
            id,
            fields,
            collation,
            sorted_fields,
            arrival: 0,
        }
    }

    /// The field the key is, when it is one field's value (`"$a.b"`): `a.b`.
    pub(super) fn key_field(&self) -> Option<String> {
        match &self.id {
            Expr::Field(path) => Some(path.as_str().to_owned()),
            Expr::Root(path) | Expr::Current(path) if !path.is_empty() => {
                Some(path.as_str().to_owned())
            }
            _ => None,
        }
    }

    fn collation(&self) -> Option<&Collation> {
        self.collation.as_deref()
    }

    fn key(&self, doc: &Document) -> Result<Bson> {
        Ok(eval_in(&self.id, &Env::collated(doc, self.collation()))?.unwrap_or(Bson::Null))
    }

    /// A new group of `key`, and roughly how many bytes it holds.
    fn open(&self, key: Bson) -> Result<(Group, isize)> {
        let size = (approximate_size(&key) + 64 * self.fields.len()) as isize;
        let key_doc = match &key {
            Bson::Document(d) => d.clone(),
            _ => Document::new(),
        };
        let env = key_env(&key_doc, self.collation());
        let states = self
            .fields
            .iter()
            .map(|(_, a, _)| State::new(a, &env))
            .collect::<Result<Vec<_>>>()?;
        Ok((Group { key, states, size }, size))
    }

    /// Adds `doc` to `group` (`first`: the group's first document); returns how many bytes the
    /// group grew by.
    fn add(&mut self, group: &mut Group, doc: &Document, first: bool) -> Result<isize> {
        // The sort keys of `$top` and its kin, read once per document and sort.
        let mut keys = Vec::new();
        if !self.sorted_fields.is_empty() {
            let raw = RawDocumentBuf::try_from(doc).map_err(|e| {
                Error::from(error("$group", format!("a document does not encode: {e}")))
            })?;
            for &i in &self.sorted_fields {
                if let Accumulator::Sorted { sort, .. } = &self.fields[i].1 {
                    keys.push((sort.keys(&raw, self.collation()), self.arrival));
                }
            }
            self.arrival += 1;
        }
        let collation = self.collation();
        let env = Env::collated(doc, collation);
        let mut grown = 0;
        let mut sorted_at = 0;
        for ((_, accumulator, expr), state) in self.fields.iter().zip(&mut group.states) {
            let value = eval_in(expr, &env)?;
            let doc_keys = if accumulator.sorts() {
                sorted_at += 1;
                keys.get(sorted_at - 1)
            } else {
                None
            };
            grown += state.add(accumulator, value, doc_keys, first, collation)?;
        }
        Ok(grown)
    }

    /// The output document of a finished group.
    fn finish(&self, group: Group) -> Document {
        let mut d = Document::new();
        d.insert("_id", group.key);
        for ((field, accumulator, _), state) in self.fields.iter().zip(group.states) {
            d.insert(field.clone(), state.finish(accumulator, self.collation()));
        }
        d
    }

    /// The fields of the input documents the stage reads (dotted), or `None` when it may read
    /// any (see [`Expr::fields_read`]).
    pub(super) fn fields_read(&self) -> Option<Vec<String>> {
        let mut paths = Vec::new();
        let known = self.id.fields_read(&mut paths)
            && self.fields.iter().all(|(_, accumulator, expr)| {
                if let Accumulator::Sorted { sort, .. } = accumulator {
                    paths.extend(sort.fields().iter().map(|(p, _)| p.as_str().to_owned()));
                }
                expr.fields_read(&mut paths)
            });
        known.then_some(paths)
    }
}

/// One group fed a document at a time, what it holds counted against a budget (past it,
/// [`group_too_big`] naming the stage): each bucket of `$bucketAuto`.
pub(super) struct Fold {
    grouping: Grouping,
    group: Group,
    first: bool,
    budget: Budget,
    stage: &'static str,
}

impl Fold {
    /// An empty group of `grouping`'s fields (its key expression is not read).
    pub(super) fn new(grouping: Grouping, budget: Budget, stage: &'static str) -> Result<Fold> {
        let (group, _) = grouping.open(Bson::Null)?;
        Ok(Fold {
            grouping,
            group,
            first: true,
            budget,
            stage,
        })
    }

    pub(super) fn add(&mut self, doc: &Document) -> Result<()> {
        self.group.size += self.grouping.add(&mut self.group, doc, self.first)?;
        self.first = false;
        if self
            .budget
            .exceeded(usize::try_from(self.group.size).unwrap_or(0))
        {
            return Err(group_too_big(&self.budget, self.stage));
        }
        Ok(())
    }

    /// Each field's value, without `_id`.
    pub(super) fn finish(self) -> Document {
        let mut d = self.grouping.finish(self.group);
        d.remove("_id");
        d
    }
}

/// The `$group` stage under `budget`: in memory, groups come out in the order first seen;
/// past the budget it spills partial states (see `spill`) when disk use is allowed, and its
/// groups then come out in key order; otherwise it fails.
pub(super) fn group_within<'a>(
    docs: impl Iterator<Item = Result<Document>>,
    mut grouping: Grouping,
    budget: &Budget,
) -> Result<super::Documents<'a>> {
    let mut groups: Vec<Group> = Vec::new();
    let mut index = ValueIndex::default();
    let mut held: isize = 0;
    let mut file: Option<SpillFile> = None;
    for doc in docs {
        crate::interrupt::check()?;
        let doc = doc?;
        let key = grouping.key(&doc)?;
        let (position, new) = index.position(&key, groups.len(), grouping.collation());
        if new {
            let (group, size) = grouping.open(key)?;
            held += size;
            groups.push(group);
        }
        let grown = grouping.add(&mut groups[position], &doc, new)?;
        held += grown;
        groups[position].size += grown;
        if budget.exceeded(usize::try_from(groups[position].size).unwrap_or(0)) {
            return Err(group_too_big(budget, "$group"));
        }
        if budget.exceeded(usize::try_from(held).unwrap_or(0)) {
            if !budget.allows_disk_use() {
                return Err(budget.exceeded_error("$group"));
            }
            let spill = match &mut file {
                Some(spill) => spill,
                None => file.insert(SpillFile::create(budget.dir())?),
            };
            spill::write_run(
                spill,
                std::mem::take(&mut groups),
                grouping.collation(),
                budget,
            )?;
            index = ValueIndex::default();
            held = 0;
        }
    }
    let Some(mut file) = file else {
        return Ok(Box::new(
            groups.into_iter().map(move |g| Ok(grouping.finish(g))),
        ));
    };
    if !groups.is_empty() {
        spill::write_run(&mut file, groups, grouping.collation(), budget)?;
    }
    let collation = grouping.collation.clone();
    let compare = move |a: &bson::RawDocument, b: &bson::RawDocument| {
        spill::compare_records(a, b, collation.as_deref())
    };
    let buffer = budget.limit() / (2 * file.runs().max(1));
    let merge = file.merge(compare, buffer)?;
    Ok(Box::new(spill::merged(merge, grouping, budget.clone())))
}

/// Groups `docs` that arrive in the order of their keys (equal keys next to each other, as an
/// index scan on the key's field gives them): each group is passed on as soon as the next key
/// differs, so the stage holds one group at a time. The bound applies to that one group.
pub(super) fn group_in_key_order<'a>(
    mut docs: impl Iterator<Item = Result<Document>> + 'a,
    mut grouping: Grouping,
    budget: Budget,
) -> impl Iterator<Item = Result<Document>> + 'a {
    let mut open: Option<(Group, isize)> = None;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        let mut step = || -> Result<Option<Document>> {
            loop {
                let Some(doc) = docs.next() else {
                    return Ok(open.take().map(|(g, _)| grouping.finish(g)));
                };
                crate::interrupt::check()?;
                let doc = doc?;
                let key = grouping.key(&doc)?;
                let same = open
                    .as_ref()
                    .is_some_and(|(g, _)| value_set::equal(&g.key, &key, grouping.collation()));
                let mut done = None;
                if !same {
                    let (group, size) = grouping.open(key)?;
                    done = open.replace((group, size)).map(|(g, _)| grouping.finish(g));
                }
                if let Some((group, held)) = open.as_mut() {
                    *held += grouping.add(group, &doc, !same)?;
                    if budget.exceeded(usize::try_from(*held).unwrap_or(0)) {
                        return Err(group_too_big(&budget, "$group"));
                    }
                }
                if done.is_some() {
                    return Ok(done);
                }
            }
        };
        let result = step().transpose();
        failed = matches!(result, Some(Err(_)));
        result
    })
}
