//! odm-cases v1: data-only cases, each run twice, without secondary indexes and with an
//! ascending index on every path the filter and sort name. Both runs must give the expected
//! result, and the same result. Read operations (`find`, `count`, `distinct`) check what they
//! return; write operations (`update_one`, `update_many`, `replace_one`, `delete_one`,
//! `delete_many`, `find_one_and_update`) check their counts, the returned document and the
//! whole collection afterwards, and an expected error must leave the collection unchanged.
//! A case that needs an index of its own kind (a text index) lists its index documents in
//! `indexes`; both runs create them.

use bson::{Bson, Document};
use odm_engine::aggregate::AggregateOptions;
use odm_engine::query::FindOptions;
use odm_engine::update::{
    DeleteOptions, FindAndModify, ReturnDocument, UpdateModifications, UpdateOptions,
};
use odm_engine::{Database, Direction, IndexSpec};
use serde_json::Value;

use super::compare::{normalize, values_match};
use super::{Outcome, Report, bson, document, documents_of};

const COLLECTION: &str = "c";

pub(super) fn run_file(file: &str, cases: &[Value]) -> Vec<Report> {
    cases
        .iter()
        .enumerate()
        .map(|(i, case)| {
            let name = case
                .get("name")
                .and_then(Value::as_str)
                .map_or_else(|| format!("case {i}"), str::to_owned);
            Report {
                name: format!("{file}: {name}"),
                outcome: run_case(case)
                    .unwrap_or_else(|e| Outcome::Failed(format!("case error: {e}"))),
            }
        })
        .collect()
}

/// What an operation returned.
#[derive(Debug, PartialEq)]
enum Actual {
    Documents(Vec<Document>),
    Count(u64),
    Values(Vec<Bson>),
    /// The error's message (with the collection afterwards, for a write), code and code name.
    Error(String, i32, String),
    Write(Box<WriteOutcome>),
}

/// What a write did, and the collection afterwards (sorted by `_id`).
#[derive(Debug, Default, PartialEq)]
struct WriteOutcome {
    matched: Option<u64>,
    modified: Option<u64>,
    upserted_id: Option<Bson>,
    deleted: Option<u64>,
    /// What a find-and-modify returned: no document or one.
    returned: Vec<Document>,
    after: Vec<Document>,
}

const WRITES: [&str; 6] = [
    "update_one",
    "update_many",
    "replace_one",
    "delete_one",
    "delete_many",
    "find_one_and_update",
];

fn run_case(case: &Value) -> Result<Outcome, String> {
    let op = case.get("op").and_then(Value::as_str).unwrap_or("find");
    if !matches!(op, "find" | "count" | "distinct" | "aggregate") && !WRITES.contains(&op) {
        return Ok(Outcome::Failed(format!("unknown operation `{op}`")));
    }
    let mut plain = execute(case, op, false)?;
    let mut indexed = execute(case, op, true)?;
    // Upserts generate `_id`s: compare the runs with those ids blanked.
    for actual in [&mut plain, &mut indexed] {
        blank_generated_ids(actual);
    }
    if !is_ordered(case) {
        // Without a sort, result order depends on the plan: compare as sets.
        for actual in [&mut plain, &mut indexed] {
            if let Actual::Documents(docs) = actual {
                docs.sort_by_key(by_id);
            }
        }
    }
    // `$currentDate` writes the clock, which moves between the two runs.
    let clocked = case
        .get("update")
        .is_some_and(|u| u.to_string().contains("$currentDate"));
    // Compared through their debug text, which tells int32 from int64 and -0.0 from 0.0, and in
    // which NaN equals NaN (it does not under `==`).
    if format!("{plain:?}") != format!("{indexed:?}") && !clocked {
        return Ok(Outcome::Failed(format!(
            "results differ with indexes (a planner bug)\n  without: {plain:?}\n  with:    {indexed:?}"
        )));
    }
    let expect = case.get("expect").ok_or("case has no `expect`")?;
    check(case, expect, &plain)
}

