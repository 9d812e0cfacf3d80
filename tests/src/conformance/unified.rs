//! MongoDB's unified test format, for the CRUD operations the engine has: the reads `find`,
//! `countDocuments`, `estimatedDocumentCount`, `count`, `distinct`, and `aggregate` when every
//! stage is `$match`, `$sort`, `$skip`, `$limit`, `$project` or `$count`; the writes
//! `insertOne`, `insertMany`, `updateOne`, `updateMany`, `replaceOne`, `deleteOne`,
//! `deleteMany`, `findOneAndUpdate`, `findOneAndReplace`, `findOneAndDelete`, `bulkWrite` and
//! `createIndex`. Results take the drivers' shapes (`matchedCount`, `insertedIds`, ...). Any
//! other operation, argument, entity or requirement makes the test a skip, with the reason.

use std::collections::BTreeMap;

use bson::{Bson, Document};
use odm_engine::aggregate::AggregateOptions;
use odm_engine::query::FindOptions;
use odm_engine::update::{
    BulkResult, BulkWrite, DeleteOptions, FindAndModify, OpResult, ReturnDocument,
    UpdateModifications, UpdateOptions, UpdateResult, WriteOp,
};
use odm_engine::{Database, IndexSpec};
use serde_json::Value;

use super::compare::values_match;
use super::{Outcome, Report, bson, document, documents_of};

/// The server version the engine presents itself as.
const SERVER_VERSION: [u64; 3] = [8, 0, 0];

/// An operation's failure as a driver reports it, with what the unified format may assert of
/// it (`errorCode`, `errorCodeName`, `errorContains`, `isClientError`, `expectResult` of a
/// failed bulk write, `writeErrors`).
#[derive(Debug, Default)]
struct OpError {
    message: String,
    /// The server's code and code name; `None` for an error the driver raises itself.
    code: Option<(i32, String)>,
    /// Raised by the driver before anything reaches the server (argument validation).
    client: bool,
    /// What a failed bulk write did besides its failures, in the driver's result shape.
    partial: Option<Box<Bson>>,
    /// A client-level bulk write's failed operations: position -> code.
    write_errors: BTreeMap<usize, i32>,
}

impl OpError {
    /// An error the driver itself raises: invalid arguments it refuses before sending.
    fn client(message: impl Into<String>) -> OpError {
        OpError {
            message: message.into(),
            client: true,
            ..OpError::default()
        }
    }
}

impl From<odm_engine::Error> for OpError {
    fn from(e: odm_engine::Error) -> OpError {
        OpError {
            message: e.to_string(),
            code: Some((e.code(), e.code_name())),
            ..OpError::default()
        }
    }
}

/// A failure of the runner itself (a malformed test): no code, not the driver's.
impl From<String> for OpError {
    fn from(message: String) -> OpError {
        OpError {
            message,
            ..OpError::default()
        }
    }
}

impl From<&str> for OpError {
    fn from(message: &str) -> OpError {
        OpError::from(message.to_owned())
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.code {
            Some((code, name)) => write!(f, "{} (code {code}, {name})", self.message),
            None if self.client => write!(f, "{} (client-side)", self.message),
            None => f.write_str(&self.message),
        }
    }
}

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
    // Met when any one requirement is; otherwise the first one's unmet condition says what the
    // test really needs.
    let reasons: Vec<String> = list.iter().filter_map(unmet).collect();
    if reasons.len() < list.len() || list.is_empty() {
        return Ok(());
    }
    let mut reasons = reasons;
    reasons.dedup();
    Err(format!(
        "needs {} (the engine presents a single node of server {}.{}.{})",
        reasons.join(", or "),
        SERVER_VERSION[0],
        SERVER_VERSION[1],
        SERVER_VERSION[2]
    ))
}

