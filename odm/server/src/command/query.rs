//! Reading commands: `find`, `getMore`, `killCursors`, `aggregate`, `count`, `distinct`,
//! `explain`. Results leave through cursors (see `cursors`); inside a transaction they are
//! read from the transaction's own writes (see `session`).

use bson::raw::cstr;
use bson::{Bson, Document, RawArrayBuf, RawDocumentBuf, doc};
use odm_engine::ErrorCode;
use odm_engine::aggregate::AggregateOptions;
use odm_engine::query::{FindOptions, KeyOptions};
use odm_engine::sampling::{SampledCommand, aggregate_command, read_command};

use super::{Args, CommandError, CommandResult, Ctx, Reply, collection_name, encode};
use crate::Stats;
use crate::cursors::{self, DEFAULT_FIRST_BATCH, Open, Results};

/// A cursor reply: `{cursor: {id, ns, firstBatch | nextBatch}}`.
pub fn cursor_reply(id: i64, ns: &str, first: bool, docs: Vec<RawDocumentBuf>) -> Reply {
    cursor_reply_with_token(id, ns, first, docs, None)
}

/// A cursor reply with a change stream's `postBatchResumeToken`, when given.
pub fn cursor_reply_with_token(
    id: i64,
    ns: &str,
    first: bool,
    docs: Vec<RawDocumentBuf>,
    resume_token: Option<Document>,
) -> Reply {
    let mut batch = RawArrayBuf::new();
    for doc in docs {
        batch.push(doc);
    }
    let mut cursor = RawDocumentBuf::new();
    cursor.append(
        if first {
            cstr!("firstBatch")
        } else {
            cstr!("nextBatch")
        },
        batch,
    );
    if let Some(token) = resume_token
        && let Ok(token) = RawDocumentBuf::try_from(&token)
    {
        cursor.append(cstr!("postBatchResumeToken"), token);
    }
    cursor.append(cstr!("id"), id);
    cursor.append(cstr!("ns"), ns);
    let mut reply = RawDocumentBuf::new();
    reply.append(cstr!("cursor"), cursor);
    Reply::Raw(reply)
}

/// A cursor reply naming the time a snapshot read read at (`cursor.atClusterTime`).
pub fn at_cluster_time(reply: Reply, at: bson::Timestamp) -> Reply {
    let raw = reply.finish_without_ok();
    let Ok(cursor) = raw.get_document("cursor") else {
        return Reply::Raw(raw);
    };
    let mut with_time = RawDocumentBuf::new();
    for (key, value) in cursor.into_iter().flatten() {
        with_time.append(key, value);
    }
    with_time.append(cstr!("atClusterTime"), at);
    let mut out = RawDocumentBuf::new();
    for (key, value) in raw.into_iter().flatten() {
        if key.as_str() == "cursor" {
            out.append(key, with_time.clone());
        } else {
            out.append(key, value);
        }
    }
    Reply::Raw(out)
}

/// A cursor over documents computed in advance (listings, `bulkWrite`'s results): its first
/// batch, the rest kept for `getMore`.
pub fn buffered_reply(ctx: &Ctx<'_>, ns: &str, docs: &[Document], first: usize) -> CommandResult {
    let docs = docs.iter().map(encode).collect::<Result<Vec<_>, _>>()?;
    let (batch, id) = ctx
        .server
        .cursors
        .buffered(ns.to_owned(), docs, first, ctx.session)?;
    Ok(cursor_reply(id, ns, true, batch))
}

/// An aggregation's `pipeline` and its options (`let`, `collation`, `hint`, `allowDiskUse`).
fn pipeline_of(args: &Args<'_>) -> Result<(Vec<Document>, AggregateOptions), CommandError> {
    let pipeline = args
        .owned_documents("pipeline")?
        .ok_or_else(|| args.missing("pipeline"))?;
    let options = AggregateOptions {
        let_vars: args.doc("let")?.cloned(),
        collation: args.doc("collation")?.cloned(),
        hint: hint(args)?,
        // The command's own, entered on the thread that runs it (see `operations`).
        interrupt: None,
        allow_disk_use: args.bool("allowDiskUse")?,
        bypass_document_validation: args.flag("bypassDocumentValidation")?,
        ..AggregateOptions::default()
    };
    Ok((pipeline, options))
}

/// `hint`: an index name or a key pattern.
pub(super) fn hint(args: &Args<'_>) -> Result<Option<Bson>, CommandError> {
    match args.get("hint") {
        None | Some(Bson::Null) => Ok(None),
        Some(h @ (Bson::String(_) | Bson::Document(_))) => Ok(Some(h.clone())),
        Some(other) => Err(CommandError::new(
            ErrorCode::FAILED_TO_PARSE,
            format!(
                "hint must be a string or an object, not {}",
                super::args::type_name(other)
            ),
        )),
    }
}

