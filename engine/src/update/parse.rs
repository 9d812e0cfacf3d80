//! Parsing update documents: operators (`{$set: {...}, $inc: {...}}`) or a replacement.
//!
//! Refused with [`UpdateError`] naming the path and the operator, before anything is applied:
//! an unknown operator, an operator whose argument is not a document, a malformed argument
//! (`$inc` by a string, `$push` modifiers without `$each`, ...), an empty or `$`-prefixed path
//! segment, two operations on conflicting paths (one equal to or a prefix of the other),
//! `$rename` into or out of an array element, an array filter that no path uses or a path
//! identifier without an array filter, and a document mixing operators and plain fields.
//!
//! A parsed [`Update`] can be applied any number of times (`WriteTxn::update_one_parsed`,
//! `update_many_parsed`; their options may not carry array filters, `write::parsed_alone`),
//! and a `$push`'s values keep the bytes `in_place` encoded for them on first use
//! (`EncodedValues`), so a hot loop parses and encodes once.

use crate::code::ErrorCode;
use crate::nesting::{self, MAX_INPUT_DEPTH};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use bson::{Bson, Document};

use super::pipeline::Pipeline;
use crate::error::{FilterError, UpdateError};
use crate::expr::Scope;
use crate::keys::Direction;
use crate::path::Path;
use crate::query::{Filter, Sort};

/// A malformed update: [`ErrorCode::FAILED_TO_PARSE`] unless the caller names another code.
pub(crate) fn error(path: &str, operator: &str, reason: impl fmt::Display) -> UpdateError {
    UpdateError {
        path: path.to_owned(),
        operator: operator.to_owned(),
        reason: reason.to_string(),
        code: ErrorCode::FAILED_TO_PARSE,
    }
}

/// One segment of an update path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    Field(String),
    /// `$`: the array element the query matched.
    Matched,
    /// `$[]`: every element.
    All,
    /// `$[id]`: the elements the array filter `id` matches.
    Filtered(String),
}

/// A dotted update path: the path, and what each of its segments is to an update (a field, or
/// a positional operator).
#[derive(Debug, Clone)]
pub(crate) struct UpdatePath {
    pub(crate) path: Path,
    pub(crate) segments: Vec<Segment>,
}

impl UpdatePath {
    fn parse(dotted: &str, operator: &str) -> Result<UpdatePath, UpdateError> {
        let path = Path::new(dotted);
        let mut segments = Vec::new();
        for part in path.segments() {
            let segment = match part.as_str() {
                "" => {
                    return Err(error(dotted, operator, "the path has an empty segment")
                        .with_code(ErrorCode::EMPTY_FIELD_NAME));
                }
                "$" => Segment::Matched,
                "$[]" => Segment::All,
                _ if part.starts_with("$[") && part.ends_with(']') => {
                    let id = &part[2..part.len() - 1];
                    let valid = id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                        && id.chars().all(|c| c.is_ascii_alphanumeric());
                    if !valid {
                        return Err(error(
                            dotted,
                            operator,
                            format!(
                                "array filter identifier `{id}` must be a lowercase letter followed by letters and digits"
                            ),
                        )
                        .with_code(ErrorCode::BAD_VALUE));
                    }
                    Segment::Filtered(id.to_owned())
                }
                // `$[i.j]` split at its dot: no field can be created under it.
                _ if part.starts_with("$[") => {
                    return Err(
                        error(dotted, operator, format!("cannot create field `{part}`"))
                            .with_code(ErrorCode::PATH_NOT_VIABLE),
                    );
                }
                // Other `$`-prefixed names are field names (MongoDB 5.0+); a top-level one is
                // refused when it would change a stored document (see `apply`).
                _ => Segment::Field(part.to_owned()),
            };
            segments.push(segment);
        }
        if segments.iter().filter(|s| **s == Segment::Matched).count() > 1 {
            return Err(error(
                dotted,
                operator,
                "too many positional (`$`) elements in the path",
            )
            .with_code(ErrorCode::BAD_VALUE));
        }
        if matches!(
            segments.first(),
            Some(Segment::Matched | Segment::All | Segment::Filtered(_))
        ) {
            return Err(error(
                dotted,
                operator,
                "a path cannot start with a positional operator",
            ));
        }
        Ok(UpdatePath { path, segments })
    }

