//! Updates written as an aggregation pipeline: `[{$set: ...}, {$unset: ...}, ...]`.
//!
//! The stages MongoDB allows in an update: `$addFields` (alias `$set`), `$project`, `$unset`,
//! `$replaceRoot` and `$replaceWith`, each computing the next document from the previous one
//! with [`Expr`]essions that may read any field of it. A stage's expressions all see the
//! document as the stage received it. `_id` cannot change; a pipeline that drops it keeps the
//! original.
//!
//! - `$addFields: {path: expr}` sets each path; a plain document as the value adds its fields
//!   into the embedded document instead of replacing it, and a path through an array sets the
//!   field in every element. An expression that is missing (`$$REMOVE`) removes the field.
//! - `$project`: inclusion (`1`, `true`, or an expression computing a new field) or exclusion
//!   (`0`, `false`) of paths, never both except `_id: 0`; `_id` is kept unless excluded.
//! - `$unset: path` or `[paths]`: removes them (through arrays, from every element).

use crate::nesting::{self, MAX_INPUT_DEPTH};
use bson::{Bson, Document};

use super::parse::error;
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::error::UpdateError;
use crate::expr::{Env, Expr, ExprError, Scope, eval_in};
use crate::path::Path;

/// A parsed update pipeline.
#[derive(Debug, Clone)]
pub struct Pipeline {
    stages: Vec<Stage>,
}

#[derive(Debug, Clone)]
enum Stage {
    AddFields(Vec<(String, Assign)>),
    Project(Projection),
    Unset(Vec<Path>),
    ReplaceRoot(Expr),
}

/// What `$addFields` does to one field.
#[derive(Debug, Clone)]
enum Assign {
    Value(Expr),
    /// A plain document: its fields added into the embedded document.
    Merge(Vec<(String, Assign)>),
}

#[derive(Debug, Clone)]
struct Projection {
    include_id: bool,
    /// Inclusion (with computed fields) or exclusion of the other fields.
    inclusion: bool,
    fields: Vec<(String, Shape)>,
}

#[derive(Debug, Clone)]
enum Shape {
    Keep,
    Drop,
    Computed(Expr),
    Nested(Vec<(String, Shape)>),
}

impl From<ExprError> for UpdateError {
    fn from(e: ExprError) -> UpdateError {
        error("", &e.operator, e.reason).with_code(e.code)
    }
}

const STAGES: &str = "$addFields, $set, $project, $unset, $replaceRoot or $replaceWith";

impl Pipeline {
    /// Parses the stages; variables of the `let` option are in `scope`.
    pub fn parse(stages: &[Document], scope: &Scope) -> Result<Pipeline, UpdateError> {
        if nesting::any_exceeds(stages, MAX_INPUT_DEPTH) {
            return Err(error("", "pipeline", nesting::too_deep_reason())
                .with_code(crate::code::ErrorCode::OVERFLOW));
        }
        let mut parsed = Vec::with_capacity(stages.len());
        for stage in stages {
            let mut fields = stage.iter();
            let (Some((name, arg)), None) = (fields.next(), fields.next()) else {
                return Err(error(
                    "",
                    "pipeline",
                    "every stage must be a document with exactly one field",
                ));
            };
            parsed.push(parse_stage(name, arg, scope)?);
        }
        Ok(Pipeline { stages: parsed })
    }

    /// The document the stages turn `doc` into, as an aggregation computes it (no rule on
    /// `_id`).
    pub fn transform(&self, doc: Document) -> Result<Document, UpdateError> {
        self.transform_collated(doc, None)
    }

    /// [`Pipeline::transform`] with the expressions' strings compared under a collation.
    pub fn transform_collated(
        &self,
        doc: Document,
        collation: Option<&Collation>,
    ) -> Result<Document, UpdateError> {
        let mut current = doc;
        for stage in &self.stages {
            current = stage.apply(current, collation)?;
        }
        Ok(current)
    }

    /// The document the pipeline turns `doc` into as an update: `_id` kept (or restored when
    /// dropped), never changed.
    pub(crate) fn apply(
        &self,
        doc: Document,
        collation: Option<&Collation>,
    ) -> Result<Document, UpdateError> {
        let id = doc.get("_id").cloned();
        let mut current = self.transform_collated(doc, collation)?;
        match (id, current.get("_id")) {
            (Some(id), None) => {
                let mut with_id = Document::new();
                with_id.insert("_id", id);
                with_id.extend(current);
                current = with_id;
            }
            (Some(before), Some(after)) if !super::write::same_id(&before, after) => {
                return Err(error(
                    "_id",
                    "pipeline",
                    "performing an update on the path `_id` would modify the immutable field `_id`",
                )
                .with_code(ErrorCode::IMMUTABLE_FIELD));
            }
            _ => {}
        }
        Ok(current)
    }
}

