//! Aggregation expressions: what `$expr` in a filter, the stages of a pipeline update and
//! aggregation stages compute from a document.
//!
//! The grammar, as MongoDB documents it: a string `"$a.b"` is a field path of the current
//! document; `"$$name.a"` a variable (`ROOT`, `CURRENT`, `NOW`, `REMOVE`, a `let` variable or one
//! bound by `$let`, `$map`, `$filter`, `$reduce`); a document whose single key starts with `$`
//! is an operator; any other document is an object whose fields are expressions; an array is an
//! array of expressions; anything else is itself. Operators take an array of arguments, or a
//! single argument written without the array.
//!
//! Evaluation ([`Expr::evaluate`]) distinguishes *missing* from `null`: a field path to nothing, or
//! `$$REMOVE`, is missing, which an object expression omits. Variables of a `let` option are
//! evaluated once, before any document, and fixed into the parsed expression; an undefined
//! variable or an unknown operator is refused when parsing, and an operator applied to values
//! of the wrong type fails when evaluated, naming the operator. Comparisons follow the
//! query's collation when it has one.
//!
//! - `eval`: the evaluator and its environment (current document, bound variables, `$$NOW`,
//!   collation); `func`: the operators over positional arguments, by group; `convert`: the
//!   `$to*` conversions and `$convert`; `text`: trimming, the `$regex*` operators, byte-wise
//!   strings; `dates`: date parts, formatting, parsing and arithmetic in a time zone; `named`:
//!   the operators whose argument is a document of named arguments, evaluated on demand;
//!   `more`: `$indexOfBytes`, `$indexOfCP`, `$replaceOne`,
//!   `$replaceAll`, `$setEquals`, `$log`; `take_n`: the N family's rules (`$firstN`, `$lastN`,
//!   `$minN`, `$maxN`), shared with `$group`. `$zip` and `$sortArray` are expressions of their own
//!   (their arguments are named, and `sortBy` is read as written).

mod bounds;
mod convert;
mod dates;
mod decimal_math;
pub(crate) use dates::{is_unit, shift_utc};
mod eval;
mod func;
mod more;
mod named;
pub(crate) use more::as_f64;
pub use named::Named;
pub mod take_n;
mod text;

use crate::code::ErrorCode;
use crate::nesting::{self, MAX_INPUT_DEPTH};
use crate::path::Path;
use std::fmt;

use bson::{Bson, Document};

pub use crate::error::ExprError;
pub(crate) use crate::number::as_i64;
pub use eval::truthy;
pub(crate) use eval::{Env, eval_in};
pub use func::Func;
pub(crate) use func::{accumulate_values, compare_bson, type_alias};

/// The type name MongoDB gives a value (`$type`'s, and its messages'): `int`, `object`, ...
pub fn type_name(value: &Bson) -> &'static str {
    type_alias(Some(value))
}

/// A count a reply or report holds under `name` (`n`, `nReturned`), whatever number type it
/// was written in; 0 when it is absent or not a whole non-negative number.
pub fn count_in(document: &bson::Document, name: &str) -> u64 {
    document
        .get(name)
        .and_then(whole_number)
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}

/// The whole number a numeric value holds: an int32, an int64, or a double or decimal without
/// a fraction (MongoDB's rule for counts, limits and positions).
pub fn whole_number(value: &Bson) -> Option<i64> {
    as_i64(value)
}

