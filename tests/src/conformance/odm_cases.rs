//! odm-cases v1: data-only cases, each run twice, without secondary indexes and with an
//! ascending index on every path the filter and sort name. Both runs must give the expected
//! result, and the same result.

use bson::{Bson, Document};
use odm_engine::query::FindOptions;
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
    Error(String),
}

fn run_case(case: &Value) -> Result<Outcome, String> {
    let op = case.get("op").and_then(Value::as_str).unwrap_or("find");
    if !matches!(op, "find" | "count" | "distinct") {
        return Ok(Outcome::Skipped(format!(
            "operation `{op}`: update operations are not implemented yet"
        )));
    }
    let mut plain = execute(case, op, false)?;
    let mut indexed = execute(case, op, true)?;
    if case.get("sort").is_none() {
        // Without a sort, result order depends on the plan: compare as sets.
        for actual in [&mut plain, &mut indexed] {
            if let Actual::Documents(docs) = actual {
                docs.sort_by_key(by_id);
            }
        }
    }
    if plain != indexed {
        return Ok(Outcome::Failed(format!(
            "results differ with indexes (a planner bug)\n  without: {plain:?}\n  with:    {indexed:?}"
        )));
    }
    let expect = case.get("expect").ok_or("case has no `expect`")?;
    check(case, expect, &plain)
}

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
    let filter = case
        .get("filter")
        .map(document)
        .transpose()?
        .unwrap_or_default();
    let sort = case.get("sort").map(document).transpose()?;
    if with_indexes {
        create_indexes(&db, &filter, sort.as_ref());
    }
    let txn = db.read().map_err(|e| e.to_string())?;
    let Some(coll) = txn.collection(COLLECTION).map_err(|e| e.to_string())? else {
        return Ok(match op {
            "count" => Actual::Count(0),
            "distinct" => Actual::Values(Vec::new()),
            _ => Actual::Documents(Vec::new()),
        });
    };
    let outcome = match op {
        "count" => coll.count_matching(&filter, 0, 0).map(Actual::Count),
        "distinct" => {
            let key = case
                .get("key")
                .and_then(Value::as_str)
                .ok_or("distinct needs `key`")?;
            coll.distinct(key, &filter).map(Actual::Values)
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
            };
            coll.find(&filter, &options)
                .and_then(Iterator::collect)
                .map(Actual::Documents)
        }
    };
    Ok(outcome.unwrap_or_else(|e| Actual::Error(e.to_string())))
}

/// The encoded `_id` of a result, which orders results by `_id`.
fn by_id(doc: &Document) -> Vec<u8> {
    let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
    bson::RawBson::try_from(id).map_or_else(
        |_| Vec::new(),
        |raw| odm_engine::keys::encode(raw.as_raw_bson_ref()),
    )
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

fn check(case: &Value, expect: &Value, actual: &Actual) -> Result<Outcome, String> {
    let expects_error = expect
        .get("error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Actual::Error(e) = actual {
        return Ok(if expects_error {
            Outcome::Passed
        } else {
            Outcome::Failed(format!("unexpected error: {e}"))
        });
    }
    if expects_error {
        return Ok(Outcome::Failed(format!(
            "expected an error, got {actual:?}"
        )));
    }
    let strict = case.get("strict").and_then(Value::as_bool).unwrap_or(false);
    let ordered = case.get("sort").is_some();
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
        Actual::Error(_) => {}
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
            e == a
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
