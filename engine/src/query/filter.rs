//! Parsing MongoDB filter documents into a [`Filter`] tree.
//!
//! The grammar, as MongoDB documents it: a filter is a document whose fields are either
//! top-level operators (`$and`, `$or`, `$nor` with non-empty arrays of filters; `$comment`,
//! ignored) or field paths. A field's condition is an operator document when its first key
//! starts with `$` (then every key must be an operator), a regular expression (a match), or any
//! other value (equality, documents and arrays compared whole). Several operators on one field
//! are independent conditions on that field, each free to match a different array element.
//!
//! Negations (`$ne`, `$nin`, `$not`, `$exists: false`) are kept as [`Predicate::Not`] so the
//! matcher can apply them to the field as a whole: `{a: {$ne: 1}}` excludes `[1, 2]`.
//!
//! Regexes compile once per query; patterns of up to 256 bytes that compile small are kept in
//! a bounded process-wide cache, since a query shape run again with the same regex would
//! otherwise spend more compiling it than matching it against hundreds of strings.

use crate::code::ErrorCode;
use crate::nesting::{self, MAX_INPUT_DEPTH};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};

use bson::{Bson, Document, RawBson};

use super::bits::{BitTest, Bits};
use crate::error::FilterError;
use crate::expr::{Expr, Scope};
use crate::path::Path;
use crate::pcre::{CompileError, Compiled};
use crate::text::{TextMatch, TextSearch};

/// A parsed filter; see the module documentation.
#[derive(Debug, Clone)]
pub enum Filter {
    /// Every filter matches (an empty list matches every document).
    And(Vec<Filter>),
    /// At least one filter matches.
    Or(Vec<Filter>),
    /// No filter matches.
    Nor(Vec<Filter>),
    /// The value(s) at a dotted path satisfy a predicate.
    Field(Path, Predicate),
    /// `$expr`: an aggregation expression over the whole document is true.
    Expr(Box<Expr>),
    /// `$jsonSchema`: the document meets a JSON schema (see `json_schema`).
    JsonSchema(std::sync::Arc<super::json_schema::JsonSchema>),
    /// `$text`: a search of the collection's text index (see [`crate::text`]).
    Text(Box<TextFilter>),
}

/// A `$text` condition: its arguments, and once the query runs on a collection, the search
/// bound to the collection's text index, which judges documents.
#[derive(Debug, Clone)]
pub struct TextFilter {
    pub search: TextSearch,
    pub(crate) bound: Option<std::sync::Arc<TextMatch>>,
}

/// A condition on the value(s) found at a path.
#[derive(Debug, Clone)]
pub enum Predicate {
    Eq(RawBson),
    Gt(RawBson),
    Gte(RawBson),
    Lt(RawBson),
    Lte(RawBson),
    In(Vec<Pattern>),
    /// Every pattern matches (an empty list matches nothing).
    All(Vec<Pattern>),
    Size(u64),
    /// The path resolves to some value (`$exists: false` is `Not([Exists])`).
    Exists,
    Type(Vec<TypeSpec>),
    Mod {
        divisor: i64,
        remainder: i64,
    },
    Regex(QueryRegex),
    ElemMatch(Box<ElemMatch>),
    /// `$bitsAllSet` and its three siblings.
    Bits(Bits),
    /// None of the field's values satisfies all of the predicates together.
    Not(Vec<Predicate>),
    /// `$geoWithin`, `$geoIntersects`, `$near` or `$nearSphere` (see [`crate::geo`]).
    Geo(Box<crate::geo::GeoCondition>),
}

/// One value of `$in` or `$all`.
#[derive(Debug, Clone)]
pub enum Pattern {
    Value(RawBson),
    Regex(QueryRegex),
    /// Only in `$all`: `{$all: [{$elemMatch: ...}]}`.
    ElemMatch(Box<ElemMatch>),
}

/// The condition an array element must meet for `$elemMatch`.
#[derive(Debug, Clone)]
pub enum ElemMatch {
    /// `{$elemMatch: {$gte: 80, $lt: 85}}`: operators applied to the element itself.
    Value(Vec<Predicate>),
    /// `{$elemMatch: {product: "xyz", score: {$gte: 8}}}`: a filter over a subdocument element.
    Document(Filter),
}