/// A parsed expression; see the module documentation.
#[derive(Debug, Clone)]
pub enum Expr {
    Literal(Bson),
    /// `$a.b`: a path from the current document.
    Field(Path),
    /// `$$name.a.b`: a variable bound by an enclosing `$let`, `$map`, `$filter` or `$reduce`.
    Var(String, Path),
    /// `$$ROOT.a.b`: the document itself, or a path from it.
    Root(Path),
    /// `$$CURRENT.a.b`: the document field paths read (the document itself unless `$let` or
    /// `$map` rebinds `CURRENT`).
    Current(Path),
    /// `$$REMOVE`: missing.
    Remove,
    /// `$$NOW`: the time of the evaluation.
    Now,
    /// `{$meta: "textScore"}`: the document's text score, which a pipeline's leading `$text`
    /// gives it (see [`crate::text::SCORE_FIELD`]).
    TextScore,
    Object(Vec<(String, Expr)>),
    Array(Vec<Expr>),
    /// An operator over positional arguments.
    Call(Func, Vec<Expr>),
    Cond(Box<[Expr; 3]>),
    Switch {
        branches: Vec<(Expr, Expr)>,
        default: Option<Box<Expr>>,
    },
    Let {
        vars: Vec<(String, Expr)>,
        body: Box<Expr>,
    },
    Map {
        input: Box<Expr>,
        name: String,
        body: Box<Expr>,
    },
    Filter {
        input: Box<Expr>,
        name: String,
        cond: Box<Expr>,
        limit: Option<Box<Expr>>,
    },
    Reduce {
        input: Box<Expr>,
        initial: Box<Expr>,
        body: Box<Expr>,
    },
    GetField {
        field: Box<Expr>,
        input: Box<Expr>,
    },
    /// `$setField` (with a value) and `$unsetField` (without).
    SetField {
        field: Box<Expr>,
        input: Box<Expr>,
        value: Option<Box<Expr>>,
    },
    /// `$zip`: arrays read side by side, to the shortest (or the longest, with defaults).
    Zip {
        inputs: Vec<Expr>,
        longest: bool,
        defaults: Vec<Expr>,
    },
    /// `$sortArray`: an array sorted by whole values, or its documents by fields.
    SortArray {
        input: Box<Expr>,
        by: ArraySort,
    },
    /// An operator of named arguments, one per name it knows (see `named`).
    Named {
        op: Named,
        args: Vec<Option<Expr>>,
    },
    /// `$firstN`, `$lastN`, `$minN`, `$maxN` over an array (see `take_n`).
    TakeN {
        pick: take_n::Pick,
        n: Box<Expr>,
        input: Box<Expr>,
    },
}

impl Expr {
    /// Whether the expression is a constant: it reads no document, no variable and no clock
    /// (conservatively: an operator that binds variables counts as reading them).
    pub(crate) fn is_constant(&self) -> bool {
        match self {
            Expr::Literal(_) | Expr::Remove => true,
            Expr::Object(fields) => fields.iter().all(|(_, e)| e.is_constant()),
            Expr::Array(items) | Expr::Call(_, items) => items.iter().all(Expr::is_constant),
            Expr::Named { args, .. } => args.iter().flatten().all(Expr::is_constant),
            Expr::Cond(parts) => parts.iter().all(Expr::is_constant),
            Expr::Switch { branches, default } => {
                branches
                    .iter()
                    .all(|(case, then)| case.is_constant() && then.is_constant())
                    && default.as_ref().is_none_or(|d| d.is_constant())
            }
            _ => false,
        }
    }
}

impl Expr {
    /// Adds to `paths` the document fields the expression reads, dotted, and says whether
    /// that is all it reads: `false` when it reads the whole document (`$$ROOT`, `$$CURRENT`,
    /// `$getField` of the document) or rebinds `CURRENT`, so that no list of fields is known.
    /// A stage that reads only listed fields may be fed documents projected to them.
    pub(crate) fn fields_read(&self, paths: &mut Vec<String>) -> bool {
        fn all<'e>(exprs: impl IntoIterator<Item = &'e Expr>, paths: &mut Vec<String>) -> bool {
            exprs.into_iter().all(|e| e.fields_read(paths))
        }
        match self {
            Expr::Literal(_) | Expr::Remove | Expr::Now | Expr::Var(..) | Expr::TextScore => true,
            Expr::Field(path) => {
                paths.push(path.as_str().to_owned());
                true
            }
            Expr::Root(path) | Expr::Current(path) => {
                if path.is_empty() {
                    return false;
                }
                paths.push(path.as_str().to_owned());
                true
            }
            Expr::Object(fields) => all(fields.iter().map(|(_, e)| e), paths),
            Expr::Array(items) | Expr::Call(_, items) => all(items, paths),
            Expr::Named { args, .. } => all(args.iter().flatten(), paths),
            Expr::Cond(parts) => all(parts.iter(), paths),
            Expr::Switch { branches, default } => all(
                branches
                    .iter()
                    .flat_map(|(case, then)| [case, then])
                    .chain(default.as_deref()),
                paths,
            ),
            Expr::Let { vars, body } => {
                !vars.iter().any(|(name, _)| name == "CURRENT")
                    && all(vars.iter().map(|(_, e)| e), paths)
                    && body.fields_read(paths)
            }
            Expr::Map { input, name, body } => {
                name != "CURRENT" && input.fields_read(paths) && body.fields_read(paths)
            }
            Expr::Filter {
                input, cond, limit, ..
            } => all(
                [&**input, &**cond].into_iter().chain(limit.as_deref()),
                paths,
            ),
            Expr::Reduce {
                input,
                initial,
                body,
            } => all([&**input, &**initial, &**body], paths),
            Expr::GetField { field, input } => all([&**field, &**input], paths),
            Expr::SetField {
                field,
                input,
                value,
            } => all(
                [&**field, &**input].into_iter().chain(value.as_deref()),
                paths,
            ),
            Expr::Zip {
                inputs, defaults, ..
            } => all(inputs.iter().chain(defaults), paths),
            Expr::SortArray { input, .. } => input.fields_read(paths),
            Expr::TakeN { n, input, .. } => all([&**n, &**input], paths),
        }
    }
}

