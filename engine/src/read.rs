//! Reading a collection inside a snapshot: point gets, full scans and index prefix scans.
//!
//! Documents come out as [`StoredDocument`]s that borrow redb's page rather than copying it;
//! decode them straight into the caller's type with [`StoredDocument::decode`]. A collection
//! handle opens each index's tables once, at the first scan that reads them, so a handle
//! running many queries does not open them again.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use bson::{Bson, RawDocument, RawDocumentBuf};
use redb::{AccessGuard, ReadOnlyTable, ReadableTableMetadata};
use serde::de::DeserializeOwned;

use crate::catalog::{CollectionMeta, IndexMeta};
use crate::collection::id_key;
use crate::db::ReadTxn;
use crate::decode;
use crate::error::{DocumentError, Error, Result};
use crate::index_store::{self, MergedRange};
use crate::keys;
use crate::tables;

type BytesTable = ReadOnlyTable<&'static [u8], &'static [u8]>;

impl ReadTxn {
    /// A collection of this snapshot, or `None` when it does not exist.
    pub fn collection(&self, name: &str) -> Result<Option<ReadCollection<'_>>> {
        let Some(meta) = self.catalog.get(name) else {
            return Ok(None);
        };
        let docs = self
            .txn
            .open_table(tables::bytes(&tables::docs_name(meta.id)))?;
        Ok(Some(ReadCollection {
            txn: self,
            index_tables: meta.indexes.iter().map(|_| OnceLock::new()).collect(),
            natural: OnceLock::new(),
            meta: meta.clone(),
            docs,
        }))
    }
}

/// One collection in a read snapshot, its documents table open.
pub struct ReadCollection<'t> {
    txn: &'t ReadTxn,
    meta: Arc<CollectionMeta>,
    docs: BytesTable,
    /// Each index's two tables (main and delta), by position in `meta.indexes`, opened by the
    /// first scan that reads them: a handle running many queries opens them once.
    index_tables: Vec<OnceLock<(BytesTable, BytesTable)>>,
    /// A capped collection's insertion order, opened by the first walk in that order.
    natural: OnceLock<BytesTable>,
}

impl std::fmt::Debug for ReadCollection<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadCollection")
            .field("name", &self.meta.name)
            .finish_non_exhaustive()
    }
}

impl<'t> ReadCollection<'t> {
    /// The snapshot this collection reads (for stages that read other collections).
    pub(crate) fn snapshot(&self) -> &'t ReadTxn {
        self.txn
    }
}

