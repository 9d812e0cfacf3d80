//! MongoDB's unified test format, for the CRUD operations the engine has: `find`,
//! `countDocuments`, `estimatedDocumentCount`, `count`, `distinct`, and `aggregate` when every
//! stage is `$match`, `$sort`, `$skip`, `$limit`, `$project` or `$count`. Any other operation,
//! entity or requirement makes the test a skip, with the reason.

use std::collections::BTreeMap;

use bson::{Bson, Document};
use odm_engine::Database;
use odm_engine::query::{Filter, FindOptions, Projection, Sort};
use serde_json::Value;

use super::compare::values_match;
use super::{Outcome, Report, bson, document, documents_of};

/// The server version the engine presents itself as.
const SERVER_VERSION: [u64; 3] = [8, 0, 0];

pub(super) fn run_file(file: &str, json: &Value) -> Vec<Report> {
    let tests = json
        .get("tests")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let file_requirements = requirements_met(json.get("runOnRequirements"));
    let collections = collection_entities(json);
    tests
        .iter()
        .map(|test| {
            let description = test
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("?");
            let name = format!("{file}: {description}");
            let outcome = if let Err(reason) = &file_requirements {
                Outcome::Skipped(reason.clone())
            } else if let Err(reason) = requirements_met(test.get("runOnRequirements")) {
                Outcome::Skipped(reason)
            } else if test.get("skipReason").is_some() {
                Outcome::Skipped("the test file marks it skipped".into())
            } else {
                match &collections {
                    Ok(c) => run_test(json, test, c).unwrap_or_else(Outcome::Failed),
                    Err(reason) => Outcome::Skipped(reason.clone()),
                }
            };
            Report { name, outcome }
        })
        .collect()
}

fn version(v: &str) -> [u64; 3] {
    let mut out = [0; 3];
    for (slot, part) in out.iter_mut().zip(v.split('.')) {
        *slot = part.parse().unwrap_or(0);
    }
    out
}

/// Whether one of the requirements holds for a single node of [`SERVER_VERSION`].
fn requirements_met(requirements: Option<&Value>) -> Result<(), String> {
    let Some(list) = requirements.and_then(Value::as_array) else {
        return Ok(());
    };
    let met = list.iter().any(|r| {
        let min_ok = r
            .get("minServerVersion")
            .and_then(Value::as_str)
            .is_none_or(|v| version(v) <= SERVER_VERSION);
        let max_ok = r
            .get("maxServerVersion")
            .and_then(Value::as_str)
            .is_none_or(|v| version(v) >= SERVER_VERSION);
        let topology_ok = r
            .get("topologies")
            .and_then(Value::as_array)
            .is_none_or(|t| t.iter().any(|x| x == "single"));
        let serverless_ok = r.get("serverless").and_then(Value::as_str) != Some("require");
        let auth_ok = r.get("auth").and_then(Value::as_bool) != Some(true);
        let plain = r.get("serverParameters").is_none() && r.get("csfle").is_none();
        min_ok && max_ok && topology_ok && serverless_ok && auth_ok && plain
    });
    if met {
        Ok(())
    } else {
        Err(format!(
            "runOnRequirements exclude a single node of server {}.{}.{}",
            SERVER_VERSION[0], SERVER_VERSION[1], SERVER_VERSION[2]
        ))
    }
}

