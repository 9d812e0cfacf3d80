//! Applying update operators to one document, as MongoDB does.
//!
//! Operations run in path order (see [`super::parse`]). Setting operations create what is
//! missing on the way: subdocuments for missing fields, `null`s to pad an array up to a numeric
//! index. They refuse to go through a scalar (`Cannot create field`). Removing operations on a
//! missing path do nothing. New fields are appended, existing ones keep their place. Arithmetic
//! keeps MongoDB's types: int32 stays int32 unless it overflows (then int64), int64 overflow
//! is an error, a double makes a double.
//!
//! A failing operation leaves the document partly changed: callers apply to a copy and keep it
//! only when every operation succeeded (S0.3: all modifiers or none).

use std::cmp::Ordering;

use bson::{Bson, Document, RawBson, RawDocumentBuf};

use super::parse::{
    BitOp, Op, Operators, PULL_FIELD, PullCondition, PushSort, Segment, UpdatePath, error,
};
use crate::code::ErrorCode;
use crate::error::UpdateError;
use crate::keys::Direction;
use crate::order::compare;
use crate::path::{Blocked, Parents};
use crate::query::Query;

/// What applying an update needs besides the document.
pub(crate) struct Context<'a> {
    /// The query that selected the document, for the positional `$`.
    pub(crate) query: &'a Query,
    /// The document as the query matched it.
    pub(crate) original: &'a bson::RawDocument,
    /// Whether the document is being inserted by an upsert (`$setOnInsert` applies).
    pub(crate) inserting: bool,
    /// The time `$currentDate` writes.
    pub(crate) now: bson::DateTime,
}

impl Operators {
    /// Applies every operation to `doc`; see the module documentation.
    pub(crate) fn apply(&self, doc: &mut Document, ctx: &Context<'_>) -> Result<(), UpdateError> {
        // The concrete paths each operation with array updates wrote, for conflicts found only
        // against the document (two `$[id]`s selecting one element).
        let mut written: Vec<(usize, Vec<String>)> = Vec::new();
        for (n, (operator, path, op)) in self.ops.iter().enumerate() {
            // MongoDB 5.0+ stores `$`-prefixed top-level fields only in new documents.
            if !ctx.inserting
                && let Some(Segment::Field(name)) = path.segments.first()
                && name.starts_with('$')
            {
                return Err(error(
                    path.path.as_str(),
                    operator,
                    format!("the top-level field `{name}` starts with `$`, which an update of a stored document cannot write"),
                )
                .with_code(ErrorCode::DOLLAR_PREFIXED_FIELD_NAME));
            }
            let step = Step {
                operator,
                path,
                op,
                ctx,
                filters: self,
                reached: std::cell::RefCell::new(Vec::new()),
            };
            if let Op::Rename(to) = op {
                step.rename(doc, to)?;
                continue;
            }
            let mut root = Bson::Document(std::mem::take(doc));
            let result = step.walk(&mut root, 0, &mut Vec::new());
            if let Bson::Document(d) = root {
                *doc = d;
            }
            result?;
            if path.has_positional() {
                for reached in step.reached.into_inner() {
                    if let Some((_, earlier)) = written
                        .iter()
                        .find(|(m, other)| *m != n && overlaps(other, &reached))
                    {
                        let at = if earlier.len() < reached.len() {
                            earlier
                        } else {
                            &reached
                        };
                        return Err(error(
                            path.path.as_str(),
                            operator,
                            format!("the update created a conflict at `{}`", at.join(".")),
                        )
                        .with_code(ErrorCode::CONFLICTING_UPDATE_OPERATORS));
                    }
                    written.push((n, reached));
                }
            }
        }
        Ok(())
    }
}

/// One operation being applied.
struct Step<'a> {
    operator: &'static str,
    path: &'a UpdatePath,
    op: &'a Op,
    ctx: &'a Context<'a>,
    filters: &'a Operators,
    /// The concrete paths the operation reached (array positions resolved).
    reached: std::cell::RefCell<Vec<Vec<String>>>,
}