// Long on purpose: the case format's operations, one arm per operation, each a few lines of
// argument reading.
#[allow(clippy::too_many_lines)]
fn execute(case: &Value, op: &str, with_indexes: bool) -> Result<Actual, String> {
    let db = Database::in_memory().map_err(|e| e.to_string())?;
    let docs = documents_of(case)?;
    let result = db
        .collection(COLLECTION)
        .insert_many(docs, true)
        .map_err(|e| e.to_string())?;
    if let Some((i, e)) = result.failures.first() {
        return Err(format!("document {i} cannot be inserted: {e}"));
    }
    for index in case
        .get("indexes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let spec = IndexSpec::from_document(&document(index)?).map_err(|e| e.to_string())?;
        db.collection(COLLECTION)
            .create_index(spec)
            .map_err(|e| format!("index {index} cannot be created: {e}"))?;
    }
    // Other collections (what `$lookup` joins), indexed on their fields in the indexed run.
    if let Some(others) = case.get("collections") {
        let Some(others) = others.as_object() else {
            return Err("`collections` must map names to arrays of documents".into());
        };
        for (name, docs) in others {
            let docs = match docs {
                Value::Array(items) => items.iter().map(document).collect::<Result<Vec<_>, _>>()?,
                _ => return Err(format!("collection `{name}` must be an array of documents")),
            };
            let coll = db.collection(name);
            if with_indexes {
                let mut fields: Vec<&String> = docs.iter().flat_map(Document::keys).collect();
                fields.sort();
                fields.dedup();
                for field in fields.into_iter().filter(|f| *f != "_id") {
                    if let Ok(spec) = IndexSpec::ascending(field) {
                        let _ = coll.create_index(spec);
                    }
                }
            }
            let result = coll.insert_many(docs, true).map_err(|e| e.to_string())?;
            if let Some((i, e)) = result.failures.first() {
                return Err(format!("document {i} of `{name}` cannot be inserted: {e}"));
            }
        }
    }
    let filter = case
        .get("filter")
        .map(document)
        .transpose()?
        .unwrap_or_default();
    let sort = case.get("sort").map(document).transpose()?;
    // An aggregation's leading `$match` names the paths to index.
    let pipeline = match case.get("pipeline") {
        Some(Value::Array(stages)) => stages.iter().map(document).collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("`pipeline` must be an array of stages".into()),
        None => Vec::new(),
    };
    let leading_match = pipeline
        .first()
        .and_then(|s| s.get_document("$match").ok())
        .cloned();
    if with_indexes {
        create_indexes(
            &db,
            leading_match.as_ref().unwrap_or(&filter),
            sort.as_ref(),
        );
        // A `$group` (or `$sortByCount`) after the head, keyed by one field: an index on it
        // lets the group read its input in key order.
        if let Some(path) = group_key_path(&pipeline)
            && let Ok(spec) = IndexSpec::ascending(&path)
        {
            let _ = db.collection(COLLECTION).create_index(spec);
        }
    }
    if WRITES.contains(&op) {
        return write(&db, case, op, &filter);
    }
    let txn = db.read().map_err(|e| e.to_string())?;
    let Some(coll) = txn.collection(COLLECTION).map_err(|e| e.to_string())? else {
        // No collection: the query is still parsed, and a malformed one is an error.
        let checked = if op == "aggregate" {
            AggregateOptions {
                let_vars: case.get("let").map(document).transpose()?,
                collation: case.get("collation").map(document).transpose()?,
                ..AggregateOptions::default()
            }
            .check(&pipeline)
        } else {
            FindOptions {
                sort: sort.clone(),
                projection: case.get("projection").map(document).transpose()?,
                let_vars: case.get("let").map(document).transpose()?,
                collation: case.get("collation").map(document).transpose()?,
                ..FindOptions::default()
            }
            .check(&filter)
        };
        if let Err(e) = checked {
            return Ok(Actual::Error(e.to_string(), e.code(), e.code_name()));
        }
        return Ok(match op {
            "count" => Actual::Count(0),
            "distinct" => Actual::Values(Vec::new()),
            _ => Actual::Documents(Vec::new()),
        });
    };
    let collation = case.get("collation").map(document).transpose()?;
    let outcome = match op {
        "count" => coll
            .count_matching_with(&filter, 0, 0, collation.as_ref())
            .map(Actual::Count),
        "aggregate" => {
            let options = AggregateOptions {
                let_vars: case.get("let").map(document).transpose()?,
                collation,
                hint: None,
                ..AggregateOptions::default()
            };
            coll.aggregate(&pipeline, &options).map(Actual::Documents)
        }
        "distinct" => {
            let key = case
                .get("key")
                .and_then(Value::as_str)
                .ok_or("distinct needs `key`")?;
            coll.distinct_with(key, &filter, collation.as_ref())
                .map(Actual::Values)
        }
        _ => {
            let options = FindOptions {
                sort,
                projection: case.get("projection").map(document).transpose()?,
                skip: case.get("skip").and_then(Value::as_u64).unwrap_or(0),
                limit: case
                    .get("limit")
                    .and_then(Value::as_i64)
                    .map(i64::unsigned_abs),
                hint: None,
                let_vars: case.get("let").map(document).transpose()?,
                collation: case.get("collation").map(document).transpose()?,
                ..FindOptions::default()
            };
            coll.find(&filter, &options)
                .and_then(Iterator::collect)
                .map(Actual::Documents)
        }
    };
    Ok(outcome.unwrap_or_else(|e| Actual::Error(e.to_string(), e.code(), e.code_name())))
}

