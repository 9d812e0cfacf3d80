//! Stages that MongoDB defines as other stages, expanded before the pipeline is parsed, with
//! MongoDB's own checks and codes:
//! - `$sortByCount: <expr>` is `$group {_id: <expr>, count: {$sum: 1}}` then
//!   `$sort {count: -1}` (ties in no defined order);
//! - `$bucket` is a `$group` whose `_id` is a `$switch` over the ranges
//!   `[boundaries[i-1], boundaries[i])` (then `default`), with the `output` accumulators (or
//!   `count: {$sum: 1}` when there is no `output`), then `$sort {_id: 1}`: buckets in `_id`
//!   order, the default bucket among them. A value in no range and no default fails as
//!   `$switch` does (40066);
//! - `$fill` is a `$setWindowFields` of `$locf` and `$linearFill` for the outputs filled by
//!   `method`, and an `$addFields` of `{$ifNull: [<field>, <value>]}` for those filled by
//!   `value`; `partitionByFields` becomes a `partitionBy` document of those fields.

use bson::{Bson, Document, doc};

use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::expr::{Env, Expr, Scope, error, eval_in};

fn failure(stage: &str, code: i32, reason: impl std::fmt::Display) -> Error {
    Error::from(error(stage, reason).with_code(ErrorCode::location(code)))
}

/// The pipeline with `$sortByCount` and `$bucket` replaced by what they stand for.
pub(super) fn expand(pipeline: &[Document], scope: &Scope) -> Result<Vec<Document>> {
    let mut out = Vec::with_capacity(pipeline.len());
    for stage in pipeline {
        match stage.iter().next() {
            Some((name, arg)) if stage.len() == 1 && name == "$sortByCount" => {
                let key = sort_by_count_key(arg)?;
                out.push(doc! {"$group": {"_id": key, "count": {"$sum": 1}}});
                out.push(doc! {"$sort": {"count": -1}});
            }
            Some((name, arg)) if stage.len() == 1 && name == "$fill" => out.extend(fill(arg)?),
            Some((name, arg)) if stage.len() == 1 && name == "$bucket" => {
                out.push(bucket_group(arg, scope)?);
                out.push(doc! {"$sort": {"_id": 1}});
            }
            _ => out.push(stage.clone()),
        }
    }
    Ok(out)
}

/// `$sortByCount`'s argument: a `$`-path, or an operator expression (never a document
/// literal).
fn sort_by_count_key(arg: &Bson) -> Result<Bson> {
    let name = "$sortByCount";
    match arg {
        Bson::String(s) if s.len() > 1 && s.starts_with('$') => Ok(arg.clone()),
        Bson::String(_) => Err(failure(
            name,
            40148,
            "the sortByCount field must be defined as a $-prefixed path or an expression inside an object",
        )),
        Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => Ok(arg.clone()),
        Bson::Document(_) => Err(failure(
            name,
            40147,
            "the sortByCount field must be defined as a $-prefixed path or an expression inside an object",
        )),
        _ => Err(failure(
            name,
            40149,
            "the sortByCount field must be specified as a string or as an object",
        )),
    }
}

/// A `$`-path or an operator expression, as `groupBy` of `$bucket` and `$bucketAuto` must be.
pub(super) fn is_group_by(value: &Bson) -> bool {
    match value {
        Bson::String(s) => s.len() > 1 && s.starts_with('$'),
        Bson::Document(d) => d.keys().next().is_some_and(|k| k.starts_with('$')),
        _ => false,
    }
}

/// A constant: an expression that reads no document (it evaluates the same on an empty one
/// and needs no variable but the `let` constants).
fn constant(value: &Bson, scope: &Scope) -> Option<Bson> {
    let expr = Expr::parse(value, scope).ok()?;
    if !expr.is_constant() {
        return None;
    }
    let empty = Document::new();
    eval_in(&expr, &Env::new(&empty)).ok().flatten()
}

/// The canonical type of a value, as `$bucket` compares boundary types: every number is one
/// type.
fn canonical_type(value: &Bson) -> u8 {
    match value {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 1,
        other => other.element_type() as u8 + 16,
    }
}

/// `$bucket`'s options as they are read, each checked on its own.
#[derive(Default)]
struct BucketOptions {
    group_by: Option<Bson>,
    boundaries: Option<Vec<Bson>>,
    default: Option<Bson>,
    output: Option<Document>,
}

/// The `$group` that `$bucket` stands for. The options are checked one by one as written,
/// then together: both required ones, then the boundaries, then `default` against them.
fn bucket_group(arg: &Bson, scope: &Scope) -> Result<Document> {
    let name = "$bucket";
    let Bson::Document(spec) = arg else {
        return Err(failure(
            name,
            40201,
            format!(
                "argument to $bucket stage must be an object, but found type: {}",
                crate::expr::type_alias(Some(arg))
            ),
        ));
    };
    let options = bucket_options(spec, scope)?;
    let (Some(group_by), Some(boundaries)) = (options.group_by, options.boundaries) else {
        return Err(failure(
            name,
            40198,
            "$bucket requires 'groupBy' and 'boundaries' to be specified",
        ));
    };
    check_boundaries(&boundaries)?;
    if let Some(d) = &options.default {
        check_default(d, &boundaries)?;
    }
    Ok(doc! {"$group": bucket_grouping(&group_by, &boundaries, options.default, options.output)})
}