fn parse_stage(name: &str, arg: &Bson, scope: &Scope) -> Result<Stage, UpdateError> {
    match name {
        "$addFields" | "$set" => {
            let Bson::Document(spec) = arg else {
                return Err(error("", name, "expects a document of fields"));
            };
            Ok(Stage::AddFields(parse_assignments(name, spec, scope)?))
        }
        "$unset" => {
            let paths: Vec<&Bson> = match arg {
                Bson::String(_) => vec![arg],
                Bson::Array(items) if !items.is_empty() => items.iter().collect(),
                _ => {
                    return Err(error(
                        "",
                        name,
                        "expects a field path or a non-empty array of field paths",
                    ));
                }
            };
            let mut out = Vec::with_capacity(paths.len());
            for p in paths {
                let Bson::String(p) = p else {
                    return Err(error("", name, "every path must be a string"));
                };
                out.push(checked_path(name, p)?);
            }
            Ok(Stage::Unset(out))
        }
        "$project" => {
            let Bson::Document(spec) = arg else {
                return Err(error("", name, "expects a document"));
            };
            parse_projection(spec, scope).map(Stage::Project)
        }
        "$replaceRoot" => {
            let Bson::Document(spec) = arg else {
                return Err(error("", name, "expects {newRoot: <expression>}"));
            };
            match (spec.get("newRoot"), spec.len()) {
                (Some(root), 1) => Ok(Stage::ReplaceRoot(Expr::parse(root, scope)?)),
                _ => Err(error("", name, "expects {newRoot: <expression>}")),
            }
        }
        "$replaceWith" => Ok(Stage::ReplaceRoot(Expr::parse(arg, scope)?)),
        other => Err(error(
            "",
            other,
            format!("is not allowed in an update pipeline (only {STAGES})"),
        )
        .with_code(ErrorCode::INVALID_OPTIONS)),
    }
}

fn checked_path(operator: &str, path: &str) -> Result<Path, UpdateError> {
    Path::checked(path).ok_or_else(|| error(path, operator, "is not a valid field path"))
}

/// The fields of an `$addFields` document, dotted paths unfolded into nested merges.
fn parse_assignments(
    operator: &str,
    spec: &Document,
    scope: &Scope,
) -> Result<Vec<(String, Assign)>, UpdateError> {
    let mut out: Vec<(String, Assign)> = Vec::new();
    for (key, value) in spec {
        let path = checked_path(operator, key)?;
        let leaf = match value {
            Bson::Document(d)
                if !d.is_empty() && !d.keys().next().is_some_and(|k| k.starts_with('$')) =>
            {
                Assign::Merge(parse_assignments(operator, d, scope)?)
            }
            other => Assign::Value(Expr::parse(other, scope)?),
        };
        insert_assignment(&mut out, path.segments(), leaf);
    }
    Ok(out)
}

fn insert_assignment(into: &mut Vec<(String, Assign)>, path: &[String], leaf: Assign) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        into.retain(|(name, _)| name != first);
        into.push((first.clone(), leaf));
        return;
    }
    if let Some((_, Assign::Merge(children))) = into.iter_mut().find(|(name, _)| name == first) {
        insert_assignment(children, rest, leaf);
    } else {
        into.retain(|(name, _)| name != first);
        let mut children = Vec::new();
        insert_assignment(&mut children, rest, leaf);
        into.push((first.clone(), Assign::Merge(children)));
    }
}

fn parse_projection(spec: &Document, scope: &Scope) -> Result<Projection, UpdateError> {
    let mut include_id = true;
    let mut fields = Vec::new();
    parse_shapes(spec, scope, &mut fields, &mut include_id, true)?;
    let mut kinds = (false, false);
    scan_kinds(&fields, &mut kinds);
    let (includes, excludes) = kinds;
    if includes && excludes {
        // MongoDB refuses the first field of the other kind: an exclusion in an inclusion
        // projection (31254) or an inclusion in an exclusion projection (31253).
        let code = if first_is_exclusion(&fields) {
            31253
        } else {
            31254
        };
        return Err(error(
            "",
            "$project",
            "cannot mix inclusion and exclusion of fields (other than `_id`)",
        )
        .with_code(ErrorCode::location(code)));
    }
    if spec.is_empty() {
        return Err(error(
            "",
            "$project",
            "a projection needs at least one field",
        ));
    }
    // `{_id: 1}` alone includes only `_id`; `{_id: 0}` alone excludes only `_id`.
    let id_included = spec.get("_id").is_some_and(|v| {
        matches!(
            v,
            Bson::Boolean(_)
                | Bson::Int32(_)
                | Bson::Int64(_)
                | Bson::Double(_)
                | Bson::Decimal128(_)
        ) && crate::expr::truthy(Some(v))
    });
    Ok(Projection {
        include_id,
        inclusion: includes || (!excludes && id_included),
        fields,
    })
}

