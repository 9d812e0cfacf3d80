//! `$group` past its memory budget: partial states written to disk and merged.
//!
//! When the groups held pass the budget (and the operation allows disk use), every group is
//! written to a run as `{k: key, s: [state, ...]}`, the runs sorted by key in MongoDB's order
//! (under the collation), and the table starts empty. At the end the table left is written too
//! and the runs are merged: records of equal keys arrive together, earlier runs first (so in
//! input order), and their states are combined. Every accumulator has a partial form and a
//! merge that gives what one pass would have given: totals add (`$avg` keeps the sum and the
//! count), `$min`/`$max` keep the extreme, `$first` keeps the earliest run's value and `$last`
//! the latest's, `$push` and `$concatArrays` concatenate in order, `$addToSet` and `$setUnion`
//! unite, `$mergeObjects` merges later over earlier, standard deviations merge Welford's
//! triples (Chan's formula), the N family and `$top` kin offer the later run's kept values to
//! the earlier's (their arrival numbers are global), `$median`/`$percentile` concatenate their
//! numbers. Sums of doubles may round differently than one pass, as they do in MongoDB.
//!
//! A spilled `$group` gives its groups in key order rather than the order first seen: MongoDB
//! promises no order for `$group`'s output.

use std::cmp::Ordering;

use bson::{Bson, Document, RawBson, RawDocument, RawDocumentBuf};

use super::{
    Accumulator, Group, Grouping, SortOrder, State, add_to_total, keep_extreme, keep_sorted,
};
use crate::budget::Budget;
use crate::collation::Collation;
use crate::error::{Error, Result};
use crate::expr::Func;
use crate::expr::take_n::Kept;
use crate::order::compare_in;
use crate::spill::{Merge, SpillFile};
use crate::value_set::ValueSet;

fn bad() -> Error {
    Error::corrupt("spill file", "a group's state that does not decode")
}

/// Compares two records by key.
pub(super) fn compare_records(
    a: &RawDocument,
    b: &RawDocument,
    collation: Option<&Collation>,
) -> Ordering {
    match (a.get("k"), b.get("k")) {
        (Ok(Some(x)), Ok(Some(y))) => compare_in(x, y, collation),
        _ => Ordering::Equal,
    }
}

/// Writes every group of the table, sorted by key, as one run; each group is encoded as it
/// is written and let go, so that the table and its records are never held at once.
pub(super) fn write_run(
    spill: &mut SpillFile,
    groups: Vec<Group>,
    collation: Option<&Collation>,
    budget: &Budget,
) -> Result<()> {
    let encode_error = |e: bson::error::Error| Error::corrupt("spill file", e);
    let mut keyed = groups
        .into_iter()
        .map(|g| Ok((RawBson::try_from(g.key.clone()).map_err(encode_error)?, g)))
        .collect::<Result<Vec<_>>>()?;
    keyed.sort_by(|(a, _), (b, _)| compare_in(a.as_raw_bson_ref(), b.as_raw_bson_ref(), collation));
    let records = keyed.into_iter().map(|(_, g)| {
        let states: Vec<Bson> = g.states.into_iter().map(State::into_bson).collect();
        let record = bson::doc! { "k": g.key, "s": states };
        RawDocumentBuf::try_from(&record).map_err(encode_error)
    });
    let bytes = spill.write_each(records)?;
    budget.spilled(bytes);
    Ok(())
}

/// The groups of every run, merged, in key order.
pub(super) fn merged<'a, C>(
    mut merge: Merge<C>,
    grouping: Grouping,
    budget: Budget,
) -> impl Iterator<Item = Result<Document>> + 'a
where
    C: Fn(&RawDocument, &RawDocument) -> Ordering + 'a,
{
    let mut open: Option<(RawDocumentBuf, Group)> = None;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        let mut step = || -> Result<Option<Document>> {
            loop {
                let Some((record, _)) = merge.next_with_run()? else {
                    return Ok(open.take().map(|(_, g)| grouping.finish(g)));
                };
                let collation = grouping.collation();
                if let Some((key, group)) = open.as_mut()
                    && compare_records(key, &record, collation) == Ordering::Equal
                {
                    group.size += record.as_bytes().len() as isize;
                    if budget.exceeded(usize::try_from(group.size).unwrap_or(0)) {
                        return Err(super::group_too_big(&budget, "$group"));
                    }
                    let later = decode(&record, &grouping)?;
                    for ((_, accumulator, _), (state, other)) in grouping
                        .fields
                        .iter()
                        .zip(group.states.iter_mut().zip(later.states))
                    {
                        state.merge(other, accumulator, collation)?;
                    }
                    continue;
                }
                let group = decode(&record, &grouping)?;
                if let Some((_, done)) = open.replace((record, group)) {
                    return Ok(Some(grouping.finish(done)));
                }
            }
        };
        let result = step().transpose();
        failed = matches!(result, Some(Err(_)));
        result
    })
}