/// A `$type` operand: a BSON type number, or the `number` alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeSpec {
    Code(i32),
    Number,
}

/// A compiled `$regex` with its MongoDB pattern and options kept for equality with stored
/// regular expressions.
#[derive(Debug, Clone)]
pub struct QueryRegex {
    pub pattern: String,
    pub options: String,
    pub(crate) compiled: Compiled,
}

fn error(path: &str, operator: &str, reason: impl fmt::Display) -> FilterError {
    FilterError::new(path, operator, reason)
}

fn raw(path: &str, operator: &str, value: &Bson) -> Result<RawBson, FilterError> {
    RawBson::try_from(value.clone()).map_err(|e| error(path, operator, e))
}

/// Top-level operators that take a list of filters.
pub(crate) const LOGICAL: [&str; 3] = ["$and", "$or", "$nor"];

impl Filter {
    /// Parses a filter document; see the module documentation for the grammar.
    pub fn parse(doc: &Document) -> Result<Filter, FilterError> {
        Filter::parse_with(doc, &Scope::default())
    }

    /// Parses a filter whose `$expr` may name the variables of `scope` (a `let` option).
    pub fn parse_with(doc: &Document, scope: &Scope) -> Result<Filter, FilterError> {
        if nesting::exceeds(doc, MAX_INPUT_DEPTH) {
            return Err(
                error("", "filter", nesting::too_deep_reason()).with_code(ErrorCode::OVERFLOW)
            );
        }
        let filter = Filter::parse_nested(doc, scope)?;
        check_text_placement(&filter)?;
        check_near_placement(&filter)?;
        Ok(filter)
    }

    /// The `$text` condition of the filter, if it has one.
    pub(crate) fn text(&self) -> Option<&TextFilter> {
        match self {
            Filter::Text(text) => Some(text),
            Filter::And(parts) | Filter::Or(parts) => parts.iter().find_map(Filter::text),
            _ => None,
        }
    }

    /// The filter's `$near` or `$nearSphere` and its path, which may stand at the top level or
    /// under a top-level `$and` only (see [`check_near_placement`]).
    pub(crate) fn near(&self) -> Option<(&Path, &crate::geo::Near)> {
        match self {
            Filter::Field(path, Predicate::Geo(condition)) => match &**condition {
                crate::geo::GeoCondition::Near(near) => Some((path, near)),
                _ => None,
            },
            // `$and`s nest: a near condition under any depth of them is at the top level.
            Filter::And(parts) => parts.iter().find_map(Filter::near),
            _ => None,
        }
    }

    /// This filter with its `$near`'s maximum distance set to `max` (see [`Filter::near`]).
    #[must_use]
    pub(crate) fn with_near_max(&self, max: f64) -> Filter {
        fn set(part: &mut Filter, max: f64) {
            match part {
                Filter::Field(_, Predicate::Geo(condition)) => {
                    if let crate::geo::GeoCondition::Near(near) = &mut **condition {
                        near.max = Some(max);
                    }
                }
                Filter::And(parts) => parts.iter_mut().for_each(|p| set(p, max)),
                _ => {}
            }
        }
        let mut filter = self.clone();
        set(&mut filter, max);
        filter
    }

    /// Binds the filter's `$text` condition (see [`check_text_placement`] for where it may be)
    /// to the collection's text index.
    pub(crate) fn bind_text(&mut self, bound: &std::sync::Arc<TextMatch>) {
        match self {
            Filter::Text(text) => text.bound = Some(bound.clone()),
            Filter::And(parts) | Filter::Or(parts) => {
                for part in parts {
                    part.bind_text(bound);
                }
            }
            _ => {}
        }
    }

    /// [`Filter::parse_with`] of a part of a filter whose depth was checked whole.
    fn parse_nested(doc: &Document, scope: &Scope) -> Result<Filter, FilterError> {
        let mut parts = Vec::new();
        for (key, value) in doc {
            if let Some(operator) = key.strip_prefix('$') {
                if let Some(f) = parse_top_level(operator, value, scope)? {
                    parts.push(f);
                }
            } else {
                parse_field(key, value, &mut parts)?;
            }
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Filter::And(parts)
        })
    }
}