fn parse_shapes(
    spec: &Document,
    scope: &Scope,
    out: &mut Vec<(String, Shape)>,
    include_id: &mut bool,
    top: bool,
) -> Result<(), UpdateError> {
    for (key, value) in spec {
        let path = checked_path("$project", key)?;
        let shape = match value {
            Bson::Boolean(b) => flag(*b),
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                flag(crate::expr::truthy(Some(value)))
            }
            Bson::Document(d)
                if !d.is_empty() && !d.keys().next().is_some_and(|k| k.starts_with('$')) =>
            {
                let mut children = Vec::new();
                parse_shapes(d, scope, &mut children, include_id, false)?;
                Shape::Nested(children)
            }
            other => Shape::Computed(Expr::parse(other, scope)?),
        };
        if top && key == "_id" {
            match shape {
                Shape::Drop => {
                    *include_id = false;
                    continue;
                }
                Shape::Keep => continue,
                _ => {}
            }
        }
        let mut node = shape;
        let (first, rest) = path
            .segments()
            .split_first()
            .expect("a checked path has a segment");
        for name in rest.iter().rev() {
            node = Shape::Nested(vec![(name.clone(), node)]);
        }
        out.push((first.clone(), node));
    }
    Ok(())
}

fn flag(keep: bool) -> Shape {
    if keep { Shape::Keep } else { Shape::Drop }
}

/// (some inclusion or computed field, some exclusion).
fn first_is_exclusion(fields: &[(String, Shape)]) -> bool {
    match fields.first().map(|(_, shape)| shape) {
        Some(Shape::Drop) => true,
        Some(Shape::Nested(children)) => first_is_exclusion(children),
        _ => false,
    }
}

fn scan_kinds(fields: &[(String, Shape)], kinds: &mut (bool, bool)) {
    for (_, shape) in fields {
        match shape {
            Shape::Keep | Shape::Computed(_) => kinds.0 = true,
            Shape::Drop => kinds.1 = true,
            Shape::Nested(children) => scan_kinds(children, kinds),
        }
    }
}

impl Stage {
    fn apply(&self, doc: Document, cx: Option<&Collation>) -> Result<Document, UpdateError> {
        match self {
            Stage::AddFields(assignments) => {
                let env = Env::collated(&doc, cx);
                let values = evaluate_assignments(assignments, &env)?;
                drop(env);
                let mut doc = doc;
                merge_into(&mut doc, values);
                Ok(doc)
            }
            Stage::Unset(paths) => {
                let mut doc = doc;
                for path in paths {
                    path.remove_everywhere(&mut doc);
                }
                Ok(doc)
            }
            Stage::Project(projection) => projection.apply(&doc, cx),
            Stage::ReplaceRoot(expr) => match eval_in(expr, &Env::collated(&doc, cx))? {
                Some(Bson::Document(root)) => Ok(root),
                other => Err(error(
                    "",
                    "$replaceRoot",
                    format!(
                        "the new root must be a document, not {}",
                        other.map_or_else(|| "missing".to_owned(), |v| format!("{v}"))
                    ),
                )
                .with_code(ErrorCode::location(40228))),
            },
        }
    }
}

/// An `$addFields` with every expression evaluated against the stage's input.
enum Evaluated {
    Value(Option<Bson>),
    Merge(Vec<(String, Evaluated)>),
}

fn evaluate_assignments(
    assignments: &[(String, Assign)],
    env: &Env<'_>,
) -> Result<Vec<(String, Evaluated)>, ExprError> {
    assignments
        .iter()
        .map(|(name, a)| {
            Ok((
                name.clone(),
                match a {
                    Assign::Value(e) => Evaluated::Value(eval_in(e, env)?),
                    Assign::Merge(children) => {
                        Evaluated::Merge(evaluate_assignments(children, env)?)
                    }
                },
            ))
        })
        .collect()
}

fn merge_into(doc: &mut Document, values: Vec<(String, Evaluated)>) {
    for (name, value) in values {
        match value {
            Evaluated::Value(None) => {
                doc.remove(&name);
            }
            Evaluated::Value(Some(v)) => {
                doc.insert(name, v);
            }
            // In place: an existing field keeps its position.
            Evaluated::Merge(children) => match doc.get_mut(&name) {
                Some(slot) => {
                    let old = std::mem::replace(slot, Bson::Null);
                    *slot = merged_value(Some(old), children);
                }
                None => {
                    doc.insert(name, merged_value(None, children));
                }
            },
        }
    }
}

