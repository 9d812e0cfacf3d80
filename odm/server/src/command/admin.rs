//! Databases and collections: `listDatabases`, `listCollections`, `create`, `drop`,
//! `dropDatabase`, `renameCollection`, `collStats`, `dbStats`, `validate`; and `shutdown`.

use std::collections::HashMap;

use bson::{Bson, Document, doc};
use odm_engine::capped::Capped;
use odm_engine::query::Filter;
use odm_engine::validation::{Validation, ValidationAction, ValidationLevel};
use odm_engine::{ErrorCode, IndexSpec};

use super::{Args, CommandError, CommandResult, Ctx, collection_name};
use crate::session;

/// Keeps the documents a `filter` argument matches (MongoDB's listing commands take one).
fn filtered(docs: Vec<Document>, filter: Option<&Document>) -> Result<Vec<Document>, CommandError> {
    let Some(filter) = filter.filter(|f| !f.is_empty()) else {
        return Ok(docs);
    };
    let filter = Filter::parse(filter).map_err(odm_engine::Error::from)?;
    let mut kept = Vec::new();
    for doc in docs {
        let raw = super::encode(&doc)?;
        if filter.try_matches(&raw).map_err(odm_engine::Error::from)? {
            kept.push(doc);
        }
    }
    Ok(kept)
}

pub fn list_databases(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "listDatabases");
    let name_only = args.flag("nameOnly")?;
    let mut databases = Vec::new();
    let mut total = 0u64;
    for name in ctx.server.storage.names()? {
        let size = ctx.server.storage.size_on_disk(&name);
        total += size;
        let empty = match ctx.server.storage.get(&name)? {
            Some(db) => db.list_collections().is_empty(),
            None => true,
        };
        // A dropped database keeps its file for its change log; as in MongoDB, a database
        // without collections is not listed.
        if empty {
            continue;
        }
        databases.push(if name_only {
            doc! {"name": name}
        } else {
            doc! {"name": name, "sizeOnDisk": size as i64, "empty": empty}
        });
    }
    let databases = filtered(databases, args.doc("filter")?)?;
    if name_only {
        return Ok(doc! {"databases": databases}.into());
    }
    Ok(doc! {
        "databases": databases,
        "totalSize": total as i64,
        "totalSizeMb": (total / (1024 * 1024)) as i64,
    }
    .into())
}

pub fn list_collections(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "listCollections");
    let name_only = args.flag("nameOnly")?;
    let ns = format!("{}.$cmd.listCollections", ctx.db);
    let (names, options, views) = match ctx.server.storage.get(&ctx.db)? {
        Some(db) => {
            let txn = db.read()?;
            let names = txn.list_collections();
            let options: HashMap<String, odm_engine::CollectionOptions> = names
                .iter()
                .filter_map(|n| Some((n.clone(), txn.collection_options(n)?)))
                .collect();
            (names, options, super::views::list(&db, &ctx.db)?)
        }
        None => (Vec::new(), HashMap::new(), Vec::new()),
    };
    let docs: Vec<Document> = names
        .into_iter()
        .map(|name| {
            if name_only {
                doc! {"name": name, "type": "collection"}
            } else {
                let collection = options.get(&name);
                // The `_id` index takes the collection's collation, and is listed with it.
                let mut id_index = doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"};
                if let Some(collation) = collection.and_then(|o| o.collation.as_ref()) {
                    id_index.insert("collation", collation.normalized().clone());
                }
                doc! {
                    "name": &name,
                    "type": "collection",
                    "options": listed_options(collection),
                    "info": {"readOnly": false},
                    "idIndex": id_index,
                }
            }
        })
        .chain(views.into_iter().map(|view| {
            if name_only {
                doc! {"name": view.name, "type": "view"}
            } else {
                let mut options = doc! {"viewOn": view.view_on, "pipeline": view.pipeline};
                if let Some(collation) = view.collation {
                    options.insert("collation", collation);
                }
                doc! {
                    "name": view.name,
                    "type": "view",
                    "options": options,
                    "info": {"readOnly": true},
                }
            }
        }))
        .collect();
    let docs = filtered(docs, args.doc("filter")?)?;
    let first = args
        .doc("cursor")?
        .and_then(|c| c.get("batchSize"))
        .and_then(super::args::whole_number)
        .map_or(usize::MAX, |n| n.max(0) as usize);
    super::query::buffered_reply(ctx, &ns, &docs, first)
}

