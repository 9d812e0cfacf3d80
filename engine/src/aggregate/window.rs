//! `$setWindowFields`: each document gains fields computed over a window of the documents of
//! its partition.
//!
//! The rules, from MongoDB's manual and jstests: the input is split by `partitionBy` (null and
//! missing make one partition; an array is refused) and each partition ordered by `sortBy`;
//! the documents come out partition by partition (partitions in key order), each in its sort
//! order. A window is the whole partition unless written: `documents: [lo, hi]` counts
//! positions from the current document (`"current"`, `"unbounded"`, or a signed integer; both
//! bounds included, clipped to the partition); `range: [lo, hi]` takes the documents whose
//! single `sortBy` value lies within the current value plus the bounds (with `unit`, a time
//! range over dates). An empty window gives 0 for `$sum` and `$count`, `[]` for `$push` and
//! `$addToSet`, null for the rest.
//!
//! The functions: every `$group` accumulator over the window; `$rank`, `$denseRank`,
//! `$documentNumber` (no window; need `sortBy`); `$shift` (the value `by` documents away, or
//! `default`); `$derivative` and `$integral` (rate and trapezoidal area against the sort value,
//! in `unit`s for dates); `$expMovingAvg` (`N` or `alpha`); `$covariancePop` and
//! `$covarianceSamp`; `$locf` (the last non-null value so far) and `$linearFill` (nulls between
//! two values interpolated against the sort value). The input is sorted into partitions through
//! the operation's external sort, and one partition at a time is held against the operation's
//! memory budget, on disk past it (see `partitions`). Its documents go out one at a time, each
//! output's value made as it goes (a window's accumulator) or made ahead for the partition (the
//! functions that give numbers, an accumulator over the whole partition): see `Produced`.

use std::cmp::Ordering;
use std::ops::Range;

use bson::{Bson, Document, RawDocumentBuf};

use super::group::{self, Accumulator};
use super::{Documents, Stage, parse_accumulator, set_output};
use crate::budget::Budget;
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::error::{Error, Result};
use crate::expr::{Env, Expr, Scope, as_f64, error, eval_in, is_unit, shift_utc};
use crate::path::Path;
use crate::query::Sort;

mod partitions;

use partitions::{Docs, Partitions};

const NAME: &str = "$setWindowFields";

fn fail(code: ErrorCode, reason: impl std::fmt::Display) -> Error {
    Error::from(error(NAME, reason).with_code(code))
}

fn parse_error(reason: impl std::fmt::Display) -> Error {
    fail(ErrorCode::FAILED_TO_PARSE, reason)
}

/// A parsed `$setWindowFields`.
pub(super) struct SetWindowFields {
    partition_by: Option<Expr>,
    sort: Option<(Sort, Vec<String>)>,
    outputs: Vec<Output>,
}

struct Output {
    path: Path,
    func: Function,
    window: Window,
}