fn decode(record: &RawDocument, grouping: &Grouping) -> Result<Group> {
    let doc = Document::try_from(record).map_err(|_| bad())?;
    let key = doc.get("k").cloned().ok_or_else(bad)?;
    let Some(Bson::Array(states)) = doc.get("s") else {
        return Err(bad());
    };
    if states.len() != grouping.fields.len() {
        return Err(bad());
    }
    let states = grouping
        .fields
        .iter()
        .zip(states)
        .map(|((_, accumulator, _), state)| {
            State::from_bson(accumulator, state.clone(), grouping.collation())
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Group {
        key,
        states,
        size: record.as_bytes().len() as isize,
    })
}

fn optional(v: Option<Bson>) -> Bson {
    Bson::Array(v.into_iter().collect())
}

fn from_optional(v: &Bson) -> Result<Option<Bson>> {
    match v {
        Bson::Array(a) if a.len() <= 1 => Ok(a.first().cloned()),
        _ => Err(bad()),
    }
}

fn array(v: &Bson) -> Result<&Vec<Bson>> {
    match v {
        Bson::Array(a) => Ok(a),
        _ => Err(bad()),
    }
}

fn field<'d>(d: &'d Document, key: &str) -> Result<&'d Bson> {
    d.get(key).ok_or_else(bad)
}

fn count(d: &Document, key: &str) -> Result<u64> {
    match field(d, key)? {
        Bson::Int64(n) => u64::try_from(*n).map_err(|_| bad()),
        _ => Err(bad()),
    }
}

fn double(d: &Document, key: &str) -> Result<f64> {
    match field(d, key)? {
        Bson::Double(x) => Ok(*x),
        _ => Err(bad()),
    }
}

fn doubles(v: &Bson) -> Result<Vec<f64>> {
    array(v)?
        .iter()
        .map(|x| match x {
            Bson::Double(x) => Ok(*x),
            _ => Err(bad()),
        })
        .collect()
}

fn as_count(n: u64) -> Bson {
    Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX))
}

impl State {
    /// The state's partial form, as a run holds it.
    fn into_bson(self) -> Bson {
        match self {
            State::Sum(v) | State::Extreme(v) | State::One(v) => optional(v),
            State::Avg(v, n) => Bson::Document(bson::doc! { "n": as_count(n), "t": optional(v) }),
            State::Push(values) => Bson::Array(values),
            State::AddToSet(set) => Bson::Array(set.into_values()),
            State::Merged(d) => Bson::Document(d),
            State::Deviation {
                count,
                mean,
                squares,
            } => Bson::Document(bson::doc! { "n": as_count(count), "m": mean, "s": squares }),
            State::TakeN(kept) => {
                let n = as_count(kept.n() as u64);
                let values: Vec<Bson> = kept.values().cloned().collect();
                Bson::Document(bson::doc! { "n": n, "v": values })
            }
            State::Sorted { n, held } => {
                let held: Vec<Bson> = held
                    .into_iter()
                    .map(|(keys, arrival, v)| {
                        let keys: Vec<Bson> = keys
                            .into_iter()
                            .map(|k| Bson::try_from(k).unwrap_or(Bson::Null))
                            .collect();
                        Bson::Array(vec![Bson::Array(keys), as_count(arrival), v])
                    })
                    .collect();
                Bson::Document(bson::doc! { "n": as_count(n as u64), "h": held })
            }
            State::Numbers { p, values } => Bson::Document(bson::doc! { "p": p, "v": values }),
        }
    }