/// A collection's options as `listCollections` shows them (MongoDB's `create` fields).
fn listed_options(options: Option<&odm_engine::CollectionOptions>) -> Document {
    let mut out = Document::new();
    let Some(options) = options else {
        return out;
    };
    if let Some(capped) = options.capped {
        out.insert("capped", true);
        out.insert("size", i64::try_from(capped.size).unwrap_or(i64::MAX));
        if let Some(max) = capped.max {
            out.insert("max", i64::try_from(max).unwrap_or(i64::MAX));
        }
    }
    if let Some(validation) = &options.validation {
        out.insert("validator", validation.validator().clone());
        out.insert("validationLevel", validation.level().name());
        out.insert("validationAction", validation.action().name());
    }
    if options.change_stream_pre_and_post_images {
        out.insert("changeStreamPreAndPostImages", doc! {"enabled": true});
    }
    if let Some(collation) = &options.collation {
        out.insert("collation", collation.normalized().clone());
    }
    out
}

/// `create` options this server does not implement: refused rather than ignored.
const UNSUPPORTED_CREATE_OPTIONS: [&str; 9] = [
    "timeseries",
    "clusteredIndex",
    "encryptedFields",
    "expireAfterSeconds",
    "storageEngine",
    "idIndex",
    "indexOptionDefaults",
    "temp",
    "recordPreImages",
];

pub fn create(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let collection = collection_name(command, "create")?.to_owned();
    for option in UNSUPPORTED_CREATE_OPTIONS {
        if command
            .get(option)
            .is_some_and(|v| !matches!(v, Bson::Boolean(false) | Bson::Null))
        {
            return Err(CommandError::new(
                ErrorCode::NOT_IMPLEMENTED,
                format!("create option `{option}` is not supported by this server"),
            ));
        }
    }
    if matches!(command.get("autoIndexId"), Some(Bson::Boolean(false))) {
        return Err(CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "The autoIndexId option is no longer supported: every collection has an _id index",
        ));
    }
    if command.contains_key("viewOn") {
        return create_view(ctx, &collection, command);
    }
    if command.contains_key("pipeline") {
        return Err(CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "'pipeline' requires 'viewOn' to also be specified",
        ));
    }
    super::views::refuse_view(ctx, &collection).map_err(|_| {
        CommandError::new(
            ErrorCode::NAMESPACE_EXISTS,
            format!("Collection {}.{collection} already exists.", ctx.db),
        )
    })?;
    let images = pre_and_post_images(command)?.unwrap_or(false);
    let capped = capped_options(&Args::new(command, "create"))?;
    let validation = validation_options(&Args::new(command, "create"), None)?;
    // Parsed before anything is written: a malformed collation changes nothing.
    let mut options = odm_engine::CollectionOptions::default().with_pre_and_post_images(images);
    if let Some(collation) = Args::new(command, "create").doc("collation")? {
        options = options
            .with_collation(collation)
            .map_err(odm_engine::Error::from)?;
    }
    session::write(ctx, move |t| {
        let mut options = options;
        options.capped = capped;
        options.validation = validation;
        t.create_collection_with(&collection, options)
            .map_err(|e| match e {
                odm_engine::Error::CollectionExists(name) => CommandError::new(
                    ErrorCode::NAMESPACE_EXISTS,
                    format!("Collection {name} already exists."),
                ),
                other => other.into(),
            })
    })?;
    Ok(Document::new().into())
}

