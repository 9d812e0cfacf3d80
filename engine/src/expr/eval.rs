//! Evaluating an [`Expr`] against a document.

use std::borrow::Cow;

use bson::{Bson, Document};

use super::bounds::{Built, Held};
use super::{Expr, ExprError, error};
use crate::collation::Collation;
use crate::number::Number;
use crate::path::Path;

/// What `CURRENT` is: the root document, or a value (missing too) that `$let` or `$map` bound.
#[derive(Debug, Clone)]
enum Current {
    Root,
    Rebound(Option<Bson>),
}

/// What an expression is evaluated against: the current document, the variables bound by the
/// operators around it, and the time `$$NOW` reads (one value for the whole evaluation).
///
/// Scopes chain: an inner scope holds only what it binds and borrows the rest from the scope
/// around it, so that each step of `$map`, `$filter` or `$reduce` costs its own bindings, never
/// a copy of every outer variable.
#[derive(Debug)]
pub(crate) struct Env<'a> {
    root: Cow<'a, Document>,
    /// What field paths read: the root, or `CURRENT` as `$let` or `$map` rebound it.
    current: Cow<'a, Current>,
    /// The variables this scope binds, innermost last.
    vars: Vec<(String, Option<Bson>)>,
    /// The scope around this one.
    outer: Option<&'a Env<'a>>,
    now: bson::DateTime,
    /// How strings compare (`$eq`, `$lt`, `$in`, ...), the query's collation.
    pub(crate) collation: Option<&'a Collation>,
}

impl<'a> Env<'a> {
    pub(crate) fn new(root: &'a Document) -> Env<'a> {
        Env::collated(root, None)
    }

    /// An environment whose string comparisons follow `collation`.
    pub(crate) fn collated(root: &'a Document, collation: Option<&'a Collation>) -> Env<'a> {
        Env {
            root: Cow::Borrowed(root),
            current: Cow::Owned(Current::Root),
            vars: Vec::new(),
            outer: None,
            now: bson::DateTime::now(),
            collation,
        }
    }

    /// For expressions evaluated before any document: `let` variables, constant names.
    pub(crate) fn constant() -> Env<'static> {
        Env {
            root: Cow::Owned(Document::new()),
            current: Cow::Owned(Current::Root),
            vars: Vec::new(),
            outer: None,
            now: bson::DateTime::now(),
            collation: None,
        }
    }

    /// This environment with `CURRENT` (what field paths read) rebound to `value`; `$$ROOT`
    /// stays the document (`$redact` at a nested level).
    pub(crate) fn with_current(&self, value: Bson) -> Env<'_> {
        let mut inner = self.with([]);
        inner.current = Cow::Owned(Current::Rebound(Some(value)));
        inner
    }

    /// The value of the innermost binding of `name`, in this scope or one around it; `None`
    /// when it holds missing.
    fn variable(&self, name: &str) -> Option<&Bson> {
        let mut scope = Some(self);
        while let Some(env) = scope {
            if let Some((_, value)) = env.vars.iter().rev().find(|(n, _)| n == name) {
                return value.as_ref();
            }
            scope = env.outer;
        }
        None
    }

    /// A scope inside this one binding `bindings`; everything else is read through this one.
    fn with(&self, bindings: impl IntoIterator<Item = (String, Option<Bson>)>) -> Env<'_> {
        Env {
            root: Cow::Borrowed(&*self.root),
            current: Cow::Borrowed(&*self.current),
            vars: bindings.into_iter().collect(),
            outer: Some(self),
            now: self.now,
            collation: self.collation,
        }
    }
}

/// MongoDB's truth: false, null, missing, undefined and every zero are false.
pub fn truthy(value: Option<&Bson>) -> bool {
    match value {
        None
        | Some(
            Bson::Null | Bson::Undefined | Bson::Boolean(false) | Bson::Int32(0) | Bson::Int64(0),
        ) => false,
        Some(Bson::Double(d)) => *d != 0.0,
        Some(Bson::Decimal128(d)) => !matches!(
            Number::from_decimal128(*d),
            Number::Finite(ref n) if n.is_zero()
        ),
        Some(_) => true,
    }
}

/// The value at `path` below `value`, by the expression rule ([`Path::resolve`]); an owned
/// value with the empty path is itself, not a copy.
pub(crate) fn path_of(value: Option<Bson>, path: &Path) -> Option<Bson> {
    if path.is_empty() {
        return value;
    }
    path.resolve(&value?)
}

