//! `$graphLookup`: a recursive search of another collection of the same snapshot.
//!
//! From the values of `startWith` (an array counts as its elements), each round finds the
//! documents whose `connectToField` equals one of the round's values, with a find whose
//! `$in` the field's index serves, restricted by `restrictSearchWithMatch`; their
//! `connectFromField` values are the next round's. A document is found once, at its shortest
//! depth (written to `depthField` as a long); `maxDepth` bounds the rounds (0: no recursion).
//! A null value matches a null field, never a missing one, and a missing value matches
//! nothing. The results, in the order found, go to `as`; they are held in memory, counted
//! against the operation's memory budget (see `crate::budget`).

use std::collections::HashSet;

use bson::{Bson, Document};

use super::{Context, Stage, set_output};
use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::expr::{Env, Expr, Scope, compare_bson, error, eval_in};
use crate::path::Path;
use crate::query::FindOptions;

/// A parsed `$graphLookup`.
pub(super) struct GraphLookup {
    from: String,
    start_with: Expr,
    connect_from: Path,
    connect_to: String,
    output: Path,
    max_depth: Option<u64>,
    depth_field: Option<Path>,
    restrict: Option<Document>,
}

fn fail(code: ErrorCode, reason: impl std::fmt::Display) -> Error {
    Error::from(error("$graphLookup", reason).with_code(code))
}

pub(super) fn parse(arg: &Bson, scope: &Scope) -> Result<Stage> {
    let c = ErrorCode::location;
    let Bson::Document(spec) = arg else {
        return Err(fail(
            ErrorCode::FAILED_TO_PARSE,
            "the $graphLookup specification must be an object",
        ));
    };
    let known = [
        "from",
        "startWith",
        "connectFromField",
        "connectToField",
        "as",
        "maxDepth",
        "depthField",
        "restrictSearchWithMatch",
    ];
    if let Some(unknown) = spec.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(fail(c(40104), format!("unknown argument `{unknown}`")));
    }
    let from = match spec.get("from") {
        Some(Bson::String(s)) if s.is_empty() => {
            return Err(fail(
                ErrorCode::INVALID_NAMESPACE,
                "`from` cannot be an empty collection name",
            ));
        }
        Some(Bson::String(s)) => s.clone(),
        _ => {
            return Err(fail(
                ErrorCode::FAILED_TO_PARSE,
                "`from` must be the name of a collection",
            ));
        }
    };
    let field = |name: &str| -> Result<Option<String>> {
        match spec.get(name) {
            None => Ok(None),
            Some(Bson::String(s)) if s.starts_with('$') => Err(fail(
                c(16410),
                format!("`{name}` is a field name, which cannot start with `$`"),
            )),
            Some(Bson::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(fail(c(40103), format!("`{name}` must be a field name"))),
        }
    };
    let required = |name: &str, value: Option<String>| {
        value.ok_or_else(|| fail(c(40105), format!("missing required argument `{name}`")))
    };
    let connect_from = required("connectFromField", field("connectFromField")?)?;
    let connect_to = required("connectToField", field("connectToField")?)?;
    let output = required("as", field("as")?)?;
    let depth_field = field("depthField")?;
    let Some(start_with) = spec.get("startWith") else {
        return Err(fail(c(40105), "missing required argument `startWith`"));
    };
    let max_depth = match spec.get("maxDepth") {
        None => None,
        Some(v @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_))) => {
            let n = crate::expr::as_f64(v)
                .ok_or_else(|| fail(c(40100), "`maxDepth` must be a number"))?;
            if n < 0.0 {
                return Err(fail(c(40101), "`maxDepth` must be non-negative"));
            }
            if n.fract() != 0.0 {
                return Err(fail(c(40102), "`maxDepth` must be a whole number"));
            }
            Some(n as u64)
        }
        Some(_) => return Err(fail(c(40100), "`maxDepth` must be a number")),
    };
    let restrict = match spec.get("restrictSearchWithMatch") {
        None => None,
        Some(Bson::Document(d)) => {
            // Checked now, so a malformed filter is refused before any document.
            crate::query::Filter::parse(d)?;
            Some(d.clone())
        }
        Some(_) => {
            return Err(fail(
                c(40185),
                "`restrictSearchWithMatch` must be a query filter",
            ));
        }
    };
    Ok(Stage::GraphLookup(Box::new(GraphLookup {
        from,
        start_with: Expr::parse(start_with, scope)?,
        connect_from: Path::new(&connect_from),
        connect_to,
        output: Path::new(&output),
        max_depth,
        depth_field: depth_field.as_deref().map(Path::new),
        restrict,
    })))
}