/// What one run requirement needs that the engine does not present, if anything.
fn unmet(r: &Value) -> Option<String> {
    let text = |key: &str| r.get(key).and_then(Value::as_str);
    if let Some(v) = text("minServerVersion").filter(|v| version(v) > SERVER_VERSION) {
        return Some(format!("a newer server (at least {v})"));
    }
    if let Some(v) = text("maxServerVersion").filter(|v| version(v) < SERVER_VERSION) {
        return Some(format!("an older server (at most {v})"));
    }
    if let Some(topologies) = r.get("topologies").and_then(Value::as_array)
        && !topologies.iter().any(|x| x == "single")
    {
        let names: Vec<&str> = topologies.iter().filter_map(Value::as_str).collect();
        return Some(format!("a {} topology", names.join(" or ")));
    }
    if text("serverless") == Some("require") {
        return Some("a serverless deployment".into());
    }
    if r.get("auth").and_then(Value::as_bool) == Some(true) {
        return Some("authentication".into());
    }
    if r.get("serverParameters").is_some() {
        return Some("server parameters".into());
    }
    if r.get("csfle").is_some() {
        return Some("client-side field level encryption".into());
    }
    None
}

/// A collection entity: the engine collection (`database.collection`), and whether its write
/// concern is `w: 0`, whose writes report no result to the client (the write still happens).
struct Entity {
    name: String,
    unacknowledged: bool,
}

/// Collection entities by id.
type Collections = BTreeMap<String, Entity>;

fn collection_entities(json: &Value) -> Result<Collections, String> {
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
            let unacknowledged = c
                .pointer("/collectionOptions/writeConcern/w")
                .and_then(Value::as_i64)
                == Some(0);
            let db_name = databases.get(db).cloned().unwrap_or_default();

            collections.insert(
                id.to_owned(),
                Entity {
                    name: format!("{db_name}.{name}"),
                    unacknowledged,
                },
            );
        } else if entity.get("session").is_some() || entity.get("bucket").is_some() {
            return Err("needs sessions or GridFS entities".into());
        }
    }
    Ok(collections)
}

