//! Query sampling and shard-key analysis on `admin`, as MongoDB 7.0 has them:
//! `configureQueryAnalyzer`, `analyzeShardKey`, and the `$listSampledQueries` stage of
//! `{aggregate: 1}`. The work is the engine's ([`odm_engine::sampling`]) and the advisor's
//! ([`odm_advisor::analyze_shard_key`]); this module reads the commands and writes replies.
//! Unlike MongoDB, a server without `--replica-set` answers them too: the point is to ask
//! before there is a cluster.

use bson::{Bson, Document, doc};
use odm_engine::ErrorCode;
use odm_engine::sampling::{AnalyzerMode, SampledCommand};

use super::query::buffered_reply;
use super::{Args, CommandError, CommandResult, Ctx, split_namespace};
use odm_advisor::{AnalyzeOptions, analyze_shard_key};

/// Commands that MongoDB runs on `admin` only.
fn admin_only(ctx: &Ctx<'_>, name: &str) -> Result<(), CommandError> {
    if ctx.db == "admin" {
        Ok(())
    } else {
        Err(CommandError::new(
            ErrorCode::UNAUTHORIZED,
            format!("{name} may only be run against the admin database."),
        ))
    }
}

/// The database holding a namespace's collection; a missing one is `NamespaceNotFound`.
fn database_of(
    ctx: &Ctx<'_>,
    ns: &str,
) -> Result<(std::sync::Arc<odm_engine::Database>, String), CommandError> {
    let (db, coll) = split_namespace(ns)?;
    // MongoDB's rules: no internal database, no system collection.
    if matches!(db, "admin" | "config" | "local") {
        return Err(CommandError::new(
            ErrorCode::ILLEGAL_OPERATION,
            "Cannot run against an internal collection",
        ));
    }
    if coll.starts_with("system.") {
        return Err(CommandError::new(
            ErrorCode::ILLEGAL_OPERATION,
            "Cannot run against a system collection",
        ));
    }
    let not_found = || {
        CommandError::new(
            ErrorCode::NAMESPACE_NOT_FOUND,
            "The namespace does not exist",
        )
    };
    let database = ctx.server.storage.get(db)?.ok_or_else(not_found)?;
    if !database.list_collections().iter().any(|c| c == coll) {
        return Err(not_found());
    }
    Ok((database, coll.to_owned()))
}

/// `{configureQueryAnalyzer: "db.coll", mode: "full" | "off", samplesPerSecond}`.
pub fn configure_query_analyzer(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "configureQueryAnalyzer");
    admin_only(ctx, "configureQueryAnalyzer")?;
    let ns = args.required_str("configureQueryAnalyzer")?;
    let mode = AnalyzerMode::parse(args.required_str("mode")?)
        .map_err(|e| CommandError::bad_value(e.to_string()))?;
    let rate = args.f64("samplesPerSecond")?;
    let (db, coll) = database_of(ctx, ns)?;
    Ok(db
        .configure_query_analyzer(&coll, mode, rate)?
        .to_document()
        .into())
}

/// `{analyzeShardKey: "db.coll", key, keyCharacteristics, readWriteDistribution, sampleRate,
/// sampleSize}`.
pub fn analyze_shard_key_command(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "analyzeShardKey");
    admin_only(ctx, "analyzeShardKey")?;
    let ns = args.required_str("analyzeShardKey")?;
    let key_document = args.doc("key")?.ok_or_else(|| args.missing("key"))?;
    let key = odm_engine::ShardKey::from_document(key_document)
        .map_err(|e| CommandError::bad_value(format!("invalid shard key {key_document}: {e}")))?;
    let options = AnalyzeOptions {
        key_characteristics: args.bool("keyCharacteristics")?.unwrap_or(true),
        read_write_distribution: args.bool("readWriteDistribution")?.unwrap_or(true),
        sample_rate: args.f64("sampleRate")?,
        sample_size: args.i64("sampleSize")?,
        ..AnalyzeOptions::default()
    };
    let (db, coll) = database_of(ctx, ns)?;
    let analysis = analyze_shard_key(&db, &coll, &key, &options)
        .map_err(|e| CommandError::new(e.code(), e.to_string()))?;
    Ok(analysis.to_document().into())
}

/// The error of `$listSampledQueries` run anywhere but `{aggregate: 1}` on `admin`.
pub fn list_sampled_queries_misplaced() -> CommandError {
    CommandError::new(
        ErrorCode::INVALID_NAMESPACE,
        "$listSampledQueries must be run against the 'admin' database with {aggregate: 1}",
    )
}

/// `{aggregate: 1, pipeline: [{$listSampledQueries: {namespace?}}, ...]}` on `admin`: the
/// samples of every database, or of one namespace, then the rest of the pipeline over them.
pub fn list_sampled_queries(
    ctx: &mut Ctx<'_>,
    pipeline: &[Document],
    options: &odm_engine::aggregate::AggregateOptions,
    first: usize,
) -> CommandResult {
    if ctx.db != "admin" {
        return Err(list_sampled_queries_misplaced());
    }
    let Some(Bson::Document(spec)) = pipeline.first().and_then(|s| s.get("$listSampledQueries"))
    else {
        return Err(CommandError::new(
            ErrorCode::location(6_876_001),
            "$listSampledQueries must be given an object",
        ));
    };
    let wanted = match spec.get("namespace") {
        None => None,
        Some(Bson::String(ns)) => {
            let (db, coll) = split_namespace(ns)?;
            Some((db.to_owned(), coll.to_owned()))
        }
        Some(_) => {
            return Err(CommandError::bad_value(
                "$listSampledQueries.namespace must be a string",
            ));
        }
    };
    let names = match &wanted {
        Some((db, _)) => vec![db.clone()],
        None => ctx.server.storage.names()?,
    };
    let mut samples: Vec<Document> = Vec::new();
    for name in names {
        let Some(db) = ctx.server.storage.get(&name)? else {
            continue;
        };
        let coll = wanted.as_ref().map(|(_, c)| c.as_str());
        samples.extend(
            db.sampled_queries(coll)?
                .iter()
                .map(|s| s.to_document(&name)),
        );
    }
    let rest = &pipeline[1..];
    if !rest.is_empty() {
        // The rest of the pipeline runs over the samples as given documents.
        let scratch = odm_engine::Database::in_memory()?;
        // An aggregation reads from a collection that exists, even when its first stage
        // gives the documents.
        scratch.write(|t| t.create_collection("samples"))?;
        let mut stages = vec![doc! { "$documents": { "$literal": samples } }];
        stages.extend(rest.iter().cloned());
        samples = scratch.aggregate("samples", &stages, options)?;
    }
    buffered_reply(ctx, "admin.$cmd.aggregate", &samples, first)
}

/// Offers a command to the query analyzer of its collection (see [`odm_engine::sampling`]).
pub fn sample(
    ctx: &Ctx<'_>,
    collection: &str,
    command: SampledCommand,
    cmd: impl FnOnce(bson::Uuid) -> Document,
) {
    if let Ok(Some(db)) = ctx.server.storage.get(&ctx.db) {
        db.sample_query(collection, command, cmd);
    }
}