/// The find options of a `find` command (also `explain`'s).
fn find_options(args: &Args<'_>) -> Result<FindOptions, CommandError> {
    let limit = match args.i64("limit")? {
        Some(n) if n < 0 => {
            return Err(CommandError::new(
                ErrorCode::location(51024),
                format!("BSON field 'limit' value must be >= 0, actual value '{n}'"),
            ));
        }
        Some(0) | None => None,
        Some(n) => Some(n as u64),
    };
    Ok(FindOptions {
        sort: args.doc("sort")?.cloned().filter(|s| !s.is_empty()),
        projection: args.doc("projection")?.cloned().filter(|p| !p.is_empty()),
        skip: args.non_negative("skip")?.unwrap_or(0),
        limit,
        hint: hint(args)?,
        let_vars: args.doc("let")?.cloned(),
        collation: args.doc("collation")?.cloned(),
        // The command's own, entered on the thread that runs it (see `operations`).
        interrupt: None,
        allow_disk_use: args.bool("allowDiskUse")?,
        keys: KeyOptions {
            min: args.doc("min")?.cloned().filter(|d| !d.is_empty()),
            max: args.doc("max")?.cloned().filter(|d| !d.is_empty()),
            return_key: args.flag("returnKey")?,
            show_record_id: args.flag("showRecordId")?,
        },
        ..FindOptions::default()
    })
}

fn batch_size(args: &Args<'_>) -> Result<Option<usize>, CommandError> {
    match args.i64("batchSize")? {
        Some(n) if n < 0 => Err(CommandError::new(
            ErrorCode::location(51024),
            format!("BSON field 'batchSize' value must be >= 0, actual value '{n}'"),
        )),
        Some(n) => Ok(Some(n as usize)),
        None => Ok(None),
    }
}

pub fn find(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let at = snapshot_read(ctx)?;
    let reply = find_now(ctx, command)?;
    snapshot_reply(ctx, reply, at)
}

/// The time a snapshot read outside a transaction reads at (see `read_concern`).
fn snapshot_read(ctx: &Ctx<'_>) -> Result<Option<bson::Timestamp>, CommandError> {
    match &ctx.read_concern {
        Some(concern) if !crate::session::in_transaction(ctx) => {
            super::read_concern::snapshot_time(ctx, concern)
        }
        _ => Ok(None),
    }
}

/// A snapshot read's reply, naming its time; `SnapshotTooOld` (and its cursor closed) when the
/// database changed before its snapshot was taken.
fn snapshot_reply(ctx: &Ctx<'_>, reply: Reply, at: Option<bson::Timestamp>) -> CommandResult {
    let Some(at) = at else {
        return Ok(reply);
    };
    let raw = reply.finish_without_ok();
    if let Err(e) = super::read_concern::unchanged_since(ctx, at) {
        if let Ok(cursor) = raw.get_document("cursor")
            && let (Ok(id), Ok(ns)) = (cursor.get_i64("id"), cursor.get_str("ns"))
        {
            ctx.server.cursors.kill(id, ns);
        }
        return Err(e);
    }
    if raw.get_document("cursor").is_ok() {
        return Ok(at_cluster_time(Reply::Raw(raw), at));
    }
    let mut raw = raw;
    raw.append(cstr!("atClusterTime"), at);
    Ok(Reply::Raw(raw))
}

fn find_now(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "find");
    let collection = collection_name(command, "find")?.to_owned();
    let filter = args.doc("filter")?.cloned().unwrap_or_default();
    let options = find_options(&args)?;
    // Parsed before the collection is looked up: a malformed query is an error on a
    // collection that does not exist too.
    options.check(&filter)?;
    let first = batch_size(&args)?.unwrap_or(DEFAULT_FIRST_BATCH);
    let single = args.flag("singleBatch")?;
    let no_timeout = args.flag("noCursorTimeout")?;
    let ns = format!("{}.{collection}", ctx.db);
    Stats::add(&ctx.server.stats.op_query, 1);
    if let Some(view) = super::views::resolve(ctx, &collection)? {
        return find_on_view(ctx, &ns, view, &filter, &options, first, single);
    }
    let in_transaction = crate::session::in_transaction(ctx);
    if let Some(await_data) = super::tailable::requested(&args, in_transaction)? {
        let (batch, tail) =
            super::tailable::open(ctx, &collection, &filter, &args, await_data, first)?;
        let id = match tail {
            Some(tail) => ctx.server.cursors.tail(ns.clone(), tail, ctx.session)?,
            None => 0,
        };
        return Ok(cursor_reply(id, &ns, true, batch));
    }
    super::analyze::sample(ctx, &collection, SampledCommand::Find, |_| {
        read_command(
            &filter,
            options.collation.as_ref(),
            options.let_vars.as_ref(),
        )
    });
    if let Some(docs) = crate::session::find_in_transaction(ctx, &collection, &filter, &options)? {
        let (batch, id) = ctx.server.cursors.buffered(
            ns.clone(),
            docs,
            if single { usize::MAX } else { first },
            ctx.session,
        )?;
        return Ok(cursor_reply(if single { 0 } else { id }, &ns, true, batch));
    }
    let Some(db) = ctx.server.storage.get(&ctx.db)? else {
        return Ok(cursor_reply(0, &ns, true, Vec::new()));
    };
    let inline = single || options.limit.is_some_and(|l| l <= first as u64);
    let open: Open = Box::new(move |c| {
        let results = c.find_raw(&filter, &options)?;
        Ok(Box::new(results.map(|r| r.map_err(CommandError::from))) as Results<'_>)
    });
    let (batch, id) = if inline {
        let limit = if single { usize::MAX } else { first };
        (cursors::inline(&db, &collection, open, limit)?, 0)
    } else {
        ctx.server
            .cursors
            .live(db, ns.clone(), collection, open, first, ctx.session)?
    };
    if no_timeout && id != 0 {
        ctx.server.cursors.keep_without_timeout(id);
    }
    Ok(cursor_reply(id, &ns, true, batch))
}