/// Runs a write operation and reads the collection back.
fn write(db: &Database, case: &Value, op: &str, filter: &Document) -> Result<Actual, String> {
    let coll = db.collection(COLLECTION);
    // An update document, or a pipeline (an array of stages).
    let modifications = match case.get("update") {
        Some(Value::Array(stages)) => Some(UpdateModifications::Pipeline(
            stages.iter().map(document).collect::<Result<_, _>>()?,
        )),
        _ => None,
    };
    let update = match (&modifications, case.get("update")) {
        (None, Some(u)) => document(u)?,
        _ => Document::new(),
    };
    let modifications = modifications.unwrap_or_else(|| update.clone().into());
    let upsert = case.get("upsert").and_then(Value::as_bool).unwrap_or(false);
    let array_filters = match case.get("array_filters") {
        Some(Value::Array(items)) => items.iter().map(document).collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("`array_filters` must be an array".into()),
        None => Vec::new(),
    };
    let options = UpdateOptions {
        upsert,
        array_filters: array_filters.clone(),
        let_vars: case.get("let").map(document).transpose()?,
        collation: case.get("collation").map(document).transpose()?,
        ..UpdateOptions::default()
    };
    let outcome = match op {
        "update_one" | "update_many" | "replace_one" => {
            let result = match op {
                "update_one" => coll.update_one(filter, modifications, &options),
                "update_many" => coll.update_many(filter, modifications, &options),
                _ => coll.replace_one(filter, &update, &options),
            };
            result.map(|r| WriteOutcome {
                matched: Some(r.matched),
                modified: Some(r.modified),
                upserted_id: r.upserted_id,
                ..WriteOutcome::default()
            })
        }
        "delete_one" | "delete_many" => {
            let options = DeleteOptions {
                hint: None,
                let_vars: case.get("let").map(document).transpose()?,
                collation: case.get("collation").map(document).transpose()?,
            };
            let result = if op == "delete_one" {
                coll.delete_one_with(filter, &options)
            } else {
                coll.delete_many_with(filter, &options)
            };
            result.map(|n| WriteOutcome {
                deleted: Some(n),
                ..WriteOutcome::default()
            })
        }
        _ => {
            let options = FindAndModify {
                sort: case.get("sort").map(document).transpose()?,
                projection: case.get("projection").map(document).transpose()?,
                upsert,
                return_document: match case.get("return").and_then(Value::as_str) {
                    Some("after") => ReturnDocument::After,
                    _ => ReturnDocument::Before,
                },
                array_filters,
                hint: None,
                let_vars: case.get("let").map(document).transpose()?,
                collation: case.get("collation").map(document).transpose()?,
            };
            coll.find_one_and_update(filter, modifications, &options)
                .map(|doc| WriteOutcome {
                    returned: doc.into_iter().collect(),
                    ..WriteOutcome::default()
                })
        }
    };
    let after = all_documents(db)?;
    Ok(match outcome {
        Ok(outcome) => Actual::Write(Box::new(WriteOutcome { after, ..outcome })),
        // The collection is part of an error's outcome: it must be unchanged.
        Err(e) => Actual::Error(
            format!("{e}\n  collection afterwards: {after:?}"),
            e.code(),
            e.code_name(),
        ),
    })
}