    /// A state back from its partial form.
    fn from_bson(
        accumulator: &Accumulator,
        v: Bson,
        collation: Option<&Collation>,
    ) -> Result<State> {
        let doc = |v: &Bson| match v {
            Bson::Document(d) => Ok(d.clone()),
            _ => Err(bad()),
        };
        Ok(match accumulator {
            Accumulator::Sum | Accumulator::Count => State::Sum(from_optional(&v)?),
            Accumulator::Min | Accumulator::Max => State::Extreme(from_optional(&v)?),
            Accumulator::First | Accumulator::Last => State::One(from_optional(&v)?),
            Accumulator::Avg => {
                let d = doc(&v)?;
                State::Avg(from_optional(field(&d, "t")?)?, count(&d, "n")?)
            }
            Accumulator::Push | Accumulator::ConcatArrays => State::Push(array(&v)?.clone()),
            Accumulator::AddToSet | Accumulator::SetUnion => {
                let mut set = ValueSet::default();
                for item in array(&v)? {
                    set.insert(item.clone(), collation);
                }
                State::AddToSet(set)
            }
            Accumulator::MergeObjects => State::Merged(doc(&v)?),
            Accumulator::StdDevPop | Accumulator::StdDevSamp => {
                let d = doc(&v)?;
                State::Deviation {
                    count: count(&d, "n")?,
                    mean: double(&d, "m")?,
                    squares: double(&d, "s")?,
                }
            }
            Accumulator::TakeN(pick, _) => {
                let d = doc(&v)?;
                let n = usize::try_from(count(&d, "n")?).map_err(|_| bad())?;
                let mut kept = Kept::new(*pick, n);
                for item in array(field(&d, "v")?)? {
                    kept.add(Some(item.clone()), collation);
                }
                State::TakeN(kept)
            }
            Accumulator::Sorted { .. } => sorted_from(&doc(&v)?)?,
            Accumulator::Percentile { .. } => {
                let d = doc(&v)?;
                State::Numbers {
                    p: doubles(field(&d, "p")?)?,
                    values: doubles(field(&d, "v")?)?,
                }
            }
        })
    }

    /// Combines `later`, the state of the same group over later input, into this one.
    fn merge(
        &mut self,
        later: State,
        accumulator: &Accumulator,
        collation: Option<&Collation>,
    ) -> Result<()> {
        match (self, later) {
            (State::Sum(total), State::Sum(other)) => {
                if let Some(v) = other {
                    add_to_total(total, v, collation);
                }
            }
            (State::Avg(total, n), State::Avg(other, m)) => {
                if let Some(v) = other {
                    add_to_total(total, v, collation);
                }
                *n += m;
            }
            (State::Extreme(best), State::Extreme(other)) => {
                let func = if matches!(accumulator, Accumulator::Min) {
                    Func::Min
                } else {
                    Func::Max
                };
                keep_extreme(best, func, other, collation);
            }
            (State::One(kept), State::One(other)) => {
                if kept.is_none() || matches!(accumulator, Accumulator::Last) {
                    *kept = other;
                }
            }
            (State::Push(values), State::Push(other)) => values.extend(other),
            (State::AddToSet(set), State::AddToSet(other)) => {
                for v in other.into_values() {
                    set.insert(v, collation);
                }
            }
            (State::Merged(merged), State::Merged(other)) => merged.extend(other),
            (
                State::Deviation {
                    count,
                    mean,
                    squares,
                },
                State::Deviation {
                    count: m,
                    mean: other_mean,
                    squares: other_squares,
                },
            ) => merge_deviation((count, mean, squares), (m, other_mean, other_squares)),
            (State::TakeN(kept), State::TakeN(other)) => {
                for v in other.into_values() {
                    kept.add(Some(v), collation);
                }
            }
            (State::Sorted { n, held }, State::Sorted { held: other, .. }) => {
                if let Accumulator::Sorted { sort, bottom, .. } = accumulator {
                    let order = SortOrder {
                        sort,
                        bottom: *bottom,
                        collation,
                    };
                    for (keys, arrival, v) in other {
                        keep_sorted(held, *n, &order, &(keys, arrival), Some(v));
                    }
                }
            }
            (State::Numbers { values, .. }, State::Numbers { values: other, .. }) => {
                values.extend(other);
            }
            _ => return Err(bad()),
        }
        Ok(())
    }
}

/// Chan et al.'s merge of two Welford triples (count, mean, sum of squared differences).
fn merge_deviation(into: (&mut u64, &mut f64, &mut f64), other: (u64, f64, f64)) {
    let (count, mean, squares) = into;
    let (m, other_mean, other_squares) = other;
    if m == 0 {
        return;
    }
    let n = *count + m;
    let delta = other_mean - *mean;
    *squares += other_squares + delta * delta * (*count as f64) * (m as f64) / n as f64;
    *mean += delta * m as f64 / n as f64;
    *count = n;
}

fn sorted_from(d: &Document) -> Result<State> {
    let n = usize::try_from(count(d, "n")?).map_err(|_| bad())?;
    let held = array(field(d, "h")?)?
        .iter()
        .map(|entry| match entry {
            Bson::Array(parts) if parts.len() == 3 => {
                let keys = array(&parts[0])?
                    .iter()
                    .map(|k| RawBson::try_from(k.clone()).map_err(|_| bad()))
                    .collect::<Result<Vec<_>>>()?;
                let Bson::Int64(arrival) = parts[1] else {
                    return Err(bad());
                };
                let arrival = u64::try_from(arrival).map_err(|_| bad())?;
                Ok((keys, arrival, parts[2].clone()))
            }
            _ => Err(bad()),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(State::Sorted { n, held })
}