enum Function {
    Accumulate(Accumulator, Expr),
    Rank,
    DenseRank,
    DocumentNumber,
    Shift {
        output: Expr,
        by: i64,
        default: Bson,
    },
    Derivative {
        input: Expr,
        unit: Option<i64>,
    },
    Integral {
        input: Expr,
        unit: Option<i64>,
    },
    ExpMovingAvg {
        input: Expr,
        alpha: f64,
    },
    Covariance {
        x: Expr,
        y: Expr,
        sample: bool,
    },
    Locf(Expr),
    LinearFill(Expr),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Bound {
    Unbounded,
    Current,
    /// Positions for a documents window, values (or units) for a range window.
    Offset(f64),
}

enum Window {
    Whole,
    Documents(Bound, Bound),
    /// A range over the sort value; with a unit, a time range.
    Range(Bound, Bound, Option<String>),
}

/// The length in milliseconds of the units `$derivative` and `$integral` accept (a week and
/// smaller: the longer ones have no fixed length).
fn unit_length(unit: &str) -> Option<i64> {
    match unit {
        "week" => Some(7 * 86_400_000),
        "day" => Some(86_400_000),
        "hour" => Some(3_600_000),
        "minute" => Some(60_000),
        "second" => Some(1000),
        "millisecond" => Some(1),
        _ => None,
    }
}

pub(super) fn parse(arg: &Bson, scope: &Scope) -> Result<Stage> {
    let Bson::Document(spec) = arg else {
        return Err(parse_error(
            "the $setWindowFields specification must be an object",
        ));
    };
    if let Some(unknown) = spec
        .keys()
        .find(|k| !["partitionBy", "sortBy", "output"].contains(&k.as_str()))
    {
        return Err(fail(
            ErrorCode::location(40415),
            format!("unknown field `{unknown}`"),
        ));
    }
    let partition_by = spec
        .get("partitionBy")
        .map(|p| Expr::parse(p, scope))
        .transpose()?;
    let sort = match spec.get("sortBy") {
        None => None,
        // An empty `sortBy` orders nothing: as if absent.
        Some(Bson::Document(d)) if d.is_empty() => None,
        Some(Bson::Document(d)) => {
            let sort = Sort::parse(d)?;
            let fields: Vec<String> = d.keys().cloned().collect();
            Some((sort, fields))
        }
        Some(_) => {
            return Err(fail(ErrorCode::TYPE_MISMATCH, "`sortBy` must be an object"));
        }
    };
    let Some(output) = spec.get("output") else {
        return Err(fail(
            ErrorCode::IDL_FAILED_TO_PARSE,
            "missing required field `output`",
        ));
    };
    let Bson::Document(output) = output else {
        return Err(fail(ErrorCode::TYPE_MISMATCH, "`output` must be an object"));
    };
    let sort_fields = sort.as_ref().map_or(0, |(_, f)| f.len());
    let descending = sort.as_ref().is_some_and(|(s, _)| {
        s.fields()
            .first()
            .is_some_and(|(_, d)| *d == crate::Direction::Descending)
    });
    let mut outputs: Vec<Output> = Vec::new();
    for (path, spec) in output {
        let path = Path::new(path);
        if outputs.iter().any(|o| {
            let (mine, theirs) = (o.path.segments(), path.segments());
            let n = mine.len().min(theirs.len());
            mine[..n] == theirs[..n]
        }) {
            return Err(fail(
                ErrorCode::location(6_307_900),
                format!("the output paths conflict at `{path}`"),
            ));
        }
        let output = parse_output(path, spec, scope, sort_fields)?;
        if matches!(output.window, Window::Range(..)) && descending {
            return Err(fail(
                ErrorCode::location(8_947_401),
                "a range window needs `sortBy` in ascending order",
            ));
        }
        outputs.push(output);
    }
    Ok(Stage::SetWindowFields(Box::new(SetWindowFields {
        partition_by,
        sort,
        outputs,
    })))
}

fn bound(v: &Bson, range: bool) -> Result<Bound> {
    match v {
        Bson::String(s) if s == "unbounded" => Ok(Bound::Unbounded),
        Bson::String(s) if s == "current" => Ok(Bound::Current),
        other => {
            let n = as_f64(other).filter(|_| !matches!(other, Bson::Boolean(_)));
            match n {
                Some(n) if range || n.fract() == 0.0 => Ok(Bound::Offset(n)),
                _ => Err(parse_error(format!(
                    "a window bound must be 'unbounded', 'current' or {}, not {other}",
                    if range { "a number" } else { "an integer" }
                ))),
            }
        }
    }
}

/// Whether `lo` can come after `hi`.
fn inverted(lo: Bound, hi: Bound) -> bool {
    let at = |b: Bound, low: bool| match b {
        Bound::Unbounded if low => f64::NEG_INFINITY,
        Bound::Unbounded => f64::INFINITY,
        Bound::Current => 0.0,
        Bound::Offset(n) => n,
    };
    at(lo, true) > at(hi, false)
}

fn parse_window(spec: &Bson, sort_fields: usize) -> Result<Window> {
    let Bson::Document(w) = spec else {
        return Err(parse_error("`window` must be an object"));
    };
    if let Some(unknown) = w
        .keys()
        .find(|k| !["documents", "range", "unit"].contains(&k.as_str()))
    {
        return Err(parse_error(format!("unknown window option `{unknown}`")));
    }
    let pair = |key: &str| -> Result<Option<(Bound, Bound)>> {
        match w.get(key) {
            None => Ok(None),
            Some(Bson::Array(b)) if b.len() == 2 => {
                let range = key == "range";
                Ok(Some((bound(&b[0], range)?, bound(&b[1], range)?)))
            }
            Some(_) => Err(parse_error(format!(
                "`{key}` must be an array of two bounds"
            ))),
        }
    };
    let unit = match w.get("unit") {
        None => None,
        Some(Bson::String(u)) if is_unit(u) => Some(u.clone()),
        Some(other) => return Err(parse_error(format!("`{other}` is not a time unit"))),
    };
    match (pair("documents")?, pair("range")?) {
        (Some(_), Some(_)) => Err(parse_error("a window has `documents` or `range`, not both")),
        (Some((lo, hi)), None) => {
            if unit.is_some() {
                return Err(parse_error("`unit` goes with a `range` window"));
            }
            if inverted(lo, hi) {
                return Err(fail(
                    ErrorCode::location(5_339_900),
                    "the window's lower bound comes after its upper bound",
                ));
            }
            let bounded = lo != Bound::Unbounded || hi != Bound::Unbounded;
            if bounded && sort_fields == 0 {
                return Err(fail(
                    ErrorCode::location(5_339_901),
                    "a bounded documents window needs `sortBy`",
                ));
            }
            Ok(Window::Documents(lo, hi))
        }
        (None, Some((lo, hi))) => {
            if sort_fields != 1 {
                return Err(fail(
                    ErrorCode::location(5_339_902),
                    "a range window needs exactly one `sortBy` field",
                ));
            }
            if unit.is_some()
                && [lo, hi]
                    .iter()
                    .any(|b| matches!(b, Bound::Offset(n) if n.fract() != 0.0))
            {
                return Err(parse_error("the bounds of a time range must be integers"));
            }
            if inverted(lo, hi) {
                return Err(fail(
                    ErrorCode::location(5_339_900),
                    "the window's lower bound comes after its upper bound",
                ));
            }
            Ok(Window::Range(lo, hi, unit))
        }
        (None, None) => {
            if unit.is_some() {
                return Err(parse_error("`unit` goes with a `range` window"));
            }
            Ok(Window::Whole)
        }
    }
}

/// The window functions that are not `$group` accumulators: any other name is parsed as one.
const WINDOW_ONLY: [&str; 11] = [
    "$rank",
    "$denseRank",
    "$documentNumber",
    "$shift",
    "$derivative",
    "$integral",
    "$expMovingAvg",
    "$covariancePop",
    "$covarianceSamp",
    "$locf",
    "$linearFill",
];

fn parse_output(path: Path, spec: &Bson, scope: &Scope, sort_fields: usize) -> Result<Output> {
    let (name, arg, window_spec) = output_parts(&path, spec)?;
    // An accumulator, parsed first so that an unknown function is named before its window.
    let accumulated = if WINDOW_ONLY.contains(&name) {
        None
    } else {
        Some(window_accumulator(name, arg, &path, scope)?)
    };
    let window = window_spec
        .map(|w| parse_window(w, sort_fields))
        .transpose()?;
    let call = FunctionCall {
        name,
        arg,
        scope,
        sort_fields,
        windowed: window.is_some(),
    };
    let func = match name {
        "$rank" | "$denseRank" | "$documentNumber" => call.ranking()?,
        "$shift" => call.shift()?,
        "$derivative" | "$integral" => call.rate()?,
        "$expMovingAvg" => call.exp_moving_avg()?,
        "$covariancePop" | "$covarianceSamp" => call.covariance()?,
        "$locf" => call.locf()?,
        "$linearFill" => call.linear_fill()?,
        _ => {
            let Some((accumulator, input)) = accumulated else {
                return Err(parse_error(format!("`{name}` is not a window function")));
            };
            Function::Accumulate(accumulator, input)
        }
    };
    Ok(Output {
        path,
        func,
        window: window.unwrap_or(Window::Whole),
    })
}

/// An output's parts: its one `$` operator, that operator's argument, and its `window`.
fn output_parts<'a>(path: &Path, spec: &'a Bson) -> Result<(&'a str, &'a Bson, Option<&'a Bson>)> {
    let Bson::Document(spec) = spec else {
        return Err(parse_error(format!(
            "the output `{}` must be an object",
            path.as_str()
        )));
    };
    let mut window_spec = None;
    let mut op = None;
    for (key, value) in spec {
        if key == "window" {
            window_spec = Some(value);
        } else if key.starts_with('$') && op.is_none() {
            op = Some((key.as_str(), value));
        } else {
            return Err(parse_error(format!(
                "`{key}` is not a window function (one `$` operator and an optional `window`)"
            )));
        }
    }
    let Some((name, arg)) = op else {
        return Err(parse_error("an output needs a window function"));
    };
    Ok((name, arg, window_spec))
}