/// `validator`, `validationLevel` and `validationAction` (of `create`, or of `collMod` over
/// the collection's `current` validation); `None` when none is given and none was set.
fn validation_options(
    args: &Args<'_>,
    current: Option<Validation>,
) -> Result<Option<Validation>, CommandError> {
    let validator = args.doc("validator")?.cloned();
    let level = match args.str("validationLevel")? {
        Some(name) => Some(ValidationLevel::parse(name).ok_or_else(|| {
            CommandError::bad_value(format!(
                "Enumeration value '{name}' for field 'validationLevel' is not a valid value."
            ))
        })?),
        None => None,
    };
    let action = match args.str("validationAction")? {
        Some(name) => Some(ValidationAction::parse(name).ok_or_else(|| {
            CommandError::bad_value(format!(
                "Enumeration value '{name}' for field 'validationAction' is not a valid value."
            ))
        })?),
        None => None,
    };
    if validator.is_none() && level.is_none() && action.is_none() {
        return Ok(current);
    }
    let (validator, old_level, old_action) = match (validator, current) {
        (Some(v), current) => (
            v,
            current.as_ref().map(Validation::level),
            current.as_ref().map(Validation::action),
        ),
        (None, Some(current)) => (
            current.validator().clone(),
            Some(current.level()),
            Some(current.action()),
        ),
        (None, None) => (Document::new(), None, None),
    };
    let validation = Validation::new(
        validator,
        level.or(old_level).unwrap_or_default(),
        action.or(old_action).unwrap_or_default(),
    )
    .map_err(|e| {
        let e = odm_engine::Error::from(e);
        CommandError::new(
            e.error_code(),
            format!("Parsing of collection validator failed :: caused by :: {e}"),
        )
    })?;
    Ok(Some(validation))
}

/// `create` with `viewOn`: a view takes none of a collection's options.
fn create_view(ctx: &Ctx<'_>, name: &str, command: &Document) -> CommandResult {
    for option in ["capped", "size", "max", "changeStreamPreAndPostImages"] {
        if command.contains_key(option) {
            return Err(CommandError::new(
                ErrorCode::INVALID_OPTIONS,
                format!("option '{option}' is not supported for views"),
            ));
        }
    }
    if session::in_transaction(ctx) {
        return Err(CommandError::new(
            ErrorCode::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            "Cannot create a view in a multi-document transaction.",
        ));
    }
    super::views::create(ctx, name, command)?;
    Ok(Document::new().into())
}

/// `create`'s `capped`, `size` and `max`, by MongoDB's rules: `size` is required with `capped`
/// and both need it.
fn capped_options(args: &Args<'_>) -> Result<Option<Capped>, CommandError> {
    let capped = args.bool("capped")?.unwrap_or(false);
    let size = args.get("size").filter(|v| !matches!(v, Bson::Null));
    let max = args.get("max").filter(|v| !matches!(v, Bson::Null));
    if !capped {
        if size.is_some() || max.is_some() {
            return Err(CommandError::new(
                ErrorCode::INVALID_OPTIONS,
                "the 'capped' field needs to be true when either the 'size' or 'max' fields are present",
            ));
        }
        return Ok(None);
    }
    if size.is_none() {
        return Err(CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "the 'size' field is required when 'capped' is true",
        ));
    }
    let size = capped_number(args, "size")?.unwrap_or(0);
    let max = capped_number(args, "max")?;
    Capped::new(size, max)
        .map(Some)
        .map_err(|e| odm_engine::Error::from(e).into())
}

/// A capped collection's `size` or `max`: a number, its fraction dropped, as MongoDB reads it.
fn capped_number(args: &Args<'_>, field: &str) -> Result<Option<i64>, CommandError> {
    match args.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Int32(n)) => Ok(Some(i64::from(*n))),
        Some(Bson::Int64(n)) => Ok(Some(*n)),
        // Saturating: a size past 1 PiB is refused by `Capped::new`.
        #[allow(clippy::cast_possible_truncation)]
        Some(Bson::Double(d)) if d.is_finite() => Ok(Some(*d as i64)),
        Some(Bson::Decimal128(d)) => d
            .to_string()
            .parse::<f64>()
            .ok()
            .filter(|d| d.is_finite())
            .map(|d| Some(d as i64))
            .ok_or_else(|| CommandError::bad_value(format!("'{field}' is not a finite number"))),
        Some(other) => Err(CommandError::new(
            ErrorCode::TYPE_MISMATCH,
            format!(
                "BSON field 'create.{field}' is the wrong type '{}', expected types '[long, int, decimal, double]'",
                super::args::type_name(other)
            ),
        )),
    }
}

