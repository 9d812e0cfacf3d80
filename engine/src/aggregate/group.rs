//! `$group`: documents into groups by the `_id` expression, each output field a running
//! accumulator. A group holds its key and one state per field, never the documents: a `$sum` is
//! a number, `$first` one value; only `$push` and `$addToSet` hold values, as their results do.
//! What groups hold is counted as it grows, and past [`SORT_MEMORY_LIMIT`] the stage fails with
//! [`Error::AggregateMemoryExceeded`] instead of growing on.

use bson::{Bson, Document};

use crate::collation::Collation;
use crate::error::{Error, Result};
use crate::expr::{Env, Expr, Func, accumulate_values, eval_in};
use crate::query::SORT_MEMORY_LIMIT;
use crate::value_set::{ValueIndex, ValueSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

impl State {
    fn new(accumulator: Accumulator) -> State {
        match accumulator {
            Accumulator::Sum | Accumulator::Count => State::Sum(None),
            Accumulator::Avg => State::Avg(None, 0),
            Accumulator::Min | Accumulator::Max => State::Extreme(None),
            Accumulator::First | Accumulator::Last => State::One(None),
            Accumulator::Push => State::Push(Vec::new()),
            Accumulator::AddToSet => State::AddToSet(ValueSet::default()),
        }
    }

    /// Takes one document's value; returns the bytes the state grew by (for the bound).
    fn add(
        &mut self,
        accumulator: Accumulator,
        value: Option<Bson>,
        first_time: bool,
        collation: Option<&Collation>,
    ) -> usize {
        match self {
            State::Sum(total) => {
                // `$sum` ignores what is not a number (an array argument included).
                if let Some(v) = value.filter(is_number) {
                    *total = Some(match total.take() {
                        None => v,
                        Some(t) => sum(vec![t, v], collation),
                    });
                }
                0
            }
            State::Avg(total, count) => {
                if let Some(v) = value.filter(is_number) {
                    *count += 1;
                    *total = Some(match total.take() {
                        None => v,
                        Some(t) => sum(vec![t, v], collation),
                    });
                }
                0
            }
            State::Extreme(best) => {
                let Some(v) = value.filter(|v| !matches!(v, Bson::Null | Bson::Undefined)) else {
                    return 0;
                };
                let func = if accumulator == Accumulator::Min {
                    Func::Min
                } else {
                    Func::Max
                };
                *best = Some(match best.take() {
                    None => v,
                    Some(b) => accumulate_values(func, vec![b, v], collation).unwrap_or(Bson::Null),
                });
                0
            }
            State::One(kept) => {
                if first_time || accumulator == Accumulator::Last {
                    *kept = Some(value.unwrap_or(Bson::Null));
                }
                0
            }
            State::Push(values) => value.map_or(0, |v| {
                let size = approximate_size(&v);
                values.push(v);
                size
            }),
            State::AddToSet(set) => value.map_or(0, |v| {
                let size = approximate_size(&v);
                if set.insert(v, collation) { size } else { 0 }
            }),
        }
    }

    fn finish(self) -> Bson {
        match self {
            State::Sum(total) => total.unwrap_or(Bson::Int32(0)),
            State::Avg(None, _) | State::Avg(_, 0) => Bson::Null,
            State::Avg(Some(total), count) => average(total, count),
            State::Extreme(best) | State::One(best) => best.unwrap_or(Bson::Null),
            State::Push(values) => Bson::Array(values),
            State::AddToSet(set) => Bson::Array(set.into_values()),
        }
    }
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
fn approximate_size(v: &Bson) -> usize {
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

/// One group: its key and its fields' states.
struct Group {
    key: Bson,
    states: Vec<State>,
}

/// Groups `docs` and returns one document per group, in the order groups were first seen.
pub(super) fn group(
    docs: impl Iterator<Item = Result<Document>>,
    id: &Expr,
    fields: &[(String, Accumulator, Expr)],
    collation: Option<&Collation>,
) -> Result<Vec<Document>> {
    let mut groups: Vec<Group> = Vec::new();
    let mut index = ValueIndex::default();
    let mut held = 0usize;
    for doc in docs {
        let doc = doc?;
        let env = Env::collated(&doc, collation);
        let key = eval_in(id, &env)?.unwrap_or(Bson::Null);
        let (position, new) = index.position(&key, groups.len(), collation);
        if new {
            held += approximate_size(&key) + 64 * fields.len();
            groups.push(Group {
                key,
                states: fields.iter().map(|(_, a, _)| State::new(*a)).collect(),
            });
        }
        let group = &mut groups[position];
        for ((_, accumulator, expr), state) in fields.iter().zip(&mut group.states) {
            let value = eval_in(expr, &env)?;
            held += state.add(*accumulator, value, new, collation);
        }
        if held > SORT_MEMORY_LIMIT {
            return Err(Error::AggregateMemoryExceeded {
                stage: "$group".to_owned(),
                limit: SORT_MEMORY_LIMIT,
            });
        }
    }
    Ok(groups
        .into_iter()
        .map(|g| {
            let mut d = Document::new();
            d.insert("_id", g.key);
            for ((field, _, _), state) in fields.iter().zip(g.states) {
                d.insert(field.clone(), state.finish());
            }
            d
        })
        .collect())
}