impl ReadCollection<'_> {
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    /// A capped collection's insertion-order table (see [`crate::capped`]).
    pub(crate) fn natural_order(&self) -> Result<&BytesTable> {
        if self.meta.options.capped.is_none() {
            return Err(crate::capped::not_capped(&self.meta.name));
        }
        if let Some(table) = self.natural.get() {
            return Ok(table);
        }
        let table = self
            .txn
            .txn
            .open_table(tables::bytes(&tables::natural_name(self.meta.id)))?;
        Ok(self.natural.get_or_init(|| table))
    }

    /// The document with this `_id`.
    pub fn get(&self, id: &Bson) -> Result<Option<StoredDocument>> {
        let key = id_key(id).map_err(|source| Error::InvalidDocument {
            collection: self.meta.name.clone(),
            source,
        })?;
        Ok(self
            .docs
            .get(key.as_slice())?
            .map(|guard| self.stored(guard)))
    }

    /// The number of documents.
    pub fn len(&self) -> Result<u64> {
        Ok(self.docs.len()?)
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.docs.len()? == 0)
    }

    /// Every document in `_id` order.
    pub fn scan(&self) -> Result<impl Iterator<Item = Result<StoredDocument>> + '_> {
        let range = self.docs.range::<&[u8]>(..)?;
        Ok(range.map(move |row| {
            let (_, value) = row?;
            Ok(self.stored(value))
        }))
    }

    /// The documents whose first `values.len()` key fields in index `index` equal `values`
    /// (compared as index keys: `1` equals `1.0`, and strings equal under the index's
    /// collation are equal), in index order. A multikey index yields each
    /// document once.
    pub fn index_prefix(&self, index: &str, values: &[Bson]) -> Result<IndexPrefixScan<'_>> {
        let spec = self.meta.index(index).ok_or_else(|| Error::IndexNotFound {
            collection: self.meta.name.clone(),
            index: index.to_owned(),
        })?;
        let mut prefix = Vec::new();
        let malformed = |e: bson::error::Error| Error::InvalidDocument {
            collection: self.meta.name.clone(),
            source: DocumentError::Malformed {
                reason: e.to_string(),
            },
        };
        for (value, (_, direction)) in values.iter().zip(spec.spec.keys()) {
            match spec.spec.collation() {
                // Strings as the index keys them: sort keys under its collation.
                Some(collation) => {
                    let raw = bson::RawBson::try_from(value.clone()).map_err(malformed)?;
                    let cx = Some(&**collation);
                    keys::encode_collated_into(&mut prefix, raw.as_raw_bson_ref(), *direction, cx);
                }
                None => {
                    keys::encode_bson_into(&mut prefix, value, *direction).map_err(malformed)?;
                }
            }
        }
        let upper = keys::prefix_successor(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
        let range = self.index_range(
            spec,
            Bound::Included(prefix.as_slice()),
            upper.as_ref().map(Vec::as_slice),
            false,
        )?;
        Ok(IndexPrefixScan {
            collection: self,
            index: spec.clone(),
            given_fields: values.len().min(spec.spec.keys().len()),
            prefix_len: prefix.len(),
            range,
            seen: spec.multikey.then(BTreeSet::new),
        })
    }

    pub(crate) fn meta(&self) -> &CollectionMeta {
        &self.meta
    }

    pub(crate) fn plan_cache(&self) -> &crate::query::PlanCache {
        &self.txn.plan_cache
    }

    /// Index entries within byte bounds, from both of the index's tables, in key order.
    pub(crate) fn index_range<'a>(
        &self,
        index: &IndexMeta,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<MergedRange<'a>> {
        let open = || -> Result<(BytesTable, BytesTable)> {
            let (main, delta) = index_store::table_names(self.meta.id, index.id);
            Ok((
                self.txn.txn.open_table(tables::bytes(&main))?,
                self.txn.txn.open_table(tables::bytes(&delta))?,
            ))
        };
        let ranges = |(main, delta): &(BytesTable, BytesTable)| -> Result<MergedRange<'a>> {
            Ok(MergedRange::directed(
                main.range::<&[u8]>((lower, upper))?,
                delta.range::<&[u8]>((lower, upper))?,
                reverse,
            ))
        };
        let Some(cell) = self
            .meta
            .indexes
            .iter()
            .position(|i| i.id == index.id)
            .and_then(|at| self.index_tables.get(at))
        else {
            return ranges(&open()?);
        };
        if cell.get().is_none() {
            // Another thread may set it first: both opened the same tables of one snapshot.
            let _ = cell.set(open()?);
        }
        match cell.get() {
            Some(tables) => ranges(tables),
            None => ranges(&open()?),
        }
    }

    /// The bytes stored under an encoded `_id`, if any.
    pub(crate) fn document_guard(
        &self,
        id_key: &[u8],
    ) -> Result<Option<AccessGuard<'static, &'static [u8]>>> {
        Ok(self.docs.get(id_key)?)
    }

    /// The stored documents whose encoded `_id` lies within bounds, as table rows.
    pub(crate) fn documents_within(
        &self,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
    ) -> Result<redb::Range<'static, &'static [u8], &'static [u8]>> {
        Ok(self.docs.range::<&[u8]>((lower, upper))?)
    }

    /// Every stored document, in `_id` order, as table rows.
    pub(crate) fn documents_range(
        &self,
    ) -> Result<redb::Range<'static, &'static [u8], &'static [u8]>> {
        Ok(self.docs.range::<&[u8]>(..)?)
    }

    pub(crate) fn stored(&self, guard: AccessGuard<'static, &'static [u8]>) -> StoredDocument {
        StoredDocument {
            collection: self.meta.clone(),
            guard,
        }
    }

    fn fetch(&self, id_key: &[u8]) -> Result<StoredDocument> {
        let guard = self.docs.get(id_key)?.ok_or_else(|| {
            Error::corrupt(
                format!("collection `{}`", self.meta.name),
                "an index entry refers to a missing document",
            )
        })?;
        Ok(self.stored(guard))
    }
}