    pub(crate) fn has_positional(&self) -> bool {
        self.segments
            .iter()
            .any(|s| !matches!(s, Segment::Field(_)))
    }

    /// Whether one path equals the other or lies inside it, or both reach one array where
    /// one names elements through `$[]` or `$[id]` and the other by a field, a position or
    /// `$` (MongoDB cannot hold both under one node of its update tree). Paths that differ
    /// only in their array filters may still meet on one element: that is found when applying.
    fn conflicts_with(&self, other: &UpdatePath) -> bool {
        let array_update = |s: &Segment| matches!(s, Segment::All | Segment::Filtered(_));
        for (a, b) in self.segments.iter().zip(&other.segments) {
            if a != b {
                return array_update(a) != array_update(b);
            }
        }
        true
    }
}

/// Values an operation writes, encoded once by the in-place path (see `in_place`) and kept
/// with the parsed update, so that an update applied to many documents encodes them once: for
/// elements at one depth (the depth the operation's path fixes), each value's type and bytes,
/// or `None` where that path declined them.
#[derive(Debug, Clone, Default)]
pub(crate) struct EncodedValues(pub(crate) OnceLock<(usize, Option<Vec<EncodedValue>>)>);

/// A value's BSON type and bytes.
pub(crate) type EncodedValue = (u8, Vec<u8>);

/// How `$push` orders the array after inserting.
#[derive(Debug, Clone)]
pub(crate) enum PushSort {
    /// Whole elements, by MongoDB's order.
    Elements(Direction),
    /// Elements by fields, as a find sorts documents.
    Fields(Sort),
}

/// The elements `$pull` removes.
#[derive(Debug, Clone)]
pub(crate) enum PullCondition {
    /// Elements equal to a value (numbers by value).
    Equal(Bson),
    /// Elements satisfying operators (`{$gte: 6}`, a regex), matched as a field holding them.
    Operators(Filter),
    /// Subdocument elements matching a query (`{score: 8, item: "B"}`).
    Query(Filter),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitOp {
    And,
    Or,
    Xor,
}

/// One operation on one path.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Set(Bson),
    Unset,
    Inc(Bson),
    Mul(Bson),
    Min(Bson),
    Max(Bson),
    /// Moves the value to another path.
    Rename(UpdatePath),
    SetOnInsert(Bson),
    /// The current time, as a date or (when `true`) a timestamp.
    CurrentDate {
        timestamp: bool,
    },
    Push {
        values: Vec<Bson>,
        position: Option<i64>,
        sort: Option<PushSort>,
        slice: Option<i64>,
        /// The values as bytes, once the in-place path has encoded them.
        encoded: EncodedValues,
    },
    AddToSet(Vec<Bson>),
    /// Removes the first element when `true`, the last otherwise.
    Pop {
        first: bool,
    },
    Pull(PullCondition),
    PullAll(Vec<Bson>),
    Bit(Vec<(BitOp, Bson)>),
}

/// A parsed update document.
#[derive(Debug, Clone)]
pub enum Update {
    /// Update operators, applied in path order.
    Operators(Operators),
    /// A whole new document (keeping the old `_id`).
    Replacement(Document),
    /// An aggregation pipeline computing the new document from the old.
    Pipeline(Pipeline),
}

/// What an update call takes: an update document of operators, or a pipeline.
#[derive(Debug, Clone)]
pub enum UpdateModifications {
    Document(Document),
    Pipeline(Vec<Document>),
}