/// `existing` with `children` added: into a document, into each element of an array, or into
/// a new document in place of anything else.
fn merged_value(existing: Option<Bson>, children: Vec<(String, Evaluated)>) -> Bson {
    match existing {
        Some(Bson::Document(mut d)) => {
            merge_into(&mut d, children);
            Bson::Document(d)
        }
        Some(Bson::Array(items)) => Bson::Array(
            items
                .into_iter()
                .map(|item| merged_value(Some(item), clone_evaluated(&children)))
                .collect(),
        ),
        _ => {
            let mut d = Document::new();
            merge_into(&mut d, children);
            Bson::Document(d)
        }
    }
}

fn clone_evaluated(values: &[(String, Evaluated)]) -> Vec<(String, Evaluated)> {
    values
        .iter()
        .map(|(n, v)| {
            (
                n.clone(),
                match v {
                    Evaluated::Value(x) => Evaluated::Value(x.clone()),
                    Evaluated::Merge(c) => Evaluated::Merge(clone_evaluated(c)),
                },
            )
        })
        .collect()
}

impl Projection {
    fn apply(&self, doc: &Document, cx: Option<&Collation>) -> Result<Document, UpdateError> {
        let env = Env::collated(doc, cx);
        let mut out = if self.inclusion {
            include(doc, &self.fields, &env)?
        } else {
            let mut out = doc.clone();
            exclude(&mut out, &self.fields);
            out
        };
        // A computed `_id` replaces the document's; either way `_id` comes first.
        let id_computed = self.fields.iter().any(|(name, _)| name == "_id");
        if self.inclusion && (self.include_id || id_computed) {
            let id = if id_computed {
                out.remove("_id")
            } else {
                doc.get("_id").cloned()
            };
            if let Some(id) = id {
                let mut with_id = Document::new();
                with_id.insert("_id", id);
                out.remove("_id");
                with_id.extend(out);
                out = with_id;
            }
        } else if !self.include_id {
            out.remove("_id");
        }
        Ok(out)
    }
}

/// The included fields of `doc` in its order, then the computed ones in the spec's order.
fn include(
    doc: &Document,
    fields: &[(String, Shape)],
    env: &Env<'_>,
) -> Result<Document, ExprError> {
    let mut out = Document::new();
    for (name, value) in doc {
        match fields.iter().find(|(n, _)| n == name).map(|(_, s)| s) {
            Some(Shape::Keep) => {
                out.insert(name.clone(), value.clone());
            }
            Some(Shape::Nested(children)) => {
                if let Some(v) = include_value(value, children, env)? {
                    out.insert(name.clone(), v);
                }
            }
            _ => {}
        }
    }
    for (name, shape) in fields {
        match shape {
            Shape::Computed(expr) => {
                if let Some(v) = eval_in(expr, env)? {
                    out.insert(name.clone(), v);
                }
            }
            Shape::Nested(children) if !doc.contains_key(name) => {
                let computed = computed_only(children, env)?;
                if !computed.is_empty() {
                    out.insert(name.clone(), computed);
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

fn include_value(
    value: &Bson,
    children: &[(String, Shape)],
    env: &Env<'_>,
) -> Result<Option<Bson>, ExprError> {
    Ok(match value {
        Bson::Document(d) => Some(Bson::Document(include(d, children, env)?)),
        Bson::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                if let Some(v) = include_value(item, children, env)? {
                    out.push(v);
                }
            }
            Some(Bson::Array(out))
        }
        // A scalar under a nested inclusion disappears, unless fields are computed there.
        _ => {
            let computed = computed_only(children, env)?;
            (!computed.is_empty()).then_some(Bson::Document(computed))
        }
    })
}

fn computed_only(children: &[(String, Shape)], env: &Env<'_>) -> Result<Document, ExprError> {
    include(&Document::new(), children, env)
}

fn exclude(doc: &mut Document, fields: &[(String, Shape)]) {
    for (name, shape) in fields {
        match shape {
            Shape::Drop => {
                doc.remove(name);
            }
            Shape::Nested(children) => match doc.get_mut(name) {
                Some(Bson::Document(d)) => exclude(d, children),
                Some(Bson::Array(items)) => {
                    for item in items {
                        if let Bson::Document(d) = item {
                            exclude(d, children);
                        }
                    }
                }
                _ => {}
            },
            Shape::Keep | Shape::Computed(_) => {}
        }
    }
}