/// A `$group` accumulator over a window. A name no accumulator has is reported as not a
/// window function, since the window functions are what `$setWindowFields` offers.
fn window_accumulator(
    name: &str,
    arg: &Bson,
    path: &Path,
    scope: &Scope,
) -> Result<(Accumulator, Expr)> {
    parse_accumulator(name, arg, path.as_str(), scope).map_err(|e| match e {
        Error::InvalidExpression(ref x) if x.reason.contains("not a supported accumulator") => {
            parse_error(format!("`{name}` is not a window function"))
        }
        other => other,
    })
}

/// A window function as written in one output: what the checks of each function read.
struct FunctionCall<'a> {
    name: &'a str,
    arg: &'a Bson,
    scope: &'a Scope,
    sort_fields: usize,
    /// Whether the output has a `window`.
    windowed: bool,
}

impl<'a> FunctionCall<'a> {
    /// Refuses a `window`, with `code`: the function reads none.
    fn no_window(&self, code: i32) -> Result<()> {
        if self.windowed {
            return Err(fail(
                ErrorCode::location(code),
                format!("{} does not take a window", self.name),
            ));
        }
        Ok(())
    }

    /// Refuses a missing `sortBy`, with `code`: the function reads the documents' order.
    fn needs_sort(&self, code: i32) -> Result<()> {
        if self.sort_fields == 0 {
            return Err(fail(
                ErrorCode::location(code),
                format!("{} needs `sortBy`", self.name),
            ));
        }
        Ok(())
    }