/// Whether one concrete path equals the other or lies inside it.
fn overlaps(a: &[String], b: &[String]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// Where a value lives: a field of a document or an element of an array.
enum Slot<'a> {
    Field(&'a mut Document, &'a str),
    Element(&'a mut Vec<Bson>, usize),
}

impl Slot<'_> {
    fn get(&self) -> Option<&Bson> {
        match self {
            Slot::Field(d, name) => d.get(*name),
            Slot::Element(items, i) => items.get(*i),
        }
    }

    fn get_mut(&mut self) -> Option<&mut Bson> {
        match self {
            Slot::Field(d, name) => d.get_mut(*name),
            Slot::Element(items, i) => items.get_mut(*i),
        }
    }

    fn set(&mut self, value: Bson) {
        match self {
            Slot::Field(d, name) => {
                d.insert(*name, value);
            }
            Slot::Element(items, i) => {
                if *i >= items.len() {
                    items.resize(*i + 1, Bson::Null);
                }
                items[*i] = value;
            }
        }
    }

    /// Removes a field; an array element becomes `null` (arrays keep their positions).
    fn unset(&mut self) {
        match self {
            Slot::Field(d, name) => {
                d.remove(*name);
            }
            Slot::Element(items, i) => {
                if let Some(item) = items.get_mut(*i) {
                    *item = Bson::Null;
                }
            }
        }
    }
}