/// Collection entity id -> engine collection name (`database.collection`).
fn collection_entities(json: &Value) -> Result<BTreeMap<String, String>, String> {
    let mut databases = BTreeMap::new();
    let mut collections = BTreeMap::new();
    for entity in json
        .get("createEntities")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(db) = entity.get("database") {
            let id = db.get("id").and_then(Value::as_str).unwrap_or_default();
            let name = db
                .get("databaseName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            databases.insert(id.to_owned(), name.to_owned());
        } else if let Some(c) = entity.get("collection") {
            let id = c.get("id").and_then(Value::as_str).unwrap_or_default();
            let db = c
                .get("database")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let name = c
                .get("collectionName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let db_name = databases.get(db).cloned().unwrap_or_default();
            collections.insert(id.to_owned(), format!("{db_name}.{name}"));
        } else if entity.get("session").is_some() || entity.get("bucket").is_some() {
            return Err("needs sessions or GridFS entities".into());
        }
    }
    Ok(collections)
}

fn run_test(
    json: &Value,
    test: &Value,
    collections: &BTreeMap<String, String>,
) -> Result<Outcome, String> {
    let operations = test
        .get("operations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let observable = test.get("outcome").is_some()
        || operations
            .iter()
            .any(|op| op.get("expectResult").is_some() || op.get("expectError").is_some());
    if !observable {
        return Ok(Outcome::Skipped(
            "no observable assertion (command events only)".into(),
        ));
    }
    for op in &operations {
        if let Some(reason) = unsupported(op, collections) {
            return Ok(Outcome::Skipped(reason));
        }
    }
    let db = Database::in_memory().map_err(|e| e.to_string())?;
    for data in json
        .get("initialData")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = namespace(data);
        let docs = documents_of(data)?;
        db.write(|t| {
            t.create_collection(&name)?;
            t.insert_many(&name, docs, true).map(drop)
        })
        .map_err(|e: odm_engine::Error| e.to_string())?;
    }
    for (i, op) in operations.iter().enumerate() {
        let collection = &collections[op.get("object").and_then(Value::as_str).unwrap_or_default()];
        let result = execute(&db, collection, op);
        if let Some(failure) = check_operation(op, result) {
            return Ok(Outcome::Failed(format!(
                "operation {i} ({}): {failure}",
                op_name(op)
            )));
        }
    }
    if let Some(outcome) = test.get("outcome").and_then(Value::as_array) {
        for expected in outcome {
            if let Some(failure) = check_outcome(&db, expected)? {
                return Ok(Outcome::Failed(failure));
            }
        }
    }
    Ok(Outcome::Passed)
}

fn op_name(op: &Value) -> &str {
    op.get("name").and_then(Value::as_str).unwrap_or("?")
}

const READS: [&str; 6] = [
    "find",
    "countDocuments",
    "estimatedDocumentCount",
    "count",
    "distinct",
    "aggregate",
];
const WRITES: [&str; 12] = [
    "insertOne",
    "insertMany",
    "updateOne",
    "updateMany",
    "replaceOne",
    "deleteOne",
    "deleteMany",
    "findOneAndUpdate",
    "findOneAndReplace",
    "findOneAndDelete",
    "bulkWrite",
    "createIndex",
];
const STAGES: [&str; 6] = ["$match", "$sort", "$skip", "$limit", "$project", "$count"];
const IGNORED_ARGUMENTS: [&str; 6] = [
    "batchSize",
    "comment",
    "hint",
    "allowDiskUse",
    "maxTimeMS",
    "session",
];

/// Why an operation cannot be checked here, if it cannot.
fn unsupported(op: &Value, collections: &BTreeMap<String, String>) -> Option<String> {
    let name = op_name(op);
    let object = op.get("object").and_then(Value::as_str).unwrap_or_default();
    if !collections.contains_key(object) {
        return Some(format!(
            "operation `{name}` on `{object}`, which is not a collection (needs a server, client or test-runner feature)"
        ));
    }
    if WRITES.contains(&name) {
        return Some(format!(
            "operation `{name}`: write operations are not implemented yet"
        ));
    }
    if !READS.contains(&name) {
        return Some(format!("operation `{name}` is not supported"));
    }
    let arguments = op.get("arguments").and_then(Value::as_object);
    for key in arguments.into_iter().flat_map(|a| a.keys()) {
        let known = [
            "filter",
            "sort",
            "projection",
            "skip",
            "limit",
            "fieldName",
            "pipeline",
        ]
        .contains(&key.as_str())
            || IGNORED_ARGUMENTS.contains(&key.as_str());
        if !known {
            return Some(format!(
                "operation `{name}` argument `{key}` is not supported"
            ));
        }
    }
    if name == "aggregate" {
        let stages = arguments
            .and_then(|a| a.get("pipeline"))
            .and_then(Value::as_array);
        for stage in stages.into_iter().flatten() {
            let stage_name = stage
                .as_object()
                .and_then(|s| s.keys().next())
                .cloned()
                .unwrap_or_default();
            if !STAGES.contains(&stage_name.as_str()) {
                return Some(format!("aggregate stage `{stage_name}` is not supported"));
            }
        }
    }
    None
}

fn argument(op: &Value, key: &str) -> Option<Value> {
    op.get("arguments").and_then(|a| a.get(key)).cloned()
}

fn execute(db: &Database, collection: &str, op: &Value) -> Result<Bson, String> {
    let txn = db.read().map_err(|e| e.to_string())?;
    let coll = txn.collection(collection).map_err(|e| e.to_string())?;
    let filter = argument(op, "filter")
        .map(|f| document(&f))
        .transpose()?
        .unwrap_or_default();
    let number = |key: &str| argument(op, key).and_then(|v| v.as_i64()).unwrap_or(0);
    let Some(coll) = coll else {
        return Ok(match op_name(op) {
            "find" | "aggregate" | "distinct" => Bson::Array(Vec::new()),
            _ => Bson::Int64(0),
        });
    };
    let e = |e: odm_engine::Error| e.to_string();
    match op_name(op) {
        "find" => {
            let options = FindOptions {
                sort: argument(op, "sort").map(|s| document(&s)).transpose()?,
                projection: argument(op, "projection")
                    .map(|s| document(&s))
                    .transpose()?,
                skip: u64::try_from(number("skip"))
                    .map_err(|_| "skip must not be negative".to_owned())?,
                limit: Some(number("limit").unsigned_abs()),
                // Hints name indexes these tests never create here; plans are the engine's own.
                hint: None,
            };
            let docs: Vec<Document> = coll
                .find(&filter, &options)
                .and_then(Iterator::collect)
                .map_err(e)?;
            Ok(Bson::Array(docs.into_iter().map(Bson::Document).collect()))
        }
        // The deprecated `count` takes the same skip and limit as `countDocuments`.
        "countDocuments" | "count" => {
            let skip = u64::try_from(number("skip"))
                .map_err(|_| "skip must not be negative".to_owned())?;
            let n = coll
                .count_matching(&filter, skip, number("limit").unsigned_abs())
                .map_err(e)?;
            Ok(Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)))
        }
        "estimatedDocumentCount" => Ok(Bson::Int64(
            i64::try_from(coll.len().map_err(e)?).unwrap_or(i64::MAX),
        )),
        "distinct" => {
            let key = argument(op, "fieldName")
                .and_then(|v| v.as_str().map(str::to_owned))
                .ok_or("distinct needs fieldName")?;
            Ok(Bson::Array(coll.distinct(&key, &filter).map_err(e)?))
        }
        "aggregate" => {
            let all: Vec<Document> = coll
                .find(&Document::new(), &FindOptions::default())
                .and_then(Iterator::collect)
                .map_err(e)?;
            let pipeline = argument(op, "pipeline")
                .and_then(|p| p.as_array().cloned())
                .unwrap_or_default();
            aggregate(all, &pipeline)
        }
        other => Err(format!("operation {other} is not supported")),
    }
}