    /// The argument as a document of named arguments, every name among `known`.
    fn named(&self, known: &[&str]) -> Result<&'a Document> {
        let name = self.name;
        let Bson::Document(d) = self.arg else {
            return Err(parse_error(format!("{name} takes an object")));
        };
        if let Some(unknown) = d.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(parse_error(format!("{name}: unknown argument `{unknown}`")));
        }
        Ok(d)
    }

    /// The required argument `what`, an expression.
    fn expr(&self, v: Option<&Bson>, what: &str) -> Result<Expr> {
        let v = v.ok_or_else(|| parse_error(format!("{} needs `{what}`", self.name)))?;
        Ok(Expr::parse(v, self.scope)?)
    }

    /// `unit` of `$derivative` and `$integral`, in milliseconds.
    fn time_unit(&self, d: &Document) -> Result<Option<i64>> {
        let name = self.name;
        match d.get("unit") {
            None => Ok(None),
            Some(Bson::String(u)) => unit_length(u).map(Some).ok_or_else(|| {
                fail(
                    ErrorCode::location(5_490_710),
                    format!("{name}: `{u}` is not a unit of fixed length (week or smaller)"),
                )
            }),
            Some(other) => Err(parse_error(format!(
                "{name}: `unit` must be a string, not {other}"
            ))),
        }
    }

    /// `$rank`, `$denseRank`, `$documentNumber`: `{}`, no window, and `sortBy`.
    fn ranking(&self) -> Result<Function> {
        if !matches!(self.arg, Bson::Document(d) if d.is_empty()) {
            return Err(fail(
                ErrorCode::location(5_371_603),
                format!("{} takes no argument: write {{}}", self.name),
            ));
        }
        self.no_window(5_371_601)?;
        self.needs_sort(5_371_602)?;
        Ok(match self.name {
            "$rank" => Function::Rank,
            "$denseRank" => Function::DenseRank,
            _ => Function::DocumentNumber,
        })
    }

    /// `$shift`: `output`, an integer `by`, and a constant `default`.
    fn shift(&self) -> Result<Function> {
        let d = self.named(&["output", "by", "default"])?;
        self.no_window(9)?;
        self.needs_sort(9)?;
        let by = d
            .get("by")
            .and_then(crate::expr::as_i64)
            .ok_or_else(|| parse_error("$shift needs `by`, an integer"))?;
        let default = match d.get("default") {
            None => Bson::Null,
            Some(v) => {
                let e = Expr::parse(v, self.scope)?;
                if !e.is_constant() {
                    return Err(parse_error("$shift's `default` must be a constant"));
                }
                eval_in(&e, &Env::constant())?.unwrap_or(Bson::Null)
            }
        };
        Ok(Function::Shift {
            output: self.expr(d.get("output"), "output")?,
            by,
            default,
        })
    }

    /// `$derivative` (which needs an explicit window) and `$integral`: `input` and `unit`.
    fn rate(&self) -> Result<Function> {
        let d = self.named(&["input", "unit"])?;
        let unit = self.time_unit(d)?;
        let input = self.expr(d.get("input"), "input")?;
        if self.name == "$derivative" {
            if !self.windowed {
                return Err(parse_error("$derivative needs an explicit window"));
            }
            self.needs_sort(9)?;
            Ok(Function::Derivative { input, unit })
        } else {
            self.needs_sort(9)?;
            Ok(Function::Integral { input, unit })
        }
    }

    /// `$expMovingAvg`: `input` and one of `N` (a positive integer, for `alpha = 2 / (N + 1)`)
    /// and `alpha` (strictly between 0 and 1).
    fn exp_moving_avg(&self) -> Result<Function> {
        let d = self.named(&["input", "N", "alpha"])?;
        self.needs_sort(9)?;
        self.no_window(9)?;
        let alpha = match (d.get("N"), d.get("alpha")) {
            (Some(n), None) => match crate::expr::as_i64(n) {
                Some(n) if n > 0 => 2.0 / (n as f64 + 1.0),
                _ => {
                    return Err(parse_error(
                        "$expMovingAvg's `N` must be a positive integer",
                    ));
                }
            },
            (None, Some(a)) => match as_f64(a) {
                Some(a) if a > 0.0 && a < 1.0 => a,
                _ => {
                    return Err(parse_error(
                        "$expMovingAvg's `alpha` must be a number between 0 and 1",
                    ));
                }
            },
            _ => return Err(parse_error("$expMovingAvg takes one of `N` and `alpha`")),
        };
        Ok(Function::ExpMovingAvg {
            input: self.expr(d.get("input"), "input")?,
            alpha,
        })
    }

    /// `$covariancePop` and `$covarianceSamp`: an array of two expressions.
    fn covariance(&self) -> Result<Function> {
        let name = self.name;
        let Bson::Array(items) = self.arg else {
            return Err(parse_error(format!("{name} takes two expressions")));
        };
        let [x, y] = items.as_slice() else {
            return Err(parse_error(format!("{name} takes two expressions")));
        };
        Ok(Function::Covariance {
            x: Expr::parse(x, self.scope)?,
            y: Expr::parse(y, self.scope)?,
            sample: name == "$covarianceSamp",
        })
    }

    /// `$locf`: an expression, no window.
    fn locf(&self) -> Result<Function> {
        self.no_window(9)?;
        Ok(Function::Locf(Expr::parse(self.arg, self.scope)?))
    }

    /// `$linearFill`: an expression, no window, and one `sortBy` field to interpolate against.
    fn linear_fill(&self) -> Result<Function> {
        self.no_window(9)?;
        if self.sort_fields != 1 {
            return Err(fail(
                ErrorCode::location(605_001),
                "$linearFill needs exactly one `sortBy` field",
            ));
        }
        Ok(Function::LinearFill(Expr::parse(self.arg, self.scope)?))
    }
}

/// One partition's documents in order, with what the windows read of them.
struct Partition {
    docs: Docs,
    /// Whether each document ties with the one before it under `sortBy` (for `$rank`).
    tied: Vec<bool>,
    /// The first `sortBy` field's value of each document, for range windows, the functions of
    /// rates and `$linearFill`; empty when no output reads them (see
    /// `SetWindowFields::reads_sort_values`), so that a partition spilled to disk is not held
    /// again here.
    values: Vec<Option<Bson>>,
}

impl Partition {
    /// `e` evaluated against the document at `i`.
    fn eval(&self, e: &Expr, i: usize, cx: Option<&Collation>) -> Result<Option<Bson>> {
        let doc = self.docs.get(i)?;
        Ok(eval_in(e, &Env::collated(&doc, cx))?)
    }
}