impl Step<'_> {
    /// An operation that cannot apply to this document: [`ErrorCode::BAD_VALUE`] unless the
    /// caller names another code.
    fn err(&self, reason: impl std::fmt::Display) -> UpdateError {
        error(self.path.path.as_str(), self.operator, reason).with_code(ErrorCode::BAD_VALUE)
    }

    /// Whether the operation writes a value where there is none.
    fn creates(&self) -> bool {
        match self.op {
            Op::Unset | Op::Pop { .. } | Op::Pull(_) | Op::PullAll(_) | Op::Rename(_) => false,
            Op::SetOnInsert(_) => self.ctx.inserting,
            _ => true,
        }
    }

    /// Applies the operation under `node`, which the first `at` segments reached (`concrete`
    /// holds them, positions resolved).
    fn walk(
        &self,
        node: &mut Bson,
        at: usize,
        concrete: &mut Vec<String>,
    ) -> Result<(), UpdateError> {
        let last = at + 1 == self.path.segments.len();
        match &self.path.segments[at] {
            Segment::Field(name) => self.field(node, name, at, last, concrete),
            Segment::Matched => {
                let index = self.matched_index()?;
                self.field(node, &index.to_string(), at, last, concrete)
            }
            segment @ (Segment::All | Segment::Filtered(_)) => {
                let Bson::Array(items) = node else {
                    return Err(self.err(format!(
                        "cannot apply array updates to the non-array element `{}`",
                        concrete.join(".")
                    )));
                };
                for i in 0..items.len() {
                    if let Segment::Filtered(id) = segment
                        && !self.element_passes(id, &self.as_matched(concrete, i, &items[i]))
                    {
                        continue;
                    }
                    concrete.push(i.to_string());
                    let result = if last {
                        self.reached.borrow_mut().push(concrete.clone());
                        self.leaf(Slot::Element(items, i))
                    } else {
                        self.walk(&mut items[i], at + 1, concrete)
                    };
                    concrete.pop();
                    result?;
                }
                Ok(())
            }
        }
    }

    fn field(
        &self,
        node: &mut Bson,
        name: &str,
        at: usize,
        last: bool,
        concrete: &mut Vec<String>,
    ) -> Result<(), UpdateError> {
        let next_is_array_update = matches!(
            self.path.segments.get(at + 1),
            Some(Segment::All | Segment::Filtered(_) | Segment::Matched)
        );
        concrete.push(name.to_owned());
        let result = match node {
            Bson::Document(d) => {
                if last {
                    self.reached.borrow_mut().push(concrete.clone());
                    self.leaf(Slot::Field(d, name))
                } else if d.contains_key(name) {
                    let child = d.get_mut(name).expect("checked above");
                    self.walk(child, at + 1, concrete)
                } else if self.creates() {
                    if next_is_array_update {
                        Err(self.err(format!(
                            "the path `{}` must exist in the document in order to apply array updates",
                            concrete.join(".")
                        )))
                    } else {
                        d.insert(name, Document::new());
                        let child = d.get_mut(name).expect("just inserted");
                        self.walk(child, at + 1, concrete)
                    }
                } else {
                    Ok(())
                }
            }
            Bson::Array(items) => match array_index(name) {
                None if self.creates() => Err(self
                    .err(format!(
                        "cannot create field `{name}` in the array at `{}`",
                        parent(concrete)
                    ))
                    .with_code(ErrorCode::PATH_NOT_VIABLE)),
                Some(i) if i >= items.len() && self.creates() && !within_padding(items, i) => {
                    Err(self
                        .err(format!(
                            "cannot backfill the array at `{}` past position {i}: an update adds at most {MAX_PADDING} elements",
                            parent(concrete)
                        ))
                        .with_code(ErrorCode::CANNOT_BACKFILL_ARRAY))
                }
                Some(i) if last => {
                    self.reached.borrow_mut().push(concrete.clone());
                    self.leaf(Slot::Element(items, i))
                }
                Some(i) if i < items.len() => self.walk(&mut items[i], at + 1, concrete),
                Some(i) if self.creates() => {
                    items.resize(i, Bson::Null);
                    items.push(Bson::Document(Document::new()));
                    self.walk(&mut items[i], at + 1, concrete)
                }
                // Nothing to remove.
                None | Some(_) => Ok(()),
            },
            other if self.creates() => Err(self
                .err(format!(
                    "cannot create field `{name}` in element `{}` holding {}",
                    parent(concrete),
                    other
                ))
                .with_code(ErrorCode::PATH_NOT_VIABLE)),
            _ => Ok(()),
        };
        concrete.pop();
        result
    }

    /// The array position the query's match recorded, for `$` (see `query::matcher`): the
    /// same whichever array the path names, as in MongoDB.
    fn matched_index(&self) -> Result<usize, UpdateError> {
        self.ctx
            .query
            .matched_position(self.ctx.original)
            .ok_or_else(|| {
                self.err("the positional operator did not find the match needed from the query")
                    .with_code(ErrorCode::BAD_VALUE)
            })
    }

    /// Element `i` of the array at `concrete` as the document held it before the update
    /// (`current` when it did not exist): every array filter of an update judges the elements
    /// before any operation changes them, as MongoDB judges them all in one pass.
    fn as_matched(&self, concrete: &[String], i: usize, current: &Bson) -> Bson {
        let mut at = bson::RawBsonRef::Document(self.ctx.original);
        for segment in concrete
            .iter()
            .map(String::as_str)
            .chain([i.to_string().as_str()])
        {
            let next = match at {
                bson::RawBsonRef::Document(d) => d.get(segment).ok().flatten(),
                bson::RawBsonRef::Array(a) => {
                    segment.parse().ok().and_then(|n| a.get(n).ok().flatten())
                }
                _ => None,
            };
            let Some(next) = next else {
                return current.clone();
            };
            at = next;
        }
        Bson::try_from(at).unwrap_or_else(|_| current.clone())
    }

    /// Whether an array element passes the array filter `id`.
    fn element_passes(&self, id: &str, element: &Bson) -> bool {
        let Some(filter) = self.filters.array_filters.get(id) else {
            return false;
        };
        let mut probe = Document::new();
        probe.insert(id, element.clone());
        RawDocumentBuf::try_from(&probe).is_ok_and(|raw| filter.matches(&raw))
    }

    /// Applies the operation to the value in `slot`.
    fn leaf(&self, mut slot: Slot<'_>) -> Result<(), UpdateError> {
        let current = slot.get();
        match self.op {
            Op::Set(_)
            | Op::Inc(_)
            | Op::Mul(_)
            | Op::Min(_)
            | Op::Max(_)
            | Op::CurrentDate { .. } => {
                if let Some(value) = scalar(self.op, current, self.ctx.now)
                    .map_err(|(code, reason)| self.err(reason).with_code(code))?
                {
                    slot.set(value);
                }
            }
            Op::SetOnInsert(v) => {
                if self.ctx.inserting {
                    slot.set(v.clone());
                }
            }
            Op::Unset => slot.unset(),
            Op::Push {
                values,
                position,
                sort,
                slice,
                ..
            } => {
                let items = self.array_in(&mut slot)?;
                let len = items.len() as i64;
                let at = match position {
                    None => len,
                    Some(p) if *p < 0 => (len + p).max(0),
                    Some(p) => (*p).min(len),
                };
                let at = usize::try_from(at).unwrap_or(0);
                items.splice(at..at, values.iter().cloned());
                if let Some(sort) = sort {
                    sort_elements(items, sort);
                }
                if let Some(n) = slice {
                    slice_elements(items, *n);
                }
            }
            Op::AddToSet(values) => {
                let items = self.array_in(&mut slot)?;
                for v in values {
                    if !items.iter().any(|i| compare_bson(i, v) == Ordering::Equal) {
                        items.push(v.clone());
                    }
                }
            }
            Op::Pop { first } => match slot.get_mut() {
                None => {}
                Some(Bson::Array(items)) if *first && !items.is_empty() => {
                    items.remove(0);
                }
                Some(Bson::Array(items)) => {
                    items.pop();
                }
                Some(other) => {
                    return Err(self
                        .err(format!("cannot pop from the non-array value {other}"))
                        .with_code(ErrorCode::TYPE_MISMATCH));
                }
            },
            Op::Pull(condition) => match slot.get_mut() {
                None => {}
                Some(Bson::Array(items)) => items.retain(|i| !pull_matches(condition, i)),
                Some(other) => {
                    return Err(self.err(format!("cannot pull from the non-array value {other}")));
                }
            },
            Op::PullAll(values) => match slot.get_mut() {
                None => {}
                Some(Bson::Array(items)) => {
                    items.retain(|i| !values.iter().any(|v| compare_bson(i, v) == Ordering::Equal));
                }
                Some(other) => {
                    return Err(self.err(format!("cannot pull from the non-array value {other}")));
                }
            },
            Op::Bit(steps) => {
                let mut value = current.cloned().unwrap_or(Bson::Int32(0));
                for (op, operand) in steps {
                    value = bitwise(&value, *op, operand).map_err(|reason| self.err(reason))?;
                }
                slot.set(value);
            }
            Op::Rename(_) => unreachable!("renames are applied by `rename`"),
        }
        Ok(())
    }

    /// The array a `$push` or `$addToSet` extends, in place: the current one, or a new one.
    fn array_in<'s>(&self, slot: &'s mut Slot<'_>) -> Result<&'s mut Vec<Bson>, UpdateError> {
        if slot.get().is_none() {
            slot.set(Bson::Array(Vec::new()));
        }
        match slot.get_mut() {
            Some(Bson::Array(items)) => Ok(items),
            Some(other) => Err(self.err(format!(
                "the field must be an array but holds {}",
                type_name(other)
            ))),
            None => Err(self.err("the array could not be created")),
        }
    }

    /// `$rename`: removes the value at the source path and sets it at `to`. Neither path may
    /// go through an array.
    /// (Parsing refused positional segments in either.)
    fn rename(&self, doc: &mut Document, to: &UpdatePath) -> Result<(), UpdateError> {
        let value = match self.path.path.remove(doc) {
            Ok(Some(value)) => value,
            // Nothing to move: a missing source, or one below a value that holds no fields.
            Ok(None) | Err(Blocked::Missing | Blocked::Value(_)) => return Ok(()),
            Err(Blocked::Array) => {
                return Err(self.err("$rename cannot move a value out of an array"));
            }
        };
        to.path.set(doc, value, Parents::Create).map_err(|blocked| {
            let reason = match blocked {
                Blocked::Array => "$rename cannot move a value into an array".to_owned(),
                Blocked::Value(other) => format!(
                    "cannot create field `{}` in element holding {other}",
                    to.path.segments().last().map_or("", String::as_str)
                ),
                Blocked::Missing => unreachable!("missing parents are created"),
            };
            error(to.path.as_str(), self.operator, reason)
        })
    }
}