/// `convertToCapped`: makes a collection capped with `size` (MongoDB takes no `max` here); its
/// secondary indexes are dropped, as MongoDB keeps only `_id`'s.
pub fn convert_to_capped(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let collection = collection_name(command, "convertToCapped")?.to_owned();
    let args = Args::new(command, "convertToCapped");
    if args.get("size").is_none() {
        return Err(args.missing("size"));
    }
    let size = capped_number(&args, "size")?.unwrap_or(0);
    let limits = Capped::new(size, None).map_err(|e| CommandError::bad_value(e.to_string()))?;
    if ctx.server.storage.get(&ctx.db)?.is_none() {
        return Err(CommandError::new(
            ErrorCode::NAMESPACE_NOT_FOUND,
            format!("database {} not found", ctx.db),
        ));
    }
    if super::views::refuse_view(ctx, &collection).is_err() {
        return Err(CommandError::new(
            ErrorCode::COMMAND_NOT_SUPPORTED_ON_VIEW,
            format!(
                "cloneCollectionAsCapped not supported for views: {}.{collection}",
                ctx.db
            ),
        ));
    }
    let ns = format!("{}.{collection}", ctx.db);
    let source = ns.clone();
    session::write(ctx, move |t| {
        t.convert_to_capped(&collection, limits)
            .map_err(|e| match e {
                odm_engine::Error::CollectionNotFound(_) => CommandError::new(
                    ErrorCode::NAMESPACE_NOT_FOUND,
                    format!("source collection {source} does not exist"),
                ),
                other => other.into(),
            })
    })?;
    ctx.server.cursors.kill_namespace(&ns);
    Ok(Document::new().into())
}

/// `changeStreamPreAndPostImages: {enabled: <bool>}`, when given.
fn pre_and_post_images(command: &Document) -> Result<Option<bool>, CommandError> {
    match command.get("changeStreamPreAndPostImages") {
        None => Ok(None),
        Some(Bson::Document(d)) if d.len() == 1 => match d.get("enabled") {
            Some(Bson::Boolean(enabled)) => Ok(Some(*enabled)),
            _ => Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                "changeStreamPreAndPostImages.enabled must be a boolean",
            )),
        },
        Some(_) => Err(CommandError::new(
            ErrorCode::IDL_FAILED_TO_PARSE,
            "changeStreamPreAndPostImages must be {enabled: <bool>}",
        )),
    }
}

/// `collMod`: this server changes `changeStreamPreAndPostImages` only; other options are
/// refused by name rather than ignored.
pub fn coll_mod(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let collection = collection_name(command, "collMod")?.to_owned();
    for (option, _) in command.iter().skip(1) {
        let generic = matches!(
            option.as_str(),
            "changeStreamPreAndPostImages" | "validator" | "validationLevel" | "validationAction"
        ) || super::args::is_generic_argument(option);
        if !generic {
            return Err(CommandError::new(
                ErrorCode::NOT_IMPLEMENTED,
                format!("collMod option `{option}` is not supported by this server"),
            ));
        }
    }
    let images = pre_and_post_images(command)?;
    if ctx.server.storage.get(&ctx.db)?.is_none() {
        return Err(CommandError::new(
            ErrorCode::NAMESPACE_NOT_FOUND,
            format!("ns does not exist: {}.{collection}", ctx.db),
        ));
    }
    let validates = ["validator", "validationLevel", "validationAction"]
        .iter()
        .any(|f| command.contains_key(*f));
    let command = command.clone();
    session::write(ctx, move |t| {
        let Some(options) = t.collection_options(&collection) else {
            return Err(CommandError::new(
                ErrorCode::NAMESPACE_NOT_FOUND,
                format!("ns does not exist: {collection}"),
            ));
        };
        if validates {
            let args = Args::new(&command, "collMod");
            let validation = validation_options(&args, options.validation)?;
            t.set_validation(&collection, validation)?;
        }
        if images.is_some() || !validates {
            t.modify_collection(&collection, images)?;
        }
        Ok(())
    })?;
    Ok(Document::new().into())
}

