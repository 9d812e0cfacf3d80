//! The records a transaction's writes append to the change log: what each kind of change
//! keeps, so that a stream can give MongoDB's event for it (see `stream`).
//!
//! A record is a BSON document: `op` (MongoDB's `operationType`), `coll`, `wall` (the
//! commit's wall-clock time), the transaction's `lsid` and `txnNumber` when it came over the
//! wire, and by kind:
//! - `insert`: `documentKey`, `fullDocument`;
//! - `update`: `documentKey`, `updateDescription` (see `diff`), and `disambiguatedPaths` when
//!   a path goes through a field named by digits;
//! - `replace`: `documentKey`, `fullDocument`; an update whose change no description can
//!   reproduce is recorded as a replacement;
//! - `delete`: `documentKey`;
//! - with the collection's `changeStreamPreAndPostImages`: `preImage` on update, replace and
//!   delete, and `postImage` on update;
//! - DDL (`create`, `drop`, `rename` with `to`, `dropDatabase`, `createIndexes`,
//!   `dropIndexes`, `modify`, `shardCollection`): `operationDescription` where MongoDB has one.
//!
//! `documentKey` is `_id` and, for a collection with a shard key, the key's fields, as on a
//! sharded cluster. Records are made by the writes themselves (`collection`'s writer for
//! documents, `schema` for DDL), inside the transaction that makes the change.

use bson::raw::cstr;
use bson::{Document, RawBsonRef, RawDocument, RawDocumentBuf};
use redb::WriteTransaction;

use super::diff;
use super::log::TxnChanges;
use crate::catalog::CollectionMeta;
use crate::error::{Error, Result};
use crate::path::{ArrayOnTheWay, Path};
use crate::raw;

/// How an existing document was rewritten: by update operators (or a pipeline), or by a
/// replacement document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rewrite {
    Update,
    Replace,
}

/// Appends a collection's document changes to the log.
pub(crate) struct Recorder<'t> {
    txn: &'t WriteTransaction,
    changes: &'t mut TxnChanges,
}

fn corrupt(e: impl std::fmt::Display) -> Error {
    Error::corrupt("a change record", e)
}

impl<'t> Recorder<'t> {
    pub(crate) fn new(txn: &'t WriteTransaction, changes: &'t mut TxnChanges) -> Recorder<'t> {
        Recorder { txn, changes }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.changes.enabled()
    }

    /// Appends a record whose fields are `fields`, encoded elements one after another.
    fn append(&mut self, op: &str, coll: &str, fields: &[u8]) -> Result<()> {
        self.changes.append_elements(self.txn, op, coll, fields)
    }

    pub(crate) fn inserted(&mut self, meta: &CollectionMeta, doc: &RawDocument) -> Result<()> {
        if !self.enabled() {
            return Ok(());
        }
        let key = document_key(meta, doc)?;
        let mut fields = Vec::with_capacity(key.len() + doc.as_bytes().len() + 32);
        raw::push_element(&mut fields, raw::DOCUMENT, "documentKey", &key);
        raw::push_element(&mut fields, raw::DOCUMENT, "fullDocument", doc.as_bytes());
        self.append("insert", &meta.name, &fields)
    }

    pub(crate) fn rewritten(
        &mut self,
        meta: &CollectionMeta,
        old: &RawDocument,
        new: &RawDocument,
        how: Rewrite,
    ) -> Result<()> {
        if !self.enabled() {
            return Ok(());
        }
        let images = meta.options.change_stream_pre_and_post_images;
        // Sized for the usual record, a key and a description, so that it seldom grows.
        let mut fields = Vec::with_capacity(256);
        let document = |fields: &mut Vec<u8>, name, bytes: &[u8]| {
            raw::push_element(fields, raw::DOCUMENT, name, bytes);
        };
        document(&mut fields, "documentKey", &document_key(meta, new)?);
        // The description is written into the record as it is found.
        let described = match how {
            Rewrite::Update => diff::describe_into(old, new, "updateDescription", &mut fields),
            Rewrite::Replace => None,
        };
        let op = if let Some(described) = described {
            if let Some(ambiguous) = described.ambiguous {
                document(&mut fields, "disambiguatedPaths", ambiguous.as_bytes());
            }
            if images {
                document(&mut fields, "postImage", new.as_bytes());
            }
            "update"
        } else {
            document(&mut fields, "fullDocument", new.as_bytes());
            "replace"
        };
        if images {
            document(&mut fields, "preImage", old.as_bytes());
        }
        self.append(op, &meta.name, &fields)
    }

    pub(crate) fn deleted(&mut self, meta: &CollectionMeta, old: &RawDocument) -> Result<()> {
        if !self.enabled() {
            return Ok(());
        }
        let mut fields = Vec::new();
        raw::push_element(
            &mut fields,
            raw::DOCUMENT,
            "documentKey",
            &document_key(meta, old)?,
        );
        if meta.options.change_stream_pre_and_post_images {
            raw::push_element(&mut fields, raw::DOCUMENT, "preImage", old.as_bytes());
        }
        self.append("delete", &meta.name, &fields)
    }

    /// See [`TxnChanges::mark`].
    pub(crate) fn mark(&self) -> u32 {
        self.changes.mark()
    }

    /// See [`TxnChanges::truncate`].
    pub(crate) fn truncate(&mut self, mark: u32) -> Result<()> {
        if self.changes.mark() == mark {
            return Ok(());
        }
        self.changes.truncate(self.txn, mark)
    }
}

/// A DDL record (`drop`, `rename`...), appended by the transaction itself.
pub(crate) fn ddl(
    txn: &WriteTransaction,
    changes: &mut TxnChanges,
    op: &str,
    coll: &str,
    fields: Document,
) -> Result<()> {
    if !changes.enabled() {
        return Ok(());
    }
    let fields = RawDocumentBuf::try_from(&fields).map_err(corrupt)?;
    changes.append(txn, op, coll, &fields)
}

/// `_id`, then the shard key's fields (see the module documentation), as a document's bytes.
fn document_key(meta: &CollectionMeta, doc: &RawDocument) -> Result<Vec<u8>> {
    // Without a shard key: the document's first element, `_id` as stored documents keep it,
    // copied as it is.
    if meta.options.shard_key.is_none()
        && let Some(first) = raw::first(doc.as_bytes())
        && first.name(doc.as_bytes()) == b"_id"
    {
        let bytes = doc.as_bytes();
        return Ok(raw::document(&[&bytes[first.start..first.end]]));
    }
    let mut key = RawDocumentBuf::new();
    let id = doc
        .get("_id")
        .map_err(corrupt)?
        .ok_or_else(|| corrupt("a document without _id"))?;
    key.append(cstr!("_id"), id);
    if let Some(shard_key) = &meta.options.shard_key {
        for path in shard_key.paths() {
            let name = path.as_str();
            if name == "_id" {
                continue;
            }
            if let Some(value) = value_at(doc, name)? {
                let name: &bson::raw::CStr = name.try_into().map_err(corrupt)?;
                key.append(name, value);
            }
        }
    }
    Ok(key.into_bytes())
}

/// The value at a dotted path through sub-documents (a shard key holds no arrays).
fn value_at<'a>(doc: &'a RawDocument, path: &str) -> Result<Option<RawBsonRef<'a>>> {
    Path::new(path)
        .get_raw(doc, ArrayOnTheWay::Missing)
        .map_err(corrupt)
}
