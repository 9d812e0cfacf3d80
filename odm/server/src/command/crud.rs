//! Writing commands: `insert`, `update`, `delete`, `findAndModify`, and 8.0's client-level
//! `bulkWrite`. A command's statements run in one engine transaction, in order; a statement
//! that fails changes nothing and becomes an entry of `writeErrors` with its index, and an
//! ordered command stops there while an unordered one goes on, as in MongoDB. An interruption
//! (`maxTimeMS`, `killOp`) fails the command as a whole, keeping what the statements before it
//! wrote, as MongoDB does; the statement it stopped wrote nothing.

use bson::{Bson, Document, doc};
use odm_engine::ErrorCode;
use odm_engine::sampling::SampledCommand;
use odm_engine::update::{
    BulkResult, DeleteOptions, FindAndModify, Modify, OpResult, ReturnDocument,
    UpdateModifications, UpdateOptions, WriteOp,
};

use super::{Args, CommandError, CommandResult, Ctx, Reply, collection_name};
use crate::Stats;
use crate::session;

/// MongoDB's `maxWriteBatchSize`.
const MAX_BATCH: usize = super::handshake::MAX_WRITE_BATCH_SIZE as usize;

fn check_batch(len: usize, field: &str) -> Result<(), CommandError> {
    if len == 0 || len > MAX_BATCH {
        return Err(CommandError::new(
            ErrorCode::INVALID_LENGTH,
            format!("Write batch sizes must be between 1 and {MAX_BATCH}. Got {len} {field}."),
        ));
    }
    Ok(())
}

fn write_error(index: usize, e: &odm_engine::Error) -> Document {
    CommandError::from_engine(e).to_write_error(index)
}

/// Runs write operations on one collection of the command's database, with their reply made
/// by `reply` in the same transaction (see [`session::write_recorded`]). `positions`: the
/// index of the statement each operation came from, which the result's indexes are mapped
/// back to. An interruption fails the command after its commit, and is not recorded.
fn run_ops(
    ctx: &mut Ctx<'_>,
    collection: &str,
    (ops, positions): (Vec<WriteOp>, Vec<usize>),
    ordered: bool,
    let_vars: Option<Document>,
    bypass: bool,
    reply: impl FnOnce(&BulkResult) -> Document + Send + 'static,
) -> Result<session::Recorded<BulkResult>, CommandError> {
    super::profile::refuse_profile_writes(collection)?;
    super::views::refuse_view(ctx, collection)?;
    refuse_capped_in_transaction(ctx, collection)?;
    let collection = collection.to_owned();
    let recorded = session::write_recorded(
        ctx,
        move |t| {
            t.bypass_document_validation(bypass);
            let ops = ops.into_iter().map(|op| (collection.clone(), op)).collect();
            let mut result = t.bulk_write_across(ops, ordered, let_vars.as_ref())?;
            for (i, _) in &mut result.upserted_ids {
                *i = positions[*i];
            }
            for (i, _) in &mut result.results {
                *i = positions[*i];
            }
            for (i, _) in &mut result.failures {
                *i = positions[*i];
            }
            Ok(result)
        },
        move |result| interrupted(result).is_ok().then(|| reply(result)),
    )?;
    if let session::Recorded::Fresh(result, _) = &recorded {
        interrupted(result)?;
    }
    Ok(recorded)
}

/// MongoDB refuses every write to a capped collection inside a transaction (263).
fn refuse_capped_in_transaction(ctx: &Ctx<'_>, collection: &str) -> Result<(), CommandError> {
    if !session::in_transaction(ctx) {
        return Ok(());
    }
    let Some(db) = ctx.server.storage.get(&ctx.db)? else {
        return Ok(());
    };
    if db
        .read()?
        .collection_options(collection)
        .is_some_and(|o| o.capped.is_some())
    {
        return Err(CommandError::new(
            ErrorCode::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            format!(
                "Collection '{}.{collection}' is a capped collection. Writes in transactions are not allowed on capped collections.",
                ctx.db
            ),
        ));
    }
    Ok(())
}

/// A command's reply document from its recorded outcome.
fn reply_of<R>(recorded: session::Recorded<R>, count: impl FnOnce(&R)) -> Reply {
    match recorded {
        session::Recorded::Fresh(done, reply) => {
            count(&done);
            reply.into()
        }
        session::Recorded::Retried(reply) => reply.into(),
    }
}