/// The iterator of [`ReadCollection::index_prefix`].
pub struct IndexPrefixScan<'c> {
    collection: &'c ReadCollection<'c>,
    index: IndexMeta,
    given_fields: usize,
    /// The length of the encoded given fields, the start of the rest of each key.
    prefix_len: usize,
    range: MergedRange<'static>,
    /// `_id` keys already returned, kept for multikey indexes only.
    seen: Option<BTreeSet<Vec<u8>>>,
}

impl std::fmt::Debug for IndexPrefixScan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexPrefixScan")
            .field("index", &self.index.spec.name())
            .finish_non_exhaustive()
    }
}

impl IndexPrefixScan<'_> {
    fn entry_id<'a>(&self, key: &'a [u8], value: &'a [u8], prefix_len: usize) -> Option<&'a [u8]> {
        entry_id(&self.index, key, value, self.given_fields, prefix_len)
    }
}

/// The `_id` key of an index entry: the value of a unique index, the key's tail otherwise
/// (found by skipping the fields from `from_field` on, starting at byte `at`).
pub(crate) fn entry_id<'a>(
    index: &IndexMeta,
    key: &'a [u8],
    value: &'a [u8],
    from_field: usize,
    mut at: usize,
) -> Option<&'a [u8]> {
    if index.spec.is_unique() {
        return crate::index::unique_holder(value);
    }
    for (_, direction) in index.spec.keys().get(from_field..)? {
        at += keys::encoded_len(key.get(at..)?, *direction)?;
    }
    key.get(at..)
}

impl Iterator for IndexPrefixScan<'_> {
    type Item = Result<StoredDocument>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (key, value) = match self.range.next()? {
                Ok(row) => row,
                Err(e) => return Some(Err(e.into())),
            };
            let key = key.value();
            // Every key in the range starts with the prefix, and field encodings are prefix-free,
            // so the given fields end exactly where the prefix does.
            let prefix_len = self.prefix_len;
            let Some(id) = self.entry_id(key, value.value(), prefix_len) else {
                return Some(Err(self.damaged()));
            };
            if let Some(seen) = &mut self.seen
                && !seen.insert(id.to_vec())
            {
                continue;
            }
            return Some(self.collection.fetch(id));
        }
    }
}

impl IndexPrefixScan<'_> {
    fn damaged(&self) -> Error {
        Error::corrupt(
            format!(
                "index `{}` of collection `{}`",
                self.index.spec.name(),
                self.collection.meta.name
            ),
            "an entry is not a well-formed key",
        )
    }
}

/// A stored document, borrowed from the snapshot without copying.
pub struct StoredDocument {
    collection: Arc<CollectionMeta>,
    guard: AccessGuard<'static, &'static [u8]>,
}

impl std::fmt::Debug for StoredDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.as_raw() {
            Ok(raw) => write!(f, "{raw:?}"),
            Err(e) => write!(f, "<{e}>"),
        }
    }
}

impl StoredDocument {
    /// The BSON bytes as stored.
    pub fn bytes(&self) -> &[u8] {
        self.guard.value()
    }

    /// The document, its header checked.
    pub fn as_raw(&self) -> Result<&RawDocument> {
        RawDocument::from_bytes(self.guard.value()).map_err(|e| self.corrupt(e))
    }

    /// An owned copy.
    pub fn to_raw_document_buf(&self) -> Result<RawDocumentBuf> {
        Ok(self.as_raw()?.to_owned())
    }

    /// Decodes the document into `T` without an intermediate `bson::Document`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T> {
        decode::from_slice(self.guard.value()).map_err(|reason| Error::Decode {
            collection: self.collection.name.clone(),
            id: self.id_text(),
            reason,
        })
    }

    fn id_text(&self) -> String {
        self.as_raw()
            .map_or_else(|_| "<unknown>".to_owned(), decode::id_text)
    }

    fn corrupt(&self, e: impl ToString) -> Error {
        Error::corrupt(format!("collection `{}`", self.collection.name), e)
    }
}
