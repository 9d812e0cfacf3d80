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

use std::sync::Arc;

use redb::{ReadableTable, WriteTransaction};

use crate::catalog::{Catalog, CollectionMeta};
use crate::collection::stored_document;
use crate::error::{Error, Result};
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