impl SetWindowFields {
    /// The stage over its input, sorted into partitions when first pulled and computed one
    /// partition at a time (see `partitions`).
    pub(super) fn run(
        self,
        input: Documents<'_>,
        collation: Option<std::sync::Arc<Collation>>,
        budget: Budget,
    ) -> Documents<'_> {
        super::deferred(move || {
            let mut partitions = Partitions::new(&self, input, collation.clone(), budget.clone())?;
            let mut current: Option<Emitting> = None;
            let mut failed = false;
            Ok(Box::new(std::iter::from_fn(move || {
                let cx = collation.as_deref();
                let mut step = || -> Result<Option<Document>> {
                    loop {
                        if let Some(emitting) = &mut current
                            && emitting.at < emitting.partition.docs.len()
                        {
                            return self.emit(emitting, cx).map(Some);
                        }
                        current = None;
                        let Some((docs, held)) = partitions.next_partition()? else {
                            return Ok(None);
                        };
                        current = Some(self.start(docs, held, cx, &budget)?);
                    }
                };
                if failed {
                    return None;
                }
                let next = step().transpose();
                failed = matches!(next, Some(Err(_)));
                next
            })))
        })
    }

    /// A partition (its documents in order, `held` bytes of them in memory) ready to go out:
    /// what each output makes first is held beside the documents, and bounded with them.
    fn start(
        &self,
        docs: Docs,
        held: usize,
        cx: Option<&Collation>,
        budget: &Budget,
    ) -> Result<Emitting> {
        let (partition, sort_values) = self.partition(docs, cx)?;
        let mut emitting = Emitting {
            partition,
            values: Vec::with_capacity(self.outputs.len()),
            at: 0,
            produced: Produced {
                used: 0,
                held,
                limit: budget.limit(),
            },
            budget: budget.clone(),
        };
        emitting.with_room(|_, produced, _| produced.add(sort_values))?;
        for output in &self.outputs {
            let made = emitting.with_room(|p, produced, _| output.start(p, cx, produced))?;
            emitting.values.push(made);
        }
        Ok(emitting)
    }

    /// The next document of the partition with its outputs set.
    fn emit(&self, emitting: &mut Emitting, cx: Option<&Collation>) -> Result<Document> {
        let i = emitting.at;
        emitting.at += 1;
        let mut doc = emitting.partition.docs.get(i)?.into_owned();
        for (j, output) in self.outputs.iter().enumerate() {
            let value = emitting.with_room(|p, produced, values| {
                output.next_value(p, i, &mut values[j], cx, produced)
            })?;
            if let Some(value) = value {
                set_output(&mut doc, &output.path, value);
            }
        }
        Ok(doc)
    }

    /// Whether an output reads the first `sortBy` field's values: a range window, a rate,
    /// `$linearFill`.
    fn reads_sort_values(&self) -> bool {
        self.outputs.iter().any(|o| {
            matches!(o.window, Window::Range(..))
                || matches!(
                    o.func,
                    Function::Derivative { .. }
                        | Function::Integral { .. }
                        | Function::LinearFill(_)
                )
        })
    }

    /// A partition of documents in `sortBy` order, with their ties and sort values, and about
    /// how many bytes the sort values take.
    fn partition(&self, docs: Docs, cx: Option<&Collation>) -> Result<(Partition, usize)> {
        let n = docs.len();
        let Some((sort, fields)) = &self.sort else {
            let partition = Partition {
                docs,
                tied: vec![true; n],
                values: Vec::new(),
            };
            return Ok((partition, 0));
        };
        let mut bytes = 0usize;
        let first = self.reads_sort_values().then(|| Path::new(&fields[0]));
        let mut tied = Vec::with_capacity(n);
        let mut values = Vec::with_capacity(n);
        let mut previous: Option<Vec<bson::RawBson>> = None;
        for doc in docs.range(0..n) {
            let doc = doc?;
            let raw = RawDocumentBuf::try_from(doc.as_ref()).map_err(|e| {
                fail(
                    ErrorCode::BAD_VALUE,
                    format!("a document does not encode: {e}"),
                )
            })?;
            let keys = sort.keys(&raw, cx);
            tied.push(
                previous
                    .as_ref()
                    .is_some_and(|p| sort.compare_keys(p, &keys, cx) == Ordering::Equal),
            );
            previous = Some(keys);
            if let Some(first) = &first {
                let value = first.get(&doc).cloned();
                bytes += value.as_ref().map_or(1, group::approximate_size);
                values.push(value);
            }
        }
        Ok((Partition { docs, tied, values }, bytes))
    }
}

/// A partition going out document by document.
struct Emitting {
    partition: Partition,
    /// Each output's values.
    values: Vec<Values>,
    /// The next document to go out.
    at: usize,
    produced: Produced,
    budget: Budget,
}

impl Emitting {
    /// `make` over the partition. Past the budget, with disk use allowed, the documents the
    /// partition holds in memory go to disk to make room (as MongoDB spills its cache when the
    /// window functions need the memory) and `make` runs again; past it still, MongoDB's
    /// 5414201.
    fn with_room<T>(
        &mut self,
        mut make: impl FnMut(&Partition, &mut Produced, &mut Vec<Values>) -> Result<T>,
    ) -> Result<T> {
        let first = make(&self.partition, &mut self.produced, &mut self.values);
        match &first {
            Err(e) if e.code() == partitions::EXCEEDED && self.budget.allows_disk_use() => {}
            _ => return first,
        }
        if !self.partition.docs.write_out(&self.budget)? {
            return first;
        }
        self.produced.held = 0;
        make(&self.partition, &mut self.produced, &mut self.values)
    }
}

/// What a partition holds beside its documents, against the budget with them (past it,
/// MongoDB's 5414201, as for MongoDB's window functions): the values its outputs make first (a
/// number per document, or one accumulator over the whole partition), and, while it is
/// computed, a window's accumulator state. A value copied into each document's output is made
/// as the document goes out, never held for the whole partition.
struct Produced {
    used: usize,
    /// The bytes of the partition's documents.
    held: usize,
    limit: usize,
}

impl Produced {
    /// Counts `bytes` more.
    fn add(&mut self, bytes: usize) -> Result<()> {
        let used = self.used.saturating_add(bytes);
        let total = self.held.saturating_add(used);
        if total > self.limit {
            return Err(partitions::exceeded(total, self.limit));
        }
        self.used = used;
        Ok(())
    }

    /// The bytes left to hold, and the error of holding `more` than that beside what is held.
    fn room(&self) -> (usize, impl Fn(usize) -> Error + use<>) {
        let (used, limit) = (self.held.saturating_add(self.used), self.limit);
        (limit.saturating_sub(used), move |more: usize| {
            partitions::exceeded(used.saturating_add(more), limit)
        })
    }
}