/// A value as bytes, to remember which values a search has followed.
fn value_key(v: &Bson) -> Vec<u8> {
    bson::RawDocumentBuf::try_from(&bson::doc! { "v": v.clone() })
        .map(bson::RawDocumentBuf::into_bytes)
        .unwrap_or_default()
}

impl GraphLookup {
    /// One input document with the documents its search reaches at the output path.
    pub(super) fn join(&self, mut doc: Document, context: &Context<'_>) -> Result<Document> {
        let env = Env::collated(&doc, context.collation.as_deref());
        let mut frontier: Vec<Bson> = match eval_in(&self.start_with, &env)? {
            None => Vec::new(),
            Some(Bson::Array(items)) => items,
            Some(v) => vec![v],
        };
        let mut found = Vec::new();
        if let Some(coll) = context.snapshot.collection(&self.from)? {
            let mut followed: HashSet<Vec<u8>> = frontier.iter().map(value_key).collect();
            let mut seen: HashSet<Vec<u8>> = HashSet::new();
            let mut held = 0usize;
            let options = FindOptions {
                collation: context.options.collation.clone(),
                ..FindOptions::default()
            };
            let to_path = Path::new(&self.connect_to);
            let mut depth: u64 = 0;
            while !frontier.is_empty() && self.max_depth.is_none_or(|max| depth <= max) {
                let mut filter =
                    bson::doc! { self.connect_to.clone(): { "$in": frontier.clone() } };
                if let Some(restrict) = &self.restrict {
                    filter = bson::doc! { "$and": [filter, restrict.clone()] };
                }
                let mut next = Vec::new();
                let null_sought = frontier
                    .iter()
                    .any(|v| matches!(v, Bson::Null | Bson::Undefined));
                for result in coll.find(&filter, &options)? {
                    let mut result = result?;
                    // `$in: [null]` also matches a missing field, which a search does not:
                    // with null sought, a document needs a value equal to a sought one.
                    if null_sought {
                        let values = to_path.elements(&result);
                        let cx = context.collation.as_deref();
                        if !values.iter().any(|v| {
                            frontier
                                .iter()
                                .any(|f| compare_bson(v, f, cx) == std::cmp::Ordering::Equal)
                        }) {
                            continue;
                        }
                    }
                    let id = value_key(result.get("_id").unwrap_or(&Bson::Null));
                    if !seen.insert(id) {
                        continue;
                    }
                    for value in self.connect_from.elements(&result) {
                        if followed.insert(value_key(&value)) {
                            next.push(value);
                        }
                    }
                    if let Some(field) = &self.depth_field {
                        set_output(&mut result, field, Bson::Int64(depth as i64));
                    }
                    held += crate::document::encoded_size(&result);
                    if context.budget.exceeded(held) {
                        return Err(fail(
                            ErrorCode::location(40099),
                            format!(
                                "the documents found exceed the memory limit of {} bytes",
                                context.budget.limit()
                            ),
                        ));
                    }
                    found.push(Bson::Document(result));
                }
                frontier = next;
                depth += 1;
            }
        }
        set_output(&mut doc, &self.output, Bson::Array(found));
        Ok(doc)
    }
}