/// The value an operation that computes one value writes, given the value it finds
/// (`None`: missing), or `None` when it leaves the field as it is: `$set`, `$inc`, `$mul`,
/// `$min`, `$max` and `$currentDate`. Any other operation leaves it as it is here; the
/// decoded path ([`Step::leaf`]) and the in-place path (`super::in_place`) route only these
/// operations through it, so both compute the same values.
pub(super) fn scalar(
    op: &Op,
    current: Option<&Bson>,
    now: bson::DateTime,
) -> Result<Option<Bson>, (ErrorCode, String)> {
    Ok(match op {
        Op::Set(v) => Some(v.clone()),
        Op::Inc(n) => Some(match current {
            None => n.clone(),
            Some(c) => arithmetic(c, n, Arith::Add)?,
        }),
        Op::Mul(n) => Some(match current {
            None => zero_like(n),
            Some(c) => arithmetic(c, n, Arith::Mul)?,
        }),
        Op::Min(v) | Op::Max(v) => {
            let replace = match current {
                None => true,
                Some(c) => {
                    let ord = compare_bson(v, c);
                    if matches!(op, Op::Min(_)) {
                        ord == Ordering::Less
                    } else {
                        ord == Ordering::Greater
                    }
                }
            };
            replace.then(|| v.clone())
        }
        Op::CurrentDate { timestamp } => Some(if *timestamp {
            let millis = now.timestamp_millis();
            Bson::Timestamp(bson::Timestamp {
                time: u32::try_from(millis / 1000).unwrap_or(u32::MAX),
                increment: 1,
            })
        } else {
            Bson::DateTime(now)
        }),
        _ => None,
    })
}