/// A number or a date as a number (milliseconds), for rates and areas.
fn numeric(v: Option<&Bson>) -> Option<f64> {
    match v? {
        Bson::DateTime(d) => Some(d.timestamp_millis() as f64),
        Bson::Boolean(_) => None,
        other => as_f64(other),
    }
}

/// One output's values as a partition's documents go out, in order.
enum Values {
    /// Made for the whole partition first: the functions that give a number (or null).
    Column(std::vec::IntoIter<Option<Bson>>),
    /// One value for every document: an accumulator over the whole partition.
    Same(Bson),
    /// Made for each document as it goes out (`last`: `$locf`'s last value so far).
    Each { last: Bson },
}

impl Output {
    /// How this output's values are made over `p`; what is made first is counted in
    /// `produced`.
    fn start(
        &self,
        p: &Partition,
        cx: Option<&Collation>,
        produced: &mut Produced,
    ) -> Result<Values> {
        let column = match &self.func {
            Function::Accumulate(accumulator, input) if matches!(self.window, Window::Whole) => {
                // One window for the whole partition: computed once, copied into each
                // document as it goes out.
                let value = over(p, 0..p.docs.len(), accumulator, input, cx, produced)?;
                produced.add(group::approximate_size(&value))?;
                return Ok(Values::Same(value));
            }
            Function::Accumulate(..) | Function::Shift { .. } | Function::Locf(_) => {
                return Ok(Values::Each { last: Bson::Null });
            }
            Function::DocumentNumber => Ok((1..=p.docs.len())
                .map(|i| Some(Bson::Int64(i as i64)))
                .collect()),
            Function::Rank => Ok(ranks(p, false)),
            Function::DenseRank => Ok(ranks(p, true)),
            Function::Derivative { input, unit } => self.rate(p, input, *unit, true, cx),
            Function::Integral { input, unit } => self.rate(p, input, *unit, false, cx),
            Function::ExpMovingAvg { input, alpha } => exp_moving_avg(p, input, *alpha, cx),
            Function::Covariance { x, y, sample } => self.covariance(p, x, y, *sample, cx),
            Function::LinearFill(input) => linear_fill(p, input, cx),
        }?;
        produced.add(
            column
                .len()
                .saturating_mul(group::approximate_size(&Bson::Null)),
        )?;
        Ok(Values::Column(column.into_iter()))
    }

    /// The value of the document at `i` (`None`: not set), documents taken in order.
    fn next_value(
        &self,
        p: &Partition,
        i: usize,
        values: &mut Values,
        cx: Option<&Collation>,
        produced: &Produced,
    ) -> Result<Option<Bson>> {
        match values {
            Values::Column(column) => Ok(column.next().flatten()),
            Values::Same(value) => Ok(Some(value.clone())),
            Values::Each { last } => match &self.func {
                Function::Accumulate(accumulator, input) => {
                    let range = self.window_at(p, i)?;
                    over(p, range, accumulator, input, cx, produced).map(Some)
                }
                Function::Shift {
                    output,
                    by,
                    default,
                } => shift(p, i, output, *by, default, cx).map(Some),
                Function::Locf(input) => match p.eval(input, i, cx)? {
                    None | Some(Bson::Null | Bson::Undefined) => Ok(Some(last.clone())),
                    Some(v) => {
                        last.clone_from(&v);
                        Ok(Some(v))
                    }
                },
                // The other functions make a column first.
                _ => Ok(None),
            },
        }
    }