/// How `$sortArray` orders: whole values in a direction, or documents by a sort of fields.
#[derive(Debug, Clone)]
pub enum ArraySort {
    Whole { descending: bool },
    Fields(crate::query::Sort),
}

pub(crate) fn error(operator: &str, reason: impl fmt::Display) -> ExprError {
    ExprError {
        operator: operator.to_owned(),
        reason: reason.to_string(),
        code: ErrorCode::BAD_VALUE,
    }
}

/// The variables an expression may name while it is parsed: the `let` constants, and the
/// names bound by the operators around it.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Each value, or `None` for missing (a variable bound to `$$REMOVE` or an absent field).
    constants: Vec<(String, Option<Bson>)>,
    bound: Vec<String>,
}

impl Scope {
    /// A scope holding the variables of a `let` option, each evaluated once now.
    pub fn with_let(vars: Option<&Document>) -> Result<Scope, ExprError> {
        let mut scope = Scope::default();
        for (name, value) in vars.into_iter().flatten() {
            check_name(name)?;
            let expr = Expr::parse(value, &scope)?;
            let value = eval_in(&expr, &Env::constant())?;
            scope.constants.push((name.clone(), value));
        }
        Ok(scope)
    }

    /// This scope with system variables of fixed values (`$redact`'s `$$DESCEND`, ...).
    pub(crate) fn with_system(&self, vars: &[(&str, Bson)]) -> Scope {
        let mut inner = self.clone();
        inner
            .constants
            .extend(vars.iter().map(|(n, v)| ((*n).to_owned(), Some(v.clone()))));
        inner
    }

    fn binding(&self, names: impl IntoIterator<Item = String>) -> Scope {
        let mut inner = self.clone();
        inner.bound.extend(names);
        inner
    }
}

/// A user variable's name: a lowercase letter or a non-ASCII character first, then letters,
/// digits and underscores.
fn check_name(name: &str) -> Result<(), ExprError> {
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || !c.is_ascii());
    if first_ok && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        Ok(())
    } else {
        Err(error(
            "let",
            format!(
                "`{name}` is not a valid variable name (it must start with a lowercase letter)"
            ),
        )
        .with_code(ErrorCode::FAILED_TO_PARSE))
    }
}

/// The path of a field reference (`$a.b`, `$$var.a.b`): empty for the value itself.
fn split_path(path: &str) -> Path {
    if path.is_empty() {
        Path::empty()
    } else {
        Path::new(path)
    }
}

impl Expr {
    /// Parses an expression; see the module documentation for the grammar.
    pub fn parse(value: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
        if nesting::value_exceeds(value, MAX_INPUT_DEPTH) {
            return Err(
                error("expression", nesting::too_deep_reason()).with_code(ErrorCode::OVERFLOW)
            );
        }
        Expr::parse_nested(value, scope)
    }

    /// [`Expr::parse`] of a part of an expression whose depth was checked whole.
    fn parse_nested(value: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
        match value {
            Bson::String(s) if s.starts_with("$$") => parse_variable(&s[2..], scope),
            Bson::String(s) if s.starts_with('$') => {
                // `$$` was taken above: the path does not start with `$`.
                let path = Path::checked(&s[1..])
                    .ok_or_else(|| error("$", format!("`{s}` is not a valid field path")))?;
                Ok(Expr::Field(path))
            }
            Bson::Document(d) => match d.iter().next() {
                Some((key, arg)) if key.starts_with('$') => {
                    if d.len() > 1 {
                        return Err(error(
                            key,
                            "an operator expression must be the document's only field",
                        ));
                    }
                    parse_operator(key, arg, scope)
                }
                _ => {
                    let mut fields = Vec::with_capacity(d.len());
                    for (k, v) in d {
                        if k.starts_with('$') {
                            return Err(error(
                                k,
                                "a field of an object expression cannot start with `$`",
                            ));
                        }
                        fields.push((k.clone(), Expr::parse_nested(v, scope)?));
                    }
                    Ok(Expr::Object(fields))
                }
            },
            Bson::Array(items) => Ok(Expr::Array(
                items
                    .iter()
                    .map(|v| Expr::parse_nested(v, scope))
                    .collect::<Result<_, _>>()?,
            )),
            other => Ok(Expr::Literal(other.clone())),
        }
    }
}