/// The simple stages, applied in order to documents in memory.
fn aggregate(mut docs: Vec<Document>, pipeline: &[Value]) -> Result<Bson, String> {
    for stage in pipeline {
        let stage = document(stage)?;
        let Some((name, arg)) = stage.iter().next() else {
            continue;
        };
        let spec = || {
            arg.as_document()
                .cloned()
                .ok_or_else(|| format!("{name} expects a document"))
        };
        let count = |v: &Bson| -> usize {
            match v {
                Bson::Int32(i) => usize::try_from(*i).unwrap_or(0),
                Bson::Int64(i) => usize::try_from(*i).unwrap_or(0),
                Bson::Double(d) => *d as usize,
                _ => 0,
            }
        };
        match name.as_str() {
            "$match" => {
                let filter = Filter::parse(&spec()?).map_err(|e| e.to_string())?;
                docs.retain(|d| {
                    bson::RawDocumentBuf::try_from(d).is_ok_and(|raw| filter.matches(&raw))
                });
            }
            "$sort" => {
                let sort = Sort::parse(&spec()?).map_err(|e| e.to_string())?;
                let mut raws: Vec<bson::RawDocumentBuf> = docs
                    .iter()
                    .filter_map(|d| bson::RawDocumentBuf::try_from(d).ok())
                    .collect();
                raws.sort_by(|a, b| sort.compare(a, b));
                docs = raws
                    .iter()
                    .filter_map(|r| Document::try_from(r.as_ref()).ok())
                    .collect();
            }
            "$skip" => {
                let n = count(arg).min(docs.len());
                docs.drain(..n);
            }
            "$limit" => docs.truncate(count(arg)),
            "$project" => {
                let projection = Projection::parse(&spec()?).map_err(|e| e.to_string())?;
                let everything = Filter::And(Vec::new());
                docs = docs
                    .iter()
                    .map(|d| {
                        let raw = bson::RawDocumentBuf::try_from(d).map_err(|e| e.to_string())?;
                        projection.apply(&raw, &everything)
                    })
                    .collect::<Result<_, _>>()?;
            }
            "$count" => {
                let field = arg.as_str().ok_or("$count expects a field name")?;
                let n = i32::try_from(docs.len()).unwrap_or(i32::MAX);
                docs = if n == 0 {
                    Vec::new()
                } else {
                    vec![bson::doc! { field: n }]
                };
            }
            other => return Err(format!("stage {other} is not supported")),
        }
    }
    Ok(Bson::Array(docs.into_iter().map(Bson::Document).collect()))
}