    /// `$derivative` (`derivative`) or `$integral` over each document's window: the input
    /// against the sort value, per `unit` milliseconds when the sort values are dates.
    fn rate(
        &self,
        p: &Partition,
        input: &Expr,
        unit: Option<i64>,
        derivative: bool,
        cx: Option<&Collation>,
    ) -> Result<Vec<Option<Bson>>> {
        Output::check_rate_unit(p, unit, derivative)?;
        let n = p.docs.len();
        let scale = unit.map_or(1.0, |u| u as f64);
        let ys: Vec<Option<f64>> = (0..n)
            .map(|i| Ok(numeric(p.eval(input, i, cx)?.as_ref())))
            .collect::<Result<_>>()?;
        // Differences are taken in the sort value's own units, then scaled: dates are large
        // numbers, and dividing them first would lose their last digits.
        let xs: Vec<Option<f64>> = p.values.iter().map(|v| numeric(v.as_ref())).collect();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let range = self.window_at(p, i)?;
            let points: Vec<(f64, f64)> = range.filter_map(|j| Some((xs[j]?, ys[j]?))).collect();
            out.push(Some(if derivative {
                slope(&points, scale)
            } else {
                area(&points, scale)
            }));
        }
        Ok(out)
    }

    /// `$covariancePop` (`sample` false) or `$covarianceSamp` over each document's window, of
    /// the documents where both `x` and `y` are numbers.
    #[allow(clippy::many_single_char_names)] // x, y, n, i, j: the names of the formula
    fn covariance(
        &self,
        p: &Partition,
        x: &Expr,
        y: &Expr,
        sample: bool,
        cx: Option<&Collation>,
    ) -> Result<Vec<Option<Bson>>> {
        let n = p.docs.len();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let range = self.window_at(p, i)?;
            let mut pairs = Vec::new();
            for j in range {
                let (a, b) = (p.eval(x, j, cx)?, p.eval(y, j, cx)?);
                if let (Some(a), Some(b)) = (covariate(a.as_ref()), covariate(b.as_ref())) {
                    pairs.push((a, b));
                }
            }
            out.push(Some(covariance_of(&pairs, sample)));
        }
        Ok(out)
    }

    /// `unit` must go with dates, and dates need a unit.
    fn check_rate_unit(p: &Partition, unit: Option<i64>, derivative: bool) -> Result<()> {
        let dates = p
            .values
            .iter()
            .flatten()
            .any(|v| matches!(v, Bson::DateTime(_)));
        let numbers = p
            .values
            .iter()
            .flatten()
            .any(|v| !matches!(v, Bson::DateTime(_)));
        let (with_numbers, dates_without) = if derivative {
            (5_624_900, 5_624_901)
        } else {
            (5_423_901, 5_423_902)
        };
        if unit.is_some() && numbers {
            return Err(fail(
                ErrorCode::location(with_numbers),
                "`unit` needs the sortBy values to be dates",
            ));
        }
        if unit.is_none() && dates {
            return Err(fail(
                ErrorCode::location(dates_without),
                "sortBy values that are dates need a `unit`",
            ));
        }
        Ok(())
    }

    /// The positions of the window of the document at `i`.
    #[allow(clippy::many_single_char_names)] // i, j, k, n: positions and offsets
    fn window_at(&self, p: &Partition, i: usize) -> Result<Range<usize>> {
        let n = p.docs.len();
        match &self.window {
            Window::Whole => Ok(0..n),
            Window::Documents(lo, hi) => {
                let at = |b: Bound, low: bool| -> i64 {
                    match b {
                        Bound::Unbounded if low => 0,
                        Bound::Unbounded => n as i64 - 1,
                        Bound::Current => i as i64,
                        // `as` saturates a huge bound; the sum saturates too.
                        Bound::Offset(k) => (i as i64).saturating_add(k as i64),
                    }
                };
                let start = at(*lo, true).clamp(0, n as i64);
                let end = at(*hi, false).saturating_add(1).clamp(0, n as i64);
                Ok(start as usize..(end.max(start)) as usize)
            }
            Window::Range(lo, hi, unit) => {
                let position = |v: &Option<Bson>| -> Result<f64> {
                    match (unit, v) {
                        (Some(_), Some(Bson::DateTime(d))) => Ok(d.timestamp_millis() as f64),
                        (Some(_), _) => Err(fail(
                            ErrorCode::location(5_429_513),
                            "a time range window needs the sortBy values to be dates",
                        )),
                        (
                            None,
                            Some(
                                v @ (Bson::Int32(_)
                                | Bson::Int64(_)
                                | Bson::Double(_)
                                | Bson::Decimal128(_)),
                            ),
                        ) => Ok(as_f64(v).unwrap_or(f64::NAN)),
                        (None, _) => Err(fail(
                            ErrorCode::location(5_429_414),
                            "invalid range: expected the sortBy field to be a number",
                        )),
                    }
                };
                let here = position(&p.values[i])?;
                let edge = |b: Bound, low: bool| -> f64 {
                    match (b, unit) {
                        (Bound::Unbounded, _) if low => f64::NEG_INFINITY,
                        (Bound::Unbounded, _) => f64::INFINITY,
                        (Bound::Current, _) => here,
                        (Bound::Offset(k), None) => here + k,
                        (Bound::Offset(k), Some(u)) => shift_utc(here as i64, u, k as i64).map_or(
                            if low {
                                f64::NEG_INFINITY
                            } else {
                                f64::INFINITY
                            },
                            |t| t as f64,
                        ),
                    }
                };
                let (low, high) = (edge(*lo, true), edge(*hi, false));
                let mut start = n;
                let mut end = 0;
                for j in 0..n {
                    let v = position(&p.values[j])?;
                    let inside = v >= low && v <= high;
                    // `current` is the current document itself, not its ties.
                    let inside = inside
                        && !(matches!(lo, Bound::Current) && j < i)
                        && !(matches!(hi, Bound::Current) && j > i);
                    if inside {
                        start = start.min(j);
                        end = end.max(j + 1);
                    }
                }
                Ok(if start < end { start..end } else { i..i })
            }
        }
    }
}

/// A `$group` accumulator over the documents of `range`; its state is held while it is
/// computed, beside what the partition's outputs hold.
fn over(
    p: &Partition,
    range: Range<usize>,
    accumulator: &Accumulator,
    input: &Expr,
    cx: Option<&Collation>,
    produced: &Produced,
) -> Result<Bson> {
    let (room, exceeded) = produced.room();
    group::over(
        p.docs.range(range),
        accumulator,
        input,
        cx,
        (room, &exceeded),
    )
}

/// `$rank` (one more than the documents before the first of its ties) or `$denseRank`
/// (`dense`: one more than the distinct values before it), by the ties of `sortBy`.
fn ranks(p: &Partition, dense: bool) -> Vec<Option<Bson>> {
    let n = p.docs.len();
    let mut out = Vec::with_capacity(n);
    let mut rank = 0i64;
    for i in 0..n {
        if i == 0 || !p.tied[i] {
            rank = if dense { rank + 1 } else { i as i64 + 1 };
        }
        out.push(Some(Bson::Int64(rank)));
    }
    out
}

/// `$shift` at `i`: the output of the document `by` positions away; `default` past either end
/// of the partition, or where the output is missing.
fn shift(
    p: &Partition,
    i: usize,
    output: &Expr,
    by: i64,
    default: &Bson,
    cx: Option<&Collation>,
) -> Result<Bson> {
    let at = i64::try_from(i).ok().and_then(|i| i.checked_add(by));
    Ok(
        match at
            .and_then(|a| usize::try_from(a).ok())
            .filter(|a| *a < p.docs.len())
        {
            Some(a) => p.eval(output, a, cx)?.unwrap_or_else(|| default.clone()),
            None => default.clone(),
        },
    )
}

