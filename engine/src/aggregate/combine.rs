//! Stages that run other pipelines: `$facet` (named sub-pipelines over the same input, one
//! document out, each field the array of its sub-pipeline's results, even for an empty input)
//! and `$unionWith` (the input, then another collection's documents through a pipeline of
//! their own; a missing collection adds nothing). Both read the snapshot the outer pipeline
//! reads.

use std::rc::Rc;

use bson::{Bson, Document};

use super::{AggregateOptions, Context, Documents, Stage, blocking, desugar};
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::error::{Error, Result};
use crate::expr::{Scope, error, type_alias};
use std::sync::Arc;

fn failure(stage: &str, code: ErrorCode, reason: impl std::fmt::Display) -> Error {
    Error::from(error(stage, reason).with_code(code))
}

/// Stages a `$facet` sub-pipeline may not hold (40600), as MongoDB lists them.
const NOT_IN_FACET: &[&str] = &[
    "$collStats",
    "$facet",
    "$geoNear",
    "$indexStats",
    "$out",
    "$merge",
    "$planCacheStats",
    "$changeStream",
    "$documents",
    "$currentOp",
    "$listSessions",
    "$search",
];

/// The stages of a pipeline given as a BSON array.
fn stage_documents(stage: &str, value: &Bson, code: ErrorCode) -> Result<Vec<Document>> {
    let Bson::Array(items) = value else {
        return Err(failure(
            stage,
            code,
            format!(
                "a pipeline must be an array, not {}",
                type_alias(Some(value))
            ),
        ));
    };
    items
        .iter()
        .map(|item| match item {
            Bson::Document(d) => Ok(d.clone()),
            other => Err(failure(
                stage,
                code,
                format!(
                    "a pipeline's stages are documents, not {}",
                    type_alias(Some(other))
                ),
            )),
        })
        .collect()
}

pub(super) fn parse_facet(
    arg: &Bson,
    scope: &Scope,
    collation: Option<&Arc<Collation>>,
) -> Result<Stage> {
    let name = "$facet";
    let spec = match arg {
        Bson::Document(d) if !d.is_empty() => d,
        _ => {
            return Err(failure(
                name,
                ErrorCode::location(40169),
                "the $facet specification must be a non-empty object",
            ));
        }
    };
    let mut facets = Vec::with_capacity(spec.len());
    for (field, value) in spec {
        let bad_name = if field.is_empty() {
            Some(15998)
        } else if field.starts_with('$') {
            Some(16410)
        } else if field.contains('\0') {
            Some(16411)
        } else if field.contains('.') {
            Some(16412)
        } else {
            None
        };
        if let Some(code) = bad_name {
            return Err(failure(
                name,
                ErrorCode::location(code),
                format!(
                    "`{field}`: $facet pipeline names must follow the naming rules of field path expressions"
                ),
            ));
        }
        let Bson::Array(items) = value else {
            return Err(failure(
                name,
                ErrorCode::location(40170),
                format!(
                    "arguments to $facet must be arrays, {field} is type {}",
                    type_alias(Some(value))
                ),
            ));
        };
        if items
            .iter()
            .any(|s| !matches!(s, Bson::Document(d) if !d.is_empty()))
        {
            return Err(failure(
                name,
                ErrorCode::location(40171),
                "elements of arrays in $facet spec must be non-empty objects",
            ));
        }
        let stages = stage_documents(name, value, ErrorCode::location(40171))?;
        for stage in &stages {
            if let Some(inner) = stage.keys().next()
                && NOT_IN_FACET.contains(&inner.as_str())
            {
                return Err(failure(
                    name,
                    ErrorCode::location(40600),
                    format!("{inner} is not allowed to be used within a $facet stage"),
                ));
            }
        }
        let parsed = desugar::expand(&stages, scope)?
            .iter()
            .map(|s| Stage::parse(s, scope, collation))
            .collect::<Result<Vec<_>>>()?;
        facets.push((field.clone(), parsed));
    }
    Ok(Stage::Facet(facets))
}