fn parse_variable(text: &str, scope: &Scope) -> Result<Expr, ExprError> {
    let (name, rest) = text.split_once('.').unwrap_or((text, ""));
    let path = split_path(rest);
    match name {
        "ROOT" => return Ok(Expr::Root(path)),
        "CURRENT" => return Ok(Expr::Current(path)),
        "REMOVE" if path.is_empty() => return Ok(Expr::Remove),
        "NOW" if path.is_empty() => return Ok(Expr::Now),
        _ => {}
    }
    if scope.bound.iter().any(|b| b == name) {
        return Ok(Expr::Var(name.to_owned(), path));
    }
    if let Some((_, value)) = scope.constants.iter().rev().find(|(n, _)| n == name) {
        let value = eval::path_of(value.clone(), &path);
        return Ok(value.map_or(Expr::Remove, Expr::Literal));
    }
    Err(error(
        &format!("$${name}"),
        format!("use of undefined variable `{name}`"),
    )
    .with_code(ErrorCode::location(17276)))
}

/// The fields of an operator's document argument, refusing unknown ones and requiring some.
fn named_args<'a>(
    operator: &str,
    arg: &'a Bson,
    known: &[&str],
    required: &[&str],
) -> Result<Vec<Option<&'a Bson>>, ExprError> {
    let Bson::Document(d) = arg else {
        return Err(error(operator, "expects a document of named arguments"));
    };
    if let Some(unknown) = d.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(error(operator, format!("unknown argument `{unknown}`")));
    }
    if let Some(missing) = required.iter().find(|r| !d.contains_key(**r)) {
        return Err(error(operator, format!("missing argument `{missing}`")));
    }
    Ok(known.iter().map(|k| d.get(*k)).collect())
}

/// `$zip: {inputs, useLongestLength, defaults}`, with MongoDB's codes 34460 to 34467.
fn parse_zip(arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let op = "$zip";
    let c = |n: i32| ErrorCode::location(n);
    let Bson::Document(d) = arg else {
        return Err(error(
            op,
            "expects an object of inputs, useLongestLength and defaults",
        )
        .with_code(c(34460)));
    };
    let mut inputs = Vec::new();
    let mut defaults = Vec::new();
    let mut longest = false;
    for (field, value) in d {
        match (field.as_str(), value) {
            ("inputs", Bson::Array(items)) => {
                inputs = items
                    .iter()
                    .map(|i| Expr::parse_nested(i, scope))
                    .collect::<Result<_, _>>()?;
            }
            ("inputs", _) => {
                return Err(error(op, "inputs must be an array of expressions").with_code(c(34461)));
            }
            ("defaults", Bson::Array(items)) => {
                defaults = items
                    .iter()
                    .map(|i| Expr::parse_nested(i, scope))
                    .collect::<Result<_, _>>()?;
            }
            ("defaults", _) => {
                return Err(
                    error(op, "defaults must be an array of expressions").with_code(c(34462))
                );
            }
            ("useLongestLength", Bson::Boolean(b)) => longest = *b,
            ("useLongestLength", _) => {
                return Err(error(op, "useLongestLength must be a bool").with_code(c(34463)));
            }
            (other, _) => {
                return Err(
                    error(op, format!("found an unknown argument: {other}")).with_code(c(34464))
                );
            }
        }
    }
    if inputs.is_empty() {
        return Err(
            error(op, "inputs is a required field with at least one input").with_code(c(34465)),
        );
    }
    if !defaults.is_empty() && !longest {
        return Err(error(
            op,
            "cannot specify defaults unless useLongestLength is true",
        )
        .with_code(c(34466)));
    }
    if !defaults.is_empty() && defaults.len() != inputs.len() {
        return Err(error(op, "defaults and inputs must be the same length").with_code(c(34467)));
    }
    Ok(Expr::Zip {
        inputs,
        longest,
        defaults,
    })
}