/// A find on a view: the view's pipeline, then the find as stages, on a cursor of the view's
/// namespace.
fn find_on_view(
    ctx: &Ctx<'_>,
    ns: &str,
    view: super::views::Resolved,
    filter: &Document,
    options: &FindOptions,
    first: usize,
    single: bool,
) -> CommandResult {
    let keys = &options.keys;
    let refused = [
        ("hint", options.hint.is_some()),
        ("min", keys.min.is_some()),
        ("max", keys.max.is_some()),
        ("returnKey", keys.return_key),
        ("showRecordId", keys.show_record_id),
    ];
    if let Some((option, _)) = refused.iter().find(|(_, given)| *given) {
        return Err(CommandError::new(
            ErrorCode::OPTION_NOT_SUPPORTED_ON_VIEW,
            format!("a find on a view takes no `{option}`"),
        ));
    }
    let collation = super::views::read_collation(&view, options.collation.as_ref())?;
    let mut pipeline = view.pipeline;
    pipeline.extend(super::views::find_stages(options, filter));
    let aggregate = AggregateOptions {
        let_vars: options.let_vars.clone(),
        collation: Some(collation),
        allow_disk_use: options.allow_disk_use,
        ..AggregateOptions::default()
    };
    if single || crate::session::in_transaction(ctx) {
        let docs = view_results(ctx, &view.collection, &pipeline, &aggregate)?;
        let (batch, id) = ctx.server.cursors.buffered(
            ns.to_owned(),
            docs.iter().map(encode).collect::<Result<_, _>>()?,
            if single { usize::MAX } else { first },
            ctx.session,
        )?;
        return Ok(cursor_reply(id, ns, true, batch));
    }
    run_pipeline(ctx, ns, view.collection, pipeline, aggregate, first)
}

pub fn get_more(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "getMore");
    let id = match command.get("getMore") {
        Some(Bson::Int64(id)) => *id,
        Some(other) => {
            return Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                format!(
                    "BSON field 'getMore.getMore' is the wrong type '{}', expected type 'long'",
                    super::args::type_name(other)
                ),
            ));
        }
        None => return Err(args.missing("getMore")),
    };
    let collection = args.required_str("collection")?;
    let limit = batch_size(&args)?.filter(|n| *n > 0).unwrap_or(usize::MAX);
    let ns = format!("{}.{collection}", ctx.db);
    // An awaiting cursor (a change stream's) waits this long for new results; 0 is the
    // default wait.
    let wait = args
        .non_negative("maxTimeMS")?
        .map(std::time::Duration::from_millis)
        .filter(|wait| !wait.is_zero());
    Stats::add(&ctx.server.stats.op_getmore, 1);
    let more = ctx
        .server
        .cursors
        .get_more(id, &ns, limit, &ctx.server.storage, wait)?;
    Ok(cursor_reply_with_token(
        if more.exhausted { 0 } else { id },
        &ns,
        false,
        more.docs,
        more.resume_token,
    ))
}

pub fn kill_cursors(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "killCursors");
    // A database-level cursor (a change stream's) lives under `$cmd.aggregate`.
    let collection = match command.get("killCursors") {
        Some(Bson::String(s)) if s == "$cmd.aggregate" => s.as_str(),
        _ => collection_name(command, "killCursors")?,
    };
    let ns = format!("{}.{collection}", ctx.db);
    let ids = args
        .array("cursors")?
        .ok_or_else(|| args.missing("cursors"))?;
    let (mut killed, mut not_found) = (Vec::new(), Vec::new());
    for id in ids {
        let Bson::Int64(id) = id else {
            return Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                "killCursors.cursors must hold cursor ids (long)",
            ));
        };
        if ctx.server.cursors.kill(*id, &ns) {
            killed.push(*id);
        } else {
            not_found.push(*id);
        }
    }
    Ok(doc! {
        "cursorsKilled": killed,
        "cursorsNotFound": not_found,
        "cursorsAlive": Vec::<i64>::new(),
        "cursorsUnknown": Vec::<i64>::new(),
    }
    .into())
}

/// The stage name of a pipeline stage (its one key).
fn stage_name(stage: &Document) -> &str {
    stage.keys().next().map_or("", String::as_str)
}

pub fn aggregate(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let at = snapshot_read(ctx)?;
    let reply = aggregate_now(ctx, command)?;
    snapshot_reply(ctx, reply, at)
}