pub fn drop(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let collection = collection_name(command, "drop")?.to_owned();
    if collection == crate::profiler::PROFILE_COLLECTION && ctx.server.profiler.is_on(&ctx.db) {
        return Err(CommandError::new(
            ErrorCode::ILLEGAL_OPERATION,
            "turn the profiler off before dropping system.profile",
        ));
    }
    let ns = format!("{}.{collection}", ctx.db);
    if ctx.server.storage.get(&ctx.db)?.is_none() {
        // Dropping what does not exist succeeds, as in MongoDB 7.0 and later.
        return Ok(doc! {"ns": ns}.into());
    }
    if let Some(db) = ctx.server.storage.get(&ctx.db)?
        && super::views::drop(&db, &ctx.db, &collection)?
    {
        return Ok(doc! {"ns": ns}.into());
    }
    let was = session::write(ctx, move |t| {
        let indexes = t.list_indexes(&collection).len();
        let existed = t.drop_collection(&collection)?;
        Ok(existed.then_some(indexes))
    })?;
    ctx.server.cursors.kill_namespace(&ns);
    let mut reply = doc! {"ns": ns};
    if let Some(n) = was {
        reply.insert("nIndexesWas", n as i32);
    }
    Ok(reply.into())
}

pub fn drop_database(ctx: &mut Ctx<'_>, _: &Document) -> CommandResult {
    if session::in_transaction(ctx) {
        return Err(CommandError::new(
            ErrorCode::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            "dropDatabase cannot run in a transaction",
        ));
    }
    if ctx.db == "admin" {
        return Err(CommandError::new(
            ErrorCode::ILLEGAL_OPERATION,
            "Dropping the 'admin' database is prohibited.",
        ));
    }
    ctx.server.cursors.kill_namespace(&format!("{}.", ctx.db));
    ctx.server.profiler.forget(&ctx.db);
    // The file stays, emptied, for its change log: streams see a `drop` per collection and
    // then `dropDatabase`, as from MongoDB.
    if let Some(db) = ctx.server.storage.get(&ctx.db)? {
        db.write(|t| {
            for name in t.list_collection_names() {
                t.drop_collection(&name)?;
            }
            t.record_drop_database()
        })?;
    }
    Ok(doc! {"dropped": ctx.db.clone()}.into())
}

pub fn rename_collection(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "renameCollection");
    if ctx.db != "admin" {
        return Err(CommandError::new(
            ErrorCode::UNAUTHORIZED,
            "renameCollection may only be run against the admin database.",
        ));
    }
    let from = args.required_str("renameCollection")?;
    let to = args.required_str("to")?;
    let drop_target = args.flag("dropTarget")?;
    let (from_db, from_coll) = super::split_namespace(from)?;
    let (to_db, to_coll) = super::split_namespace(to)?;
    if from_db != to_db {
        return Err(CommandError::new(
            ErrorCode::NOT_IMPLEMENTED,
            "renaming a collection to another database is not supported by this server: each database is its own file",
        ));
    }
    let (from_coll, to_coll) = (from_coll.to_owned(), to_coll.to_owned());
    let saved = std::mem::replace(&mut ctx.db, from_db.to_owned());
    if ctx.server.storage.get(&ctx.db)?.is_none() {
        ctx.db = saved;
        return Err(CommandError::new(
            ErrorCode::NAMESPACE_NOT_FOUND,
            "source namespace does not exist",
        ));
    }
    let result = session::write(ctx, move |t| {
        if t.collection_options(&from_coll).is_none() {
            return Err(CommandError::new(
                ErrorCode::NAMESPACE_NOT_FOUND,
                "source namespace does not exist",
            ));
        }
        if t.collection_options(&to_coll).is_some() {
            if !drop_target {
                return Err(CommandError::new(
                    ErrorCode::NAMESPACE_EXISTS,
                    "target namespace exists",
                ));
            }
            t.drop_collection(&to_coll)?;
        }
        Ok(t.rename_collection(&from_coll, &to_coll)?)
    });
    ctx.db = saved;
    result?;
    ctx.server.cursors.kill_namespace(from);
    ctx.server.cursors.kill_namespace(to);
    Ok(Document::new().into())
}