/// The options of `$bucket`, each checked as it is read; any other is refused.
fn bucket_options(spec: &Document, scope: &Scope) -> Result<BucketOptions> {
    let name = "$bucket";
    let mut options = BucketOptions::default();
    for (key, value) in spec {
        match key.as_str() {
            "groupBy" => {
                if !is_group_by(value) {
                    return Err(failure(
                        name,
                        40202,
                        format!(
                            "the $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: {value}"
                        ),
                    ));
                }
                options.group_by = Some(value.clone());
            }
            "boundaries" => options.boundaries = Some(bucket_boundaries(value, scope)?),
            "default" => {
                options.default = Some(constant(value, scope).ok_or_else(|| {
                    failure(
                        name,
                        40195,
                        "the $bucket 'default' field must be a constant expression",
                    )
                })?);
            }
            "output" => {
                let Bson::Document(fields) = value else {
                    return Err(failure(
                        name,
                        40196,
                        format!(
                            "the $bucket 'output' field must be an object, but found type: {}",
                            crate::expr::type_alias(Some(value))
                        ),
                    ));
                };
                options.output = Some(fields.clone());
            }
            other => {
                return Err(failure(
                    name,
                    40197,
                    format!("unrecognized option to $bucket: {other}"),
                ));
            }
        }
    }
    Ok(options)
}

/// `boundaries`: an array of constants.
fn bucket_boundaries(value: &Bson, scope: &Scope) -> Result<Vec<Bson>> {
    let name = "$bucket";
    let Bson::Array(items) = value else {
        return Err(failure(
            name,
            40200,
            format!(
                "the $bucket 'boundaries' field must be an array, but found type: {}",
                crate::expr::type_alias(Some(value))
            ),
        ));
    };
    let mut values = Vec::with_capacity(items.len());
    for item in items {
        values.push(constant(item, scope).ok_or_else(|| {
            failure(
                name,
                40191,
                "the $bucket 'boundaries' field must be an array of constant values",
            )
        })?);
    }
    Ok(values)
}

/// The boundaries make ranges: at least two, of one canonical type, strictly ascending.
fn check_boundaries(boundaries: &[Bson]) -> Result<()> {
    let name = "$bucket";
    if boundaries.len() < 2 {
        return Err(failure(
            name,
            40192,
            format!(
                "the $bucket 'boundaries' field must have at least 2 values, but found {} value(s)",
                boundaries.len()
            ),
        ));
    }
    for pair in boundaries.windows(2) {
        if canonical_type(&pair[0]) != canonical_type(&pair[1]) {
            return Err(failure(
                name,
                40193,
                "all values in the 'boundaries' option to $bucket must have the same type",
            ));
        }
        if crate::expr::compare_bson(&pair[0], &pair[1], None) != std::cmp::Ordering::Less {
            return Err(failure(
                name,
                40194,
                format!(
                    "the 'boundaries' option to $bucket must be sorted, but {} is not less than {}",
                    pair[0], pair[1]
                ),
            ));
        }
    }
    Ok(())
}

/// A `default` of the boundaries' canonical type must lie outside their ranges: below the
/// lowest, or at or above the highest. One of another type is not compared.
fn check_default(default: &Bson, boundaries: &[Bson]) -> Result<()> {
    if canonical_type(default) != canonical_type(&boundaries[0]) {
        return Ok(());
    }
    let below = crate::expr::compare_bson(default, &boundaries[0], None).is_lt();
    let above = crate::expr::compare_bson(default, &boundaries[boundaries.len() - 1], None).is_ge();
    if !below && !above {
        return Err(failure(
            "$bucket",
            40199,
            "the $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary",
        ));
    }
    Ok(())
}

/// The `$group` body: `_id` a `$switch` from the value to its range's lower boundary (else
/// `default`), then the `output` accumulators, or a count without them.
fn bucket_grouping(
    group_by: &Bson,
    boundaries: &[Bson],
    default: Option<Bson>,
    output: Option<Document>,
) -> Document {
    let literal = |v: &Bson| Bson::Document(doc! {"$literal": v.clone()});
    let branches: Vec<Bson> = boundaries
        .windows(2)
        .map(|pair| {
            Bson::Document(doc! {
                "case": {"$and": [
                    {"$gte": [group_by.clone(), literal(&pair[0])]},
                    {"$lt": [group_by.clone(), literal(&pair[1])]},
                ]},
                "then": literal(&pair[0]),
            })
        })
        .collect();
    let mut switch = doc! {"branches": branches};
    if let Some(d) = default {
        switch.insert("default", literal(&d));
    }
    let mut group = doc! {"_id": {"$switch": switch}};
    match output {
        Some(fields) => group.extend(fields),
        None => {
            group.insert("count", doc! {"$sum": 1});
        }
    }
    group
}