fn run_test(json: &Value, test: &Value, collections: &Collections) -> Result<Outcome, String> {
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
        if op_name(op) == "clientBulkWrite" {
            let result = client_bulk_write(&db, op);
            if let Some(failure) = check_operation(op, result, false) {
                return Ok(Outcome::Failed(format!(
                    "operation {i} (clientBulkWrite): {failure}"
                )));
            }
            continue;
        }
        let object = op.get("object").and_then(Value::as_str).unwrap_or_default();
        let Some(entity) = collections.get(object) else {
            return Err(format!("`{object}` is not a collection entity"));
        };
        let result = execute(&db, &entity.name, op);
        if let Some(failure) = check_operation(op, result, entity.unacknowledged) {
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

const READS: [&str; 7] = [
    "find",
    "findOne",
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
const STAGES: [&str; 16] = [
    "$match",
    "$lookup",
    "$out",
    "$merge",
    "$unwind",
    "$group",
    "$sort",
    "$skip",
    "$limit",
    "$project",
    "$count",
    "$addFields",
    "$set",
    "$unset",
    "$replaceRoot",
    "$replaceWith",
];
const IGNORED_ARGUMENTS: [&str; 5] = [
    "batchSize",
    "comment",
    "allowDiskUse",
    "maxTimeMS",
    "session",
];

/// What `check_error` checks of an `expectError`.
const CHECKED_ERROR_ASSERTIONS: [&str; 7] = [
    "isError",
    "isClientError",
    "errorCode",
    "errorCodeName",
    "errorContains",
    "expectResult",
    "writeErrors",
];

/// Why an operation cannot be checked here, if it cannot.
// Long on purpose: the list of unified-format features this runner does not run, each with its
// reason: a table, read row by row.
#[allow(clippy::too_many_lines)]
fn unsupported(op: &Value, collections: &Collections) -> Option<String> {
    let name = op_name(op);
    // Assertions the runner cannot check are a reason to skip, never a silent pass.
    let expect_error = op.get("expectError").and_then(Value::as_object);
    for key in expect_error.into_iter().flat_map(|e| e.keys()) {
        if !CHECKED_ERROR_ASSERTIONS.contains(&key.as_str()) {
            return Some(format!(
                "asserts `{key}` of an error, which the engine does not report"
            ));
        }
    }
    if name == "clientBulkWrite" {
        return unsupported_client_bulk(op);
    }
    let object = op.get("object").and_then(Value::as_str).unwrap_or_default();
    if !collections.contains_key(object) {
        return Some(format!(
            "operation `{name}` on `{object}`, which is not a collection (needs a server, client or test-runner feature)"
        ));
    }
    if !READS.contains(&name) && !WRITES.contains(&name) {
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
            "document",
            "documents",
            "ordered",
            "update",
            "replacement",
            "upsert",
            "arrayFilters",
            "returnDocument",
            "requests",
            "keys",
            "name",
            "unique",
            "sparse",
            "let",
            "collation",
            "hint",
        ]
        .contains(&key.as_str())
            || IGNORED_ARGUMENTS.contains(&key.as_str());
        if !known {
            return Some(format!(
                "operation `{name}` argument `{key}` is not supported"
            ));
        }
    }
    if let Some(requests) = arguments
        .and_then(|a| a.get("requests"))
        .and_then(Value::as_array)
    {
        for request in requests {
            let Some((kind, args)) = request.as_object().and_then(|r| r.iter().next()) else {
                return Some("a bulkWrite request is not a document".into());
            };
            let kinds = [
                "insertOne",
                "updateOne",
                "updateMany",
                "replaceOne",
                "deleteOne",
                "deleteMany",
            ];
            if !kinds.contains(&kind.as_str()) {
                return Some(format!("bulkWrite request `{kind}` is not supported"));
            }
            let args = args.as_object();
            for key in args.into_iter().flat_map(|a| a.keys()) {
                let known = [
                    "document",
                    "filter",
                    "update",
                    "replacement",
                    "upsert",
                    "arrayFilters",
                    "sort",
                    "collation",
                    "hint",
                ]
                .contains(&key.as_str())
                    || IGNORED_ARGUMENTS.contains(&key.as_str());
                if !known {
                    return Some(format!(
                        "bulkWrite request `{kind}` argument `{key}` is not supported"
                    ));
                }
            }
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

fn execute(db: &Database, collection: &str, op: &Value) -> Result<Bson, OpError> {
    if WRITES.contains(&op_name(op)) {
        return execute_write(db, collection, op);
    }
    if op_name(op) == "aggregate" && writes_output(op) {
        return aggregate_into(db, collection, op).map_err(OpError::from);
    }
    let txn = db.read()?;
    let coll = txn.collection(collection)?;
    let filter = argument(op, "filter")
        .map(|f| document(&f))
        .transpose()?
        .unwrap_or_default();
    let number = |key: &str| argument(op, key).and_then(|v| v.as_i64()).unwrap_or(0);
    let Some(coll) = coll else {
        return Ok(match op_name(op) {
            "find" | "aggregate" | "distinct" => Bson::Array(Vec::new()),
            "findOne" => Bson::Null,
            _ => Bson::Int64(0),
        });
    };
    let e = OpError::from;
    let collation = argument(op, "collation")
        .map(|c| document(&c))
        .transpose()?;
    match op_name(op) {
        "find" | "findOne" => {
            let find_one = op_name(op) == "findOne";
            let options = FindOptions {
                sort: argument(op, "sort").map(|s| document(&s)).transpose()?,
                projection: argument(op, "projection")
                    .map(|s| document(&s))
                    .transpose()?,
                skip: u64::try_from(number("skip"))
                    .map_err(|_| "skip must not be negative".to_owned())?,
                limit: Some(if find_one {
                    1
                } else {
                    number("limit").unsigned_abs()
                }),
                hint: hint(op.get("arguments").unwrap_or(&Value::Null))?,
                let_vars: argument(op, "let").map(|l| document(&l)).transpose()?,
                collation: collation.clone(),
                allow_disk_use: argument(op, "allowDiskUse").and_then(|v| v.as_bool()),
                ..FindOptions::default()
            };
            let docs: Vec<Document> = coll
                .find(&filter, &options)
                .and_then(Iterator::collect)
                .map_err(e)?;
            if find_one {
                return Ok(docs.into_iter().next().map_or(Bson::Null, Bson::Document));
            }
            Ok(Bson::Array(docs.into_iter().map(Bson::Document).collect()))
        }
        // The deprecated `count` takes the same skip and limit as `countDocuments`.
        "countDocuments" | "count" => {
            let skip = u64::try_from(number("skip"))
                .map_err(|_| "skip must not be negative".to_owned())?;
            let n = coll
                .count_matching_with(
                    &filter,
                    skip,
                    number("limit").unsigned_abs(),
                    collation.as_ref(),
                )
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
            Ok(Bson::Array(
                coll.distinct_with(&key, &filter, collation.as_ref())
                    .map_err(e)?,
            ))
        }
        "aggregate" => {
            let pipeline = argument(op, "pipeline")
                .and_then(|p| p.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .map(document)
                .collect::<Result<Vec<_>, _>>()?;
            let options = AggregateOptions {
                let_vars: argument(op, "let").map(|l| document(&l)).transpose()?,
                collation,
                hint: hint(op.get("arguments").unwrap_or(&Value::Null))?,
                allow_disk_use: argument(op, "allowDiskUse").and_then(|v| v.as_bool()),
                ..AggregateOptions::default()
            };
            let docs = coll.aggregate(&pipeline, &options).map_err(e)?;
            Ok(Bson::Array(docs.into_iter().map(Bson::Document).collect()))
        }
        other => Err(format!("operation {other} is not supported").into()),
    }
}

fn document_argument(args: &Value, key: &str) -> Result<Option<Document>, String> {
    args.get(key).map(document).transpose()
}

/// A `hint` argument: an index name or key pattern, as the engine takes it.
fn hint(args: &Value) -> Result<Option<Bson>, String> {
    args.get("hint").map(bson).transpose()
}

fn update_options(args: &Value) -> Result<UpdateOptions, String> {
    Ok(UpdateOptions {
        hint: hint(args)?,
        upsert: args.get("upsert").and_then(Value::as_bool).unwrap_or(false),
        array_filters: match args.get("arrayFilters") {
            Some(Value::Array(items)) => items.iter().map(document).collect::<Result<_, _>>()?,
            _ => Vec::new(),
        },
        sort: document_argument(args, "sort")?,
        let_vars: document_argument(args, "let")?,
        collation: document_argument(args, "collation")?,
        ..UpdateOptions::default()
    })
}

fn delete_options(args: &Value) -> Result<DeleteOptions, String> {
    Ok(DeleteOptions {
        hint: hint(args)?,
        let_vars: document_argument(args, "let")?,
        collation: document_argument(args, "collation")?,
    })
}

/// A driver's update result document.
fn update_result(r: &UpdateResult) -> Bson {
    let mut d = bson::doc! {
        "matchedCount": r.matched as i64,
        "modifiedCount": r.modified as i64,
        "upsertedCount": i64::from(r.upserted_id.is_some()),
    };
    if let Some(id) = &r.upserted_id {
        d.insert("upsertedId", id.clone());
    }
    Bson::Document(d)
}

/// `{"0": id, "3": id}`: ids by operation position.
fn ids_by_position(ids: &[(usize, Bson)]) -> Document {
    ids.iter()
        .map(|(i, id)| (i.to_string(), id.clone()))
        .collect()
}

fn bulk_result(r: &BulkResult) -> Bson {
    Bson::Document(bson::doc! {
        "insertedCount": r.inserted as i64,
        "matchedCount": r.matched as i64,
        "modifiedCount": r.modified as i64,
        "deletedCount": r.deleted as i64,
        "upsertedCount": r.upserted as i64,
        "insertedIds": ids_by_position(&r.inserted_ids),
        "upsertedIds": ids_by_position(&r.upserted_ids),
    })
}

/// What a driver checks before sending an update or a replacement: an update document holds
/// operators (its first key starts with `$`), a replacement holds none. Both are client-side
/// errors in the unified format.
fn driver_validation(kind: &str, args: &Value) -> Result<(), OpError> {
    let first_key = |key: &str| {
        args.get(key)
            .and_then(Value::as_object)
            .and_then(|d| d.keys().next().cloned())
    };
    match kind {
        "updateOne" | "updateMany" => match first_key("update") {
            Some(k) if !k.starts_with('$') => Err(OpError::client(
                "an update document must contain atomic operators",
            )),
            _ => Ok(()),
        },
        "replaceOne" | "findOneAndReplace" => match first_key("replacement") {
            Some(k) if k.starts_with('$') => Err(OpError::client(
                "a replacement document must not contain atomic operators",
            )),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

fn write_request(kind: &str, args: &Value) -> Result<WriteOp, OpError> {
    driver_validation(kind, args)?;
    let filter = || -> Result<Document, String> {
        Ok(document_argument(args, "filter")?.unwrap_or_default())
    };
    let update = || update_argument(args);
    Ok(match kind {
        "insertOne" => WriteOp::InsertOne(document_argument(args, "document")?.unwrap_or_default()),
        "updateOne" => WriteOp::UpdateOne {
            filter: filter()?,
            update: update()?,
            options: update_options(args)?,
        },
        "updateMany" => WriteOp::UpdateMany {
            filter: filter()?,
            update: update()?,
            options: update_options(args)?,
        },
        "replaceOne" => WriteOp::ReplaceOne {
            filter: filter()?,
            replacement: document_argument(args, "replacement")?.unwrap_or_default(),
            options: update_options(args)?,
        },
        "deleteOne" => WriteOp::DeleteOne {
            filter: filter()?,
            options: delete_options(args)?,
        },
        "deleteMany" => WriteOp::DeleteMany {
            filter: filter()?,
            options: delete_options(args)?,
        },
        other => return Err(format!("bulkWrite request `{other}` is not supported").into()),
    })
}

/// An update document, or a pipeline (an array of stages).
fn update_argument(args: &Value) -> Result<UpdateModifications, String> {
    match args.get("update") {
        Some(Value::Array(stages)) => Ok(UpdateModifications::Pipeline(
            stages.iter().map(document).collect::<Result<_, _>>()?,
        )),
        _ => Ok(document_argument(args, "update")?
            .unwrap_or_default()
            .into()),
    }
}

/// Runs a write operation in its own transaction and returns the driver's result shape.
// Long on purpose: the unified format's write operations, one arm per operation, each a few lines
// of argument reading.
#[allow(clippy::too_many_lines)]
fn execute_write(db: &Database, collection: &str, op: &Value) -> Result<Bson, OpError> {
    let args = op.get("arguments").cloned().unwrap_or(Value::Null);
    let name = op_name(op);
    driver_validation(name, &args)?;
    let filter = document_argument(&args, "filter")?.unwrap_or_default();
    let e = OpError::from;
    let coll = db.collection(collection);
    let find_and_modify = || -> Result<FindAndModify, String> {
        Ok(FindAndModify {
            sort: document_argument(&args, "sort")?,
            projection: document_argument(&args, "projection")?,
            upsert: args.get("upsert").and_then(Value::as_bool).unwrap_or(false),
            return_document: match args.get("returnDocument").and_then(Value::as_str) {
                Some("After") => ReturnDocument::After,
                _ => ReturnDocument::Before,
            },
            array_filters: update_options(&args)?.array_filters,
            hint: hint(&args)?,
            let_vars: document_argument(&args, "let")?,
            collation: document_argument(&args, "collation")?,
        })
    };
    let or_null = |d: Option<Document>| d.map_or(Bson::Null, Bson::Document);
    match name {
        "insertOne" => {
            let doc = document_argument(&args, "document")?.unwrap_or_default();
            let id = coll.insert_one(&doc).map_err(e)?;
            Ok(Bson::Document(bson::doc! { "insertedId": id }))
        }
        "insertMany" => {
            let docs = match args.get("documents") {
                Some(Value::Array(items)) => {
                    items.iter().map(document).collect::<Result<Vec<_>, _>>()?
                }
                _ => return Err("insertMany needs documents".into()),
            };
            let ordered = args.get("ordered").and_then(Value::as_bool).unwrap_or(true);
            let result = coll.insert_many(docs, ordered).map_err(e)?;
            if let Some((i, failure)) = result.failures.first() {
                return Err(OpError {
                    message: format!("document {i}: {failure}"),
                    code: Some((failure.code(), failure.code_name())),
                    // A driver reports an insertMany that failed part way as a bulk write.
                    partial: Some(Box::new(Bson::Document(bson::doc! {
                        "insertedCount": result.inserted.len() as i64,
                        "matchedCount": 0_i64,
                        "modifiedCount": 0_i64,
                        "deletedCount": 0_i64,
                        "upsertedCount": 0_i64,
                        "upsertedIds": {},
                        "insertedIds": ids_by_position(&result.inserted),
                    }))),
                    ..OpError::default()
                });
            }
            Ok(Bson::Document(
                bson::doc! { "insertedIds": ids_by_position(&result.inserted) },
            ))
        }
        "updateOne" | "updateMany" | "replaceOne" => {
            let options = update_options(&args)?;
            let result = match name {
                "updateOne" => coll.update_one(&filter, update_argument(&args)?, &options),
                "updateMany" => coll.update_many(&filter, update_argument(&args)?, &options),
                _ => coll.replace_one(
                    &filter,
                    &document_argument(&args, "replacement")?.unwrap_or_default(),
                    &options,
                ),
            }
            .map_err(e)?;
            Ok(update_result(&result))
        }
        "deleteOne" | "deleteMany" => {
            let options = delete_options(&args)?;
            let n = if name == "deleteOne" {
                coll.delete_one_with(&filter, &options)
            } else {
                coll.delete_many_with(&filter, &options)
            }
            .map_err(e)?;
            Ok(Bson::Document(bson::doc! { "deletedCount": n as i64 }))
        }
        "findOneAndUpdate" => coll
            .find_one_and_update(&filter, update_argument(&args)?, &find_and_modify()?)
            .map(or_null)
            .map_err(e),
        "findOneAndReplace" => coll
            .find_one_and_replace(
                &filter,
                &document_argument(&args, "replacement")?.unwrap_or_default(),
                &find_and_modify()?,
            )
            .map(or_null)
            .map_err(e),
        "findOneAndDelete" => coll
            .find_one_and_delete(&filter, &find_and_modify()?)
            .map(or_null)
            .map_err(e),
        "bulkWrite" => {
            let mut ops = Vec::new();
            for request in args
                .get("requests")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let (kind, request_args) = request
                    .as_object()
                    .and_then(|r| r.iter().next())
                    .ok_or("a bulkWrite request is not a document")?;
                ops.push(write_request(kind, request_args)?);
            }
            let ordered = args.get("ordered").and_then(Value::as_bool).unwrap_or(true);
            let let_vars = document_argument(&args, "let")?;
            let result = coll
                .bulk_write(BulkWrite {
                    ops,
                    ordered,
                    let_vars,
                })
                .map_err(e)?;
            if let Some((i, failure)) = result.failures.first() {
                return Err(OpError {
                    message: format!("request {i}: {failure}"),
                    code: Some((failure.code(), failure.code_name())),
                    partial: Some(Box::new(bulk_result(&result))),
                    ..OpError::default()
                });
            }
            Ok(bulk_result(&result))
        }
        "createIndex" => {
            let keys = document_argument(&args, "keys")?.unwrap_or_default();
            let mut spec = IndexSpec::from_keys_document(&keys).map_err(|e| e.to_string())?;
            if let Some(name) = args.get("name").and_then(Value::as_str) {
                spec = spec.named(name);
            }
            if args.get("unique").and_then(Value::as_bool) == Some(true) {
                spec = spec.unique();
            }
            if args.get("sparse").and_then(Value::as_bool) == Some(true) {
                spec = spec.sparse();
            }
            coll.create_index(spec).map(Bson::String).map_err(e)
        }
        other => Err(format!("operation {other} is not supported").into()),
    }
}

/// `None` when the operation's result or error is as expected.
/// An unacknowledged operation has no result to compare (as a driver reports none).
fn check_operation(
    op: &Value,
    result: Result<Bson, OpError>,
    unacknowledged: bool,
) -> Option<String> {
    if let Some(expect_error) = op.get("expectError") {
        return match result {
            Err(error) => check_error(expect_error, &error),
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
    let actual_seen = (!unacknowledged).then_some(&actual);
    if values_match(&expected, actual_seen, true) {
        None
    } else {
        Some(format!("expected {expected}\n  actual   {actual}"))
    }
}

/// Checks an error against every assertion of an `expectError`; `None` when all hold.
fn check_error(expect: &Value, error: &OpError) -> Option<String> {
    let mismatch = |what: &str, want: &dyn std::fmt::Display| {
        Some(format!(
            "expected an error with {what} {want}, got: {error}"
        ))
    };
    if let Some(client) = expect.get("isClientError").and_then(Value::as_bool)
        && client != error.client
    {
        return mismatch("isClientError", &client);
    }
    if let Some(code) = expect.get("errorCode").and_then(Value::as_i64)
        && error.code.as_ref().map(|(c, _)| i64::from(*c)) != Some(code)
    {
        return mismatch("code", &code);
    }
    if let Some(name) = expect.get("errorCodeName").and_then(Value::as_str)
        && error.code.as_ref().map(|(_, n)| n.as_str()) != Some(name)
    {
        return mismatch("code name", &name);
    }
    if let Some(text) = expect.get("errorContains").and_then(Value::as_str)
        && !error.message.to_lowercase().contains(&text.to_lowercase())
    {
        return mismatch("a message containing", &text);
    }
    if let Some(expected) = expect.get("expectResult") {
        let expected = match bson(expected) {
            Ok(e) => e,
            Err(e) => return Some(e),
        };
        if !values_match(&expected, error.partial.as_deref(), true) {
            let actual = error
                .partial
                .as_ref()
                .map_or_else(|| "no partial result".to_owned(), ToString::to_string);
            return Some(format!(
                "expected the partial result {expected}\n  actual   {actual}"
            ));
        }
    }
    if let Some(Value::Object(expected)) = expect.get("writeErrors") {
        for (position, want) in expected {
            let got = position
                .parse::<usize>()
                .ok()
                .and_then(|p| error.write_errors.get(&p));
            let want_code = want.get("code").and_then(Value::as_i64);
            if want_code.is_some() && got.map(|c| i64::from(*c)) != want_code {
                return mismatch(&format!("write error {position} of code"), &want);
            }
        }
        if error.write_errors.len() != expected.len() {
            return Some(format!(
                "expected {} write errors, got {:?}",
                expected.len(),
                error.write_errors
            ));
        }
    }
    None
}

/// Why a client-level bulk write cannot be checked here, if it cannot.
fn unsupported_client_bulk(op: &Value) -> Option<String> {
    let arguments = op.get("arguments").and_then(Value::as_object)?;
    for key in arguments.keys() {
        let known = [
            "models",
            "ordered",
            "verboseResults",
            "let",
            "bypassDocumentValidation",
        ]
        .contains(&key.as_str())
            || IGNORED_ARGUMENTS.contains(&key.as_str());
        if !known {
            return Some(format!("clientBulkWrite argument `{key}` is not supported"));
        }
    }
    for model in arguments
        .get("models")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some((kind, args)) = model.as_object().and_then(|m| m.iter().next()) else {
            return Some("a clientBulkWrite model is not a document".into());
        };
        for key in args.as_object().into_iter().flat_map(|a| a.keys()) {
            let known = [
                "namespace",
                "document",
                "filter",
                "update",
                "replacement",
                "upsert",
                "arrayFilters",
                "collation",
                "sort",
                "hint",
            ]
            .contains(&key.as_str())
                || IGNORED_ARGUMENTS.contains(&key.as_str());
            if !known {
                return Some(format!(
                    "clientBulkWrite model `{kind}` argument `{key}` is not supported"
                ));
            }
        }
    }
    None
}

/// A client-level bulk write: each model names its namespace, an engine collection.
fn client_bulk_write(db: &Database, op: &Value) -> Result<Bson, OpError> {
    let args = op.get("arguments").cloned().unwrap_or(Value::Null);
    let mut ops = Vec::new();
    for model in args
        .get("models")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (kind, model_args) = model
            .as_object()
            .and_then(|m| m.iter().next())
            .ok_or("a clientBulkWrite model is not a document")?;
        let namespace = model_args
            .get("namespace")
            .and_then(Value::as_str)
            .ok_or("a clientBulkWrite model needs a namespace")?;
        ops.push((namespace.to_owned(), write_request(kind, model_args)?));
    }
    if ops.is_empty() {
        return Err(OpError::client(
            "a client bulk write needs at least one model",
        ));
    }
    let ordered = args.get("ordered").and_then(Value::as_bool).unwrap_or(true);
    let verbose = args
        .get("verboseResults")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let let_vars = document_argument(&args, "let")?;
    let result = db.write(|t| t.bulk_write_across(ops, ordered, let_vars.as_ref()))?;
    let mut out = bson::doc! {
        "insertedCount": result.inserted as i64,
        "upsertedCount": result.upserted as i64,
        "matchedCount": result.matched as i64,
        "modifiedCount": result.modified as i64,
        "deletedCount": result.deleted as i64,
    };
    if verbose {
        let (mut inserts, mut updates, mut deletes) =
            (Document::new(), Document::new(), Document::new());
        for (i, r) in &result.results {
            match r {
                OpResult::Inserted(id) => {
                    inserts.insert(i.to_string(), bson::doc! { "insertedId": id.clone() });
                }
                OpResult::Updated(u) => {
                    // As the server's per-operation `n`, which drivers report as matchedCount,
                    // an upsert counts its new document.
                    let matched = u.matched + u64::from(u.upserted_id.is_some());
                    let mut d = bson::doc! {
                        "matchedCount": matched as i64,
                        "modifiedCount": u.modified as i64,
                    };
                    if let Some(id) = &u.upserted_id {
                        d.insert("upsertedId", id.clone());
                    }
                    updates.insert(i.to_string(), d);
                }
                OpResult::Deleted(n) => {
                    deletes.insert(i.to_string(), bson::doc! { "deletedCount": *n as i64 });
                }
            }
        }
        out.insert("insertResults", inserts);
        out.insert("updateResults", updates);
        out.insert("deleteResults", deletes);
    }
    if let Some((i, failure)) = result.failures.first() {
        return Err(OpError {
            message: format!("model {i}: {failure}"),
            // A driver reports the partial result only when some operation succeeded.
            partial: (!result.results.is_empty()).then(|| Box::new(Bson::Document(out))),
            write_errors: result
                .failures
                .iter()
                .map(|(i, e)| (*i, e.code()))
                .collect(),
            ..OpError::default()
        });
    }
    Ok(Bson::Document(out))
}

/// Whether an aggregation ends with `$out` or `$merge`.
fn writes_output(op: &Value) -> bool {
    argument(op, "pipeline")
        .and_then(|p| p.as_array().and_then(|stages| stages.last().cloned()))
        .is_some_and(|last| last.get("$out").is_some() || last.get("$merge").is_some())
}

/// An aggregation that writes: its `$out` or `$merge` target named in the source's database
/// (engine collections are named `database.collection`).
fn aggregate_into(db: &Database, collection: &str, op: &Value) -> Result<Bson, String> {
    let database = collection.split_once('.').map_or("", |(d, _)| d);
    let mut pipeline = argument(op, "pipeline")
        .and_then(|p| p.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(document)
        .collect::<Result<Vec<_>, _>>()?;
    let qualify = |target: &Bson| -> Bson {
        match target {
            Bson::String(name) => Bson::String(format!("{database}.{name}")),
            Bson::Document(d) => {
                let db_name = d.get_str("db").unwrap_or(database);
                let coll = d.get_str("coll").unwrap_or_default();
                Bson::String(format!("{db_name}.{coll}"))
            }
            other => other.clone(),
        }
    };
    if let Some(last) = pipeline.last_mut() {
        if let Some(target) = last.get("$out").cloned() {
            last.insert("$out", qualify(&target));
        } else if let Some(Bson::Document(mut merge)) = last.get("$merge").cloned() {
            if let Some(into) = merge.get("into").cloned() {
                merge.insert("into", qualify(&into));
            }
            last.insert("$merge", merge);
        } else if let Some(into) = last.get("$merge").cloned() {
            last.insert("$merge", qualify(&into));
        }
    }
    let options = AggregateOptions {
        let_vars: argument(op, "let").map(|l| document(&l)).transpose()?,
        collation: argument(op, "collation")
            .map(|c| document(&c))
            .transpose()?,
        hint: None,
        allow_disk_use: argument(op, "allowDiskUse").and_then(|v| v.as_bool()),
        ..AggregateOptions::default()
    };
    db.aggregate(collection, &pipeline, &options)
        .map(|docs| Bson::Array(docs.into_iter().map(Bson::Document).collect()))
        .map_err(|e| e.to_string())
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
