//! The output stages `$out` and `$merge`, run through [`Database::aggregate`]: the pipeline
//! before them reads a snapshot, then one write transaction stores the results.

use bson::{Bson, Document};

use super::{AggregateOptions, stage_error};
use crate::db::{Database, WriteTxn};
use crate::error::{Error, Result};
use crate::path::Path;
use crate::update::UpdateOptions;

/// Where a pipeline's final `$out` or `$merge` writes.
enum Output {
    /// `$out`: the collection's documents become the results (its indexes stay).
    Replace(String),
    Merge(Box<Merge>),
}

/// A parsed `$merge`.
struct Merge {
    into: String,
    on: Vec<String>,
    when_matched: WhenMatched,
    when_not_matched: WhenNotMatched,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum WhenMatched {
    Replace,
    KeepExisting,
    Merge,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum WhenNotMatched {
    Insert,
    Discard,
    Fail,
}

/// A target collection: a name, or `{coll}` (this engine has one database, so `db` is refused).
fn target(stage: &str, v: &Bson) -> Result<String> {
    match v {
        Bson::String(s) if !s.is_empty() => Ok(s.clone()),
        Bson::Document(d) => {
            if d.contains_key("db") {
                return Err(stage_error(
                    stage,
                    "this engine has a single database: name the collection alone",
                ));
            }
            match d.get("coll") {
                Some(Bson::String(s)) if !s.is_empty() && d.len() == 1 => Ok(s.clone()),
                _ => Err(stage_error(
                    stage,
                    "expects a collection name, or {coll: name}",
                )),
            }
        }
        _ => Err(stage_error(stage, "expects a collection name")),
    }
}

/// Whether `stage` is a well-formed `$out` or `$merge` (an error when it is either, malformed).
pub(super) fn is_output(stage: &Document) -> Result<bool> {
    Ok(parse_output(stage)?.is_some())
}

fn parse_output(stage: &Document) -> Result<Option<Output>> {
    let Some((name, arg)) = stage.iter().next() else {
        return Ok(None);
    };
    match name.as_str() {
        "$out" => Ok(Some(Output::Replace(target(name, arg)?))),
        "$merge" => {
            let spec = match arg {
                Bson::Document(d) => d.clone(),
                other => bson::doc! { "into": other.clone() },
            };
            let known = ["into", "on", "whenMatched", "whenNotMatched", "let"];
            if let Some(unknown) = spec.keys().find(|k| !known.contains(&k.as_str())) {
                return Err(stage_error(name, format!("unknown option `{unknown}`")));
            }
            // `let` names variables for a `whenMatched` pipeline; this engine runs none, so the
            // option would be accepted and ignored: refused, as MongoDB refuses `let` without a
            // pipeline.
            if spec.contains_key("let") {
                return Err(Error::from(
                    crate::expr::error(
                        name,
                        "`let` applies only to a `whenMatched` pipeline, which this engine does not run",
                    )
                    .with_code(crate::code::ErrorCode::location(51199)),
                ));
            }
            let into = target(name, spec.get("into").unwrap_or(&Bson::Null))?;
            let on = match spec.get("on") {
                None => vec!["_id".to_owned()],
                Some(Bson::String(s)) => vec![s.clone()],
                Some(Bson::Array(items)) if !items.is_empty() => items
                    .iter()
                    .map(|i| match i {
                        Bson::String(s) => Ok(s.clone()),
                        _ => Err(stage_error(name, "`on` must name fields")),
                    })
                    .collect::<Result<_>>()?,
                Some(_) => {
                    return Err(stage_error(
                        name,
                        "`on` must be a field or an array of fields",
                    ));
                }
            };
            let when_matched = match spec.get("whenMatched") {
                None => WhenMatched::Merge,
                Some(Bson::String(s)) => match s.as_str() {
                    "replace" => WhenMatched::Replace,
                    "keepExisting" => WhenMatched::KeepExisting,
                    "merge" => WhenMatched::Merge,
                    "fail" => WhenMatched::Fail,
                    other => {
                        return Err(stage_error(
                            name,
                            format!(
                                "`whenMatched: {other}` is not replace, keepExisting, merge or fail"
                            ),
                        ));
                    }
                },
                Some(_) => {
                    return Err(stage_error(
                        name,
                        "a `whenMatched` pipeline is not supported by this engine",
                    ));
                }
            };
            let when_not_matched = match spec.get("whenNotMatched") {
                None => WhenNotMatched::Insert,
                Some(Bson::String(s)) => match s.as_str() {
                    "insert" => WhenNotMatched::Insert,
                    "discard" => WhenNotMatched::Discard,
                    "fail" => WhenNotMatched::Fail,
                    other => {
                        return Err(stage_error(
                            name,
                            format!("`whenNotMatched: {other}` is not insert, discard or fail"),
                        ));
                    }
                },
                Some(_) => return Err(stage_error(name, "`whenNotMatched` must be a string")),
            };
            Ok(Some(Output::Merge(Box::new(Merge {
                into,
                on,
                when_matched,
                when_not_matched,
            }))))
        }
        _ => Ok(None),
    }
}

impl Database {
    /// Runs an aggregation pipeline on `collection`; see [`ReadCollection::aggregate`](crate::ReadCollection::aggregate). A final
    /// `$out` (replace a collection's documents with the results, keeping its indexes) or
    /// `$merge` (`into`, `on`, `whenMatched`: replace, keepExisting, merge or fail;
    /// `whenNotMatched`: insert, discard or fail) writes the results in one transaction, all or
    /// nothing (MongoDB may leave a `$merge` half done), and returns no documents.
    pub fn aggregate(
        &self,
        collection: &str,
        pipeline: &[Document],
        options: &AggregateOptions,
    ) -> Result<Vec<Document>> {
        let (output, stages) = match pipeline.split_last() {
            Some((last, rest)) => match parse_output(last)? {
                Some(output) => (Some(output), rest),
                None => (None, pipeline),
            },
            None => (None, pipeline),
        };
        let results = {
            let txn = self.read()?;
            match txn.collection(collection)? {
                Some(coll) => coll.aggregate(stages, options)?,
                None => Vec::new(),
            }
        };
        let Some(output) = output else {
            return Ok(results);
        };
        self.write(|t| {
            t.bypass_document_validation(options.bypass_document_validation);
            write_output(t, &output, &results)
        })
        .map(|()| Vec::new())
    }

    /// Writes `results` as a pipeline's last stage, `$out` or `$merge`, says, all or nothing,
    /// for a pipeline whose earlier stages read no collection (MongoDB's `{aggregate: 1}`
    /// starting with `$documents`); `Ok(false)` when `stage` is neither, which writes nothing.
    pub fn write_aggregate_output(
        &self,
        stage: &Document,
        results: &[Document],
        options: &AggregateOptions,
    ) -> Result<bool> {
        let Some(output) = parse_output(stage)? else {
            return Ok(false);
        };
        self.write(|t| {
            t.bypass_document_validation(options.bypass_document_validation);
            write_output(t, &output, results)
        })?;
        Ok(true)
    }
}

fn write_output(t: &mut WriteTxn<'_>, output: &Output, results: &[Document]) -> Result<()> {
    match output {
        Output::Replace(into) => {
            t.delete_many(into, &Document::new())?;
            if results.is_empty() {
                return t.create_collection(into).or_else(|e| match e {
                    Error::CollectionExists(_) => Ok(()),
                    other => Err(other),
                });
            }
            for doc in results {
                t.insert_one(into, doc)?;
            }
            Ok(())
        }
        Output::Merge(merge) => merge.write(t, results),
    }
}

impl Merge {
    fn write(&self, t: &mut WriteTxn<'_>, results: &[Document]) -> Result<()> {
        let stage = "$merge";
        for doc in results {
            // A result without `_id` matches nothing on `_id`, and gets a new one only when it is
            // inserted.
            let unidentified = !doc.contains_key("_id") && self.on.iter().any(|f| f == "_id");
            let mut filter = Document::new();
            for field in &self.on {
                let value = Path::new(field).get(doc).cloned();
                match value {
                    _ if unidentified => {}
                    Some(v) if !matches!(v, Bson::Array(_)) => {
                        filter.insert(field.clone(), v);
                    }
                    _ => {
                        return Err(stage_error(
                            stage,
                            format!("every result needs a single value for `on` field `{field}`"),
                        ));
                    }
                }
            }
            let found = if unidentified {
                Vec::new()
            } else {
                t.find(&self.into, &filter, None, Some(2))?
            };
            match (found.as_slice(), self.when_matched, self.when_not_matched) {
                ([_, _, ..], _, _) => {
                    return Err(stage_error(
                        stage,
                        format!(
                            "`on` {filter} matches more than one document of `{}`",
                            self.into
                        ),
                    ));
                }
                ([], _, WhenNotMatched::Insert) => {
                    t.insert_one(&self.into, doc)?;
                }
                ([], _, WhenNotMatched::Discard) | ([_], WhenMatched::KeepExisting, _) => {}
                ([], _, WhenNotMatched::Fail) => {
                    return Err(stage_error(
                        stage,
                        format!("no document of `{}` matches {filter}", self.into),
                    ));
                }
                ([_], WhenMatched::Fail, _) => {
                    // MongoDB's answer: the duplicate key on the `on` fields' unique index.
                    let pattern: Document =
                        filter.keys().map(|k| (k.clone(), Bson::Int32(1))).collect();
                    let index = if filter.len() == 1 && filter.contains_key("_id") {
                        crate::ID_INDEX_NAME.to_owned()
                    } else {
                        filter
                            .keys()
                            .map(|k| format!("{k}_1"))
                            .collect::<Vec<_>>()
                            .join("_")
                    };
                    return Err(Error::DuplicateKey {
                        collection: self.into.clone(),
                        index,
                        key: format!(
                            "{{ {} }}",
                            filter
                                .iter()
                                .map(|(k, v)| format!("{k}: {v}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        key_pattern: Box::new(pattern),
                        key_value: Box::new(filter.clone()),
                    });
                }
                ([existing], WhenMatched::Replace, _) => {
                    let id = existing.get("_id").cloned().unwrap_or(Bson::Null);
                    t.replace_one(
                        &self.into,
                        &bson::doc! { "_id": id },
                        doc,
                        &UpdateOptions::default(),
                    )?;
                }
                ([existing], WhenMatched::Merge, _) => {
                    let id = existing.get("_id").cloned().unwrap_or(Bson::Null);
                    let mut fields = doc.clone();
                    if fields.get("_id") == existing.get("_id") {
                        fields.remove("_id");
                    }
                    if !fields.is_empty() {
                        t.update_one(
                            &self.into,
                            &bson::doc! { "_id": id },
                            bson::doc! { "$set": fields },
                            &UpdateOptions::default(),
                        )?;
                    }
                }
            }
        }
        Ok(())
    }
}