fn parse_top_level(
    operator: &str,
    value: &Bson,
    scope: &Scope,
) -> Result<Option<Filter>, FilterError> {
    let op = format!("${operator}");
    match operator {
        "and" | "or" | "nor" => {
            let Bson::Array(items) = value else {
                return Err(error("", &op, "expects an array of filter documents"));
            };
            if items.is_empty() {
                return Err(error("", &op, "expects a non-empty array"));
            }
            let mut filters = Vec::with_capacity(items.len());
            for item in items {
                let Bson::Document(d) = item else {
                    return Err(error("", &op, "every element must be a filter document"));
                };
                filters.push(Filter::parse_nested(d, scope)?);
            }
            Ok(Some(match operator {
                "and" => Filter::And(filters),
                "or" => Filter::Or(filters),
                _ => Filter::Nor(filters),
            }))
        }
        "comment" => Ok(None),
        "expr" => Expr::parse(value, scope)
            .map(|e| Some(Filter::Expr(Box::new(e))))
            // The expression's own code is the one MongoDB reports.
            .map_err(|e| {
                let code = e.code;
                error("", &op, e).with_code(code)
            }),
        "jsonSchema" => Ok(Some(Filter::JsonSchema(std::sync::Arc::new(
            super::json_schema::JsonSchema::parse(value)?,
        )))),
        "text" => Ok(Some(Filter::Text(Box::new(TextFilter {
            search: TextSearch::parse(value)?,
            bound: None,
        })))),
        "where" | "sampleRate" => Err(error("", &op, "is not supported by this engine")),
        _ => Err(error("", &op, "unknown top-level operator")),
    }
}

/// MongoDB's rules for where `$near` and `$nearSphere` may stand: once per filter, at the top
/// level or under a top-level `$and`, and not beside `$text`.
fn check_near_placement(filter: &Filter) -> Result<(), FilterError> {
    fn anywhere(filter: &Filter) -> usize {
        match filter {
            Filter::And(parts) | Filter::Or(parts) | Filter::Nor(parts) => {
                parts.iter().map(anywhere).sum()
            }
            Filter::Field(_, predicate) => in_predicate(predicate),
            Filter::Expr(_) | Filter::JsonSchema(_) | Filter::Text(_) => 0,
        }
    }
    fn in_predicate(predicate: &Predicate) -> usize {
        match predicate {
            Predicate::Geo(c) => usize::from(matches!(**c, crate::geo::GeoCondition::Near(_))),
            Predicate::Not(ps) => ps.iter().map(in_predicate).sum(),
            Predicate::ElemMatch(m) => match &**m {
                ElemMatch::Document(f) => anywhere(f),
                ElemMatch::Value(ps) => ps.iter().map(in_predicate).sum(),
            },
            _ => 0,
        }
    }
    /// Near conditions at the top level: in the filter itself or under `$and`s only.
    fn at_top(filter: &Filter) -> usize {
        match filter {
            Filter::And(parts) => parts.iter().map(at_top).sum(),
            other => usize::from(other.near().is_some()),
        }
    }
    let at_top = at_top(filter);
    let refuse = |reason| Err(error("", "$near", reason).with_code(ErrorCode::BAD_VALUE));
    let total = anywhere(filter);
    if total > 1 {
        return refuse("Too many geoNear expressions");
    }
    if total > at_top {
        return refuse("geoNear must be top-level expr");
    }
    if total == 1 && filter.text().is_some() {
        return refuse("text and geoNear not allowed in same query");
    }
    Ok(())
}