/// `shardCollection` (on `admin`): records the collection's shard key, so that explain
/// routes its queries as a cluster would and typed models deploy their declared keys here as
/// on a `mongos`. As MongoDB: a missing or empty collection gets the key's supporting index
/// (unique with `unique: true`); one holding documents must already have an index that starts
/// with the key; the same key again is accepted, another is `AlreadyInitialized`. Nothing is
/// distributed: this server is one node.
pub fn shard_collection(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "shardCollection");
    if ctx.db != "admin" {
        return Err(CommandError::new(
            ErrorCode::UNAUTHORIZED,
            "shardCollection may only be run against the admin database.",
        ));
    }
    let ns = args.required_str("shardCollection")?.to_owned();
    let key_document = args.doc("key")?.ok_or_else(|| args.missing("key"))?;
    let unique = args.flag("unique")?;
    let invalid = |e: odm_engine::IndexSpecError| {
        CommandError::new(ErrorCode::INVALID_OPTIONS, e.to_string())
    };
    let key = odm_engine::ShardKey::from_document(key_document).map_err(invalid)?;
    let mut supporting = IndexSpec::from_keys_document(key_document).map_err(invalid)?;
    if unique {
        if matches!(key, odm_engine::ShardKey::Hashed(_)) {
            return Err(CommandError::new(
                ErrorCode::INVALID_OPTIONS,
                "hashed shard keys cannot be declared unique.",
            ));
        }
        supporting = supporting.unique();
    }
    let (db, coll) = super::split_namespace(&ns)?;
    let coll = coll.to_owned();
    let target = ns.clone();
    let saved = std::mem::replace(&mut ctx.db, db.to_owned());
    let result = session::write(ctx, move |t| {
        let fields: Vec<&str> = key
            .paths()
            .into_iter()
            .map(odm_engine::Path::as_str)
            .collect();
        // A sharded collection keeps its key: the same again is accepted as it is, another
        // refused, before anything else is looked at.
        if t.collection_options(&coll)
            .is_some_and(|o| o.shard_key.is_some())
        {
            return Ok(t.shard_collection(&coll, key)?);
        }
        // A unique index a cluster could not enforce across shards: MongoDB refuses the key.
        for index in t.list_indexes(&coll) {
            let prefix: Vec<&str> = index.keys().iter().map(|(p, _)| p.as_str()).collect();
            if index.is_unique()
                && index.name() != odm_engine::ID_INDEX_NAME
                && !prefix.starts_with(&fields)
            {
                return Err(CommandError::new(
                    ErrorCode::INVALID_OPTIONS,
                    format!(
                        "can't shard collection '{target}' with unique index on {} and proposed shard key {}. Uniqueness can't be maintained unless shard key is a prefix",
                        index.keys_document(),
                        key.to_document()
                    ),
                ));
            }
        }
        let supported = t.list_indexes(&coll).iter().any(|index| {
            let prefix: Vec<&str> = index.keys().iter().map(|(p, _)| p.as_str()).collect();
            // MongoDB's rule: an index whose keys start with the shard key's, not sparse or
            // partial (it must hold every document), hashed at the key's field exactly when
            // the key is hashed.
            let hashed_at = index.hashed_field();
            prefix.starts_with(&fields)
                && (!unique || index.is_unique())
                && !index.is_sparse()
                && index.partial_filter().is_none()
                && match key {
                    odm_engine::ShardKey::Hashed(_) => hashed_at == Some(0),
                    odm_engine::ShardKey::Range(_) => hashed_at.is_none_or(|at| at >= fields.len()),
                }
        });
        let empty = t.collection_options(&coll).is_none() || t.count(&coll)? == 0;
        if !supported && !empty {
            return Err(CommandError::new(
                ErrorCode::OPERATION_FAILED,
                format!(
                    "Please create an index that starts with the proposed shard key before sharding the collection: {}",
                    key.to_document()
                ),
            ));
        }
        t.shard_collection(&coll, key)?;
        if !supported {
            t.create_index(&coll, supporting)?;
        }
        Ok(())
    });
    ctx.db = saved;
    result?;
    Ok(doc! { "collectionsharded": ns }.into())
}