fn all_documents(db: &Database) -> Result<Vec<Document>, String> {
    let txn = db.read().map_err(|e| e.to_string())?;
    let Some(coll) = txn.collection(COLLECTION).map_err(|e| e.to_string())? else {
        return Ok(Vec::new());
    };
    let mut docs: Vec<Document> = coll
        .find(&Document::new(), &FindOptions::default())
        .and_then(Iterator::collect)
        .map_err(|e| e.to_string())?;
    docs.sort_by_key(by_id);
    Ok(docs)
}

/// Replaces a generated (ObjectId) upserted `_id` by a placeholder, where it is reported and in
/// the collection.
fn blank_generated_ids(actual: &mut Actual) {
    let Actual::Write(outcome) = actual else {
        return;
    };
    let WriteOutcome {
        upserted_id: Some(id @ Bson::ObjectId(_)),
        after,
        returned,
        ..
    } = &mut **outcome
    else {
        return;
    };
    let generated = id.clone();
    *id = Bson::String("<generated>".into());
    let docs = after.iter_mut().chain(returned.iter_mut());
    for doc in docs {
        if doc.get("_id") == Some(&generated) {
            doc.insert("_id", "<generated>");
        }
    }
}

/// The encoded `_id` of a result, which orders results by `_id`.
/// Whether results come in a defined order: the case sorts, or its pipeline has a `$sort`.
fn is_ordered(case: &Value) -> bool {
    case.get("ordered").and_then(Value::as_bool) == Some(true)
        || case.get("sort").is_some()
        || case
            .get("pipeline")
            .and_then(Value::as_array)
            .is_some_and(|stages| stages.iter().any(|s| s.get("$sort").is_some()))
}

fn by_id(doc: &Document) -> Vec<u8> {
    let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
    bson::RawBson::try_from(id).map_or_else(
        |_| Vec::new(),
        |raw| odm_engine::keys::encode(raw.as_raw_bson_ref()),
    )
}

/// The field the first `$group` or `$sortByCount` after a pipeline's leading `$match`,
/// `$sort`, `$skip` and `$limit` groups by, when its key is one field (`"$a.b"`).
fn group_key_path(pipeline: &[Document]) -> Option<String> {
    let stage = pipeline.iter().find(|s| {
        !["$match", "$sort", "$skip", "$limit"]
            .iter()
            .any(|head| s.contains_key(*head))
    })?;
    let key = match stage.get_document("$group") {
        Ok(group) => group.get("_id")?,
        Err(_) => stage.get("$sortByCount")?,
    };
    match key {
        Bson::String(s) if s.starts_with('$') && !s.starts_with("$$") => Some(s[1..].to_owned()),
        _ => None,
    }
}

/// An ascending index on every path the filter and sort name, and a compound one over them
/// when the documents allow it.
fn create_indexes(db: &Database, filter: &Document, sort: Option<&Document>) {
    let mut paths = Vec::new();
    filter_paths(filter, &mut paths);
    if let Some(sort) = sort {
        paths.extend(sort.keys().cloned());
    }
    paths.dedup();
    let coll = db.collection(COLLECTION);
    for path in &paths {
        if let Ok(spec) = IndexSpec::ascending(path) {
            let _ = coll.create_index(spec);
        }
    }
    let mut unique_paths: Vec<&str> = Vec::new();
    for p in &paths {
        if !unique_paths.contains(&p.as_str()) {
            unique_paths.push(p);
        }
    }
    if unique_paths.len() > 1
        && let Ok(spec) = IndexSpec::new(unique_paths.iter().map(|p| (*p, Direction::Ascending)))
    {
        // Documents with parallel arrays cannot be held by a compound index: singles only then.
        let _ = coll.create_index(spec);
    }
}