/// The value at `path` below a variable or a rebound `CURRENT`: only what the path reaches
/// is copied.
fn rebound_path(current: Option<&Bson>, path: &Path) -> Option<Bson> {
    if path.is_empty() {
        return current.cloned();
    }
    path.resolve(current?)
}

/// The document as expressions see it whole (`$$ROOT`, `$$CURRENT`): without the text score a
/// pipeline carries beside its fields (see [`crate::text::SCORE_FIELD`]).
fn visible(root: &Document) -> Document {
    let mut doc = root.clone();
    doc.remove(crate::text::SCORE_FIELD);
    doc
}

/// Evaluates `expr` in `env`; `None` is missing. Reading a value is done here; each operator
/// with a rule of its own has a function below, by family: building values, choosing a
/// branch, binding variables, iterating an array, a document's fields, reshaping arrays.
pub(crate) fn eval_in(expr: &Expr, env: &Env<'_>) -> Result<Option<Bson>, ExprError> {
    match expr {
        Expr::Literal(v) => Ok(Some(v.clone())),
        // The current document is the root: no stage here rebinds `$$CURRENT`.
        Expr::Root(path) if path.is_empty() => Ok(Some(Bson::Document(visible(&env.root)))),
        Expr::Root(path) => Ok(path.resolve_in(&env.root)),
        Expr::Field(path) => Ok(match &*env.current {
            Current::Root => path.resolve_in(&env.root),
            Current::Rebound(current) => rebound_path(current.as_ref(), path),
        }),
        Expr::Current(path) => Ok(match &*env.current {
            Current::Root if path.is_empty() => Some(Bson::Document(visible(&env.root))),
            Current::Root => path.resolve_in(&env.root),
            Current::Rebound(current) => rebound_path(current.as_ref(), path),
        }),
        Expr::Var(name, path) => Ok(rebound_path(env.variable(name), path)),
        Expr::Remove => Ok(None),
        Expr::Now => Ok(Some(Bson::DateTime(env.now))),
        Expr::TextScore => match env.root.get(crate::text::SCORE_FIELD) {
            Some(score @ Bson::Double(_)) => Ok(Some(score.clone())),
            _ => Err(super::error(
                "$meta",
                "query requires text score metadata, but it is not available",
            )
            .with_code(crate::code::ErrorCode::location(40218))),
        },
        Expr::Object(fields) => object(fields, env),
        Expr::Array(items) => array(items, env),
        Expr::Call(func, args) => func.call(args, env),
        Expr::Named { op, args } => op.call(args, env),
        Expr::Cond(parts) => cond(parts, env),
        Expr::Switch { branches, default } => switch(branches, default.as_deref(), env),
        Expr::Let { vars, body } => let_in(vars, body, env),
        Expr::Map { input, name, body } => map(input, name, body, env),
        Expr::Filter {
            input,
            name,
            cond,
            limit,
        } => filter(input, name, cond, limit.as_deref(), env),
        Expr::Reduce {
            input,
            initial,
            body,
        } => reduce(input, initial, body, env),
        Expr::GetField { field, input } => get_field(field, input, env),
        Expr::SetField {
            field,
            input,
            value,
        } => set_field(field, input, value.as_deref(), env),
        Expr::Zip {
            inputs,
            longest,
            defaults,
        } => zip(inputs, *longest, defaults, env),
        Expr::SortArray { input, by } => sort_array(input, by, env),
        Expr::TakeN { pick, n, input } => take_n(*pick, n, input, env),
    }
}

// Building values.

/// An object expression: its fields in order, a missing value omitting its field.
fn object(fields: &[(String, Expr)], env: &Env<'_>) -> Result<Option<Bson>, ExprError> {
    let mut out = Document::new();
    let mut built = Built::new("an object expression");
    for (name, value) in fields {
        if let Some(v) = eval_in(value, env)? {
            built.add(Some(name), &v)?;
            out.insert(name.clone(), v);
        }
    }
    Ok(Some(Bson::Document(out)))
}

/// An array expression: a missing element is null (an array keeps its positions).
fn array(items: &[Expr], env: &Env<'_>) -> Result<Option<Bson>, ExprError> {
    let mut out = Vec::with_capacity(items.len());
    let mut built = Built::new("an array expression");
    for item in items {
        let value = eval_in(item, env)?.unwrap_or(Bson::Null);
        built.add(None, &value)?;
        out.push(value);
    }
    Ok(Some(Bson::Array(out)))
}

// Choosing a branch: only the branch taken is evaluated.