/// The statistics of one collection, as `collStats` and `$collStats` give them: the engine's
/// `$collStats` storage statistics in units of `scale` bytes (`None`: 1), zeros for a
/// collection that does not exist.
pub fn collection_stats(
    ctx: &Ctx<'_>,
    collection: &str,
    scale: Option<&Bson>,
) -> Result<Document, CommandError> {
    let collection = collection.to_owned();
    let mut options = Document::new();
    if let Some(scale) = scale {
        options.insert("scale", scale.clone());
    }
    let stats = session::read(ctx, move |txn| {
        let Some(c) = txn.collection(&collection)? else {
            return Ok(None);
        };
        let report = c.aggregate(
            &[doc! {"$collStats": {"storageStats": options}}],
            &odm_engine::aggregate::AggregateOptions::default(),
        )?;
        Ok(report
            .into_iter()
            .next()
            .and_then(|mut d| d.remove("storageStats")))
    })?
    .flatten();
    Ok(if let Some(Bson::Document(d)) = stats {
        d
    } else {
        doc! {
            "size": 0_i64,
            "count": 0_i64,
            "avgObjSize": 0_i64,
            "storageSize": 0_i64,
            "nindexes": 0,
            "indexSizes": {},
            "totalIndexSize": 0_i64,
            "totalSize": 0_i64,
            "capped": false,
        }
    })
}

pub fn coll_stats(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let collection = collection_name(command, "collStats")?;
    super::views::refuse_view(ctx, collection)?;
    let mut stats = collection_stats(ctx, collection, command.get("scale"))?;
    let mut reply = doc! {"ns": format!("{}.{collection}", ctx.db)};
    reply.extend(std::mem::take(&mut stats));
    Ok(reply.into())
}

/// `dbStats`: the sums of the collections' `collStats`, in units of `scale` bytes, and the
/// figures of the filesystem that holds the database's file (0 in memory).
pub fn db_stats(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let scale = db_stats_scale(command.get("scale"))?;
    let names = match ctx.server.storage.get(&ctx.db)? {
        Some(db) => db.list_collections(),
        None => Vec::new(),
    };
    let mut sums = [0i64; 5];
    for name in &names {
        let stats = collection_stats(ctx, name, None)?;
        let fields = ["count", "size", "nindexes", "storageSize", "totalIndexSize"];
        for (sum, field) in sums.iter_mut().zip(fields) {
            *sum += match stats.get(field) {
                Some(Bson::Int32(n)) => i64::from(*n),
                Some(Bson::Int64(n)) => *n,
                _ => 0,
            };
        }
    }
    let [objects, data, indexes, storage, index_size] = sums;
    let views = match ctx.server.storage.get(&ctx.db)? {
        Some(db) => i64::try_from(super::views::list(&db, &ctx.db)?.len()).unwrap_or(i64::MAX),
        None => 0,
    };
    let (fs_used, fs_total) = ctx.server.storage.filesystem(&ctx.db);
    let scaled = |n: i64| n as f64 / scale as f64;
    Ok(doc! {
        "db": ctx.db.clone(),
        "collections": names.len() as i64,
        "views": views,
        "objects": objects,
        "avgObjSize": if objects > 0 { data as f64 / objects as f64 } else { 0.0 },
        "dataSize": scaled(data),
        "storageSize": scaled(storage),
        "indexes": indexes,
        "indexSize": scaled(index_size),
        "totalSize": scaled(storage + index_size),
        "scaleFactor": scale,
        "fsUsedSize": fs_used as f64 / scale as f64,
        "fsTotalSize": fs_total as f64 / scale as f64,
    }
    .into())
}

/// `dbStats`'s `scale`: a positive number, fractions truncated (MongoDB's rules).
fn db_stats_scale(value: Option<&Bson>) -> Result<i64, CommandError> {
    let n = match value {
        None => return Ok(1),
        Some(Bson::Int32(n)) => f64::from(*n),
        Some(Bson::Int64(n)) => *n as f64,
        Some(Bson::Double(d)) => *d,
        Some(other) => {
            return Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                format!("scale has to be a number, not {other}"),
            ));
        }
    };
    if n.is_nan() || n < 1.0 {
        return Err(CommandError::bad_value("scale has to be >= 1"));
    }
    Ok(n.trunc().min(i64::MAX as f64) as i64)
}