fn aggregate_now(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "aggregate");
    let lists_samples = args
        .array("pipeline")
        .ok()
        .flatten()
        .and_then(|p| p.first())
        .and_then(Bson::as_document)
        .is_some_and(|s| s.contains_key("$listSampledQueries"));
    let pipeline_docs = args.owned_documents("pipeline")?.unwrap_or_default();
    if super::change_stream::is_change_stream(&pipeline_docs)? {
        return open_change_stream(ctx, command, &args, &pipeline_docs);
    }
    if let Some(spec) = pipeline_docs.first().and_then(|s| s.get("$currentOp")) {
        return current_op_pipeline(ctx, command, &args, spec);
    }
    let collection = match command.get("aggregate") {
        Some(Bson::Int32(1) | Bson::Int64(1)) if lists_samples => {
            return list_sampled_queries(ctx, &args);
        }
        _ if lists_samples => return Err(super::analyze::list_sampled_queries_misplaced()),
        Some(Bson::Int32(1) | Bson::Int64(1)) => {
            return database_aggregate(ctx, &args, &pipeline_docs);
        }
        _ => collection_name(command, "aggregate")?.to_owned(),
    };
    let (mut pipeline, options) = pipeline_of(&args)?;
    let output = super::output::take_database(&mut pipeline, &ctx.db)?;
    // As find's query, the pipeline is parsed before the collection is looked up.
    options.check(&pipeline)?;
    let ns = format!("{}.{collection}", ctx.db);
    // A view's pipeline runs first, on the collection at the bottom of its chain.
    let (collection, pipeline, options) = match super::views::resolve(ctx, &collection)? {
        Some(view) => {
            let collation = super::views::read_collation(&view, options.collation.as_ref())?;
            let mut full = view.pipeline;
            full.extend(pipeline);
            let options = AggregateOptions {
                collation: Some(collation),
                ..options
            };
            (view.collection, full, options)
        }
        None => (collection, pipeline, options),
    };
    if args.flag("explain")? {
        return Ok(explain_pipeline(ctx, &collection, &pipeline, &options)?.into());
    }
    super::analyze::sample(ctx, &collection, SampledCommand::Aggregate, |_| {
        aggregate_command(
            &pipeline,
            options.collation.as_ref(),
            options.let_vars.as_ref(),
        )
    });
    let cursor = args.doc("cursor")?.ok_or_else(|| {
        CommandError::new(
            ErrorCode::FAILED_TO_PARSE,
            "The 'cursor' option is required, except for aggregate with the explain argument",
        )
    })?;
    let first = first_batch(cursor.get("batchSize"))?;
    if crate::session::in_transaction(ctx) {
        let docs = aggregate_in_transaction(ctx, &collection, &pipeline, &options)?;
        return buffered_reply(ctx, &ns, &docs, first);
    }
    if let Some(stats) = coll_stats_stage(ctx, &collection, &pipeline)? {
        return Ok(cursor_reply(0, &ns, true, vec![encode(&stats)?]));
    }
    if let Some(output) = output {
        write_output(ctx, &collection, &pipeline, &output, &options)?;
        return Ok(cursor_reply(0, &ns, true, Vec::new()));
    }
    run_pipeline(ctx, &ns, collection, pipeline, options, first)
}

/// Runs a pipeline ending in `$out` or `$merge` that writes `database`. Into the command's
/// database, the engine reads and writes in one call; into another, the stages before it run
/// on a snapshot of this one and their results are written there in one transaction.
fn write_output(
    ctx: &Ctx<'_>,
    collection: &str,
    pipeline: &[Document],
    database: &str,
    options: &AggregateOptions,
) -> Result<(), CommandError> {
    if database == ctx.db {
        let db = ctx.server.storage.get_or_create(&ctx.db)?;
        db.aggregate(collection, pipeline, options)?;
        return Ok(());
    }
    let Some((stage, stages)) = pipeline.split_last() else {
        return Ok(());
    };
    let results = match ctx.server.storage.get(&ctx.db)? {
        Some(db) => db.aggregate(collection, stages, options)?,
        None => Vec::new(),
    };
    let target = ctx.server.storage.get_or_create(database)?;
    target.write_aggregate_output(stage, &results, options)?;
    Ok(())
}

/// Runs a pipeline over `collection` on a cursor whose namespace is `ns` (a view's, when the
/// pipeline reads one).
fn run_pipeline(
    ctx: &Ctx<'_>,
    ns: &str,
    collection: String,
    pipeline: Vec<Document>,
    options: AggregateOptions,
    first: usize,
) -> CommandResult {
    let Some(db) = ctx.server.storage.get(&ctx.db)? else {
        return Ok(cursor_reply(0, ns, true, Vec::new()));
    };
    let open: Open = Box::new(move |c| {
        let results = c.aggregate_iter(&pipeline, &options)?;
        Ok(
            Box::new(results.map(|r| r.map_err(CommandError::from).and_then(|d| encode(&d))))
                as Results<'_>,
        )
    });
    let (batch, id) =
        ctx.server
            .cursors
            .live(db, ns.to_owned(), collection, open, first, ctx.session)?;
    Ok(cursor_reply(id, ns, true, batch))
}