/// `None` when the operation's result or error is as expected.
fn check_operation(op: &Value, result: Result<Bson, String>) -> Option<String> {
    if let Some(expect_error) = op.get("expectError") {
        return match result {
            Err(_) => None,
            Ok(actual) => Some(format!("expected an error ({expect_error}), got {actual}")),
        };
    }
    let actual = match result {
        Ok(a) => a,
        Err(e) => return Some(format!("unexpected error: {e}")),
    };
    let expected = op.get("expectResult")?;
    let expected = match bson(expected) {
        Ok(e) => e,
        Err(e) => return Some(e),
    };
    if values_match(&expected, Some(&actual), true) {
        None
    } else {
        Some(format!("expected {expected}\n  actual   {actual}"))
    }
}

/// The engine collection of an `initialData` or `outcome` element: `database.collection`.
fn namespace(v: &Value) -> String {
    let field = |key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    format!("{}.{}", field("databaseName"), field("collectionName"))
}

fn check_outcome(db: &Database, expected: &Value) -> Result<Option<String>, String> {
    let name = namespace(expected);
    let want: Vec<Bson> = documents_of(expected)?
        .into_iter()
        .map(Bson::Document)
        .collect();
    let txn = db.read().map_err(|e| e.to_string())?;
    let have: Vec<Bson> = match txn.collection(&name).map_err(|e| e.to_string())? {
        Some(c) => c
            .find(
                &Document::new(),
                &FindOptions {
                    sort: Some(bson::doc! { "_id": 1 }),
                    ..FindOptions::default()
                },
            )
            .and_then(Iterator::collect::<odm_engine::Result<Vec<Document>>>)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(Bson::Document)
            .collect(),
        None => Vec::new(),
    };
    let want = Bson::Array(want);
    let have = Bson::Array(have);
    Ok((!values_match(&want, Some(&have), false))
        .then(|| format!("outcome of `{name}`: expected {want}\n  actual   {have}")))
}