fn is_interruption(e: &CommandError) -> bool {
    [ErrorCode::MAX_TIME_MS_EXPIRED, ErrorCode::INTERRUPTED]
        .iter()
        .any(|code| code.code == e.code)
}

/// As MongoDB: an interruption (`maxTimeMS`, `killOp`) fails the whole command, though the
/// statements before it were written (and committed).
fn interrupted(result: &BulkResult) -> Result<(), CommandError> {
    match result.failures.last() {
        Some((_, e)) if e.is_interruption() => Err(CommandError::from_engine(e)),
        _ => Ok(()),
    }
}

fn with_write_errors(mut reply: Document, errors: Vec<Document>) -> Document {
    if !errors.is_empty() {
        reply.insert("writeErrors", errors);
    }
    reply
}

pub fn insert(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "insert");
    let collection = collection_name(command, "insert")?.to_owned();
    let documents = args
        .documents("documents")?
        .ok_or_else(|| args.missing("documents"))?;
    check_batch(documents.len(), "ops")?;
    let ordered = args.bool("ordered")?.unwrap_or(true);
    let ops: Vec<WriteOp> = documents
        .into_iter()
        .map(|d| WriteOp::InsertOne(d.clone()))
        .collect();
    let positions = (0..ops.len()).collect();
    let recorded = run_ops(
        ctx,
        &collection,
        (ops, positions),
        ordered,
        None,
        args.flag("bypassDocumentValidation")?,
        |result| {
            let errors = result
                .failures
                .iter()
                .map(|(i, e)| write_error(*i, e))
                .collect();
            with_write_errors(doc! {"n": result.inserted as i32}, errors)
        },
    )?;
    Ok(reply_of(recorded, |result| {
        Stats::add(&ctx.server.stats.op_insert, result.inserted);
    }))
}