/// `$sortArray: {input, sortBy}`; `sortBy` is read as written (1, -1, or a sort document),
/// with MongoDB's codes 2942500 to 2942507.
fn parse_sort_array(arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let op = "$sortArray";
    let c = |n: i32| ErrorCode::location(n);
    let Bson::Document(d) = arg else {
        return Err(error(op, "expects an object of input and sortBy").with_code(c(2_942_500)));
    };
    if let Some(unknown) = d.keys().find(|k| *k != "input" && *k != "sortBy") {
        return Err(error(op, format!("unknown argument `{unknown}`")).with_code(c(2_942_501)));
    }
    let input = d
        .get("input")
        .ok_or_else(|| error(op, "requires 'input' to be specified").with_code(c(2_942_502)))?;
    let sort_by = d
        .get("sortBy")
        .ok_or_else(|| error(op, "requires 'sortBy' to be specified").with_code(c(2_942_503)))?;
    let by = match sort_by {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
            match as_i64(sort_by) {
                Some(1) => ArraySort::Whole { descending: false },
                Some(-1) => ArraySort::Whole { descending: true },
                _ => {
                    return Err(error(op, "sortBy must be 1 or -1").with_code(c(2_942_506)));
                }
            }
        }
        Bson::Document(spec) => {
            let fail = |reason: &str| error(op, reason.to_owned()).with_code(c(2_942_505));
            if spec.is_empty() {
                return Err(fail("the sort document needs at least one field"));
            }
            let sort = crate::query::Sort::parse(spec)
                .map_err(|_| fail("the sort element value must be either 1 or -1"))?;
            ArraySort::Fields(sort)
        }
        _ => {
            return Err(error(
                op,
                "use 1/-1 to sort the whole element, or {field: 1/-1} to sort embedded fields",
            )
            .with_code(c(2_942_507)));
        }
    };
    Ok(Expr::SortArray {
        input: boxed(input, scope)?,
        by,
    })
}

/// The member of the N family an operator names.
fn pick_of(operator: &str) -> take_n::Pick {
    match operator {
        "$firstN" => take_n::Pick::First,
        "$lastN" => take_n::Pick::Last,
        "$minN" => take_n::Pick::Min,
        _ => take_n::Pick::Max,
    }
}

/// `{n, <values>}` of the N family (`<values>` is `input`), with MongoDB's codes: not a
/// document, an unknown argument (5787901), `n` missing (5787906), the values missing
/// (5787907).
pub(crate) fn n_arguments<'a>(
    operator: &str,
    arg: &'a Bson,
    values: &str,
) -> Result<(&'a Bson, &'a Bson), ExprError> {
    let Bson::Document(d) = arg else {
        return Err(error(operator, "expects a document with `n` and `input`")
            .with_code(ErrorCode::location(pick_of(operator).not_a_document_code())));
    };
    if let Some(unknown) = d.keys().find(|k| *k != "n" && *k != values) {
        return Err(error(operator, format!("unknown argument `{unknown}`"))
            .with_code(ErrorCode::location(5_787_901)));
    }
    let n = d.get("n").ok_or_else(|| {
        error(operator, "missing value for 'n'").with_code(ErrorCode::location(5_787_906))
    })?;
    let input = d.get(values).ok_or_else(|| {
        error(operator, format!("missing value for '{values}'"))
            .with_code(ErrorCode::location(5_787_907))
    })?;
    Ok((n, input))
}

fn boxed(value: &Bson, scope: &Scope) -> Result<Box<Expr>, ExprError> {
    Expr::parse_nested(value, scope).map(Box::new)
}

fn variable_name(operator: &str, value: Option<&Bson>, default: &str) -> Result<String, ExprError> {
    match value {
        None => Ok(default.to_owned()),
        // `CURRENT` may be rebound: field paths then read each element.
        Some(Bson::String(s)) if s == "CURRENT" && operator == "$map" => Ok(s.clone()),
        Some(Bson::String(s)) => {
            check_name(s).map_err(|e| ExprError {
                operator: operator.to_owned(),
                ..e
            })?;
            Ok(s.clone())
        }
        Some(_) => Err(error(operator, "`as` must be a variable name")),
    }
}