fn parent(concrete: &[String]) -> String {
    concrete[..concrete.len().saturating_sub(1)].join(".")
}

/// MongoDB's `kMaxPaddingAllowed`: an update that sets a position past an array's end may add
/// at most this many elements (the padding nulls and the new one).
pub(crate) const MAX_PADDING: usize = 1_500_000;

/// Whether setting position `index` of `items` stays within [`MAX_PADDING`].
fn within_padding(items: &[Bson], index: usize) -> bool {
    index - items.len() < MAX_PADDING
}

fn array_index(segment: &str) -> Option<usize> {
    if segment.is_empty() || !segment.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    segment.parse().ok()
}

/// MongoDB's comparison of two values.
pub(crate) fn compare_bson(a: &Bson, b: &Bson) -> Ordering {
    match (RawBson::try_from(a.clone()), RawBson::try_from(b.clone())) {
        (Ok(a), Ok(b)) => compare(a.as_raw_bson_ref(), b.as_raw_bson_ref()),
        _ => Ordering::Equal,
    }
}

fn type_name(v: &Bson) -> &'static str {
    match v {
        Bson::Double(_) => "a double",
        Bson::String(_) => "a string",
        Bson::Document(_) => "a document",
        Bson::Array(_) => "an array",
        Bson::Boolean(_) => "a bool",
        Bson::Null => "null",
        Bson::Int32(_) => "an int",
        Bson::Int64(_) => "a long",
        Bson::Decimal128(_) => "a decimal",
        Bson::ObjectId(_) => "an objectId",
        Bson::DateTime(_) => "a date",
        _ => "a value of another type",
    }
}

#[derive(Clone, Copy)]
enum Arith {
    Add,
    Mul,
}

/// `current` combined with `operand`, with MongoDB's result types; refused with
/// `TypeMismatch` for a non-numeric value, `BadValue` for an overflow (`arithmetic_node.cpp`).
fn arithmetic(current: &Bson, operand: &Bson, op: Arith) -> Result<Bson, (ErrorCode, String)> {
    let verb = match op {
        Arith::Add => "$inc",
        Arith::Mul => "$mul",
    };
    let int = |v: &Bson| match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        _ => None,
    };
    let float = |v: &Bson| match v {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    };
    if float(current).is_none() && !matches!(current, Bson::Decimal128(_)) {
        return Err(non_numeric(verb, current));
    }
    match (current, operand) {
        (Bson::Decimal128(_), _) | (_, Bson::Decimal128(_)) => {
            super::decimal::combine(current, operand, matches!(op, Arith::Mul))
                .ok_or_else(|| non_numeric(verb, current))
        }
        (Bson::Double(_), _) | (_, Bson::Double(_)) => match (float(current), float(operand)) {
            (Some(a), Some(b)) => Ok(Bson::Double(match op {
                Arith::Add => a + b,
                Arith::Mul => a * b,
            })),
            _ => Err(non_numeric(verb, current)),
        },
        _ => match (int(current), int(operand)) {
            (Some(a), Some(b)) => {
                let result = match op {
                    Arith::Add => a.checked_add(b),
                    Arith::Mul => a.checked_mul(b),
                }
                .ok_or_else(|| {
                    let reason = format!("{verb} overflows the 64-bit integer {current}");
                    (ErrorCode::BAD_VALUE, reason)
                })?;
                let both_int32 =
                    matches!(current, Bson::Int32(_)) && matches!(operand, Bson::Int32(_));
                Ok(match i32::try_from(result) {
                    Ok(small) if both_int32 => Bson::Int32(small),
                    _ => Bson::Int64(result),
                })
            }
            _ => Err(non_numeric(verb, current)),
        },
    }
}

