//! Index commands: `createIndexes`, `listIndexes`, `dropIndexes`. An index is described as
//! MongoDB describes it: `{v: 2, key, name, unique?, sparse?, expireAfterSeconds?,
//! partialFilterExpression?}`.

use std::time::Duration;

use bson::{Bson, Document, doc};
use odm_engine::{ErrorCode, IndexSpec};

use super::{Args, CommandError, CommandResult, Ctx, collection_name};
use crate::server::session;

/// An index specification of `createIndexes`.
pub fn spec_from_document(index: &Document) -> Result<IndexSpec, CommandError> {
    let args = Args::new(index, "createIndexes.indexes");
    let key = args.doc("key")?.ok_or_else(|| args.missing("key"))?;
    let mut spec = IndexSpec::from_keys_document(key)
        .map_err(|e| CommandError::new(e.code(), e.to_string()))?;
    if let Some(name) = args.str("name")? {
        spec = spec.named(name);
    }
    if args.flag("unique")? {
        spec = spec.unique();
    }
    if args.flag("sparse")? {
        spec = spec.sparse();
    }
    if let Some(value) = index.get("expireAfterSeconds") {
        let seconds = match value {
            Bson::Int32(n) => i64::from(*n),
            Bson::Int64(n) => *n,
            Bson::Double(d) if d.is_finite() => *d as i64,
            other => {
                return Err(CommandError::new(
                    ErrorCode::CANNOT_CREATE_INDEX,
                    format!(
                        "TTL index 'expireAfterSeconds' option must be numeric, but received a type of '{}'",
                        super::args::type_name(other)
                    ),
                ));
            }
        };
        if !(0..=i64::from(i32::MAX)).contains(&seconds) {
            return Err(CommandError::new(
                ErrorCode::CANNOT_CREATE_INDEX,
                format!(
                    "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number; found {seconds}"
                ),
            ));
        }
        spec = spec.expire_after(Duration::from_secs(seconds as u64));
    }
    if let Some(filter) = args.doc("partialFilterExpression")? {
        spec = spec
            .partial(filter.clone())
            .map_err(|e| CommandError::new(e.code(), e.to_string()))?;
    }
    for unsupported in [
        "collation",
        "hidden",
        "wildcardProjection",
        "weights",
        "2dsphereIndexVersion",
        "clustered",
    ] {
        if index.contains_key(unsupported) {
            return Err(CommandError::new(
                ErrorCode::CANNOT_CREATE_INDEX,
                format!("index option `{unsupported}` is not supported by this server"),
            ));
        }
    }
    Ok(spec)
}

/// How `listIndexes` shows an index.
pub fn spec_to_document(spec: &IndexSpec) -> Document {
    spec.to_document()
}

pub fn create_indexes(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "createIndexes");
    let collection = collection_name(command, "createIndexes")?.to_owned();
    let indexes = args
        .documents("indexes")?
        .ok_or_else(|| args.missing("indexes"))?;
    if indexes.is_empty() {
        return Err(CommandError::bad_value(
            "Must specify at least one index to create",
        ));
    }
    let specs = indexes
        .into_iter()
        .map(spec_from_document)
        .collect::<Result<Vec<_>, _>>()?;
    let (before, after, created_collection) = session::write(ctx, move |t| {
        let existed = t.collection_options(&collection).is_some();
        let before = if existed {
            t.list_indexes(&collection).len()
        } else {
            0
        };
        for spec in specs {
            t.create_index(&collection, spec)?;
        }
        let after = t.list_indexes(&collection).len();
        Ok((before.max(1), after, !existed))
    })?;
    let mut reply = doc! {
        "numIndexesBefore": before as i32,
        "numIndexesAfter": after as i32,
        "createdCollectionAutomatically": created_collection,
    };
    if before == after {
        reply.insert("note", "all indexes already exist");
    }
    Ok(reply.into())
}

pub fn list_indexes(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let collection = collection_name(command, "listIndexes")?.to_owned();
    let ns = format!("{}.{collection}", ctx.db);
    let specs = session::read(ctx, move |txn| {
        if txn.collection_options(&collection).is_none() {
            return Err(CommandError::new(
                ErrorCode::NAMESPACE_NOT_FOUND,
                format!("ns does not exist: {collection}"),
            ));
        }
        Ok(txn.list_indexes(&collection))
    })?;
    let Some(specs) = specs else {
        return Err(CommandError::new(
            ErrorCode::NAMESPACE_NOT_FOUND,
            format!("ns does not exist: {ns}"),
        ));
    };
    let docs: Vec<Document> = specs.iter().map(spec_to_document).collect();
    super::query::buffered_reply(ctx, &ns, &docs, usize::MAX)
}

pub fn drop_indexes(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let name = command.keys().next().map_or("dropIndexes", String::as_str);
    let args = Args::new(command, "dropIndexes");
    let collection = collection_name(command, name)?.to_owned();
    let target = args
        .get("index")
        .cloned()
        .ok_or_else(|| args.missing("index"))?;
    let before = session::write(ctx, move |t| {
        let Some(_) = t.collection_options(&collection) else {
            return Err(CommandError::new(
                ErrorCode::NAMESPACE_NOT_FOUND,
                format!("ns not found {collection}"),
            ));
        };
        let specs = t.list_indexes(&collection);
        let before = specs.len();
        let names: Vec<String> = match &target {
            Bson::String(s) if s == "*" => specs
                .iter()
                .map(|s| s.name().to_owned())
                .filter(|n| n != odm_engine::ID_INDEX_NAME)
                .collect(),
            Bson::String(s) => vec![s.clone()],
            Bson::Array(names) => names
                .iter()
                .map(|n| {
                    n.as_str().map(str::to_owned).ok_or_else(|| {
                        CommandError::new(
                            ErrorCode::TYPE_MISMATCH,
                            "dropIndexes: index names must be strings",
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
            Bson::Document(key) => {
                let found = specs
                    .iter()
                    .find(|s| &s.keys_document() == key)
                    .ok_or_else(|| {
                        CommandError::new(
                            ErrorCode::INDEX_NOT_FOUND,
                            format!("can't find index with key: {key}"),
                        )
                    })?;
                vec![found.name().to_owned()]
            }
            other => {
                return Err(CommandError::new(
                    ErrorCode::TYPE_MISMATCH,
                    format!(
                        "dropIndexes: `index` must be a string, an array or an object, not {}",
                        super::args::type_name(other)
                    ),
                ));
            }
        };
        for name in &names {
            if name == odm_engine::ID_INDEX_NAME {
                return Err(CommandError::new(
                    ErrorCode::INVALID_OPTIONS,
                    "cannot drop _id index",
                ));
            }
            t.drop_index(&collection, name)?;
        }
        Ok(before)
    })?;
    Ok(doc! {"nIndexesWas": before as i32}.into())
}