impl From<Document> for UpdateModifications {
    fn from(d: Document) -> Self {
        UpdateModifications::Document(d)
    }
}

impl From<&Document> for UpdateModifications {
    fn from(d: &Document) -> Self {
        UpdateModifications::Document(d.clone())
    }
}

impl From<Vec<Document>> for UpdateModifications {
    fn from(stages: Vec<Document>) -> Self {
        UpdateModifications::Pipeline(stages)
    }
}

impl From<&[Document]> for UpdateModifications {
    fn from(stages: &[Document]) -> Self {
        UpdateModifications::Pipeline(stages.to_vec())
    }
}

impl From<&Vec<Document>> for UpdateModifications {
    fn from(stages: &Vec<Document>) -> Self {
        UpdateModifications::Pipeline(stages.clone())
    }
}

/// Update operators and their array filters.
#[derive(Debug, Clone)]
pub struct Operators {
    /// (operator name, path, operation), sorted by path as MongoDB applies them.
    pub(crate) ops: Vec<(&'static str, UpdatePath, Op)>,
    pub(crate) array_filters: BTreeMap<String, Filter>,
}

impl Update {
    /// Whether this update can change the entries of an index with `spec`: a replacement or a
    /// pipeline can change anything; operators change only what lies on or under their paths
    /// (a rename's target included). A path is known up to its first array position or
    /// positional segment (`a.0.b` and `a.$.b` may change anything under `a`); a partial
    /// index's filter may read any field, so it is always reached.
    pub(crate) fn may_change(&self, spec: &crate::IndexSpec) -> bool {
        let Update::Operators(ops) = self else {
            return true;
        };
        if spec.partial_filter().is_some() {
            return true;
        }
        let known = |segments: &[String]| -> usize {
            segments
                .iter()
                .position(|s| s.starts_with('$') || s.bytes().all(|b| b.is_ascii_digit()))
                .unwrap_or(segments.len())
        };
        let meet = |a: &[String], b: &[String]| {
            let (a, b) = (&a[..known(a)], &b[..known(b)]);
            a.iter().zip(b).all(|(x, y)| x == y)
        };
        spec.keys().iter().any(|(key, _)| {
            ops.ops.iter().any(|(_, path, op)| {
                meet(path.path.segments(), key.segments())
                    || matches!(op, Op::Rename(to) if meet(to.path.segments(), key.segments()))
            })
        })
    }

    /// Parses an update document (operators or a replacement) with its array filters.
    pub fn parse(update: &Document, array_filters: &[Document]) -> Result<Update, UpdateError> {
        if nesting::exceeds(update, MAX_INPUT_DEPTH)
            || nesting::any_exceeds(array_filters, MAX_INPUT_DEPTH)
        {
            return Err(
                error("", "update", nesting::too_deep_reason()).with_code(ErrorCode::OVERFLOW)
            );
        }
        let operators = update.keys().filter(|k| k.starts_with('$')).count();
        if operators == 0 {
            if !array_filters.is_empty() {
                return Err(error(
                    "",
                    "arrayFilters",
                    "a replacement document takes no array filters",
                ));
            }
            return Ok(Update::Replacement(update.clone()));
        }
        if operators != update.len() {
            return Err(error(
                "",
                "update",
                "an update document mixes operators and plain fields",
            ));
        }
        Operators::parse(update, array_filters).map(Update::Operators)
    }

    /// Parses the update of an update call: operators (not a replacement) or a pipeline,
    /// whose expressions may name the variables of `scope`.
    pub fn parse_modifications(
        update: &UpdateModifications,
        array_filters: &[Document],
        scope: &Scope,
    ) -> Result<Update, UpdateError> {
        match update {
            UpdateModifications::Document(d) => {
                Update::parse_operators(d, array_filters).map(Update::Operators)
            }
            UpdateModifications::Pipeline(stages) => {
                if !array_filters.is_empty() {
                    return Err(error(
                        "",
                        "arrayFilters",
                        "a pipeline update takes no array filters",
                    ));
                }
                Pipeline::parse(stages, scope).map(Update::Pipeline)
            }
        }
    }