/// An operator document `{key: arg}`. The operators whose arguments have a shape of their own
/// are parsed by a function each; the rest are [`Named`] operators (a document of named
/// arguments) or a [`Func`] (positional arguments).
fn parse_operator(key: &str, arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    match key {
        "$literal" | "$const" => Ok(Expr::Literal(arg.clone())),
        "$meta" => match arg {
            Bson::String(kind) if kind == "textScore" => Ok(Expr::TextScore),
            other => Err(error(
                key,
                format!("unsupported argument {other}: this engine gives \"textScore\""),
            )
            .with_code(ErrorCode::location(17308))),
        },
        "$replaceOne" | "$replaceAll" => parse_replace(key, arg, scope),
        "$cond" => parse_cond(arg, scope),
        "$switch" => parse_switch(arg, scope),
        "$let" => parse_let(arg, scope),
        "$map" => parse_map(arg, scope),
        "$filter" => parse_filter(arg, scope),
        "$reduce" => parse_reduce(arg, scope),
        "$zip" => parse_zip(arg, scope),
        "$sortArray" => parse_sort_array(arg, scope),
        "$firstN" | "$lastN" | "$minN" | "$maxN" => {
            let (n, input) = n_arguments(key, arg, "input")?;
            Ok(Expr::TakeN {
                pick: pick_of(key),
                n: boxed(n, scope)?,
                input: boxed(input, scope)?,
            })
        }
        "$getField" => parse_get_field(arg, scope),
        "$setField" | "$unsetField" => parse_set_field(key, arg, scope),
        _ => match Named::by_name(key) {
            Some(op) => Ok(Expr::Named {
                op,
                args: op.parse(arg, scope)?,
            }),
            None => parse_call(key, arg, scope),
        },
    }
}

/// `$replaceOne` and `$replaceAll`: `{input, find, replacement}`, positional once parsed, with
/// MongoDB's codes: not a document (51751), an unknown argument (51750), each one missing
/// (51749, 51748, 51747).
fn parse_replace(key: &str, arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let c = |n: i32| ErrorCode::location(n);
    let Bson::Document(d) = arg else {
        return Err(
            error(key, "expects a document of input, find and replacement").with_code(c(51751)),
        );
    };
    if let Some(unknown) = d
        .keys()
        .find(|k| !matches!(k.as_str(), "input" | "find" | "replacement"))
    {
        return Err(error(key, format!("unknown argument `{unknown}`")).with_code(c(51750)));
    }
    let mut args = Vec::with_capacity(3);
    for (field, missing) in [("input", 51749), ("find", 51748), ("replacement", 51747)] {
        let value = d.get(field).ok_or_else(|| {
            error(key, format!("requires '{field}' to be specified")).with_code(c(missing))
        })?;
        args.push(Expr::parse_nested(value, scope)?);
    }
    let func = if key == "$replaceOne" {
        Func::ReplaceOne
    } else {
        Func::ReplaceAll
    };
    Ok(Expr::Call(func, args))
}

// The operators that choose a branch.

/// `$cond`: `[if, then, else]` or `{if, then, else}`.
fn parse_cond(arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let op = "$cond";
    let parts: Vec<&Bson> = match arg {
        Bson::Array(items) if items.len() == 3 => items.iter().collect(),
        Bson::Array(_) => return Err(error(op, "expects three arguments")),
        Bson::Document(_) => named_args(op, arg, &["if", "then", "else"], &["if", "then", "else"])?
            .into_iter()
            .flatten()
            .collect(),
        _ => return Err(error(op, "expects an array or a document")),
    };
    Ok(Expr::Cond(Box::new([
        Expr::parse_nested(parts[0], scope)?,
        Expr::parse_nested(parts[1], scope)?,
        Expr::parse_nested(parts[2], scope)?,
    ])))
}

/// `$switch: {branches: [{case, then}, ...], default}`.
fn parse_switch(arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let op = "$switch";
    let args = named_args(op, arg, &["branches", "default"], &["branches"])?;
    let Some(Bson::Array(items)) = args[0] else {
        return Err(error(op, "`branches` must be an array"));
    };
    let mut branches = Vec::with_capacity(items.len());
    for item in items {
        let case = named_args(op, item, &["case", "then"], &["case", "then"])?;
        branches.push((
            Expr::parse_nested(case[0].unwrap_or(&Bson::Null), scope)?,
            Expr::parse_nested(case[1].unwrap_or(&Bson::Null), scope)?,
        ));
    }
    let default = args[1].map(|d| boxed(d, scope)).transpose()?;
    Ok(Expr::Switch { branches, default })
}

// The operators that bind variables: the names they bind are in scope in the argument that
// reads them, and only there.