/// MongoDB's rules for where `$text` may stand: once per filter, at the top level or under
/// `$and` and `$or`, never under `$nor` or inside `$elemMatch`.
fn check_text_placement(filter: &Filter) -> Result<(), FilterError> {
    fn count(filter: &Filter, top: bool) -> Result<usize, FilterError> {
        Ok(match filter {
            Filter::Text(_) if top => 1,
            Filter::Text(_) => {
                return Err(error(
                    "",
                    "$text",
                    "$text can only be applied to the top-level document",
                ));
            }
            Filter::And(parts) | Filter::Or(parts) => {
                let mut n = 0;
                for part in parts {
                    n += count(part, top)?;
                }
                n
            }
            Filter::Nor(parts) => {
                for part in parts {
                    if count(part, top)? > 0 {
                        return Err(error("", "$text", "text expression not allowed in nor"));
                    }
                }
                0
            }
            Filter::Field(_, predicate) => {
                if predicate_holds_text(predicate) {
                    return Err(error(
                        "",
                        "$text",
                        "$text can only be applied to the top-level document",
                    ));
                }
                0
            }
            Filter::Expr(_) | Filter::JsonSchema(_) => 0,
        })
    }
    fn predicate_holds_text(predicate: &Predicate) -> bool {
        match predicate {
            Predicate::ElemMatch(m) => match &**m {
                ElemMatch::Document(f) => f.text().is_some() || count(f, true).is_err(),
                ElemMatch::Value(ps) => ps.iter().any(predicate_holds_text),
            },
            Predicate::Not(ps) => ps.iter().any(predicate_holds_text),
            Predicate::All(patterns) => patterns.iter().any(|p| {
                matches!(p, Pattern::ElemMatch(m) if matches!(&**m, ElemMatch::Document(f) if f.text().is_some()))
            }),
            _ => false,
        }
    }
    if count(filter, true)? > 1 {
        return Err(error("", "$text", "Too many text expressions"));
    }
    Ok(())
}

fn is_operator_document(value: &Bson) -> Option<&Document> {
    match value {
        Bson::Document(d) if starts_with_operator(d) => Some(d),
        _ => None,
    }
}

/// Whether a document's first key names an operator. A `DBRef` (`{$ref, $id}`, with an optional
/// `$db` and fields after them) is a value, as MongoDB reads it.
fn starts_with_operator(d: &Document) -> bool {
    d.keys().next().is_some_and(|k| k.starts_with('$')) && !is_dbref(d)
}

fn is_dbref(d: &Document) -> bool {
    let mut keys = d.keys();
    keys.next().is_some_and(|k| k == "$ref") && keys.next().is_some_and(|k| k == "$id")
}

fn parse_field(path: &str, value: &Bson, out: &mut Vec<Filter>) -> Result<(), FilterError> {
    let field = Path::new(path);
    if let Some(ops) = is_operator_document(value) {
        for predicate in parse_operators(path, ops)? {
            out.push(Filter::Field(field.clone(), predicate));
        }
        return Ok(());
    }
    let predicate = match value {
        Bson::RegularExpression(r) => Predicate::Regex(compile(
            path,
            "$regex",
            r.pattern.as_str(),
            r.options.as_str(),
        )?),
        other => Predicate::Eq(raw(path, "$eq", other)?),
    };
    out.push(Filter::Field(field, predicate));
    Ok(())
}

/// The predicates of an operator document; `$regex` and `$options` combine into one.
fn parse_operators(path: &str, ops: &Document) -> Result<Vec<Predicate>, FilterError> {
    let mut predicates = Vec::new();
    let options = match ops.get("$options") {
        None => None,
        Some(Bson::String(o)) => Some(o.as_str()),
        Some(_) => return Err(error(path, "$options", "expects a string")),
    };
    if options.is_some() && !ops.contains_key("$regex") {
        return Err(error(path, "$options", "needs a $regex"));
    }
    if let Some(near) = parse_near(path, ops)? {
        return Ok(vec![near]);
    }
    for (op, arg) in ops {
        if !op.starts_with('$') {
            return Err(error(
                path,
                op,
                "unknown operator (an operator document cannot mix operators and fields)",
            ));
        }
        if op == "$options" {
            continue;
        }
        predicates.push(parse_operator(path, op, arg, options)?);
    }
    Ok(predicates)
}