fn filter_paths(filter: &Document, out: &mut Vec<String>) {
    for (key, value) in filter {
        if key.starts_with('$') {
            if let Bson::Array(items) = value {
                for item in items {
                    if let Bson::Document(d) = item {
                        filter_paths(d, out);
                    }
                }
            }
        } else if !key.split('.').any(str::is_empty) {
            out.push(key.clone());
        }
    }
}

// Long on purpose: the case format's comparison rules, one arm per expectation kind, kept together
// so a reader sees every way a case can fail.
#[allow(clippy::too_many_lines)]
fn check(case: &Value, expect: &Value, actual: &Actual) -> Result<Outcome, String> {
    // `error` is `true`, MongoDB's code (`40`) or its code name (`"ConflictingUpdateOperators"`).
    let expected_error = expect.get("error").filter(|e| **e != Value::Bool(false));
    if let Actual::Error(e, code, code_name) = actual {
        let Some(expected_error) = expected_error else {
            return Ok(Outcome::Failed(format!("unexpected error: {e}")));
        };
        let code_matches = match expected_error {
            Value::Number(n) => n.as_i64() == Some(i64::from(*code)),
            Value::String(name) => name == code_name,
            _ => true,
        };
        if !code_matches {
            return Ok(Outcome::Failed(format!(
                "expected an error with code {expected_error}, got code {code} ({code_name}): {e}"
            )));
        }
        if WRITES.contains(&case.get("op").and_then(Value::as_str).unwrap_or("find")) {
            // A refused write changes nothing.
            let db = Database::in_memory().map_err(|e| e.to_string())?;
            db.collection(COLLECTION)
                .insert_many(documents_of(case)?, true)
                .map_err(|e| e.to_string())?;
            let before = all_documents(&db)?;
            if !e.ends_with(&format!("collection afterwards: {before:?}")) {
                return Ok(Outcome::Failed(format!(
                    "the refused write changed the collection: {e}"
                )));
            }
        }
        return Ok(Outcome::Passed);
    }
    if expected_error.is_some() {
        return Ok(Outcome::Failed(format!(
            "expected an error, got {actual:?}"
        )));
    }
    let strict = case.get("strict").and_then(Value::as_bool).unwrap_or(false);
    let ordered = is_ordered(case);
    let mut problems = Vec::new();
    match actual {
        Actual::Documents(docs) => {
            if let Some(ids) = expect.get("ids") {
                let expected: Vec<Bson> = ids
                    .as_array()
                    .ok_or("`ids` must be an array")?
                    .iter()
                    .map(bson)
                    .collect::<Result<_, _>>()?;
                let got: Vec<Bson> = docs
                    .iter()
                    .map(|d| d.get("_id").cloned().unwrap_or(Bson::Null))
                    .collect();
                if !same_list(&expected, &got, ordered, false) {
                    problems.push(format!("ids: expected {expected:?}, got {got:?}"));
                }
            }
            if let Some(documents) = expect.get("documents") {
                let expected: Vec<Bson> = documents
                    .as_array()
                    .ok_or("`documents` must be an array")?
                    .iter()
                    .map(bson)
                    .collect::<Result<_, _>>()?;
                let got: Vec<Bson> = docs.iter().cloned().map(Bson::Document).collect();
                if !same_list(&expected, &got, ordered, strict) {
                    problems.push(format!("documents: expected {expected:?}, got {got:?}"));
                }
            }
        }
        Actual::Count(n) => {
            if let Some(count) = expect.get("count").and_then(Value::as_u64)
                && count != *n
            {
                problems.push(format!("count: expected {count}, got {n}"));
            }
        }
        Actual::Values(values) => {
            if let Some(expected) = expect.get("values") {
                let expected: Vec<Bson> = expected
                    .as_array()
                    .ok_or("`values` must be an array")?
                    .iter()
                    .map(bson)
                    .collect::<Result<_, _>>()?;
                if !same_list(&expected, values, false, false) {
                    problems.push(format!("values: expected {expected:?}, got {values:?}"));
                }
            }
        }
        Actual::Write(outcome) => {
            let WriteOutcome {
                matched,
                modified,
                upserted_id,
                deleted,
                returned,
                after,
            } = &**outcome;
            for (name, got) in [("matched", matched), ("modified", modified)] {
                if let Some(want) = expect.get(name).and_then(Value::as_u64)
                    && *got != Some(want)
                {
                    problems.push(format!("{name}: expected {want}, got {got:?}"));
                }
            }
            if let Some(want) = expect.get("count").and_then(Value::as_u64)
                && *deleted != Some(want)
            {
                problems.push(format!("count: expected {want}, got {deleted:?}"));
            }
            if let Some(want) = expect.get("upserted_id") {
                let want = bson(want)?;
                let same = match (&want, upserted_id) {
                    (Bson::Null, None) => true,
                    (want, Some(got)) => {
                        values_match(&normalize(want), Some(&normalize(got)), false)
                    }
                    _ => false,
                };
                if !same {
                    problems.push(format!(
                        "upserted_id: expected {want:?}, got {upserted_id:?}"
                    ));
                }
            }
            if let Some(documents) = expect.get("documents") {
                let expected: Vec<Bson> = documents
                    .as_array()
                    .ok_or("`documents` must be an array")?
                    .iter()
                    .map(bson)
                    .collect::<Result<_, _>>()?;
                let got: Vec<Bson> = returned.iter().cloned().map(Bson::Document).collect();
                if !same_list(&expected, &got, true, strict) {
                    problems.push(format!("documents: expected {expected:?}, got {got:?}"));
                }
            }
            if let Some(collection) = expect.get("collection") {
                let expected: Vec<Bson> = collection
                    .as_array()
                    .ok_or("`collection` must be an array")?
                    .iter()
                    .map(bson)
                    .collect::<Result<_, _>>()?;
                let got: Vec<Bson> = after.iter().cloned().map(Bson::Document).collect();
                if !same_list(&expected, &got, false, strict) {
                    problems.push(format!("collection: expected {expected:?}, got {got:?}"));
                }
            }
        }
        Actual::Error(..) => {}
    }
    Ok(if problems.is_empty() {
        Outcome::Passed
    } else {
        Outcome::Failed(problems.join("\n  "))
    })
}

/// Lists compared in order, or as multisets; documents ignoring field order unless strict.
fn same_list(expected: &[Bson], actual: &[Bson], ordered: bool, strict: bool) -> bool {
    if expected.len() != actual.len() {
        return false;
    }
    let eq = |e: &Bson, a: &Bson| {
        if strict {
            strictly_equal(e, a)
        } else {
            values_match(&normalize(e), Some(&normalize(a)), false)
        }
    };
    if ordered {
        return expected.iter().zip(actual).all(|(e, a)| eq(e, a));
    }
    let mut used = vec![false; actual.len()];
    expected.iter().all(|e| {
        let found = actual
            .iter()
            .enumerate()
            .find(|(i, a)| !used[*i] && eq(e, a));
        found.map(|(i, _)| used[i] = true).is_some()
    })
}

/// Equal as BSON bytes: field order and numeric types count.
fn strictly_equal(a: &Bson, b: &Bson) -> bool {
    let bytes = |v: &Bson| {
        let mut d = Document::new();
        d.insert("v", v.clone());
        bson::RawDocumentBuf::try_from(&d).map(bson::RawDocumentBuf::into_bytes)
    };
    matches!((bytes(a), bytes(b)), (Ok(x), Ok(y)) if x == y)
}