    /// Parses an update that must be operators (an update, not a replacement).
    pub fn parse_operators(
        update: &Document,
        array_filters: &[Document],
    ) -> Result<Operators, UpdateError> {
        match Update::parse(update, array_filters)? {
            Update::Operators(ops) => Ok(ops),
            Update::Replacement(_) if update.is_empty() => Err(error(
                "",
                "update",
                "an update document needs at least one operator",
            )),
            Update::Replacement(_) | Update::Pipeline(_) => Err(error(
                "",
                "update",
                "an update document must hold only operators (`$set`, `$inc`, ...); use replace for a whole document",
            )),
        }
    }
}

impl Operators {
    fn parse(update: &Document, array_filters: &[Document]) -> Result<Operators, UpdateError> {
        let mut ops = Vec::new();
        for (name, argument) in update {
            let operator = operator_name(name)?;
            let Bson::Document(fields) = argument else {
                return Err(error("", name, "the argument must be a document of paths"));
            };
            for (path, value) in fields {
                let parsed = UpdatePath::parse(path, name)?;
                let op = parse_op(operator, path, value)?;
                if let Op::Rename(to) = &op {
                    if parsed.has_positional() || to.has_positional() {
                        return Err(error(path, name, "$rename cannot use positional paths")
                            .with_code(ErrorCode::BAD_VALUE));
                    }
                    if parsed.conflicts_with(to) {
                        return Err(error(
                            path,
                            name,
                            format!("cannot rename `{path}` to `{}`", to.path.as_str()),
                        )
                        .with_code(ErrorCode::BAD_VALUE));
                    }
                }
                ops.push((operator, parsed, op));
            }
        }
        check_conflicts(&ops)?;
        ops.sort_by(|a, b| compare_paths(&a.1, &b.1));
        let array_filters = parse_array_filters(array_filters, &ops)?;
        Ok(Operators { ops, array_filters })
    }
}

fn operator_name(name: &str) -> Result<&'static str, UpdateError> {
    const KNOWN: [&str; 15] = [
        "$set",
        "$unset",
        "$inc",
        "$mul",
        "$min",
        "$max",
        "$rename",
        "$setOnInsert",
        "$currentDate",
        "$push",
        "$addToSet",
        "$pop",
        "$pull",
        "$pullAll",
        "$bit",
    ];
    KNOWN
        .iter()
        .find(|k| **k == name)
        .copied()
        .ok_or_else(|| error("", name, "unknown update operator"))
}