fn parse_operator(
    path: &str,
    op: &str,
    arg: &Bson,
    options: Option<&str>,
) -> Result<Predicate, FilterError> {
    let value = |arg: &Bson| raw(path, op, arg);
    Ok(match op {
        "$eq" => Predicate::Eq(value(arg)?),
        "$ne" => Predicate::Not(vec![Predicate::Eq(value(arg)?)]),
        "$gt" => Predicate::Gt(value(arg)?),
        "$gte" => Predicate::Gte(value(arg)?),
        "$lt" => Predicate::Lt(value(arg)?),
        "$lte" => Predicate::Lte(value(arg)?),
        "$in" => Predicate::In(parse_patterns(path, op, arg)?),
        "$nin" => Predicate::Not(vec![Predicate::In(parse_patterns(path, op, arg)?)]),
        "$all" => Predicate::All(parse_patterns(path, op, arg)?),
        "$size" => Predicate::Size(parse_size(path, arg)?),
        "$exists" => {
            if truthy(arg) {
                Predicate::Exists
            } else {
                Predicate::Not(vec![Predicate::Exists])
            }
        }
        "$type" => Predicate::Type(parse_types(path, arg)?),
        "$mod" => parse_mod(path, arg)?,
        "$regex" => parse_regex(path, arg, options)?,
        "$not" => Predicate::Not(parse_not(path, arg)?),
        "$elemMatch" => Predicate::ElemMatch(Box::new(parse_elem_match(path, arg)?)),
        "$bitsAllSet" | "$bitsAnySet" | "$bitsAllClear" | "$bitsAnyClear" => {
            let test = BitTest::from_operator(op).unwrap_or(BitTest::AllSet);
            Predicate::Bits(Bits::parse(path, op, test, arg)?)
        }
        "$geoWithin" | "$within" => geo(path, op, crate::geo::GeoCondition::within(arg))?,
        "$geoIntersects" => geo(path, op, crate::geo::GeoCondition::intersects(arg))?,
        "$maxDistance" | "$minDistance" => {
            return Err(error(path, op, "needs a $near or $nearSphere beside it"));
        }
        "$jsonSchema" | "$expr" | "$where" | "$text" => {
            return Err(error(path, op, "is not supported by this engine"));
        }
        _ => return Err(error(path, op, "unknown operator")),
    })
}

fn geo(
    path: &str,
    op: &str,
    parsed: Result<crate::geo::GeoCondition, crate::geo::GeoError>,
) -> Result<Predicate, FilterError> {
    parsed
        .map(|c| Predicate::Geo(Box::new(c)))
        .map_err(|e| error(path, op, e).with_code(ErrorCode::BAD_VALUE))
}

/// A `$near` or `$nearSphere` takes the whole operator document: its `$minDistance` and
/// `$maxDistance` beside it belong to it, and nothing else may stand there.
fn parse_near(path: &str, ops: &Document) -> Result<Option<Predicate>, FilterError> {
    let sphere = match (ops.contains_key("$near"), ops.contains_key("$nearSphere")) {
        (false, false) => return Ok(None),
        (true, true) => {
            return Err(
                error(path, "$near", "only one $near or $nearSphere per field")
                    .with_code(ErrorCode::BAD_VALUE),
            );
        }
        (near, _) => !near,
    };
    let op = if sphere { "$nearSphere" } else { "$near" };
    geo(path, op, crate::geo::GeoCondition::near(ops, sphere)).map(Some)
}

/// `$exists` takes any value: false, 0 and null mean false, everything else true.
fn truthy(v: &Bson) -> bool {
    match v {
        Bson::Boolean(b) => *b,
        Bson::Int32(i) => *i != 0,
        Bson::Int64(i) => *i != 0,
        Bson::Double(d) => *d != 0.0,
        Bson::Null | Bson::Undefined => false,
        _ => true,
    }
}