/// `validate`: the engine's `verify` of the collection's database (every index recomputed
/// from the documents).
pub fn validate(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let collection = collection_name(command, "validate")?;
    // Every check here reads the whole collection in one snapshot, so `full` and `background`
    // change nothing; their one rule is MongoDB's: they do not go together.
    let args = Args::new(command, "validate");
    if args.flag("full")? && args.flag("background")? {
        return Err(CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "Running the validate command with { background: true } cannot be done with { full: true }",
        ));
    }
    let ns = format!("{}.{collection}", ctx.db);
    let Some(db) = ctx.server.storage.get(&ctx.db)? else {
        return Err(CommandError::new(
            ErrorCode::NAMESPACE_NOT_FOUND,
            format!("Collection '{ns}' does not exist to validate."),
        ));
    };
    if !db.list_collections().iter().any(|c| c == collection) {
        return Err(CommandError::new(
            ErrorCode::NAMESPACE_NOT_FOUND,
            format!("Collection '{ns}' does not exist to validate."),
        ));
    }
    let report = db.verify()?;
    let prefix = format!("collection `{collection}`");
    let errors: Vec<String> = report
        .problems
        .iter()
        .filter(|p| p.contains(&prefix) || !p.contains("collection `"))
        .cloned()
        .collect();
    let records = {
        let txn = db.read()?;
        txn.collection(collection)?.map_or(Ok(0), |c| c.len())?
    };
    Ok(doc! {
        "ns": ns,
        "nrecords": records as i64,
        "nIndexes": db.read()?.list_indexes(collection).len() as i32,
        "valid": errors.is_empty(),
        "errors": errors,
        "warnings": [],
        "repaired": false,
        "databaseChecks": {"collections": report.collections as i64, "documents": report.documents as i64, "indexEntries": report.index_entries as i64, "problems": report.problems.len() as i64},
    }
    .into())
}

/// MongoDB's default quiesce period for the `shutdown` command's `timeoutSecs`.
const SHUTDOWN_TIMEOUT_SECS: u64 = 15;

/// `shutdown`: stops the server as a signal does (see `crate::shutdown`), letting running
/// commands finish for `timeoutSecs` (15 by default), or none with `force`. On `admin` only;
/// without authentication on the server, only from a loopback address, as MongoDB requires.
/// The connection closes unanswered, as MongoDB's does.
/// `fsync` (on `admin`): every open database's commits on disk, by a durable commit of each
/// (which makes the eventual ones before it durable too); `numFiles` counts them. `lock`, which
/// would hold every writer until `fsyncUnlock`, is refused.
pub fn fsync(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    if ctx.db != "admin" {
        return Err(CommandError::new(
            ErrorCode::UNAUTHORIZED,
            "fsync may only be run against the admin database.",
        ));
    }
    if Args::new(command, "fsync").flag("lock")? {
        return Err(CommandError::new(
            ErrorCode::NOT_IMPLEMENTED,
            "fsync with lock is not supported by this server",
        ));
    }
    let databases = ctx.server.storage.open_databases();
    for db in &databases {
        db.write(|_| Ok::<_, odm_engine::Error>(()))?;
    }
    let files = i32::try_from(databases.len()).unwrap_or(i32::MAX);
    Ok(doc! { "numFiles": files }.into())
}

pub fn shutdown(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    if ctx.db != "admin" {
        return Err(CommandError::new(
            ErrorCode::UNAUTHORIZED,
            "shutdown may only be run against the admin database.",
        ));
    }
    let args = Args::new(command, "shutdown");
    let force = args.flag("force")?;
    let timeout = args.non_negative("timeoutSecs")?;
    let local = ctx
        .conn
        .peer
        .parse::<std::net::SocketAddr>()
        .is_ok_and(|peer| peer.ip().is_loopback());
    if !ctx.server.config.auth && !local {
        return Err(CommandError::new(
            ErrorCode::UNAUTHORIZED,
            "shutdown must run from localhost when running db without auth",
        ));
    }
    let grace = if force {
        std::time::Duration::ZERO
    } else {
        std::time::Duration::from_secs(timeout.unwrap_or(SHUTDOWN_TIMEOUT_SECS))
    };
    ctx.server.shutdown.request(grace);
    ctx.conn.close = true;
    Ok(Document::new().into())
}