/// Stages an aggregation inside a transaction cannot run here: MongoDB refuses the first
/// group in transactions; this server also refuses the stages that read other collections,
/// whose reads would not see the transaction's own writes.
const NOT_IN_TRANSACTION: [&str; 11] = [
    "$out",
    "$merge",
    "$collStats",
    "$indexStats",
    "$planCacheStats",
    "$listSessions",
    "$currentOp",
    "$lookup",
    "$graphLookup",
    "$unionWith",
    "$listSampledQueries",
];

/// An aggregation inside the command's transaction: its documents read from the
/// transaction's own writes (through a leading `$match` as their filter), then the rest of the
/// pipeline over them, within the room open cursors have left.
fn aggregate_in_transaction(
    ctx: &Ctx<'_>,
    collection: &str,
    pipeline: &[Document],
    options: &odm_engine::aggregate::AggregateOptions,
) -> Result<Vec<Document>, CommandError> {
    if let Some(stage) = pipeline
        .iter()
        .map(stage_name)
        .find(|name| NOT_IN_TRANSACTION.contains(name))
    {
        return Err(CommandError::new(
            ErrorCode::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            format!("{stage} is not supported in a transaction by this server"),
        ));
    }
    let (filter, rest) = match pipeline.first().map(|s| (stage_name(s), s)) {
        Some(("$match", stage)) => match stage.get("$match") {
            Some(Bson::Document(filter)) => (filter.clone(), &pipeline[1..]),
            _ => (Document::new(), pipeline),
        },
        _ => (Document::new(), pipeline),
    };
    let find = FindOptions {
        collation: options.collation.clone(),
        let_vars: options.let_vars.clone(),
        ..FindOptions::default()
    };
    let docs = crate::session::find_in_transaction(ctx, collection, &filter, &find)?
        .unwrap_or_default()
        .iter()
        .map(|raw| Document::try_from(raw.as_ref()).map_err(|e| encode_error(&e)))
        .collect::<Result<Vec<_>, _>>()?;
    let db = ctx.server.storage.get_or_create(&ctx.db)?;
    let snapshot = db.read()?;
    // The stages after the find run under the collection's default collation too.
    let defaulted = match snapshot.collection(collection)? {
        Some(c) => c.under_default_collation(options),
        None => None,
    };
    let options = defaulted.as_ref().unwrap_or(options);
    Ok(snapshot.aggregate_documents(docs, rest, options)?)
}

/// Every result of a pipeline over a view's collection, for `count` and `distinct`, inside the
/// command's transaction when it has one.
fn view_results(
    ctx: &Ctx<'_>,
    collection: &str,
    pipeline: &[Document],
    options: &AggregateOptions,
) -> Result<Vec<Document>, CommandError> {
    if crate::session::in_transaction(ctx) {
        return aggregate_in_transaction(ctx, collection, pipeline, options);
    }
    match ctx.server.storage.get(&ctx.db)? {
        Some(db) => Ok(db.aggregate(collection, pipeline, options)?),
        None => Ok(Vec::new()),
    }
}

fn encode_error(e: &dyn std::fmt::Display) -> CommandError {
    CommandError::new(
        ErrorCode::INTERNAL_ERROR,
        format!("cannot read a result: {e}"),
    )
}

/// `{aggregate: 1, pipeline: [{$currentOp: {...}}, ...]}` on `admin`: the running operations
/// through the rest of the pipeline.
fn current_op_pipeline(
    ctx: &Ctx<'_>,
    command: &Document,
    args: &Args<'_>,
    spec: &Bson,
) -> CommandResult {
    if !matches!(
        command.get("aggregate"),
        Some(Bson::Int32(1) | Bson::Int64(1))
    ) {
        return Err(CommandError::new(
            ErrorCode::INVALID_NAMESPACE,
            "$currentOp must be run against the 'admin' database with {aggregate: 1}",
        ));
    }
    let ops = super::operations::current_op_stage(ctx, spec)?;
    let (pipeline, options) = pipeline_of(args)?;
    let db = ctx.server.storage.get_or_create(&ctx.db)?;
    let docs = db
        .read()?
        .aggregate_documents(ops, &pipeline[1..], &options)?;
    let first = match args.doc("cursor")? {
        Some(cursor) => first_batch(cursor.get("batchSize"))?,
        None => DEFAULT_FIRST_BATCH,
    };
    buffered_reply(ctx, &format!("{}.$cmd.aggregate", ctx.db), &docs, first)
}