/// An update's `u`: operators or a replacement document, or a pipeline.
fn modification(value: &Bson, field: &str) -> Result<UpdateModifications, CommandError> {
    match value {
        Bson::Document(d) => Ok(UpdateModifications::Document(d.clone())),
        Bson::Array(stages) => stages
            .iter()
            .map(|s| match s {
                Bson::Document(d) => Ok(d.clone()),
                _ => Err(CommandError::new(
                    ErrorCode::FAILED_TO_PARSE,
                    format!("each stage of the `{field}` pipeline must be an object"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(UpdateModifications::Pipeline),
        other => Err(CommandError::new(
            ErrorCode::FAILED_TO_PARSE,
            format!(
                "`{field}` must be an object or an array, not {}",
                super::args::type_name(other)
            ),
        )),
    }
}

fn is_replacement(update: &UpdateModifications) -> bool {
    matches!(update, UpdateModifications::Document(d) if d.keys().next().is_none_or(|k| !k.starts_with('$')))
}

/// An update statement (`{q, u, upsert, multi, arrayFilters, hint, collation, sort, c}`).
fn update_op(statement: &Document) -> Result<WriteOp, CommandError> {
    let args = Args::new(statement, "update");
    let filter = args.doc("q")?.cloned().unwrap_or_default();
    let update = modification(args.get("u").ok_or_else(|| args.missing("u"))?, "u")?;
    let multi = args.flag("multi")?;
    let options = UpdateOptions {
        upsert: args.flag("upsert")?,
        array_filters: args.owned_documents("arrayFilters")?.unwrap_or_default(),
        hint: super::query::hint(&args)?,
        sort: args.doc("sort")?.cloned(),
        stop_at_first_error: false,
        let_vars: args.doc("c")?.cloned(),
        collation: args.doc("collation")?.cloned(),
    };
    if is_replacement(&update) {
        if multi {
            return Err(CommandError::new(
                ErrorCode::FAILED_TO_PARSE,
                "multi update is not supported for replacement-style update",
            ));
        }
        let UpdateModifications::Document(replacement) = update else {
            unreachable!("a replacement is a document")
        };
        return Ok(WriteOp::ReplaceOne {
            filter,
            replacement,
            options,
        });
    }
    Ok(if multi {
        WriteOp::UpdateMany {
            filter,
            update,
            options,
        }
    } else {
        WriteOp::UpdateOne {
            filter,
            update,
            options,
        }
    })
}

/// A delete statement (`{q, limit, hint, collation}`).
fn delete_op(statement: &Document) -> Result<WriteOp, CommandError> {
    let args = Args::new(statement, "delete");
    let filter = args.doc("q")?.ok_or_else(|| args.missing("q"))?.clone();
    let options = DeleteOptions {
        hint: super::query::hint(&args)?,
        let_vars: None,
        collation: args.doc("collation")?.cloned(),
    };
    match args.i64("limit")?.ok_or_else(|| args.missing("limit"))? {
        0 => Ok(WriteOp::DeleteMany { filter, options }),
        1 => Ok(WriteOp::DeleteOne { filter, options }),
        n => Err(CommandError::new(
            ErrorCode::FAILED_TO_PARSE,
            format!("The limit field in delete objects must be 0 or 1. Got {n}"),
        )),
    }
}

/// Parses statements; a statement that does not parse is a write error at its index, and in
/// an ordered command the statements after it are not run.
fn parse_statements(
    statements: Vec<&Document>,
    ordered: bool,
    parse: fn(&Document) -> Result<WriteOp, CommandError>,
) -> (Vec<WriteOp>, Vec<usize>, Vec<Document>) {
    let mut ops = Vec::new();
    let mut positions = Vec::new();
    let mut errors = Vec::new();
    for (i, statement) in statements.into_iter().enumerate() {
        match parse(statement) {
            Ok(op) => {
                ops.push(op);
                positions.push(i);
            }
            Err(e) => {
                errors.push(e.to_write_error(i));
                if ordered {
                    break;
                }
            }
        }
    }
    (ops, positions, errors)
}

/// Runs the statements of an `update` or `delete` command (`field`: `updates` or `deletes`),
/// its reply made by `finish` from the result (indexes mapped back to statements) and every
/// write error, parse errors included, in index order (only the first in an ordered command).
fn run_statements(
    ctx: &mut Ctx<'_>,
    command: &Document,
    name: &'static str,
    field: &str,
    parse: fn(&Document) -> Result<WriteOp, CommandError>,
    finish: fn(&BulkResult, Vec<Document>) -> Document,
) -> Result<session::Recorded<BulkResult>, CommandError> {
    let args = Args::new(command, name);
    let collection = collection_name(command, name)?.to_owned();
    let statements = args.documents(field)?.ok_or_else(|| args.missing(field))?;
    check_batch(statements.len(), "ops")?;
    let ordered = args.bool("ordered")?.unwrap_or(true);
    let let_vars = args.doc("let")?.cloned();
    let (ops, positions, parse_errors) = parse_statements(statements.clone(), ordered, parse);
    // Each statement that parsed is offered to the query analyzer on its own, as MongoDB
    // samples them.
    let sampled = if name == "update" {
        SampledCommand::Update
    } else {
        SampledCommand::Delete
    };
    for &at in &positions {
        super::analyze::sample(ctx, &collection, sampled, |id| {
            let mut statement = statements[at].clone();
            statement.insert("sampleId", id);
            let mut cmd = if name == "update" {
                odm_engine::commands::update(&collection, statement, let_vars.as_ref())
            } else {
                odm_engine::commands::delete(&collection, statement, let_vars.as_ref())
            };
            cmd.insert("$db", ctx.db.as_str());
            cmd
        });
    }
    let reply = move |result: &BulkResult| {
        let mut errors = parse_errors;
        errors.extend(result.failures.iter().map(|(i, e)| write_error(*i, e)));
        errors.sort_by_key(|e| e.get_i32("index").unwrap_or(i32::MAX));
        if ordered {
            errors.truncate(1);
        }
        finish(result, errors)
    };
    // An ordered command runs the statements before the first that does not parse.
    if ops.is_empty() {
        let reply = reply(&BulkResult::default());
        return Ok(session::Recorded::Fresh(BulkResult::default(), reply));
    }
    let bypass = args.flag("bypassDocumentValidation")?;
    run_ops(
        ctx,
        &collection,
        (ops, positions),
        ordered,
        let_vars,
        bypass,
        reply,
    )
}

/// Refuses the command when a statement's pipeline names a stage MongoDB does not know: MongoDB
/// reads every pipeline's stage names while parsing the command (to check what it may do), so
/// this fails the whole command, where any other fault of a statement is its write error.
fn check_stage_names(command: &Document) -> Result<(), CommandError> {
    let Ok(statements) = command.get_array("updates") else {
        return Ok(());
    };
    let pipelines = statements
        .iter()
        .filter_map(Bson::as_document)
        .filter_map(|statement| statement.get_array("u").ok());
    for stage in pipelines.flatten().filter_map(Bson::as_document) {
        if let Some(name) = stage.keys().next()
            && !odm_engine::aggregate::is_stage_name(name)
        {
            return Err(CommandError::new(
                ErrorCode::location(40324),
                format!("Unrecognized pipeline stage name: '{name}'"),
            ));
        }
    }
    Ok(())
}

pub fn update(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    check_stage_names(command)?;
    let recorded = run_statements(
        ctx,
        command,
        "update",
        "updates",
        update_op,
        |result, errors| {
            let mut reply = doc! {
                "n": (result.matched + result.upserted) as i32,
                "nModified": result.modified as i32,
            };
            if !result.upserted_ids.is_empty() {
                let upserted: Vec<Document> = result
                    .upserted_ids
                    .iter()
                    .map(|(i, id)| doc! {"index": *i as i32, "_id": id.clone()})
                    .collect();
                reply.insert("upserted", upserted);
            }
            with_write_errors(reply, errors)
        },
    )?;
    Ok(reply_of(recorded, |result| {
        Stats::add(
            &ctx.server.stats.op_update,
            result.matched + result.upserted,
        );
    }))
}

pub fn delete(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let recorded = run_statements(
        ctx,
        command,
        "delete",
        "deletes",
        delete_op,
        |result, errors| with_write_errors(doc! {"n": result.deleted as i32}, errors),
    )?;
    Ok(reply_of(recorded, |result| {
        Stats::add(&ctx.server.stats.op_delete, result.deleted);
    }))
}

pub fn find_and_modify(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let name = command
        .keys()
        .next()
        .map_or("findAndModify", String::as_str);
    let args = Args::new(command, "findAndModify");
    let collection = collection_name(command, name)?.to_owned();
    super::profile::refuse_profile_writes(&collection)?;
    super::views::refuse_view(ctx, &collection)?;
    refuse_capped_in_transaction(ctx, &collection)?;
    let filter = args.doc("query")?.cloned().unwrap_or_default();
    let remove = args.flag("remove")?;
    let action = match (remove, args.get("update")) {
        (true, Some(_)) => {
            return Err(CommandError::new(
                ErrorCode::FAILED_TO_PARSE,
                "Cannot specify both an update and remove=true",
            ));
        }
        (true, None) => Modify::Delete,
        (false, Some(update)) => match modification(update, "update")? {
            m if is_replacement(&m) => match m {
                UpdateModifications::Document(d) => Modify::Replace(d),
                UpdateModifications::Pipeline(_) => unreachable!("a replacement is a document"),
            },
            m => Modify::Update(m),
        },
        (false, None) => {
            return Err(CommandError::new(
                ErrorCode::FAILED_TO_PARSE,
                "Either an update or remove=true must be specified",
            ));
        }
    };
    let upsert = args.flag("upsert")?;
    if remove && (upsert || args.flag("new")?) {
        return Err(CommandError::new(
            ErrorCode::FAILED_TO_PARSE,
            "Cannot specify both upsert=true and remove=true, or new=true and remove=true",
        ));
    }
    let options = FindAndModify {
        sort: args.doc("sort")?.cloned().filter(|s| !s.is_empty()),
        projection: args.doc("fields")?.cloned().filter(|p| !p.is_empty()),
        upsert,
        return_document: if args.flag("new")? {
            ReturnDocument::After
        } else {
            ReturnDocument::Before
        },
        array_filters: args.owned_documents("arrayFilters")?.unwrap_or_default(),
        hint: super::query::hint(&args)?,
        let_vars: args.doc("let")?.cloned(),
        collation: args.doc("collation")?.cloned(),
    };
    super::analyze::sample(ctx, &collection, SampledCommand::FindAndModify, |id| {
        let mut cmd = odm_engine::commands::sampled_find_and_modify(
            odm_engine::commands::find_and_modify(&collection, &filter, &action, &options),
            id,
        );
        cmd.insert("$db", ctx.db.as_str());
        cmd
    });
    let is_delete = matches!(action, Modify::Delete);
    let bypass = args.flag("bypassDocumentValidation")?;
    let recorded = session::write_recorded(
        ctx,
        move |t| {
            t.bypass_document_validation(bypass);
            Ok(t.find_and_modify(&collection, &filter, action, &options)?)
        },
        move |modified| {
            let n = i32::from(modified.matched || modified.upserted_id.is_some());
            let mut last_error = doc! {"n": n};
            if !is_delete {
                last_error.insert("updatedExisting", modified.matched);
            }
            if let Some(id) = &modified.upserted_id {
                last_error.insert("upserted", id.clone());
            }
            // The image a retry returns is recorded with the write.
            Some(doc! {
                "lastErrorObject": last_error,
                "value": modified.value.clone().map_or(Bson::Null, Bson::Document),
            })
        },
    )?;
    Ok(reply_of(recorded, |_| {
        let counter = if is_delete {
            &ctx.server.stats.op_delete
        } else {
            &ctx.server.stats.op_update
        };
        Stats::add(counter, 1);
    }))
}

/// 8.0's client-level `bulkWrite` on `admin`: operations on any collections of any databases
/// (`nsInfo`), run in order; consecutive operations on one database share a transaction.
pub fn bulk_write(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "bulkWrite");
    if ctx.db != "admin" {
        return Err(CommandError::new(
            ErrorCode::UNAUTHORIZED,
            "bulkWrite may only be run against the admin database.",
        ));
    }
    let ops = args.documents("ops")?.ok_or_else(|| args.missing("ops"))?;
    let ns_info = args
        .documents("nsInfo")?
        .ok_or_else(|| args.missing("nsInfo"))?;
    check_batch(ops.len(), "ops")?;
    let ordered = args.bool("ordered")?.unwrap_or(true);
    let errors_only = args.flag("errorsOnly")?;
    let let_vars = args.doc("let")?.cloned();
    let bypass = args.flag("bypassDocumentValidation")?;
    // Every result in the first batch unless `cursor.batchSize` asks for fewer.
    let first = match args.doc("cursor")?.and_then(|c| c.get("batchSize")) {
        Some(size) => super::query::first_batch(Some(size))?,
        None => usize::MAX,
    };
    let namespaces = ns_info
        .iter()
        .map(|info| {
            let ns = Args::new(info, "bulkWrite").required_str("ns")?;
            let (db, coll) = super::split_namespace(ns)?;
            Ok((db.to_owned(), coll.to_owned()))
        })
        .collect::<Result<Vec<_>, CommandError>>()?;
    // Outside a transaction its operations commit one by one, in the transactions of their
    // databases: no one transaction could hold a retry's record with them all, so none is
    // kept, and a retried bulkWrite runs again (a known gap). Inside one, they all run in it
    // (its one database, checked as it started).
    ctx.retry = None;
    let mut results: Vec<Document> = Vec::new();
    let mut counts = BulkResult::default();
    let mut n_errors = 0usize;
    let saved_db = ctx.db.clone();
    for (i, op) in ops.iter().enumerate() {
        // Each operation in a transaction of its database's, so that the ones before a failure
        // stay written, as in MongoDB.
        let outcome = bulk_op(op, &namespaces).and_then(|(ns, op)| {
            let (db, collection) = &namespaces[ns];
            ctx.db.clone_from(db);
            let recorded = run_ops(
                ctx,
                collection,
                (vec![op], vec![0]),
                true,
                let_vars.clone(),
                bypass,
                |_| Document::new(),
            )?;
            let session::Recorded::Fresh(result, _) = recorded else {
                unreachable!("bulkWrite records no retryable write");
            };
            match result.failures.first() {
                Some((_, e)) => Err(CommandError::from_engine(e)),
                None => Ok(result),
            }
        });
        match outcome {
            Ok(result) => {
                if !errors_only {
                    results.push(bulk_success(i, &result));
                }
                counts.inserted += result.inserted;
                counts.matched += result.matched;
                counts.modified += result.modified;
                counts.deleted += result.deleted;
                counts.upserted += result.upserted;
            }
            Err(e) if is_interruption(&e) => {
                ctx.db = saved_db;
                return Err(e);
            }
            Err(e) => {
                n_errors += 1;
                results.push(bulk_error(i, &e));
                if ordered {
                    break;
                }
            }
        }
    }
    ctx.db = saved_db;
    let Reply::Raw(mut reply) =
        super::query::buffered_reply(ctx, "admin.$cmd.bulkWrite", &results, first)?
    else {
        unreachable!("cursor replies are raw")
    };
    for (key, value) in [
        ("nErrors", n_errors as i32),
        ("nInserted", counts.inserted as i32),
        ("nMatched", counts.matched as i32),
        ("nModified", counts.modified as i32),
        ("nUpserted", counts.upserted as i32),
        ("nDeleted", counts.deleted as i32),
    ] {
        reply.append(<&bson::raw::CStr>::try_from(key).expect("no NUL"), value);
    }
    Ok(Reply::Raw(reply))
}

fn bulk_error(index: usize, e: &CommandError) -> Document {
    let mut doc = doc! {"ok": 0.0, "idx": index as i32, "code": e.code, "codeName": &e.code_name, "errmsg": &e.message};
    if let Some(extra) = &e.extra {
        doc.extend((**extra).clone());
    }
    doc
}

fn bulk_success(index: usize, result: &BulkResult) -> Document {
    let mut doc = doc! {"ok": 1.0, "idx": index as i32};
    match result.results.first().map(|(_, r)| r) {
        Some(OpResult::Inserted(_)) => {
            doc.insert("n", 1);
        }
        Some(OpResult::Updated(u)) => {
            doc.insert("n", (u.matched + u64::from(u.upserted_id.is_some())) as i32);
            doc.insert("nModified", u.modified as i32);
            if let Some(id) = &u.upserted_id {
                doc.insert("upserted", doc! {"_id": id.clone()});
            }
        }
        Some(OpResult::Deleted(n)) => {
            doc.insert("n", *n as i32);
        }
        None => {
            doc.insert("n", 0);
        }
    }
    doc
}

/// One `bulkWrite` operation: `{insert: i, document}`, `{update: i, filter, updateMods,
/// multi, upsert, arrayFilters, hint, collation, sort}`, `{delete: i, filter, multi, hint,
/// collation}`.
fn bulk_op(
    op: &Document,
    namespaces: &[(String, String)],
) -> Result<(usize, WriteOp), CommandError> {
    let args = Args::new(op, "bulkWrite.ops");
    let kind = op.keys().next().map_or("", String::as_str);
    let ns = match op.get(kind).and_then(super::args::whole_number) {
        Some(n) if n >= 0 && (n as usize) < namespaces.len() => n as usize,
        _ => {
            return Err(CommandError::bad_value(format!(
                "BulkWrite ops entry `{kind}` must name an index into nsInfo"
            )));
        }
    };
    let filter = || args.doc("filter").map(|f| f.cloned().unwrap_or_default());
    let op = match kind {
        "insert" => WriteOp::InsertOne(
            args.doc("document")?
                .ok_or_else(|| args.missing("document"))?
                .clone(),
        ),
        "update" => {
            let mut statement = doc! {"q": filter()?, "u": args.get("updateMods").cloned().ok_or_else(|| args.missing("updateMods"))?};
            for key in [
                "multi",
                "upsert",
                "arrayFilters",
                "hint",
                "collation",
                "sort",
            ] {
                if let Some(v) = op.get(key) {
                    statement.insert(key, v.clone());
                }
            }
            update_op(&statement)?
        }
        "delete" => {
            let mut statement = doc! {"q": filter()?, "limit": i32::from(!args.flag("multi")?)};
            for key in ["hint", "collation"] {
                if let Some(v) = op.get(key) {
                    statement.insert(key, v.clone());
                }
            }
            delete_op(&statement)?
        }
        other => {
            return Err(CommandError::new(
                ErrorCode::FAILED_TO_PARSE,
                format!("Unrecognized bulkWrite operation `{other}`"),
            ));
        }
    };
    Ok((ns, op))
}
