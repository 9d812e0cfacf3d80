//! Bringing a file of an earlier storage format version to this one, inside the transaction
//! that opens it, so that a crash part way leaves the file as it was (see
//! `catalog::FORMAT_VERSION` for what each version changed).
//!
//! Versions 2 to 4 only lacked what later versions added, and need nothing rewritten. Versions 2
//! to 5 wrote numbers in keys as exact decimal digits, where version 6 writes them compactly
//! (see [`crate::keys`]): every key holding a number changes, so such a file has every
//! collection's documents table rewritten under the new keys of their `_id`s and every index
//! rebuilt from its documents. Both are recomputed from the documents alone, so rewriting keys
//! that are already current changes nothing.
//!
//! Version 9 kept a collection's default collation but not its `_id`s unique under it; such a
//! file has the index that does so built for each of those collections.

use std::sync::Arc;

use redb::{ReadableTable, WriteTransaction};

use crate::catalog::{Catalog, CollectionMeta, IndexMeta};
use crate::collection::stored_document;
use crate::error::{Error, Result};
use crate::index::IndexSpec;
use crate::{index_store, keys, schema, tables};

/// The first version whose keys this build writes: files of earlier versions are rekeyed.
pub(crate) const COMPACT_NUMBERS: u32 = 6;

/// Rewrites every key of a file written before [`COMPACT_NUMBERS`]; the catalog's multikey flags
/// are recomputed with the indexes.
pub(crate) fn rekey(txn: &WriteTransaction, catalog: &mut Catalog) -> Result<()> {
    for meta in catalog.collections.values_mut() {
        let meta = Arc::make_mut(meta);
        rekey_documents(txn, meta)?;
        let mut indexes = std::mem::take(&mut meta.indexes);
        for index in &mut indexes {
            index_store::delete(txn, meta.id, index.id)?;
            index.multikey = false;
            schema::build_index(txn, meta, index)?;
        }
        meta.indexes = indexes;
    }
    Ok(())
}

/// The first version whose collections with a default collation keep their `_id`s unique
/// under it: files of earlier versions have that index built.
pub(crate) const COLLATED_IDS: u32 = 10;

/// Builds, for each collection with a default collation, the index that keeps its `_id`s
/// unique under it. A collection whose `_id`s already collide under its collation (which
/// version 9 allowed) is left without it, its documents untouched: refusing to open the file
/// would keep every collection from its user, and removing a document would lose data.
pub(crate) fn index_collated_ids(txn: &WriteTransaction, catalog: &mut Catalog) -> Result<()> {
    let collated: Vec<String> = catalog
        .collections
        .values()
        .filter(|m| {
            m.options.collation.is_some() && !m.indexes.iter().any(|i| i.spec.is_collated_id())
        })
        .map(|m| m.name.clone())
        .collect();
    for name in collated {
        let id = catalog.allocate_id();
        let Some(meta) = catalog.collections.get_mut(&name) else {
            continue;
        };
        let Some(collation) = meta.options.collation.clone() else {
            continue;
        };
        let mut index = IndexMeta {
            id,
            spec: IndexSpec::collated_id(collation),
            multikey: false,
        };
        match schema::build_index(txn, meta, &mut index) {
            Ok(()) => Arc::make_mut(meta).indexes.push(index),
            Err(Error::DuplicateKey { .. }) => index_store::delete(txn, meta.id, id)?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Copies the documents table under the current encoding of each document's `_id` into a new
/// table, which then takes the old one's name.
fn rekey_documents(txn: &WriteTransaction, meta: &CollectionMeta) -> Result<()> {
    let name = tables::docs_name(meta.id);
    let rewritten = tables::docs_rekeyed_name(meta.id);
    {
        let old = txn.open_table(tables::bytes(&name))?;
        let mut new = txn.open_table(tables::bytes(&rewritten))?;
        for row in old.iter()? {
            let (_, bytes) = row?;
            let doc = stored_document(&meta.name, bytes.value())?;
            let id = doc
                .get("_id")
                .map_err(|e| Error::corrupt(format!("collection `{}`", meta.name), e))?
                .ok_or_else(|| {
                    Error::corrupt(
                        format!("collection `{}`", meta.name),
                        "a document without _id",
                    )
                })?;
            new.insert(keys::encode(id).as_slice(), bytes.value())?;
        }
    }
    txn.delete_table(tables::bytes(&name))?;
    txn.rename_table(tables::bytes(&rewritten), tables::bytes(&name))?;
    Ok(())
}