/// Runs a `$facet`: the input held (within the memory bound), each sub-pipeline over it.
pub(super) fn facet<'a>(
    facets: Vec<(String, Vec<Stage>)>,
    input: Documents<'a>,
    context: &Rc<Context<'a>>,
) -> Documents<'a> {
    let context = context.clone();
    blocking(move || {
        let mut held = Vec::new();
        let mut bytes = 0usize;
        for doc in input {
            let doc = doc?;
            bytes += crate::document::encoded_size(&doc);
            if context.budget.exceeded(bytes) {
                return Err(context.budget.exceeded_error("$facet"));
            }
            held.push(doc);
        }
        let mut out = Document::new();
        for (field, stages) in facets {
            let mut docs: Documents<'a> = Box::new(held.clone().into_iter().map(Ok));
            for stage in stages {
                docs = stage.stream(docs, &context);
            }
            let results = docs.collect::<Result<Vec<_>>>()?;
            out.insert(
                field,
                results
                    .into_iter()
                    .map(|doc| Bson::Document(super::without_score(doc)))
                    .collect::<Vec<_>>(),
            );
        }
        Ok(vec![out])
    })
}

pub(super) fn parse_union_with(arg: &Bson) -> Result<Stage> {
    let name = "$unionWith";
    let (coll, pipeline) = match arg {
        Bson::String(coll) => (Some(coll.clone()), Vec::new()),
        Bson::Document(spec) => {
            if let Some(unknown) = spec.keys().find(|k| *k != "coll" && *k != "pipeline") {
                return Err(failure(
                    name,
                    ErrorCode::location(40415),
                    format!("BSON field '$unionWith.{unknown}' is an unknown field"),
                ));
            }
            let coll = match spec.get("coll") {
                Some(Bson::String(c)) => Some(c.clone()),
                Some(other) => {
                    return Err(failure(
                        name,
                        ErrorCode::TYPE_MISMATCH,
                        format!("'coll' must be a string, not {}", type_alias(Some(other))),
                    ));
                }
                None => None,
            };
            let pipeline = match spec.get("pipeline") {
                Some(p) => stage_documents(name, p, ErrorCode::TYPE_MISMATCH)?,
                None => Vec::new(),
            };
            if coll.is_none()
                && !pipeline
                    .first()
                    .is_some_and(|s| s.contains_key("$documents"))
            {
                return Err(failure(
                    name,
                    ErrorCode::FAILED_TO_PARSE,
                    "$unionWith needs `coll`, or a pipeline starting with $documents",
                ));
            }
            (coll, pipeline)
        }
        other => {
            return Err(failure(
                name,
                ErrorCode::FAILED_TO_PARSE,
                format!(
                    "the $unionWith stage specification must be an object or string, but found {}",
                    type_alias(Some(other))
                ),
            ));
        }
    };
    for stage in &pipeline {
        if let Some(inner) = stage.keys().next()
            && matches!(inner.as_str(), "$out" | "$merge" | "$changeStream")
        {
            return Err(failure(
                name,
                ErrorCode::location(31441),
                format!("{inner} is not allowed within a $unionWith's sub-pipeline"),
            ));
        }
    }
    Ok(Stage::UnionWith { coll, pipeline })
}

/// Runs a `$unionWith`: the input first, then the other collection's results.
pub(super) fn union_with<'a>(
    coll: Option<String>,
    pipeline: Vec<Document>,
    input: Documents<'a>,
    context: &Rc<Context<'a>>,
) -> Documents<'a> {
    let context = context.clone();
    let others = blocking(move || {
        let options = AggregateOptions {
            let_vars: context.options.let_vars.clone(),
            collation: context.options.collation.clone(),
            hint: None,
            ..context.options.clone()
        };
        super::sub_pipeline(context.snapshot, coll.as_deref(), &pipeline, &options)
    });
    Box::new(input.chain(others))
}