/// `$cond`: `then` when the condition is true, else `else`.
fn cond(parts: &[Expr; 3], env: &Env<'_>) -> Result<Option<Bson>, ExprError> {
    let [condition, then, otherwise] = parts;
    if truthy(eval_in(condition, env)?.as_ref()) {
        eval_in(then, env)
    } else {
        eval_in(otherwise, env)
    }
}

/// `$switch`: the `then` of the first true `case`, else the default, which must then exist
/// (MongoDB's 40066).
fn switch(
    branches: &[(Expr, Expr)],
    default: Option<&Expr>,
    env: &Env<'_>,
) -> Result<Option<Bson>, ExprError> {
    for (case, then) in branches {
        if truthy(eval_in(case, env)?.as_ref()) {
            return eval_in(then, env);
        }
    }
    match default {
        Some(d) => eval_in(d, env),
        None => Err(error(
            "$switch",
            "could not find a matching branch for an input, and no default was specified",
        )
        .with_code(crate::code::ErrorCode::location(40066))),
    }
}

// Binding variables.

/// `$let`: each variable evaluated in the outer environment, then `in` with them bound;
/// binding `CURRENT` rebinds what field paths read.
fn let_in(vars: &[(String, Expr)], body: &Expr, env: &Env<'_>) -> Result<Option<Bson>, ExprError> {
    let mut bound = Vec::with_capacity(vars.len());
    let mut current = None;
    let mut held = Held::new("$let");
    for (name, value) in vars {
        let value = eval_in(value, env)?;
        if let Some(value) = &value {
            held.hold(value)?;
        }
        if name == "CURRENT" {
            current = Some(value);
        } else {
            bound.push((name.clone(), value));
        }
    }
    let mut inner = env.with(bound);
    if let Some(current) = current {
        inner.current = Cow::Owned(Current::Rebound(current));
    }
    eval_in(body, &inner)
}

// Iterating an array: a null or missing input gives null (see `array_input`).

/// `$map`: `in` of each element bound to `as` (or to `CURRENT`, which field paths then read);
/// a missing result is null.
fn map(input: &Expr, name: &str, body: &Expr, env: &Env<'_>) -> Result<Option<Bson>, ExprError> {
    let Some(items) = array_input("$map", eval_in(input, env)?)? else {
        return Ok(Some(Bson::Null));
    };
    let mut held = Held::new("$map");
    held.hold_all(&items)?;
    let mut out = Vec::with_capacity(items.len());
    let mut built = Built::new("$map");
    for item in items {
        crate::interrupt::check()?;
        let inner = if name == "CURRENT" {
            env.with_current(item)
        } else {
            env.with([(name.to_owned(), Some(item))])
        };
        let value = eval_in(body, &inner)?.unwrap_or(Bson::Null);
        built.add(None, &value)?;
        out.push(value);
    }
    Ok(Some(Bson::Array(out)))
}

/// `$filter`: the elements whose `cond` is true with the element bound to `as`, at most
/// `limit` of them; the limit is evaluated after the input, and the condition no further than
/// the limit.
fn filter(
    input: &Expr,
    name: &str,
    cond: &Expr,
    limit: Option<&Expr>,
    env: &Env<'_>,
) -> Result<Option<Bson>, ExprError> {
    let Some(items) = array_input("$filter", eval_in(input, env)?)? else {
        return Ok(Some(Bson::Null));
    };
    let mut held = Held::new("$filter");
    held.hold_all(&items)?;
    let limit = match limit {
        None => None,
        Some(l) => filter_limit(eval_in(l, env)?)?,
    };
    let mut out = Vec::new();
    for item in items {
        crate::interrupt::check()?;
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        let inner = env.with([(name.to_owned(), Some(item.clone()))]);
        if truthy(eval_in(cond, &inner)?.as_ref()) {
            out.push(item);
        }
    }
    Ok(Some(Bson::Array(out)))
}