/// `$let: {vars, in}`: the variables are parsed in the outer scope, `in` with them bound.
fn parse_let(arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let op = "$let";
    let args = named_args(op, arg, &["vars", "in"], &["vars", "in"])?;
    let Some(Bson::Document(defs)) = args[0] else {
        return Err(error(op, "`vars` must be a document"));
    };
    let mut vars = Vec::with_capacity(defs.len());
    for (name, value) in defs {
        // `CURRENT` may be rebound: field paths in `in` then read its value.
        if name != "CURRENT" {
            check_name(name).map_err(|e| ExprError {
                operator: op.to_owned(),
                ..e
            })?;
        }
        vars.push((name.clone(), Expr::parse_nested(value, scope)?));
    }
    let inner = scope.binding(vars.iter().map(|(n, _)| n.clone()));
    let body = boxed(args[1].unwrap_or(&Bson::Null), &inner)?;
    Ok(Expr::Let { vars, body })
}

/// `$map: {input, as, in}`, with MongoDB's codes: not a document (16878), an unknown argument
/// (16879), `input` missing (16880), `in` missing (16882).
fn parse_map(arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let op = "$map";
    let c = ErrorCode::location;
    let Bson::Document(given) = arg else {
        return Err(error(op, "expects a document of input, as and in").with_code(c(16878)));
    };
    if let Some(unknown) = given
        .keys()
        .find(|k| !["input", "as", "in"].contains(&k.as_str()))
    {
        return Err(error(op, format!("unknown argument `{unknown}`")).with_code(c(16879)));
    }
    if !given.contains_key("input") {
        return Err(error(op, "missing argument `input`").with_code(c(16880)));
    }
    if !given.contains_key("in") {
        return Err(error(op, "missing argument `in`").with_code(c(16882)));
    }
    let args = named_args(op, arg, &["input", "as", "in"], &["input", "in"])?;
    let name = variable_name(op, args[1], "this")?;
    let inner = scope.binding([name.clone()]);
    Ok(Expr::Map {
        input: boxed(args[0].unwrap_or(&Bson::Null), scope)?,
        body: boxed(args[2].unwrap_or(&Bson::Null), &inner)?,
        name,
    })
}

/// `$filter: {input, as, cond, limit}`.
fn parse_filter(arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let op = "$filter";
    let args = named_args(
        op,
        arg,
        &["input", "as", "cond", "limit"],
        &["input", "cond"],
    )?;
    let name = variable_name(op, args[1], "this")?;
    let inner = scope.binding([name.clone()]);
    Ok(Expr::Filter {
        input: boxed(args[0].unwrap_or(&Bson::Null), scope)?,
        cond: boxed(args[2].unwrap_or(&Bson::Null), &inner)?,
        limit: args[3].map(|l| boxed(l, scope)).transpose()?,
        name,
    })
}

/// `$reduce: {input, initialValue, in}`: `in` reads `$$this` and `$$value`.
fn parse_reduce(arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let names = &["input", "initialValue", "in"];
    let args = named_args("$reduce", arg, names, names)?;
    let inner = scope.binding(["this".to_owned(), "value".to_owned()]);
    Ok(Expr::Reduce {
        input: boxed(args[0].unwrap_or(&Bson::Null), scope)?,
        initial: boxed(args[1].unwrap_or(&Bson::Null), scope)?,
        body: boxed(args[2].unwrap_or(&Bson::Null), &inner)?,
    })
}

// A document's fields.

/// `$getField: {field, input}`, or `$getField: "name"`, short for `{field: "name", input:
/// "$$CURRENT"}`; MongoDB's codes: an unknown argument (3041701), `field` missing (3041702).
fn parse_get_field(arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let op = "$getField";
    let (field, input) = match arg {
        Bson::Document(d) if !d.keys().next().is_some_and(|k| k.starts_with('$')) => {
            let args = named_args(op, arg, &["field", "input"], &[])
                .map_err(|e| e.with_code(ErrorCode::location(3_041_701)))?;
            if args[0].is_none() {
                return Err(
                    error(op, "missing argument `field`").with_code(ErrorCode::location(3_041_702))
                );
            }
            (
                args[0].unwrap_or(&Bson::Null),
                args[1].map(|i| boxed(i, scope)).transpose()?,
            )
        }
        other => (other, None),
    };
    Ok(Expr::GetField {
        field: Box::new(field_name(op, field, scope)?),
        input: input.unwrap_or_else(|| Box::new(Expr::Current(Path::empty()))),
    })
}