fn as_number(v: &Bson) -> Option<f64> {
    match v {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        Bson::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

fn parse_size(path: &str, arg: &Bson) -> Result<u64, FilterError> {
    let n = as_number(arg).ok_or_else(|| error(path, "$size", "expects a number"))?;
    if n < 0.0 || n.fract() != 0.0 || !n.is_finite() {
        return Err(error(path, "$size", "expects a non-negative whole number"));
    }
    Ok(n as u64)
}

fn parse_patterns(path: &str, op: &str, arg: &Bson) -> Result<Vec<Pattern>, FilterError> {
    let Bson::Array(items) = arg else {
        return Err(error(path, op, "expects an array"));
    };
    items
        .iter()
        .map(|item| match item {
            Bson::RegularExpression(r) => Ok(Pattern::Regex(compile(
                path,
                op,
                r.pattern.as_str(),
                r.options.as_str(),
            )?)),
            Bson::Document(d)
                if op == "$all" && d.keys().next().is_some_and(|k| k == "$elemMatch") =>
            {
                let Some(inner) = d.get("$elemMatch") else {
                    unreachable!("the key was just seen")
                };
                Ok(Pattern::ElemMatch(Box::new(parse_elem_match(path, inner)?)))
            }
            Bson::Document(d) if starts_with_operator(d) => {
                Err(error(path, op, "cannot hold operator documents"))
            }
            other => Ok(Pattern::Value(raw(path, op, other)?)),
        })
        .collect()
}

fn parse_types(path: &str, arg: &Bson) -> Result<Vec<TypeSpec>, FilterError> {
    let one = |v: &Bson| -> Result<TypeSpec, FilterError> {
        if let Bson::String(alias) = v {
            return type_alias(alias)
                .ok_or_else(|| error(path, "$type", format!("unknown type name `{alias}`")));
        }
        let n =
            as_number(v).ok_or_else(|| error(path, "$type", "expects a type name or number"))?;
        let code = n as i32;
        let known = matches!(code, -1 | 1..=19 | 127) && n.fract() == 0.0;
        if !known {
            return Err(error(path, "$type", format!("unknown type number {n}")));
        }
        Ok(TypeSpec::Code(code))
    };
    match arg {
        Bson::Array(items) if items.is_empty() => {
            Err(error(path, "$type", "expects at least one type"))
        }
        Bson::Array(items) => items.iter().map(one).collect(),
        other => Ok(vec![one(other)?]),
    }
}

pub(crate) fn type_alias(alias: &str) -> Option<TypeSpec> {
    let code = match alias {
        "number" => return Some(TypeSpec::Number),
        "double" => 1,
        "string" => 2,
        "object" => 3,
        "array" => 4,
        "binData" => 5,
        "undefined" => 6,
        "objectId" => 7,
        "bool" => 8,
        "date" => 9,
        "null" => 10,
        "regex" => 11,
        "dbPointer" => 12,
        "javascript" => 13,
        "symbol" => 14,
        "javascriptWithScope" => 15,
        "int" => 16,
        "timestamp" => 17,
        "long" => 18,
        "decimal" => 19,
        "minKey" => -1,
        "maxKey" => 127,
        _ => return None,
    };
    Some(TypeSpec::Code(code))
}

fn parse_mod(path: &str, arg: &Bson) -> Result<Predicate, FilterError> {
    let Bson::Array(items) = arg else {
        return Err(error(path, "$mod", "expects an array [divisor, remainder]"));
    };
    let [divisor, remainder] = items.as_slice() else {
        return Err(error(
            path,
            "$mod",
            "expects exactly two numbers: [divisor, remainder]",
        ));
    };
    let whole = |v: &Bson| -> Result<i64, FilterError> {
        let n = as_number(v)
            .ok_or_else(|| error(path, "$mod", "divisor and remainder must be numbers"))?;
        if !n.is_finite() {
            return Err(error(path, "$mod", "divisor and remainder must be finite"));
        }
        Ok(n.trunc() as i64)
    };
    let divisor = whole(divisor)?;
    if divisor == 0 {
        return Err(error(path, "$mod", "divisor cannot be 0"));
    }
    Ok(Predicate::Mod {
        divisor,
        remainder: whole(remainder)?,
    })
}

fn parse_regex(path: &str, arg: &Bson, options: Option<&str>) -> Result<Predicate, FilterError> {
    let (pattern, own_options) = match arg {
        Bson::String(p) => (p.clone(), String::new()),
        Bson::RegularExpression(r) => {
            (r.pattern.as_str().to_owned(), r.options.as_str().to_owned())
        }
        _ => {
            return Err(error(
                path,
                "$regex",
                "expects a string or a regular expression",
            ));
        }
    };
    let options = options.map_or(own_options, str::to_owned);
    Ok(Predicate::Regex(compile(
        path, "$regex", &pattern, &options,
    )?))
}

/// Compiles a MongoDB (PCRE) pattern with its options `i`, `m`, `s`, `x` (see [`crate::pcre`]).
pub(crate) fn compile(
    path: &str,
    op: &str,
    pattern: &str,
    options: &str,
) -> Result<QueryRegex, FilterError> {
    let mut flags = String::new();
    for c in options.chars() {
        match c {
            'i' | 'm' | 's' | 'x' => flags.push(c),
            'u' => {}
            other => return Err(error(path, op, format!("invalid regex option `{other}`"))),
        }
    }
    let source = if flags.is_empty() {
        pattern.to_owned()
    } else {
        format!("(?{flags}){pattern}")
    };
    let compiled = compiled(&source).map_err(|why| {
        error(
            path,
            op,
            format!("invalid or unsupported regular expression: {why}"),
        )
    })?;
    let mut sorted: Vec<char> = options.chars().collect();
    sorted.sort_unstable();
    Ok(QueryRegex {
        pattern: pattern.to_owned(),
        options: sorted.into_iter().collect(),
        compiled,
    })
}

/// Patterns up to this long are kept compiled for the next query that names them.
const CACHED_PATTERN_MAX: usize = 256;
/// ... when they compile within this size (a short pattern with counted repetitions can
/// compile to megabytes): the cache holds at most `CACHED_PATTERNS` times this.
const CACHED_COMPILED_MAX: usize = 256 << 10;
/// The most compiled patterns kept before the cache starts over.
const CACHED_PATTERNS: usize = 256;

static REGEX_CACHE: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();

/// `source` compiled, from a process-wide cache of short, small patterns: a query shape run
/// again with the same regex (a prefix search, a page of results) does not compile it again,
/// which costs more than matching it against hundreds of strings. A clone shares the compiled
/// program (each keeps its own scratch space for matching), so a cached one behaves as a
/// fresh one. The error says why the pattern does not compile.
fn compiled(source: &str) -> std::result::Result<Compiled, String> {
    let uncached = |source: &str| match Compiled::new(source, None) {
        Ok(compiled) => Ok(compiled),
        Err(CompileError::TooBig) => Err("the compiled pattern is too big".to_owned()),
        Err(CompileError::Invalid(why)) => Err(why),
    };
    if source.len() > CACHED_PATTERN_MAX {
        return uncached(source);
    }
    let cache = REGEX_CACHE.get_or_init(Mutex::default);
    if let Some(hit) = cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(source)
    {
        return Ok(hit.clone());
    }
    let fresh = match Compiled::new(source, Some(CACHED_COMPILED_MAX)) {
        Ok(small) => small,
        // Too big to keep: compiled again under the default limit, and not cached.
        Err(CompileError::TooBig) => return uncached(source),
        Err(CompileError::Invalid(why)) => return Err(why),
    };
    let mut entries = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if entries.len() >= CACHED_PATTERNS {
        entries.clear();
    }
    entries.insert(source.to_owned(), fresh.clone());
    Ok(fresh)
}

fn parse_not(path: &str, arg: &Bson) -> Result<Vec<Predicate>, FilterError> {
    match arg {
        Bson::RegularExpression(r) => Ok(vec![Predicate::Regex(compile(
            path,
            "$not",
            r.pattern.as_str(),
            r.options.as_str(),
        )?)]),
        Bson::Document(d) if d.is_empty() => Err(error(path, "$not", "cannot be empty")),
        Bson::Document(d) => match is_operator_document(arg) {
            Some(_) => parse_operators(path, d),
            None => Err(error(
                path,
                "$not",
                "expects an operator document or a regular expression",
            )),
        },
        _ => Err(error(
            path,
            "$not",
            "expects an operator document or a regular expression",
        )),
    }
}

fn parse_elem_match(path: &str, arg: &Bson) -> Result<ElemMatch, FilterError> {
    let Bson::Document(d) = arg else {
        return Err(error(path, "$elemMatch", "expects a document"));
    };
    let value_form = d
        .keys()
        .next()
        .is_some_and(|k| k.starts_with('$') && !LOGICAL.contains(&k.as_str()));
    if value_form {
        Ok(ElemMatch::Value(parse_operators(path, d)?))
    } else {
        Ok(ElemMatch::Document(Filter::parse_nested(
            d,
            &Scope::default(),
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn err(d: Document) -> FilterError {
        Filter::parse(&d).unwrap_err()
    }

    #[test]
    fn compiled_regexes_are_kept_and_the_cache_stays_bounded() {
        let first = compiled("^cache-test-a").unwrap();
        let kept = |source: &str| {
            REGEX_CACHE
                .get()
                .unwrap()
                .lock()
                .unwrap()
                .contains_key(source)
        };
        assert!(kept("^cache-test-a"));
        let again = compiled("^cache-test-a").unwrap();
        assert_eq!(first.is_match("cache-test-abc"), Ok(true));
        assert_eq!(again.is_match("cache-test-abc"), Ok(true));
        assert_eq!(again.is_match("x-cache-test-a"), Ok(false));
        let long = format!("^{}", "b".repeat(CACHED_PATTERN_MAX));
        assert_eq!(compiled(&long).unwrap().is_match(&long[1..]), Ok(true));
        // Short but large once compiled: it still compiles, and is not kept.
        let large = r"^\w{20}$";
        assert_eq!(compiled(large).unwrap().is_match(&"q".repeat(20)), Ok(true));
        assert!(!kept(large));
        assert!(compiled("(unclosed").is_err());
        for i in 0..CACHED_PATTERNS + 10 {
            let source = format!("^cache-test-{i}$");
            let compiled = compiled(&source).unwrap();
            assert_eq!(compiled.is_match(&source[1..source.len() - 1]), Ok(true));
        }
        let entries = REGEX_CACHE.get().unwrap().lock().unwrap();
        assert!(entries.len() <= CACHED_PATTERNS);
        assert!(entries.keys().all(|k| k.len() <= CACHED_PATTERN_MAX));
    }

    #[test]
    fn malformed_filters_name_path_and_operator() {
        assert_eq!(
            err(doc! { "a": { "$gt": 1, "b": 2 } }).to_string(),
            "invalid filter at `a`, operator `b`: unknown operator (an operator document cannot mix operators and fields)"
        );
        assert_eq!(err(doc! { "a": { "$foo": 1 } }).operator, "$foo");
        assert_eq!(err(doc! { "$or": [] }).reason, "expects a non-empty array");
        assert_eq!(
            err(doc! { "$and": [1] }).reason,
            "every element must be a filter document"
        );
        assert_eq!(err(doc! { "a": { "$in": 1 } }).reason, "expects an array");
        assert_eq!(err(doc! { "a": { "$size": -1 } }).operator, "$size");
        assert_eq!(err(doc! { "a": { "$size": 1.5 } }).operator, "$size");
        assert_eq!(
            err(doc! { "a": { "$mod": [0, 1] } }).reason,
            "divisor cannot be 0"
        );
        assert_eq!(err(doc! { "a": { "$mod": [1] } }).operator, "$mod");
        assert_eq!(err(doc! { "a": { "$type": "nope" } }).operator, "$type");
        assert_eq!(err(doc! { "a": { "$regex": "(" } }).operator, "$regex");
        assert_eq!(err(doc! { "a": { "$options": "i" } }).operator, "$options");
        assert_eq!(err(doc! { "a": { "$not": 5 } }).operator, "$not");
        assert_eq!(
            err(doc! { "a": { "$elemMatch": 5 } }).operator,
            "$elemMatch"
        );
        assert_eq!(err(doc! { "$where": "1" }).operator, "$where");
        assert_eq!(err(doc! { "$foo": 1 }).reason, "unknown top-level operator");
    }

    #[test]
    fn documents_not_starting_with_an_operator_are_equality() {
        let f = Filter::parse(&doc! { "a": { "b": 1, "$c": 2 } }).unwrap();
        assert!(matches!(f, Filter::Field(_, Predicate::Eq(_))));
    }
}