/// `$fill`'s stages (see the module documentation), with MongoDB's checks and codes.
fn fill(arg: &Bson) -> Result<Vec<Document>> {
    let name = "$fill";
    let Bson::Document(spec) = arg else {
        return Err(Error::from(
            error(name, "the $fill specification must be an object")
                .with_code(ErrorCode::FAILED_TO_PARSE),
        ));
    };
    let known = ["partitionBy", "partitionByFields", "sortBy", "output"];
    if let Some(unknown) = spec.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(failure(name, 40415, format!("unknown field `{unknown}`")));
    }
    if spec.contains_key("partitionBy") && spec.contains_key("partitionByFields") {
        return Err(failure(
            name,
            6_050_204,
            "only one of `partitionBy` and `partitionByFields` may be given",
        ));
    }
    let Some(output) = spec.get("output") else {
        return Err(Error::from(
            error(name, "missing required field `output`")
                .with_code(ErrorCode::IDL_FAILED_TO_PARSE),
        ));
    };
    let Bson::Document(output) = output else {
        return Err(Error::from(
            error(name, "`output` must be an object").with_code(ErrorCode::TYPE_MISMATCH),
        ));
    };
    if output.is_empty() {
        return Err(failure(
            name,
            6_050_203,
            "`output` must name at least one field",
        ));
    }
    let (windowed, valued) = fill_outputs(spec, output)?;
    let mut stages = Vec::new();
    if !windowed.is_empty() {
        stages.push(doc! {"$setWindowFields": fill_window(spec, windowed)?});
    }
    if !valued.is_empty() {
        stages.push(doc! {"$addFields": valued});
    }
    Ok(stages)
}

/// The outputs of `$fill`, split by how each is filled: by `method`, the window functions of a
/// `$setWindowFields`; by `value`, the expressions of an `$addFields`.
fn fill_outputs(spec: &Document, output: &Document) -> Result<(Document, Document)> {
    let name = "$fill";
    let mut windowed = Document::new();
    let mut valued = Document::new();
    for (field, how) in output {
        let Bson::Document(how) = how else {
            return Err(failure(
                name,
                6_050_200,
                format!("the fill of `{field}` must be an object"),
            ));
        };
        if how.len() != 1 {
            return Err(failure(
                name,
                40415,
                format!("the fill of `{field}` takes one of `value` and `method`"),
            ));
        }
        let path = Bson::String(format!("${field}"));
        match how.iter().next() {
            Some((k, v)) if k == "value" => {
                valued.insert(field.clone(), doc! {"$ifNull": [path, v.clone()]});
            }
            Some((k, Bson::String(method))) if k == "method" && method == "locf" => {
                windowed.insert(field.clone(), doc! {"$locf": path});
            }
            Some((k, Bson::String(method))) if k == "method" && method == "linear" => {
                if !spec.contains_key("sortBy") {
                    return Err(failure(name, 605_001, "a linear fill needs `sortBy`"));
                }
                windowed.insert(field.clone(), doc! {"$linearFill": path});
            }
            Some((k, other)) if k == "method" => {
                return Err(failure(
                    name,
                    6_050_202,
                    format!("`{other}` is not a fill method (locf or linear)"),
                ));
            }
            _ => {
                return Err(failure(
                    name,
                    40415,
                    format!("the fill of `{field}` takes one of `value` and `method`"),
                ));
            }
        }
    }
    Ok((windowed, valued))
}

/// The `$setWindowFields` of `$fill`'s `windowed` outputs: its partition (`partitionBy`, or
/// `partitionByFields` as a document of those fields) and `sortBy`.
fn fill_window(spec: &Document, windowed: Document) -> Result<Document> {
    let mut window = Document::new();
    if let Some(p) = spec.get("partitionBy") {
        window.insert("partitionBy", p.clone());
    }
    if let Some(fields) = spec.get("partitionByFields") {
        let not_names = || {
            Error::from(
                error(
                    "$fill",
                    "`partitionByFields` must be an array of field names",
                )
                .with_code(ErrorCode::TYPE_MISMATCH),
            )
        };
        let Bson::Array(fields) = fields else {
            return Err(not_names());
        };
        let mut key = Document::new();
        for (i, f) in fields.iter().enumerate() {
            let Bson::String(f) = f else {
                return Err(not_names());
            };
            key.insert(format!("p{i}"), format!("${f}"));
        }
        window.insert("partitionBy", key);
    }
    if let Some(sort) = spec.get("sortBy") {
        window.insert("sortBy", sort.clone());
    }
    window.insert("output", windowed);
    Ok(window)
}