fn is_number(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

fn parse_op(operator: &str, path: &str, value: &Bson) -> Result<Op, UpdateError> {
    let bad = |reason: &str| error(path, operator, reason);
    Ok(match operator {
        "$set" => Op::Set(value.clone()),
        "$unset" => Op::Unset,
        "$setOnInsert" => Op::SetOnInsert(value.clone()),
        "$inc" | "$mul" => {
            if !is_number(value) {
                return Err(
                    bad("the argument must be a number").with_code(ErrorCode::TYPE_MISMATCH)
                );
            }
            if operator == "$inc" {
                Op::Inc(value.clone())
            } else {
                Op::Mul(value.clone())
            }
        }
        "$min" => Op::Min(value.clone()),
        "$max" => Op::Max(value.clone()),
        "$rename" => {
            let Bson::String(to) = value else {
                return Err(bad("the new name must be a string"));
            };
            Op::Rename(UpdatePath::parse(to, operator)?)
        }
        "$currentDate" => match value {
            Bson::Boolean(_) => Op::CurrentDate { timestamp: false },
            Bson::Document(d) => match d.get("$type") {
                Some(Bson::String(t)) if t == "date" && d.len() == 1 => {
                    Op::CurrentDate { timestamp: false }
                }
                Some(Bson::String(t)) if t == "timestamp" && d.len() == 1 => {
                    Op::CurrentDate { timestamp: true }
                }
                _ => return Err(bad("expects true or {$type: \"date\" | \"timestamp\"}")),
            },
            _ => return Err(bad("expects true or {$type: \"date\" | \"timestamp\"}")),
        },
        "$push" => parse_push(path, value)?,
        "$addToSet" => match value {
            Bson::Document(d) if d.contains_key("$each") => {
                if d.len() != 1 {
                    return Err(bad("$addToSet takes $each alone"));
                }
                let Some(Bson::Array(values)) = d.get("$each") else {
                    return Err(bad("$each must be an array"));
                };
                Op::AddToSet(values.clone())
            }
            other => Op::AddToSet(vec![other.clone()]),
        },
        "$pop" => match unit(value) {
            Some(Direction::Ascending) => Op::Pop { first: false },
            Some(Direction::Descending) => Op::Pop { first: true },
            None => return Err(bad("expects 1 or -1")),
        },
        "$pull" => Op::Pull(parse_pull(path, value)?),
        "$pullAll" => {
            let Bson::Array(values) = value else {
                return Err(bad("expects an array of values").with_code(ErrorCode::BAD_VALUE));
            };
            Op::PullAll(values.clone())
        }
        "$bit" => {
            // `bit_node.cpp` refuses every malformed `$bit` with BadValue.
            let bad = |reason: &str| bad(reason).with_code(ErrorCode::BAD_VALUE);
            let Bson::Document(d) = value else {
                return Err(bad("expects a document such as {and: 5}"));
            };
            if d.is_empty() {
                return Err(bad("expects at least one of and, or, xor"));
            }
            let mut steps = Vec::new();
            for (name, operand) in d {
                let op = match name.as_str() {
                    "and" => BitOp::And,
                    "or" => BitOp::Or,
                    "xor" => BitOp::Xor,
                    other => return Err(bad(&format!("unknown bitwise operation `{other}`"))),
                };
                if !matches!(operand, Bson::Int32(_) | Bson::Int64(_)) {
                    return Err(bad("bitwise operands must be int32 or int64"));
                }
                steps.push((op, operand.clone()));
            }
            Op::Bit(steps)
        }
        other => return Err(error(path, other, "unknown update operator")),
    })
}

fn number_value(v: &Bson) -> Option<f64> {
    match v {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        Bson::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

fn integer_argument(path: &str, modifier: &str, v: &Bson) -> Result<i64, UpdateError> {
    match v {
        Bson::Int32(i) => Ok(i64::from(*i)),
        Bson::Int64(i) => Ok(*i),
        Bson::Double(d) if d.fract() == 0.0 && d.is_finite() => Ok(*d as i64),
        Bson::Decimal128(_) => number_value(v)
            .filter(|d| d.fract() == 0.0 && d.is_finite())
            .map(|d| d as i64)
            .ok_or_else(|| error(path, modifier, "expects an integer")),
        _ => Err(error(path, modifier, "expects an integer")),
    }
}

fn parse_push(path: &str, value: &Bson) -> Result<Op, UpdateError> {
    let Bson::Document(d) = value else {
        return Ok(push_one(value));
    };
    if !d.contains_key("$each") {
        if d.keys()
            .any(|k| matches!(k.as_str(), "$slice" | "$sort" | "$position"))
        {
            return Err(error(
                path,
                "$push",
                "$slice, $sort and $position need $each",
            ));
        }
        return Ok(push_one(value));
    }
    let mut values = Vec::new();
    let mut position = None;
    let mut sort = None;
    let mut slice = None;
    for (name, arg) in d {
        match name.as_str() {
            "$each" => {
                let Bson::Array(items) = arg else {
                    return Err(error(path, "$each", "expects an array"));
                };
                values.clone_from(items);
            }
            "$position" => position = Some(integer_argument(path, "$position", arg)?),
            "$slice" => slice = Some(integer_argument(path, "$slice", arg)?),
            "$sort" => sort = Some(parse_push_sort(path, arg)?),
            other => {
                return Err(error(
                    path,
                    "$push",
                    format!("unknown modifier `{other}` beside $each"),
                ));
            }
        }
    }
    Ok(Op::Push {
        values,
        position,
        sort,
        slice,
        encoded: EncodedValues::default(),
    })
}

fn push_one(value: &Bson) -> Op {
    Op::Push {
        values: vec![value.clone()],
        position: None,
        sort: None,
        slice: None,
        encoded: EncodedValues::default(),
    }
}

/// `1` or `-1`, of any numeric type.
fn unit(v: &Bson) -> Option<Direction> {
    match number_value(v) {
        Some(n) if (n - 1.0).abs() < f64::EPSILON => Some(Direction::Ascending),
        Some(n) if (n + 1.0).abs() < f64::EPSILON => Some(Direction::Descending),
        _ => None,
    }
}

fn parse_push_sort(path: &str, arg: &Bson) -> Result<PushSort, UpdateError> {
    let direction = unit;
    match arg {
        Bson::Document(spec) => {
            if spec.is_empty() {
                return Err(error(path, "$sort", "the sort document is empty"));
            }
            for (field, d) in spec {
                if direction(d).is_none() {
                    return Err(error(
                        path,
                        "$sort",
                        format!("`{field}` must sort by 1 or -1"),
                    ));
                }
                if Path::checked(field).is_none() {
                    return Err(error(
                        path,
                        "$sort",
                        format!("`{field}` is not a field path"),
                    ));
                }
            }
            Sort::parse(spec)
                .map(PushSort::Fields)
                .map_err(|e: FilterError| error(path, "$sort", e.reason))
        }
        other => direction(other)
            .map(PushSort::Elements)
            .ok_or_else(|| error(path, "$sort", "expects 1, -1 or a sort document")),
    }
}

/// The field name a `$pull` condition with operators is matched under.
pub(crate) const PULL_FIELD: &str = "element";

fn parse_pull(path: &str, value: &Bson) -> Result<PullCondition, UpdateError> {
    let filter_error =
        |e: FilterError| error(path, "$pull", format!("{} ({})", e.reason, e.operator));
    // A condition led by a logical operator (`{$or: [...]}`) is a query on subdocument
    // elements, as one led by a field name is; any other operator tests the element itself.
    let element_operators = |d: &Document| {
        d.keys()
            .next()
            .is_some_and(|k| k.starts_with('$') && !crate::query::LOGICAL.contains(&k.as_str()))
    };
    match value {
        Bson::Document(d) if element_operators(d) => {
            let mut wrapped = Document::new();
            wrapped.insert(PULL_FIELD, Bson::Document(d.clone()));
            Filter::parse(&wrapped)
                .map(PullCondition::Operators)
                .map_err(filter_error)
        }
        Bson::Document(d) => Filter::parse(d)
            .map(PullCondition::Query)
            .map_err(filter_error),
        Bson::RegularExpression(_) => {
            let mut wrapped = Document::new();
            wrapped.insert(PULL_FIELD, value.clone());
            Filter::parse(&wrapped)
                .map(PullCondition::Operators)
                .map_err(filter_error)
        }
        other => Ok(PullCondition::Equal(other.clone())),
    }
}

/// Refuses two operations where one path equals or contains the other.
fn check_conflicts(ops: &[(&'static str, UpdatePath, Op)]) -> Result<(), UpdateError> {
    let mut paths: Vec<(&UpdatePath, &str)> = Vec::new();
    for (operator, path, op) in ops {
        paths.push((path, operator));
        if let Op::Rename(to) = op {
            paths.push((to, operator));
        }
    }
    for (i, (a, op_a)) in paths.iter().enumerate() {
        for (b, _) in &paths[i + 1..] {
            if a.conflicts_with(b) {
                let shorter = if a.segments.len() <= b.segments.len() {
                    a
                } else {
                    b
                };
                return Err(error(
                    b.path.as_str(),
                    op_a,
                    format!(
                        "updating the path `{}` would create a conflict at `{}`",
                        b.path.as_str(),
                        shorter.path.as_str()
                    ),
                )
                .with_code(ErrorCode::CONFLICTING_UPDATE_OPERATORS));
            }
        }
    }
    Ok(())
}

/// MongoDB's processing order: segment by segment, numeric names numerically, others as
/// strings.
fn compare_paths(left: &UpdatePath, right: &UpdatePath) -> std::cmp::Ordering {
    let text = |s: &Segment| match s {
        Segment::Field(f) => f.clone(),
        Segment::Matched => "$".to_owned(),
        Segment::All => "$[]".to_owned(),
        Segment::Filtered(id) => format!("$[{id}]"),
    };
    for (l, r) in left.segments.iter().zip(&right.segments) {
        let (l, r) = (text(l), text(r));
        let ord = match (l.parse::<u64>(), r.parse::<u64>()) {
            (Ok(m), Ok(n)) => m.cmp(&n).then_with(|| l.cmp(&r)),
            _ => l.cmp(&r),
        };
        if ord.is_ne() {
            return ord;
        }
    }
    left.segments.len().cmp(&right.segments.len())
}

fn parse_array_filters(
    filters: &[Document],
    ops: &[(&'static str, UpdatePath, Op)],
) -> Result<BTreeMap<String, Filter>, UpdateError> {
    let mut out = BTreeMap::new();
    for filter in filters {
        let parsed = Filter::parse(filter).map_err(|e| {
            error(
                &e.path,
                "arrayFilters",
                format!("{} ({})", e.reason, e.operator),
            )
        })?;
        let mut ids = filter_identifiers(filter);
        ids.sort();
        ids.dedup();
        let [id] = ids.as_slice() else {
            return Err(error(
                "",
                "arrayFilters",
                "each array filter must name exactly one identifier",
            ));
        };
        if out.insert(id.clone(), parsed).is_some() {
            return Err(error(
                id,
                "arrayFilters",
                format!("two array filters for identifier `{id}`"),
            ));
        }
    }
    let used: Vec<&String> = ops
        .iter()
        .flat_map(|(_, p, _)| p.segments.iter())
        .filter_map(|s| match s {
            Segment::Filtered(id) => Some(id),
            _ => None,
        })
        .collect();
    for (operator, path, _) in ops {
        for segment in &path.segments {
            if let Segment::Filtered(id) = segment
                && !out.contains_key(id)
            {
                return Err(error(
                    path.path.as_str(),
                    operator,
                    format!("no array filter found for identifier `{id}`"),
                )
                .with_code(ErrorCode::BAD_VALUE));
            }
        }
    }
    if let Some(unused) = out.keys().find(|id| !used.contains(id)) {
        return Err(error(
            unused,
            "arrayFilters",
            format!("the array filter for identifier `{unused}` was not used in the update"),
        ));
    }
    Ok(out)
}

/// The identifiers (first path segments) a filter's conditions name, through `$and`, `$or`
/// and `$nor`.
fn filter_identifiers(filter: &Document) -> Vec<String> {
    let mut out = Vec::new();
    for (key, value) in filter {
        if matches!(key.as_str(), "$and" | "$or" | "$nor") {
            if let Bson::Array(items) = value {
                for item in items {
                    if let Bson::Document(d) = item {
                        out.extend(filter_identifiers(d));
                    }
                }
            }
        } else {
            out.push(key.split('.').next().unwrap_or_default().to_owned());
        }
    }
    out
}