/// `{aggregate: 1}` whose pipeline starts with a stage that reads no collection: `$documents`,
/// or `$listLocalSessions` (this server's sessions). Its `$lookup`s read the command's
/// database, as it is now; a database that does not exist reads as empty and is not created.
fn database_aggregate(ctx: &Ctx<'_>, args: &Args<'_>, pipeline: &[Document]) -> CommandResult {
    let (_, options) = pipeline_of(args)?;
    let first = first_batch(args.doc("cursor")?.and_then(|c| c.get("batchSize")))?;
    // A final `$out` or `$merge` writes what the stages before it give, into the database it
    // names (this one when it names none).
    let mut pipeline = pipeline.to_vec();
    let output = super::output::take_database(&mut pipeline, &ctx.db)?;
    let (pipeline, output) = match (output, pipeline.split_last()) {
        (Some(database), Some((stage, stages))) => (stages, Some((database, stage))),
        _ => (pipeline.as_slice(), None),
    };
    let db = match ctx.server.storage.get(&ctx.db)? {
        Some(db) => db,
        None => std::sync::Arc::new(odm_engine::Database::in_memory()?),
    };
    let txn = db.read()?;
    let docs = match pipeline.first().map(stage_name) {
        Some("$documents") => txn.aggregate_without_collection(pipeline, &options)?,
        Some("$listLocalSessions") => {
            let spec = pipeline[0]
                .get("$listLocalSessions")
                .cloned()
                .unwrap_or(Bson::Null);
            let sessions = local_sessions(ctx, &spec)?;
            txn.aggregate_documents(sessions, &pipeline[1..], &options)?
        }
        _ => {
            return Err(CommandError::new(
                ErrorCode::location(40602),
                "{aggregate: 1} is only valid for a pipeline whose first stage reads no collection ($documents, $currentOp, $listLocalSessions, $changeStream)",
            ));
        }
    };
    drop(txn);
    if let Some((database, stage)) = output {
        let target = ctx.server.storage.get_or_create(&database)?;
        target.write_aggregate_output(stage, &docs, &options)?;
        return buffered_reply(ctx, &format!("{}.$cmd.aggregate", ctx.db), &[], first);
    }
    buffered_reply(ctx, &format!("{}.$cmd.aggregate", ctx.db), &docs, first)
}