/// `$setField: {field, input, value}` and `$unsetField: {field, input}`, with MongoDB's codes:
/// not a document (4161100), an unknown argument (4161101), `field`, `input` or `value`
/// missing (4161102, 4161109, 4161103).
fn parse_set_field(key: &str, arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let setting = key == "$setField";
    let known: &[&str] = if setting {
        &["field", "input", "value"]
    } else {
        &["field", "input"]
    };
    let Bson::Document(given) = arg else {
        return Err(error(key, "expects a document of named arguments")
            .with_code(ErrorCode::location(4_161_100)));
    };
    let args = named_args(key, arg, known, &[])
        .map_err(|e| e.with_code(ErrorCode::location(4_161_101)))?;
    for (name, missing_code) in [
        ("field", 4_161_102),
        ("input", 4_161_109),
        ("value", 4_161_103),
    ] {
        if known.contains(&name) && !given.contains_key(name) {
            return Err(error(key, format!("missing argument `{name}`"))
                .with_code(ErrorCode::location(missing_code)));
        }
    }
    Ok(Expr::SetField {
        field: Box::new(field_name(key, args[0].unwrap_or(&Bson::Null), scope)?),
        input: boxed(args[1].unwrap_or(&Bson::Null), scope)?,
        value: if setting {
            Some(boxed(args[2].unwrap_or(&Bson::Null), scope)?)
        } else {
            None
        },
    })
}

// Positional arguments.

/// A [`Func`]: an array of arguments, or one written without the array, whose count it
/// checks; `$rand` also takes `{}`, and a date part `{date, timezone}`.
fn parse_call(key: &str, arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let Some(func) = Func::named(key) else {
        return Err(error(key, "unknown expression operator")
            .with_code(ErrorCode::INVALID_PIPELINE_OPERATOR));
    };
    let args: Vec<Expr> = match arg {
        Bson::Array(items) => items
            .iter()
            .map(|v| Expr::parse_nested(v, scope))
            .collect::<Result<_, _>>()?,
        Bson::Document(d) if d.is_empty() && func == Func::Rand => Vec::new(),
        Bson::Document(d)
            if func.is_date_part() && !d.keys().next().is_some_and(|k| k.starts_with('$')) =>
        {
            return parse_date_part(key, func, arg, scope);
        }
        single => vec![Expr::parse_nested(single, scope)?],
    };
    func.check_arity(args.len())?;
    Ok(Expr::Call(func, args))
}

/// A date part's `{date, timezone}`: the date, and the zone when written; MongoDB's codes: an
/// unknown argument (40535), `date` missing (40539).
fn parse_date_part(key: &str, func: Func, arg: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let args = named_args(key, arg, &["date", "timezone"], &[])
        .map_err(|e| e.with_code(ErrorCode::location(40535)))?;
    let Some(date) = args[0] else {
        return Err(error(key, "missing 'date' argument").with_code(ErrorCode::location(40539)));
    };
    let mut parts = vec![Expr::parse_nested(date, scope)?];
    if let Some(zone) = args[1] {
        parts.push(Expr::parse_nested(zone, scope)?);
    }
    Ok(Expr::Call(func, parts))
}

/// The `field` of `$getField` and `$setField`: a string, or an expression giving one that does
/// not depend on the document (`$literal` is how a name starting with `$` is written).
fn field_name(operator: &str, field: &Bson, scope: &Scope) -> Result<Expr, ExprError> {
    let (path_code, type_code) = if operator == "$getField" {
        (5_654_600, 5_654_602)
    } else {
        (4_161_108, 4_161_107)
    };
    let c = ErrorCode::location;
    match field {
        Bson::String(s) if s.starts_with('$') => Err(error(
            operator,
            format!("`field` `{s}` is a path; write a name starting with `$` through $literal"),
        )
        .with_code(c(path_code))),
        Bson::String(_) => Ok(Expr::Literal(field.clone())),
        Bson::Document(_) => {
            let expr = Expr::parse_nested(field, scope)?;
            match eval_in(&expr, &Env::constant()) {
                Ok(Some(Bson::String(_))) => Ok(expr),
                _ => Err(error(
                    operator,
                    "`field` must be a string or an expression that is a constant string",
                )
                .with_code(c(type_code))),
            }
        }
        _ => Err(error(operator, "`field` must be a string").with_code(c(type_code))),
    }
}

impl Expr {
    /// Evaluates against `root` (the current document); `None` is missing.
    pub fn evaluate(&self, root: &Document) -> Result<Option<Bson>, ExprError> {
        eval_in(self, &Env::new(root))
    }

    /// [`Expr::evaluate`] with strings compared under a collation.
    pub fn evaluate_collated(
        &self,
        root: &Document,
        collation: Option<&crate::collation::Collation>,
    ) -> Result<Option<Bson>, ExprError> {
        eval_in(self, &Env::collated(root, collation))
    }
}