fn non_numeric(verb: &str, current: &Bson) -> (ErrorCode, String) {
    let reason = format!(
        "cannot apply {verb} to {}, a non-numeric value",
        type_name(current)
    );
    (ErrorCode::TYPE_MISMATCH, reason)
}

/// Zero of the multiplier's type, what `$mul` writes into a missing field.
fn zero_like(n: &Bson) -> Bson {
    match n {
        Bson::Int64(_) => Bson::Int64(0),
        Bson::Double(_) => Bson::Double(0.0),
        Bson::Decimal128(_) => {
            Bson::Decimal128("0".parse().unwrap_or(bson::Decimal128::from_bytes([0; 16])))
        }
        _ => Bson::Int32(0),
    }
}

/// `$bit` met a value that is neither an int nor a long; the value's type name.
#[derive(Debug, thiserror::Error)]
#[error("cannot apply $bit to {0}, not an int or a long")]
struct NotAnInteger(&'static str);

fn bitwise(value: &Bson, op: BitOp, operand: &Bson) -> Result<Bson, NotAnInteger> {
    let apply = |a: i64, b: i64| match op {
        BitOp::And => a & b,
        BitOp::Or => a | b,
        BitOp::Xor => a ^ b,
    };
    match (value, operand) {
        (Bson::Int32(a), Bson::Int32(b)) => {
            Ok(Bson::Int32(apply(i64::from(*a), i64::from(*b)) as i32))
        }
        (Bson::Int32(a), Bson::Int64(b)) => Ok(Bson::Int64(apply(i64::from(*a), *b))),
        (Bson::Int64(a), Bson::Int32(b)) => Ok(Bson::Int64(apply(*a, i64::from(*b)))),
        (Bson::Int64(a), Bson::Int64(b)) => Ok(Bson::Int64(apply(*a, *b))),
        (other, _) => Err(NotAnInteger(type_name(other))),
    }
}

fn pull_matches(condition: &PullCondition, element: &Bson) -> bool {
    match condition {
        PullCondition::Equal(v) => compare_bson(element, v) == Ordering::Equal,
        PullCondition::Operators(filter) => {
            let mut probe = Document::new();
            probe.insert(PULL_FIELD, element.clone());
            RawDocumentBuf::try_from(&probe).is_ok_and(|raw| filter.matches(&raw))
        }
        PullCondition::Query(filter) => match element {
            Bson::Document(d) => RawDocumentBuf::try_from(d).is_ok_and(|raw| filter.matches(&raw)),
            _ => false,
        },
    }
}

fn sort_elements(items: &mut [Bson], sort: &PushSort) {
    match sort {
        PushSort::Elements(direction) => items.sort_by(|a, b| {
            let ord = compare_bson(a, b);
            if *direction == Direction::Descending {
                ord.reverse()
            } else {
                ord
            }
        }),
        PushSort::Fields(spec) => {
            // Non-document elements sort as documents without the fields.
            let raw = |v: &Bson| match v {
                Bson::Document(d) => RawDocumentBuf::try_from(d).unwrap_or_default(),
                _ => RawDocumentBuf::new(),
            };
            let mut keyed: Vec<(RawDocumentBuf, Bson)> =
                items.iter().map(|v| (raw(v), v.clone())).collect();
            keyed.sort_by(|a, b| spec.compare(&a.0, &b.0));
            for (slot, (_, v)) in items.iter_mut().zip(keyed) {
                *slot = v;
            }
        }
    }
}

/// `$slice`: the first `n` elements, the last `-n` when negative.
fn slice_elements(items: &mut Vec<Bson>, n: i64) {
    let kept = sliced(items.len(), n);
    items.truncate(kept.end);
    items.drain(..kept.start);
}

/// The positions `$slice` by `n` keeps of an array of `len` elements.
pub(super) fn sliced(len: usize, n: i64) -> std::ops::Range<usize> {
    let keep = usize::try_from(n.unsigned_abs())
        .unwrap_or(usize::MAX)
        .min(len);
    if n >= 0 { 0..keep } else { len - keep..len }
}