/// `$listLocalSessions`' documents: `{}` for the current user's sessions, `{allUsers: true}`
/// for everyone's, `{users: [{user, db}]}` for those users'.
fn local_sessions(ctx: &Ctx<'_>, spec: &Bson) -> Result<Vec<Document>, CommandError> {
    let Bson::Document(spec) = spec else {
        return Err(CommandError::new(
            ErrorCode::TYPE_MISMATCH,
            "$listLocalSessions takes an object",
        ));
    };
    let mut users: Option<Vec<(String, String)>> = Some(ctx.conn.user.iter().cloned().collect());
    for (field, value) in spec {
        match (field.as_str(), value) {
            ("allUsers", Bson::Boolean(true)) => users = None,
            ("allUsers", Bson::Boolean(false)) => {}
            ("users", Bson::Array(list)) => {
                let named = list
                    .iter()
                    .map(|u| match u {
                        Bson::Document(u) => match (u.get_str("db"), u.get_str("user")) {
                            (Ok(db), Ok(user)) => Ok((db.to_owned(), user.to_owned())),
                            _ => Err(CommandError::bad_value(
                                "each of users names a user and a db",
                            )),
                        },
                        _ => Err(CommandError::bad_value(
                            "each of users names a user and a db",
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                users = Some(named);
            }
            _ => {
                return Err(CommandError::new(
                    ErrorCode::location(40415),
                    format!("unknown field `{field}` (or a wrong type) in $listLocalSessions"),
                ));
            }
        }
    }
    // Without authentication, sessions have no user: `{}` lists them all, as MongoDB does
    // for the unauthenticated.
    if users.as_ref().is_some_and(Vec::is_empty) {
        users = None;
    }
    Ok(ctx.server.sessions.local_sessions(users.as_deref()))
}

/// `cursor.batchSize`: the size of an aggregation's first batch, a whole non-negative number.
pub(super) fn first_batch(batch_size: Option<&Bson>) -> Result<usize, CommandError> {
    match batch_size {
        None => Ok(DEFAULT_FIRST_BATCH),
        Some(v) => super::args::whole_number(v)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                CommandError::bad_value("cursor.batchSize must be a non-negative number")
            }),
    }
}

/// An aggregation whose pipeline starts with `$changeStream`: on a collection, or on the
/// database with `aggregate: 1`.
fn open_change_stream(
    ctx: &mut Ctx<'_>,
    command: &Document,
    args: &Args<'_>,
    pipeline: &[Document],
) -> CommandResult {
    let collection = match command.get("aggregate") {
        Some(Bson::Int32(1) | Bson::Int64(1)) => None,
        _ => Some(collection_name(command, "aggregate")?),
    };
    let first = first_batch(args.doc("cursor")?.and_then(|c| c.get("batchSize")))?;
    super::change_stream::open(ctx, collection, pipeline, first)
}

/// `{aggregate: 1, pipeline: [{$listSampledQueries: ...}, ...]}`; a batch size that is not a
/// whole number is taken as the default, and a negative one as 0.
fn list_sampled_queries(ctx: &mut Ctx<'_>, args: &Args<'_>) -> CommandResult {
    let (pipeline, options) = pipeline_of(args)?;
    let first = args
        .doc("cursor")?
        .and_then(|c| c.get("batchSize"))
        .and_then(super::args::whole_number)
        .map_or(DEFAULT_FIRST_BATCH, |n| n.max(0) as usize);
    super::analyze::list_sampled_queries(ctx, &pipeline, &options, first)
}

/// `[{$collStats: {storageStats: {...}}}]`: the collection's statistics, as the `collStats`
/// command gives them (zeros for a collection that does not exist), in the stage's `scale`.
fn coll_stats_stage(
    ctx: &mut Ctx<'_>,
    collection: &str,
    pipeline: &[Document],
) -> Result<Option<Document>, CommandError> {
    let storage_only = |stage: &Document| match stage.get("$collStats") {
        Some(Bson::Document(spec)) => spec.len() == 1 && spec.contains_key("storageStats"),
        _ => false,
    };
    match pipeline.first() {
        // A longer pipeline, or other statistics (`count`), run in the engine, whose
        // `$collStats` reports the same sizes.
        Some(stage) if pipeline.len() == 1 && storage_only(stage) => {
            let scale = stage
                .get_document("$collStats")
                .and_then(|spec| spec.get_document("storageStats"))
                .ok()
                .and_then(|options| options.get("scale"));
            let stats = super::admin::collection_stats(ctx, collection, scale)?;
            Ok(Some(doc! {
                "ns": format!("{}.{collection}", ctx.db),
                "host": ctx.server.address.clone(),
                "localTime": bson::DateTime::now(),
                "storageStats": stats,
            }))
        }
        _ => Ok(None),
    }
}

/// An aggregation's explain: the plan of the head that runs as a find, then each stage with
/// what it passed on. A final `$out` or `$merge` is listed, not run: explain writes nothing.
fn explain_pipeline(
    ctx: &mut Ctx<'_>,
    collection: &str,
    pipeline: &[Document],
    options: &AggregateOptions,
) -> Result<Document, CommandError> {
    let explained = match ctx.server.storage.get(&ctx.db)? {
        Some(db) => {
            let txn = db.read()?;
            match txn.collection(collection)? {
                Some(c) => Some(c.explain_aggregate(pipeline, options)?.to_document()),
                None => None,
            }
        }
        None => None,
    };
    let Some(mut reply) = explained else {
        // No collection: the find part of the plan is the empty one.
        return explain_find(ctx, collection, &Document::new(), &FindOptions::default());
    };
    reply.insert(
        "serverInfo",
        doc! {"host": ctx.server.address.clone(), "version": super::handshake::VERSION},
    );
    Ok(reply)
}

fn explain_find(
    ctx: &Ctx<'_>,
    collection: &str,
    filter: &Document,
    options: &FindOptions,
) -> Result<Document, CommandError> {
    let ns = format!("{}.{collection}", ctx.db);
    let explained = match ctx.server.storage.get(&ctx.db)? {
        Some(db) => {
            let txn = db.read()?;
            match txn.collection(collection)? {
                Some(c) => Some(c.explain(filter, options)?.to_document()),
                None => None,
            }
        }
        None => None,
    };
    let mut reply = explained.unwrap_or_else(|| {
        doc! {
            "queryPlanner": {"namespace": &ns, "winningPlan": {"stage": "EOF"}, "rejectedPlans": []},
            "executionStats": {"nReturned": 0, "totalKeysExamined": 0, "totalDocsExamined": 0},
        }
    });
    reply.insert(
        "serverInfo",
        doc! {"host": ctx.server.address.clone(), "version": super::handshake::VERSION},
    );
    Ok(reply)
}

pub fn count(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "count");
    let collection = collection_name(command, "count")?;
    let filter = args.doc("query")?.cloned().unwrap_or_default();
    let skip = args.non_negative("skip")?.unwrap_or(0);
    // A negative limit counts as its absolute value, as in MongoDB.
    let limit = args.i64("limit")?.map_or(0, i64::unsigned_abs);
    let collation = args.doc("collation")?;
    let hint = hint(&args)?;
    Stats::add(&ctx.server.stats.op_query, 1);
    if let Some(view) = super::views::resolve(ctx, collection)? {
        let collation = super::views::read_collation(&view, collation)?;
        let mut pipeline = view.pipeline;
        let options = FindOptions {
            skip,
            limit: Some(limit).filter(|&l| l > 0),
            ..FindOptions::default()
        };
        pipeline.extend(super::views::find_stages(&options, &filter));
        pipeline.push(doc! {"$count": "n"});
        let options = AggregateOptions {
            collation: Some(collation),
            ..AggregateOptions::default()
        };
        let n = view_results(ctx, &view.collection, &pipeline, &options)?
            .first()
            .and_then(|d| d.get("n").and_then(super::args::whole_number))
            .unwrap_or(0);
        return Ok(doc! {"n": n}.into());
    }
    super::analyze::sample(ctx, collection, SampledCommand::Count, |_| {
        read_command(&filter, collation, None)
    });
    if let Some(n) = crate::session::count_in_transaction(
        ctx,
        collection,
        &filter,
        &FindOptions {
            collation: collation.cloned(),
            skip,
            limit: Some(limit).filter(|&l| l > 0),
            hint: hint.clone(),
            ..FindOptions::default()
        },
    )? {
        return Ok(doc! {"n": n as i64}.into());
    }
    let absent = || -> Result<u64, CommandError> {
        let options = FindOptions {
            collation: collation.cloned(),
            ..FindOptions::default()
        };
        options.check(&filter)?;
        Ok(0)
    };
    let n = match ctx.server.storage.get(&ctx.db)? {
        Some(db) => {
            let txn = db.read()?;
            match txn.collection(collection)? {
                Some(c) => {
                    c.count_matching_hinted(&filter, skip, limit, collation, hint.as_ref())?
                }
                None => absent()?,
            }
        }
        None => absent()?,
    };
    Ok(doc! {"n": n as i64}.into())
}

pub fn distinct(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let at = snapshot_read(ctx)?;
    let reply = distinct_now(ctx, command)?;
    snapshot_reply(ctx, reply, at)
}

fn distinct_now(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "distinct");
    let collection = collection_name(command, "distinct")?;
    let key = args.required_str("key")?;
    let filter = args.doc("query")?.cloned().unwrap_or_default();
    let collation = args.doc("collation")?;
    let hint = hint(&args)?;
    Stats::add(&ctx.server.stats.op_query, 1);
    if let Some(view) = super::views::resolve(ctx, collection)? {
        let collation = super::views::read_collation(&view, collation)?;
        let mut pipeline = view.pipeline;
        pipeline.extend(super::views::find_stages(&FindOptions::default(), &filter));
        let mut distinct = odm_engine::query::Distinct::new(key, Some(&collation))?;
        let options = AggregateOptions {
            collation: Some(collation),
            ..AggregateOptions::default()
        };
        for doc in view_results(ctx, &view.collection, &pipeline, &options)? {
            distinct.add(&encode(&doc)?)?;
        }
        return Ok(doc! {"values": distinct.finish()?}.into());
    }
    let in_transaction = FindOptions {
        collation: collation.cloned(),
        hint: hint.clone(),
        ..FindOptions::default()
    };
    if let Some(values) =
        crate::session::distinct_in_transaction(ctx, collection, key, &filter, &in_transaction)?
    {
        return Ok(doc! {"values": values}.into());
    }
    super::analyze::sample(ctx, collection, SampledCommand::Distinct, |_| {
        read_command(&filter, collation, None)
    });
    let absent = || -> Result<Vec<Bson>, CommandError> {
        let options = FindOptions {
            collation: collation.cloned(),
            ..FindOptions::default()
        };
        options.check(&filter)?;
        Ok(Vec::new())
    };
    let values = match ctx.server.storage.get(&ctx.db)? {
        Some(db) => {
            let txn = db.read()?;
            match txn.collection(collection)? {
                Some(c) => c.distinct_hinted(key, &filter, collation, hint.as_ref())?,
                None => absent()?,
            }
        }
        None => absent()?,
    };
    Ok(doc! {"values": values}.into())
}