/// The rate of `$derivative`: from the first point to the last, per `scale` of x. Null with
/// fewer than two points, or when x does not change.
fn slope(points: &[(f64, f64)], scale: f64) -> Bson {
    match (points.first(), points.last()) {
        (Some(a), Some(b)) if points.len() > 1 && b.0.total_cmp(&a.0).is_ne() => {
            Bson::Double((b.1 - a.1) / ((b.0 - a.0) / scale))
        }
        _ => Bson::Null,
    }
}

/// The area of `$integral`: trapezoids between the points, x in `scale`s. Null with no points.
fn area(points: &[(f64, f64)], scale: f64) -> Bson {
    if points.is_empty() {
        return Bson::Null;
    }
    Bson::Double(
        points
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) / scale * (w[0].1 + w[1].1) / 2.0)
            .sum(),
    )
}

/// `$expMovingAvg`: each number moves the average `alpha` of the way to itself, and the
/// document gets the new average; a document without a number gets null and leaves it.
fn exp_moving_avg(
    p: &Partition,
    input: &Expr,
    alpha: f64,
    cx: Option<&Collation>,
) -> Result<Vec<Option<Bson>>> {
    let n = p.docs.len();
    let mut out = Vec::with_capacity(n);
    let mut average: Option<f64> = None;
    for i in 0..n {
        match numeric(p.eval(input, i, cx)?.as_ref()) {
            Some(x) => {
                let next = average.map_or(x, |a| alpha * x + (1.0 - alpha) * a);
                average = Some(next);
                out.push(Some(Bson::Double(next)));
            }
            None => out.push(Some(Bson::Null)),
        }
    }
    Ok(out)
}

/// A value as the covariances count it: a number (a date or a boolean is not one).
fn covariate(v: Option<&Bson>) -> Option<f64> {
    match v {
        Some(Bson::DateTime(_) | Bson::Boolean(_)) | None => None,
        Some(v) => as_f64(v),
    }
}

/// The covariance of the pairs: divided by their count (population) or one less (`sample`).
/// Too few pairs give null, except one pair's population covariance, 0.
fn covariance_of(pairs: &[(f64, f64)], sample: bool) -> Bson {
    let count = pairs.len() as f64;
    let divisor = if sample { count - 1.0 } else { count };
    if pairs.is_empty() || divisor <= 0.0 {
        return if !sample && pairs.len() == 1 {
            Bson::Double(0.0)
        } else {
            Bson::Null
        };
    }
    let mx = pairs.iter().map(|p| p.0).sum::<f64>() / count;
    let my = pairs.iter().map(|p| p.1).sum::<f64>() / count;
    Bson::Double(pairs.iter().map(|(a, b)| (a - mx) * (b - my)).sum::<f64>() / divisor)
}

/// `$linearFill`: a null or missing value between two numbers is interpolated against the sort
/// value; before the first number and after the last, it stays null.
fn linear_fill(p: &Partition, input: &Expr, cx: Option<&Collation>) -> Result<Vec<Option<Bson>>> {
    let n = p.docs.len();
    let mut xs = Vec::with_capacity(n);
    for (i, v) in p.values.iter().enumerate() {
        let x = match v {
            Some(Bson::DateTime(d)) => d.timestamp_millis() as f64,
            Some(v @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_))) => {
                as_f64(v).unwrap_or(f64::NAN)
            }
            _ => {
                return Err(fail(
                    ErrorCode::TYPE_MISMATCH,
                    "$linearFill needs sortBy values that are numbers or dates",
                ));
            }
        };
        if i > 0 && xs.last() == Some(&x) {
            return Err(fail(
                ErrorCode::location(6_050_106),
                "$linearFill needs distinct sortBy values within a partition",
            ));
        }
        xs.push(x);
    }
    let kinds: Vec<bool> = p
        .values
        .iter()
        .map(|v| matches!(v, Some(Bson::DateTime(_))))
        .collect();
    if kinds.iter().any(|d| *d) && kinds.iter().any(|d| !*d) {
        return Err(fail(
            ErrorCode::TYPE_MISMATCH,
            "$linearFill cannot mix dates and numbers in sortBy",
        ));
    }
    let mut ys: Vec<Option<Bson>> = Vec::with_capacity(n);
    for i in 0..n {
        let v = p.eval(input, i, cx)?;
        match v {
            None | Some(Bson::Null | Bson::Undefined) => ys.push(None),
            Some(v @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_))) => {
                ys.push(Some(v));
            }
            Some(other) => {
                return Err(fail(
                    ErrorCode::TYPE_MISMATCH,
                    format!("$linearFill fills numbers, not {other}"),
                ));
            }
        }
    }
    // The next value at or after each position, found in one pass from the end.
    let mut next_at = vec![None; n + 1];
    for i in (0..n).rev() {
        next_at[i] = if ys[i].is_some() {
            Some(i)
        } else {
            next_at[i + 1]
        };
    }
    let mut out = Vec::with_capacity(n);
    let mut previous: Option<usize> = None;
    for i in 0..n {
        if let Some(y) = &ys[i] {
            previous = Some(i);
            out.push(Some(y.clone()));
            continue;
        }
        let next = next_at[i + 1];
        out.push(Some(match (previous, next) {
            (Some(a), Some(b)) => {
                let (ya, yb) = (
                    ys[a].as_ref().and_then(as_f64).unwrap_or(f64::NAN),
                    ys[b].as_ref().and_then(as_f64).unwrap_or(f64::NAN),
                );
                Bson::Double(ya + (yb - ya) * (xs[i] - xs[a]) / (xs[b] - xs[a]))
            }
            _ => Bson::Null,
        }));
    }
    Ok(out)
}