/// `$filter`'s `limit`: none when null or missing, else a positive whole number.
fn filter_limit(limit: Option<Bson>) -> Result<Option<usize>, ExprError> {
    match limit {
        None | Some(Bson::Null) => Ok(None),
        Some(v) => match super::func::as_i64(&v) {
            Some(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => Err(error("$filter", "`limit` must be a positive whole number")),
        },
    }
}

/// `$reduce`: `in` of each element bound to `this` and the value so far to `value`,
/// starting from `initialValue` (evaluated after the input).
fn reduce(
    input: &Expr,
    initial: &Expr,
    body: &Expr,
    env: &Env<'_>,
) -> Result<Option<Bson>, ExprError> {
    let Some(items) = array_input("$reduce", eval_in(input, env)?)? else {
        return Ok(Some(Bson::Null));
    };
    let mut held = Held::new("$reduce");
    held.hold_all(&items)?;
    let mut value = eval_in(initial, env)?;
    for item in items {
        crate::interrupt::check()?;
        // The value so far is held while the next one is computed from it.
        let mut held_value = Held::new("$reduce");
        if let Some(value) = &value {
            held_value.hold(value)?;
        }
        let inner = env.with([("this".to_owned(), Some(item)), ("value".to_owned(), value)]);
        value = eval_in(body, &inner)?;
    }
    Ok(value)
}

// A document's fields, named by `field` (evaluated first).

/// `$getField`: the field of `input`; a missing input gives missing (MongoDB's jstests), a
/// null one null.
fn get_field(field: &Expr, input: &Expr, env: &Env<'_>) -> Result<Option<Bson>, ExprError> {
    let name = field_name(field, env)?;
    match eval_in(input, env)? {
        Some(Bson::Document(d)) => Ok(d.get(&name).cloned()),
        None => Ok(None),
        Some(Bson::Null | Bson::Undefined) => Ok(Some(Bson::Null)),
        Some(_) => Err(error("$getField", "`input` must be a document")),
    }
}

/// `$setField` (with a value) and `$unsetField` (without): `input` with the field set, or
/// removed when unset or set to a missing value; a null or missing input gives null.
fn set_field(
    field: &Expr,
    input: &Expr,
    value: Option<&Expr>,
    env: &Env<'_>,
) -> Result<Option<Bson>, ExprError> {
    let operator = if value.is_some() {
        "$setField"
    } else {
        "$unsetField"
    };
    let name = field_name(field, env)?;
    // The input is held while the value is evaluated.
    let input = eval_in(input, env)?;
    let mut held = Held::new(operator);
    if let Some(input) = &input {
        held.hold(input)?;
    }
    let mut doc = match input {
        Some(Bson::Document(d)) => d,
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(_) => {
            return Err(error(operator, "`input` must be a document")
                .with_code(crate::code::ErrorCode::location(4_161_105)));
        }
    };
    let value = match value {
        Some(value) => eval_in(value, env)?,
        None => None,
    };
    match value {
        Some(v) => {
            doc.insert(name, v);
        }
        None => {
            doc.remove(&name);
        }
    }
    // A value placed one level down: as deep as it, plus one.
    let doc = Bson::Document(doc);
    super::bounds::check(operator, &doc)?;
    Ok(Some(doc))
}

// Reshaping arrays.

/// `$zip`: row `i` holds element `i` of each input, as many rows as the shortest input has
/// elements, or with `useLongestLength` the longest, a shorter input giving its default (or
/// null) past its end. The defaults are evaluated only when the lengths differ.
fn zip(
    inputs: &[Expr],
    longest: bool,
    defaults: &[Expr],
    env: &Env<'_>,
) -> Result<Option<Bson>, ExprError> {
    let mut held = Held::new("$zip");
    let Some(arrays) = zip_inputs(inputs, env, &mut held)? else {
        return Ok(Some(Bson::Null));
    };
    let lengths = arrays.iter().map(Vec::len);
    let (shortest, widest) = (
        lengths.clone().min().unwrap_or(0),
        lengths.max().unwrap_or(0),
    );
    let fill: Vec<Bson> = if shortest == widest {
        Vec::new()
    } else {
        defaults
            .iter()
            .map(|d| eval_in(d, env).map(|v| v.unwrap_or(Bson::Null)))
            .collect::<Result<_, _>>()?
    };
    let rows = if longest { widest } else { shortest };
    let row = |i: usize| {
        let at = |(j, a): (usize, &Vec<Bson>)| {
            a.get(i)
                .cloned()
                .unwrap_or_else(|| fill.get(j).cloned().unwrap_or(Bson::Null))
        };
        Bson::Array(arrays.iter().enumerate().map(at).collect())
    };
    // Defaults repeat on every row past a shorter input's end: rows join one at a time, so the
    // bound stops the first row too many.
    let mut out = Vec::with_capacity(rows.min(shortest.max(1)));
    let mut built = Built::new("$zip");
    for i in 0..rows {
        let next = row(i);
        built.add(None, &next)?;
        out.push(next);
    }
    Ok(Some(Bson::Array(out)))
}

/// The arrays `$zip` reads, in order: `None` at the first null or missing input (the result
/// is null, and later inputs are not evaluated); any other non-array is MongoDB's 34468.
fn zip_inputs(
    inputs: &[Expr],
    env: &Env<'_>,
    held: &mut Held,
) -> Result<Option<Vec<Vec<Bson>>>, ExprError> {
    let mut arrays = Vec::with_capacity(inputs.len());
    for input in inputs {
        match eval_in(input, env)? {
            None | Some(Bson::Null | Bson::Undefined) => return Ok(None),
            Some(Bson::Array(items)) => {
                held.hold_all(&items)?;
                arrays.push(items);
            }
            Some(other) => {
                return Err(error(
                    "$zip",
                    format!("found a non-array expression in input: {other}"),
                )
                .with_code(crate::code::ErrorCode::location(34468)));
            }
        }
    }
    Ok(Some(arrays))
}

/// `$sortArray`: the input's elements by whole value, or by fields of its documents; a null or
/// missing input gives null.
fn sort_array(
    input: &Expr,
    by: &super::ArraySort,
    env: &Env<'_>,
) -> Result<Option<Bson>, ExprError> {
    let mut items = match eval_in(input, env)? {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(Bson::Array(items)) => items,
        Some(other) => {
            return Err(error(
                "$sortArray",
                format!(
                    "the input argument to $sortArray must be an array, but was of type: {}",
                    super::func::type_alias(Some(&other))
                ),
            )
            .with_code(crate::code::ErrorCode::location(2_942_504)));
        }
    };
    let cx = env.collation;
    match by {
        super::ArraySort::Whole { descending } => items.sort_by(|a, b| {
            let o = super::func::compare_bson(a, b, cx);
            if *descending { o.reverse() } else { o }
        }),
        super::ArraySort::Fields(sort) => items = sorted_by_fields(items, sort, cx),
    }
    Ok(Some(Bson::Array(items)))
}

/// Elements sorted by the keys `sort` reads from them; elements that are not documents sort
/// by null keys.
fn sorted_by_fields(
    items: Vec<Bson>,
    sort: &crate::query::Sort,
    cx: Option<&Collation>,
) -> Vec<Bson> {
    let empty = bson::RawDocumentBuf::new();
    let mut keyed: Vec<(Vec<bson::RawBson>, Bson)> = items
        .into_iter()
        .map(|item| {
            let keys = match &item {
                Bson::Document(d) => bson::RawDocumentBuf::try_from(d)
                    .map_or_else(|_| sort.keys(&empty, cx), |raw| sort.keys(&raw, cx)),
                _ => sort.keys(&empty, cx),
            };
            (keys, item)
        })
        .collect();
    keyed.sort_by(|(a, _), (b, _)| sort.compare_keys(a, b, cx));
    keyed.into_iter().map(|(_, item)| item).collect()
}

/// `$firstN`, `$lastN`, `$minN`, `$maxN`: `n` is checked before the input is evaluated, and
/// the input must be an array (MongoDB's 5788200).
fn take_n(
    pick: super::take_n::Pick,
    n: &Expr,
    input: &Expr,
    env: &Env<'_>,
) -> Result<Option<Bson>, ExprError> {
    let op = pick.operator();
    let n = super::take_n::checked_n(op, eval_in(n, env)?.as_ref())?;
    let Some(Bson::Array(items)) = eval_in(input, env)? else {
        return Err(error(op, "input must be an array")
            .with_code(crate::code::ErrorCode::location(5_788_200)));
    };
    let mut kept = super::take_n::Kept::new(pick, n);
    for item in items {
        kept.add(Some(item), env.collation);
    }
    Ok(Some(Bson::Array(kept.into_values())))
}

fn field_name(field: &Expr, env: &Env<'_>) -> Result<String, ExprError> {
    match eval_in(field, env)? {
        Some(Bson::String(s)) => Ok(s),
        _ => Err(error("$getField", "`field` must evaluate to a string")),
    }
}

/// The array an array operator iterates: `None` for null or missing (the result is null).
fn array_input(operator: &str, value: Option<Bson>) -> Result<Option<Vec<Bson>>, ExprError> {
    match value {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Array(items)) => Ok(Some(items)),
        Some(other) => Err(error(
            operator,
            format!(
                "`input` must be an array, not {}",
                super::func::type_alias(Some(&other))
            ),
        )
        .with_code(match operator {
            "$map" => crate::code::ErrorCode::location(16883),
            "$filter" => crate::code::ErrorCode::location(28651),
            "$reduce" => crate::code::ErrorCode::location(40080),
            _ => crate::code::ErrorCode::BAD_VALUE,
        })),
    }
}