/// `explain` of `find`, `aggregate`, `count`, `distinct`, `update`, `delete` and
/// `findAndModify`: the plan their filter gets, as a find.
pub fn explain(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "explain");
    let inner = args
        .doc("explain")?
        .ok_or_else(|| args.missing("explain"))?;
    let name = inner.keys().next().map_or("", String::as_str);
    let inner_args = Args::new(inner, "explain");
    let collection = collection_name(inner, name)?.to_owned();
    let mut reply = match name {
        "find" => {
            let filter = inner_args.doc("filter")?.cloned().unwrap_or_default();
            explain_find(ctx, &collection, &filter, &find_options(&inner_args)?)?
        }
        "aggregate" => {
            let (pipeline, options) = pipeline_of(&inner_args)?;
            explain_pipeline(ctx, &collection, &pipeline, &options)?
        }
        "count" | "distinct" => {
            let filter = inner_args.doc("query")?.cloned().unwrap_or_default();
            let options = FindOptions {
                collation: inner_args.doc("collation")?.cloned(),
                hint: hint(&inner_args)?,
                ..FindOptions::default()
            };
            explain_find(ctx, &collection, &filter, &options)?
        }
        "findAndModify" | "findandmodify" => {
            let filter = inner_args.doc("query")?.cloned().unwrap_or_default();
            let options = FindOptions {
                sort: inner_args.doc("sort")?.cloned(),
                collation: inner_args.doc("collation")?.cloned(),
                hint: hint(&inner_args)?,
                ..FindOptions::default()
            };
            explain_find(ctx, &collection, &filter, &options)?
        }
        "update" | "delete" => {
            let key = if name == "update" {
                "updates"
            } else {
                "deletes"
            };
            let statements = inner_args.documents(key)?.unwrap_or_default();
            let first = statements.first().ok_or_else(|| {
                CommandError::bad_value(format!("explain of {name} needs one statement"))
            })?;
            let statement = Args::new(first, "explain");
            let filter = statement.doc("q")?.cloned().unwrap_or_default();
            let options = FindOptions {
                collation: statement.doc("collation")?.cloned(),
                hint: hint(&statement)?,
                ..FindOptions::default()
            };
            explain_find(ctx, &collection, &filter, &options)?
        }
        other => {
            return Err(CommandError::new(
                ErrorCode::COMMAND_NOT_FOUND,
                format!("Explain failed due to unknown command: {other}"),
            ));
        }
    };
    reply.insert("command", inner.clone());
    if let Some(verbosity) = args.str("verbosity")? {
        reply.insert("explainVersion", "1");
        if verbosity == "queryPlanner" {
            reply.remove("executionStats");
        }
    }
    Ok(reply.into())
}
