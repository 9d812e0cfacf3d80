//! Index commands: `createIndexes`, `listIndexes`, `dropIndexes`. An index is described as
//! MongoDB describes it: `{v: 2, key, name, unique?, sparse?, expireAfterSeconds?,
//! partialFilterExpression?}`.

use bson::{Bson, Document, doc};
use odm_engine::{ErrorCode, IndexSpec};

use super::{Args, CommandError, CommandResult, Ctx, collection_name};
use crate::session;

/// An index specification of `createIndexes`, read by the engine's one parser of index
/// documents, its error with MongoDB's code.
pub fn spec_from_document(index: &Document) -> Result<IndexSpec, CommandError> {
    IndexSpec::from_document(index).map_err(|e| CommandError::new(e.code(), e.to_string()))
}

pub fn create_indexes(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "createIndexes");
    let collection = collection_name(command, "createIndexes")?.to_owned();
    super::views::refuse_view(ctx, &collection)?;
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
    let in_transaction = session::in_transaction(ctx);
    let ns = format!("{}.{collection}", ctx.db);
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
        // Indexes that exist already may be asked for again; a new one only on a collection
        // the transaction created (the failure aborts the transaction, this index with it).
        if in_transaction && after > before && t.existed_before(&collection) {
            return Err(CommandError::new(
                ErrorCode::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
                format!(
                    "Cannot create new indexes on existing collection {ns} in a multi-document transaction."
                ),
            ));
        }
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
    let docs: Vec<Document> = specs.iter().map(IndexSpec::to_document).collect();
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
                // Indexes on one key pattern under several collations: a name must choose.
                let found: Vec<_> = specs.iter().filter(|s| &s.keys_document() == key).collect();
                match found.as_slice() {
                    [] => {
                        return Err(CommandError::new(
                            ErrorCode::INDEX_NOT_FOUND,
                            format!("can't find index with key: {key}"),
                        ));
                    }
                    [one] => vec![one.name().to_owned()],
                    several => {
                        let names: Vec<&str> = several.iter().map(|s| s.name()).collect();
                        return Err(CommandError::new(
                            ErrorCode::AMBIGUOUS_INDEX_KEY_PATTERN,
                            format!(
                                "{key} matches more than one index ({}); drop one by name",
                                names.join(", ")
                            ),
                        ));
                    }
                }
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
