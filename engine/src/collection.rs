//! Document writes that keep every index in step.
//!
//! Invariant (checked by [`crate::Database::verify`] and the consistency property test): after
//! every committed transaction, each index table holds exactly the entries
//! [`IndexSpec`](crate::IndexSpec) computes for the documents of its collection.
//!
//! Every write validates first and writes after: index keys are computed and unique indexes
//! checked before the document or any entry is touched, so an operation that fails changes
//! nothing, even inside a transaction that goes on to commit. Updates touch only the entries that
//! differ between the old and new document.
//!
//! Index entries are not written at once: a transaction buffers each index's net changes
//! (`db::PendingIndexWrites`) and writes them in key order at commit (see `index_store`), which
//! keeps B-tree inserts local. They are written earlier, through tables already open, only
//! where a read needs them: an update or delete writes those of the indexes its query reads
//! through, and a query over a collection inside the transaction writes the collection's first
//! (see `query::source`).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bson::{Bson, RawBson, RawDocument, RawDocumentBuf};
use redb::{ReadableTable, Table};

use crate::capped::{CappedError, Natural};
use crate::catalog::{CollectionMeta, IndexMeta, check_collection_name};
use crate::changes::record::{Recorder, Rewrite};
use crate::db::{PendingIndexWrites, WriteTxn};
use crate::decode::render;
use crate::document::{IntoRawDocument, Prepared, check_id, prepare};
use crate::error::{DocumentError, Error, Result};
use crate::index::{
    DocumentKeys, ID_INDEX_NAME, IndexSpec, KeyError, describe_key, entry, unique_holder,
};
use crate::index_store::{self, Change, IndexTablesMut};
use crate::keys;
use crate::options::CollectionOptions;
use crate::table_pool::{BytesTable, TablePool};
use crate::tables;
use crate::update::{Update, Updated};

/// What [`WriteTxn::insert_many`] did: the `_id` of each inserted document and the error of
/// each refused one, both by position in the input.
#[derive(Debug, Default)]
pub struct InsertManyResult {
    pub inserted: Vec<(usize, Bson)>,
    pub failures: Vec<(usize, Error)>,
}

/// The encoded `_id` used as the documents table key.
pub(crate) fn id_key(id: &Bson) -> Result<Vec<u8>, DocumentError> {
    let mut key = Vec::with_capacity(16);
    keys::encode_bson_into(&mut key, id, keys::Direction::Ascending).map_err(|e| {
        DocumentError::Malformed {
            reason: e.to_string(),
        }
    })?;
    Ok(key)
}

impl<'db> WriteTxn<'db> {
    /// Inserts a document, creating the collection when it does not exist, and returns its
    /// `_id` (generated when absent).
    pub fn insert_one(&mut self, collection: &str, doc: impl IntoRawDocument) -> Result<Bson> {
        let mut writer = self.writer(collection, true)?;
        let id = writer.insert_raw(doc);
        let newly_multikey = writer.finish();
        self.mark_multikey(collection, &newly_multikey);
        id
    }

    /// Inserts documents in order. Ordered: stops at the first refused document. Unordered: goes
    /// on past refused documents. Either way the inserted ones stay (as in MongoDB); storage
    /// errors end the call with `Err`.
    pub fn insert_many<D: IntoRawDocument>(
        &mut self,
        collection: &str,
        docs: impl IntoIterator<Item = D>,
        ordered: bool,
    ) -> Result<InsertManyResult> {
        let mut writer = self.writer(collection, true)?;
        let mut result = InsertManyResult::default();
        for (position, doc) in docs.into_iter().enumerate() {
            match writer.insert_raw(doc) {
                Ok(id) => result.inserted.push((position, id)),
                Err(e) if e.is_per_document() => {
                    result.failures.push((position, e));
                    if ordered {
                        break;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        let newly_multikey = writer.finish();
        self.mark_multikey(collection, &newly_multikey);
        Ok(result)
    }

    /// The document with this `_id`, as stored.
    pub fn get(&self, collection: &str, id: &Bson) -> Result<Option<RawDocumentBuf>> {
        let Some(meta) = self.catalog.get(collection) else {
            return Ok(None);
        };
        let key = id_key(id).map_err(|source| invalid(collection, source))?;
        self.tables.with(&tables::docs_name(meta.id), |table| {
            table
                .get(key.as_slice())?
                .map(|v| stored_document(collection, v.value()))
                .transpose()
        })
    }

    /// Replaces the document with this `_id` and returns the old one, or `None` (and changes
    /// nothing) when there is none. The replacement's `_id`, if present, must be the same.
    pub fn replace_by_id(
        &mut self,
        collection: &str,
        id: &Bson,
        replacement: impl IntoRawDocument,
    ) -> Result<Option<RawDocumentBuf>> {
        if self.catalog.get(collection).is_none() {
            return Ok(None);
        }
        let key = id_key(id).map_err(|source| invalid(collection, source))?;
        let replacement = with_id(replacement, id).map_err(|source| invalid(collection, source))?;
        let mut writer = self.writer(collection, false)?;
        let old = writer.replace(&key, replacement);
        let newly_multikey = writer.finish();
        self.mark_multikey(collection, &newly_multikey);
        old
    }

    /// Deletes the document with this `_id` and returns it.
    pub fn delete_by_id(&mut self, collection: &str, id: &Bson) -> Result<Option<RawDocumentBuf>> {
        if self.catalog.get(collection).is_none() {
            return Ok(None);
        }
        let key = id_key(id).map_err(|source| invalid(collection, source))?;
        self.delete_by_key(collection, &key)
    }

    /// Deletes the document stored under this encoded `_id`, with its index entries.
    pub(crate) fn delete_by_key(
        &mut self,
        collection: &str,
        key: &[u8],
    ) -> Result<Option<RawDocumentBuf>> {
        let mut writer = self.writer(collection, false)?;
        let old = writer.delete(key);
        writer.finish();
        old
    }

    /// The number of documents in a collection (0 when it does not exist).
    pub fn count(&self, collection: &str) -> Result<u64> {
        let Some(meta) = self.catalog.get(collection) else {
            return Ok(0);
        };
        self.tables.with(&tables::docs_name(meta.id), |table| {
            Ok(redb::ReadableTableMetadata::len(table)?)
        })
    }

    /// The collection's metadata, creating the collection (and its documents table) when
    /// `create` is set and it does not exist.
    pub(crate) fn collection_meta(
        &mut self,
        name: &str,
        create: bool,
    ) -> Result<Option<Arc<CollectionMeta>>> {
        if let Some(meta) = self.catalog.get(name) {
            return Ok(Some(meta.clone()));
        }
        if !create {
            return Ok(None);
        }
        self.create_collection_meta(name, CollectionOptions::default())
            .map(Some)
    }

    /// Adds a collection to the catalog and creates its documents table.
    pub(crate) fn create_collection_meta(
        &mut self,
        name: &str,
        options: CollectionOptions,
    ) -> Result<Arc<CollectionMeta>> {
        check_collection_name(name)?;
        let catalog = self.catalog_mut();
        let id = catalog.allocate_id();
        let indexes = match &options.collation {
            Some(collation) => vec![IndexMeta {
                id: catalog.allocate_id(),
                spec: IndexSpec::collated_id(collation.clone()),
                multikey: false,
            }],
            None => Vec::new(),
        };
        let meta = Arc::new(CollectionMeta {
            id,
            name: name.to_owned(),
            indexes,
            options,
            query_analyzer: None,
        });
        catalog.collections.insert(name.to_owned(), meta.clone());
        self.tables.with(&tables::docs_name(id), |_| Ok(()))?;
        for index in &meta.indexes {
            let (main, delta) = index_store::table_names(id, index.id);
            self.tables.with(&main, |_| Ok(()))?;
            self.tables.with(&delta, |_| Ok(()))?;
        }
        if meta.options.capped.is_some() {
            Natural::open(&self.tables, id)?.put_back(&self.tables);
        }
        self.record_ddl("create", name, bson::doc! {})?;
        Ok(meta)
    }

    pub(crate) fn writer(&mut self, collection: &str, create: bool) -> Result<Writer<'_, 'db>> {
        let meta = self
            .collection_meta(collection, create)?
            .ok_or_else(|| Error::CollectionNotFound(collection.to_owned()))?;
        let docs = self.tables.take(&tables::docs_name(meta.id))?;
        let natural = natural_of(&self.tables, &meta)?;
        Ok(Writer {
            pool: &self.tables,
            pending: &mut self.pending,
            meta,
            docs,
            natural,
            validate: !self.bypass_validation,
            index_tables: BTreeMap::new(),
            newly_multikey: BTreeSet::new(),
            recorder: Recorder::new(self.txn, &mut self.changes),
        })
    }

    /// Appends a DDL change (`drop`, `rename`...) to the change log.
    pub(crate) fn record_ddl(
        &mut self,
        op: &str,
        coll: &str,
        fields: bson::Document,
    ) -> Result<()> {
        crate::changes::record::ddl(self.txn, &mut self.changes, op, coll, fields)
    }

    /// Records in the catalog that these indexes became multikey.
    pub(crate) fn mark_multikey(&mut self, collection: &str, index_ids: &BTreeSet<u64>) {
        if index_ids.is_empty() {
            return;
        }
        let catalog = self.catalog_mut();
        if let Some(meta) = catalog.collections.get_mut(collection) {
            for index in &mut Arc::make_mut(meta).indexes {
                if index_ids.contains(&index.id) {
                    index.multikey = true;
                }
            }
        }
    }
}

/// A capped collection's order tables, for a writer of `meta`.
fn natural_of<'db>(pool: &TablePool<'db>, meta: &CollectionMeta) -> Result<Option<Natural<'db>>> {
    meta.options
        .capped
        .map(|_| Natural::open(pool, meta.id))
        .transpose()
}

fn invalid(collection: &str, source: DocumentError) -> Error {
    Error::InvalidDocument {
        collection: collection.to_owned(),
        source,
    }
}

/// Checks stored bytes before handing them out as a document.
pub(crate) fn stored_document(collection: &str, bytes: &[u8]) -> Result<RawDocumentBuf> {
    RawDocumentBuf::from_bytes(bytes.to_vec())
        .map_err(|e| Error::corrupt(format!("collection `{collection}`"), e))
}

/// Gives a replacement the `_id` of the document it replaces, refusing a different one.
fn with_id(replacement: impl IntoRawDocument, id: &Bson) -> Result<RawDocumentBuf, DocumentError> {
    let raw = replacement.into_raw_document()?;
    let malformed = |e: bson::error::Error| DocumentError::Malformed {
        reason: e.to_string(),
    };
    if let Some(given) = raw.get("_id").map_err(malformed)? {
        check_id(given)?;
        if keys::encode(given) != id_key(id)? {
            return Err(DocumentError::IdChanged {
                from: id.to_string(),
                to: render(given),
            });
        }
        return Ok(raw);
    }
    let mut out = RawDocumentBuf::new();
    let id = RawBson::try_from(id.clone()).map_err(malformed)?;
    out.append(bson::raw::cstr!("_id"), id);
    for element in &raw {
        let (name, value) = element.map_err(malformed)?;
        out.append(name, value);
    }
    Ok(out)
}

/// One collection's tables inside a write transaction, with the fields of [`WriteTxn`] it
/// needs borrowed apart so that the documents table can stay open across a batch. Its tables
/// come from the transaction's pool and go back to it at [`Writer::finish`].
pub(crate) struct Writer<'t, 'db> {
    pool: &'t TablePool<'db>,
    pending: &'t mut PendingIndexWrites,
    meta: Arc<CollectionMeta>,
    docs: BytesTable<'db>,
    /// A capped collection's insertion order (see [`crate::capped`]).
    natural: Option<Natural<'db>>,
    /// Whether writes meet the collection's validator (not `bypassDocumentValidation`).
    validate: bool,
    /// Index tables opened for lookups (unique checks), by index id.
    index_tables: BTreeMap<u64, IndexTablesMut<'db>>,
    newly_multikey: BTreeSet<u64>,
    /// Appends each change to the change log.
    recorder: Recorder<'t>,
}

impl<'t, 'db> Writer<'t, 'db> {
    pub(crate) fn collection_name(&self) -> &str {
        &self.meta.name
    }

    /// A writer over tables a query has just read through, so that they are opened once.
    pub(crate) fn from_view(
        view: crate::query::WriteView<'db>,
        pool: &'t TablePool<'db>,
        pending: &'t mut PendingIndexWrites,
        changes: &'t mut crate::changes::TxnChanges,
        validate: bool,
    ) -> Result<Self> {
        let (meta, docs, index_tables) = view.into_parts(pool);
        let natural = natural_of(pool, &meta)?;
        Ok(Writer {
            pool,
            pending,
            meta,
            docs,
            natural,
            validate,
            index_tables,
            newly_multikey: BTreeSet::new(),
            recorder: Recorder::new(pool.txn(), changes),
        })
    }

    /// The change log's position now: work undone later is cut back to it
    /// ([`Writer::undo_changes_since`]).
    pub(crate) fn change_mark(&self) -> u32 {
        self.recorder.mark()
    }

    /// Removes the change records written since `mark`, whose work was undone.
    pub(crate) fn undo_changes_since(&mut self, mark: u32) -> Result<()> {
        self.recorder.truncate(mark)
    }

    /// Puts the writer's tables back in the pool; returns the indexes it made multikey.
    pub(crate) fn finish(self) -> BTreeSet<u64> {
        self.pool.put(self.docs);
        if let Some(natural) = self.natural {
            natural.put_back(self.pool);
        }
        for tables in self.index_tables.into_values() {
            tables.put_back(self.pool);
        }
        self.newly_multikey
    }

    /// Writes the staged entries of the indexes whose tables this writer holds open (those a
    /// query read through), so that they need not be opened again to be written: at the
    /// commit, or by the next query over this collection, which writes what is staged first.
    /// Applying them now or then gives the same tables (see `index_store`).
    pub(crate) fn apply_staged_to_open_indexes(&mut self, delta_min: u64) -> Result<()> {
        for (index, tables) in std::mem::take(&mut self.index_tables) {
            if let Some(changes) = self.pending.remove(&(self.meta.id, index)) {
                index_store::apply_to(self.pool, tables, self.meta.id, index, changes, delta_min)?;
            } else {
                tables.put_back(self.pool);
            }
        }
        Ok(())
    }

    pub(crate) fn insert_raw(&mut self, doc: impl IntoRawDocument) -> Result<Bson> {
        let collection = &self.meta.name;
        let prepared = doc
            .into_raw_document()
            .and_then(prepare)
            .map_err(|source| invalid(collection, source))?;
        self.insert(&prepared)
    }

    fn insert(&mut self, prepared: &Prepared) -> Result<Bson> {
        self.check_fits(&prepared.raw)?;
        self.check_valid(&prepared.raw, None)?;
        let id_key = keys::encode(prepared.id());
        let keys = self.index_keys(&prepared.raw)?;
        let meta = self.meta.clone();
        for (index, keys) in meta.indexes.iter().zip(&keys) {
            for key in keys.iter().flat_map(|k| &k.keys) {
                self.check_unique(index, key, &id_key, &prepared.raw)?;
            }
        }
        let previous = self
            .docs
            .insert(id_key.as_slice(), prepared.raw.as_bytes())?
            .map(|old| old.value().to_vec());
        if let Some(previous) = previous {
            // Put the existing document back: the insert must change nothing.
            self.docs.insert(id_key.as_slice(), previous.as_slice())?;
            let id = Bson::try_from(prepared.id()).unwrap_or(Bson::Null);
            return Err(Error::DuplicateKey {
                collection: self.meta.name.clone(),
                index: ID_INDEX_NAME.to_owned(),
                key: format!("{{ _id: {} }}", render(prepared.id())),
                key_pattern: Box::new(bson::doc! { "_id": 1 }),
                key_value: Box::new(bson::doc! { "_id": id }),
            });
        }
        for (index, keys) in meta.indexes.iter().zip(keys) {
            if let Some(keys) = keys {
                self.note_multikey(index, &keys);
                for key in &keys.keys {
                    self.stage(index, key, &id_key, Some(&keys.types));
                }
            }
        }
        self.recorder.inserted(&meta, &prepared.raw)?;
        if let Some(natural) = &mut self.natural {
            natural.appended(&id_key, prepared.raw.as_bytes().len())?;
            self.remove_oldest_past_limits(Some(&id_key))?;
        }
        Bson::try_from(prepared.id()).map_err(|e| Error::corrupt("generated _id", e))
    }

    pub(crate) fn replace(
        &mut self,
        id_key: &[u8],
        replacement: RawDocumentBuf,
    ) -> Result<Option<RawDocumentBuf>> {
        let collection = self.meta.name.clone();
        let prepared = prepare(replacement).map_err(|source| invalid(&collection, source))?;
        let Some(old) = self.docs.get(id_key)?.map(|v| v.value().to_vec()) else {
            return Ok(None);
        };
        let old = stored_document(&collection, &old)?;
        self.replace_prepared(id_key, &old, &prepared, Rewrite::Replace)?;
        Ok(Some(old))
    }

    /// The stored document under `id_key` in this transaction.
    pub(crate) fn stored(&self, id_key: &[u8]) -> Result<Option<RawDocumentBuf>> {
        let Some(bytes) = self.docs.get(id_key)?.map(|v| v.value().to_vec()) else {
            return Ok(None);
        };
        stored_document(&self.meta.name, &bytes).map(Some)
    }

    /// Whether this collection has a unique index besides `_id_`: the only rule a replacement
    /// can break that depends on other documents.
    pub(crate) fn has_unique_index(&self) -> bool {
        self.meta.indexes.iter().any(|i| i.spec.is_unique())
    }

    /// The transaction's undo table ([`tables::UNDO`]), created empty; the caller must
    /// [`Writer::drop_undo_table`] it before the transaction ends.
    pub(crate) fn undo_table(&self) -> Result<Table<'db, &'static [u8], &'static [u8]>> {
        Ok(self.pool.txn().open_table(tables::UNDO)?)
    }

    pub(crate) fn drop_undo_table(&self) -> Result<()> {
        self.pool.txn().delete_table(tables::UNDO)?;
        Ok(())
    }

    /// Checks `replacement` against every rule that depends on it alone (document rules, index
    /// keys: parallel arrays, hashed arrays, key counts) without writing it.
    fn check_replacement(&self, replacement: RawDocumentBuf) -> Result<()> {
        let prepared = prepare(replacement).map_err(|source| invalid(&self.meta.name, source))?;
        self.index_keys(&prepared.raw).map(drop)
    }

    /// [`Writer::check_replacement`] for what `update` made: a spliced document needs only
    /// the keys of the indexes the update can change (see [`Writer::replace_updated`]).
    pub(crate) fn check_updated(&self, new: Updated, update: &Update) -> Result<()> {
        if !new.spliced {
            return self.check_replacement(new.doc);
        }
        for index in self
            .meta
            .indexes
            .iter()
            .filter(|i| update.may_change(&i.spec))
        {
            self.keys_of(index, &new.doc)?;
        }
        Ok(())
    }

    /// Replaces `old`, which the caller has just read under `id_key` in this transaction, with
    /// `replacement`: the update path, which has the old document already.
    pub(crate) fn replace_known(
        &mut self,
        id_key: &[u8],
        old: &RawDocument,
        replacement: RawDocumentBuf,
        how: Rewrite,
    ) -> Result<()> {
        let prepared = prepare(replacement).map_err(|source| invalid(&self.meta.name, source))?;
        self.replace_prepared(id_key, old, &prepared, how)
    }

    /// Replaces `old`, just read under `id_key`, with what `update` made of it. A document
    /// built on the stored bytes is already checked (see `update::in_place`), and only the
    /// indexes the update can change are recomputed: every other field keeps its stored
    /// bytes. A decoded and re-encoded document may differ anywhere (the encoding is made
    /// canonical), so all its indexes are.
    ///
    /// Borrowed where the caller keeps `new` (to undo the write, or to return it): a spliced
    /// document is written from the borrow, without a copy.
    pub(crate) fn replace_updated(
        &mut self,
        id_key: &[u8],
        old: &RawDocument,
        new: Cow<'_, Updated>,
        update: &Update,
    ) -> Result<()> {
        let how = match update {
            Update::Replacement(_) => Rewrite::Replace,
            Update::Operators(_) | Update::Pipeline(_) => Rewrite::Update,
        };
        if new.spliced {
            return self.rewrite(id_key, old, &new.doc, how, &|spec| update.may_change(spec));
        }
        let prepared =
            prepare(new.into_owned().doc).map_err(|source| invalid(&self.meta.name, source))?;
        self.replace_prepared(id_key, old, &prepared, how)
    }

    fn replace_prepared(
        &mut self,
        id_key: &[u8],
        old: &RawDocument,
        prepared: &Prepared,
        how: Rewrite,
    ) -> Result<()> {
        self.rewrite(id_key, old, &prepared.raw, how, &|_| true)
    }

    /// Writes `new` over `old`, changing the entries of each index `reached` selects (the
    /// others must hold the same keys for both). `new` has passed `document::prepare`, or was
    /// spliced from checked values (see `update::in_place`).
    fn rewrite(
        &mut self,
        id_key: &[u8],
        old: &RawDocument,
        new: &RawDocument,
        how: Rewrite,
        reached: &dyn Fn(&crate::IndexSpec) -> bool,
    ) -> Result<()> {
        let meta = self.meta.clone();
        let mut changes = Vec::with_capacity(meta.indexes.len());
        for index in meta.indexes.iter().filter(|i| reached(&i.spec)) {
            let old_keys = self.stored_keys_of(index, old)?;
            let new_keys = self.keys_of(index, new)?;
            let (removed, added) = diff(old_keys.as_ref(), new_keys.as_ref());
            for key in &added {
                self.check_unique(index, key, id_key, new)?;
            }
            changes.push((index, removed, added, new_keys));
        }
        if self.natural.is_some() {
            self.check_fits(new)?;
        }
        self.check_valid(new, Some(old))?;
        self.docs.insert(id_key, new.as_bytes())?;
        if let Some(natural) = &mut self.natural {
            natural.resized(id_key, new.as_bytes().len())?;
        }
        for (index, removed, added, new_keys) in changes {
            if let Some(keys) = &new_keys {
                self.note_multikey(index, keys);
            }
            for key in &removed {
                self.stage(index, key, id_key, None);
            }
            let types = new_keys.as_ref().map_or(&[][..], |k| &k.types);
            for key in &added {
                self.stage(index, key, id_key, Some(types));
            }
        }
        self.recorder.rewritten(&meta, old, new, how)
    }

    pub(crate) fn delete(&mut self, id_key: &[u8]) -> Result<Option<RawDocumentBuf>> {
        let collection = self.meta.name.clone();
        let Some(old) = self.docs.remove(id_key)?.map(|v| v.value().to_vec()) else {
            return Ok(None);
        };
        let old = stored_document(&collection, &old)?;
        if let Some(natural) = &mut self.natural {
            natural.removed(id_key)?;
        }
        let old_keys = self.stored_index_keys(&old)?;
        let meta = self.meta.clone();
        for (index, keys) in meta.indexes.iter().zip(old_keys) {
            for key in keys.iter().flat_map(|k| &k.keys) {
                self.stage(index, key, id_key, None);
            }
        }
        self.recorder.deleted(&meta, &old)?;
        Ok(Some(old))
    }

    /// Refuses a write the collection's validator refuses (see [`crate::validation`]).
    fn check_valid(&self, new: &RawDocument, old: Option<&RawDocument>) -> Result<()> {
        let Some(validation) = self
            .meta
            .options
            .validation
            .as_ref()
            .filter(|_| self.validate)
        else {
            return Ok(());
        };
        validation.judge(new, old).map_err(|details| {
            let id = new
                .get("_id")
                .ok()
                .flatten()
                .and_then(|id| Bson::try_from(RawBson::from(id)).ok())
                .unwrap_or(Bson::Null);
            Error::DocumentValidation {
                collection: self.meta.name.clone(),
                id: Box::new(id),
                details: Box::new(details),
            }
        })
    }

    /// Refuses a document larger than a capped collection's whole size.
    fn check_fits(&self, doc: &RawDocument) -> Result<()> {
        let Some(capped) = self.meta.options.capped else {
            return Ok(());
        };
        let size = doc.as_bytes().len() as u64;
        if size > capped.size {
            return Err(Error::Capped(CappedError::DocumentTooLarge {
                collection: self.meta.name.clone(),
                size,
                capped: capped.size,
            }));
        }
        Ok(())
    }

    /// Removes a capped collection's oldest documents while it is over its limits, never
    /// `newest`, the document just written.
    pub(crate) fn remove_oldest_past_limits(&mut self, newest: Option<&[u8]>) -> Result<()> {
        let Some(capped) = self.meta.options.capped else {
            return Ok(());
        };
        while let Some(oldest) = match &self.natural {
            Some(natural) => natural.oldest_over(capped)?,
            None => None,
        } {
            if Some(oldest.as_slice()) == newest {
                break;
            }
            self.delete(&oldest)?;
        }
        Ok(())
    }

    /// The keys of a new document for every index, in catalog order.
    fn index_keys(&self, doc: &RawDocument) -> Result<Vec<Option<DocumentKeys>>> {
        self.meta
            .indexes
            .iter()
            .map(|index| self.keys_of(index, doc))
            .collect()
    }

    /// The keys of a new document for one index.
    fn keys_of(&self, index: &IndexMeta, doc: &RawDocument) -> Result<Option<DocumentKeys>> {
        index
            .spec
            .document_keys(doc)
            .map_err(|e| key_error(&self.meta.name, index, e))
    }

    /// The keys of a stored document for one index: it was indexed when written, so failing
    /// now means damage.
    fn stored_keys_of(&self, index: &IndexMeta, doc: &RawDocument) -> Result<Option<DocumentKeys>> {
        self.keys_of(index, doc).map_err(|e| self.damaged(e))
    }

    /// The keys of a stored document for every index; see [`Writer::stored_keys_of`].
    fn stored_index_keys(&self, doc: &RawDocument) -> Result<Vec<Option<DocumentKeys>>> {
        self.index_keys(doc).map_err(|e| self.damaged(e))
    }

    fn damaged(&self, e: Error) -> Error {
        Error::corrupt(
            format!("collection `{}`", self.meta.name),
            format!("stored document cannot be indexed: {e}"),
        )
    }

    fn note_multikey(&mut self, index: &IndexMeta, keys: &DocumentKeys) {
        if keys.multikey && !index.multikey {
            self.newly_multikey.insert(index.id);
        }
    }

    /// Refuses `key` in a unique index when another document holds it, looking at this
    /// transaction's buffered writes first.
    fn check_unique(
        &mut self,
        index: &IndexMeta,
        key: &[u8],
        id_key: &[u8],
        doc: &RawDocument,
    ) -> Result<()> {
        if !index.spec.is_unique() {
            return Ok(());
        }
        let staged = self
            .pending
            .get(&(self.meta.id, index.id))
            .and_then(|entries| entries.get(key));
        let holder = if let Some(change) = staged {
            change.value().map(<[u8]>::to_vec)
        } else {
            let table = match self.index_tables.entry(index.id) {
                std::collections::btree_map::Entry::Occupied(t) => t.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(IndexTablesMut::open(self.pool, self.meta.id, index.id)?)
                }
            };
            table.get(key)?
        };
        match holder {
            Some(holder) if unique_holder(&holder) != Some(id_key) => {
                let described = describe_key(&index.spec, doc, key);
                Err(Error::DuplicateKey {
                    collection: self.meta.name.clone(),
                    index: index.spec.reported_name().to_owned(),
                    key: described.text,
                    key_pattern: Box::new(described.pattern),
                    key_value: Box::new(described.value),
                })
            }
            _ => Ok(()),
        }
    }

    /// Stages the insertion (with the key's types) or, given `None`, the removal of an entry.
    fn stage(&mut self, index: &IndexMeta, key: &[u8], id_key: &[u8], insert: Option<&[u8]>) {
        let (k, v) = entry(
            index.spec.is_unique(),
            key,
            id_key,
            insert.unwrap_or_default(),
        );
        let change = if insert.is_some() {
            Change::Insert(v)
        } else {
            Change::Remove
        };
        let staged = self.pending.entry((self.meta.id, index.id)).or_default();
        // One lookup: a key staged before in the transaction composes with this change.
        match staged.entry(k) {
            std::collections::btree_map::Entry::Occupied(mut earlier) => {
                let staged = std::mem::replace(earlier.get_mut(), Change::Remove);
                *earlier.get_mut() = staged.then(change);
            }
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(change);
            }
        }
    }
}

/// The entries to remove and to add: keys only in `old` and keys only in `new` (both inputs are
/// sorted), and a key in both whose types changed (`1` replaced by `1.0`) is rewritten.
fn diff(old: Option<&DocumentKeys>, new: Option<&DocumentKeys>) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let retyped = matches!((old, new), (Some(o), Some(n)) if o.types != n.types);
    let empty = Vec::new();
    let old = old.map_or(&empty, |k| &k.keys);
    let new = new.map_or(&empty, |k| &k.keys);
    let removed = old
        .iter()
        .filter(|k| retyped || new.binary_search(k).is_err())
        .cloned()
        .collect();
    let added = new
        .iter()
        .filter(|k| retyped || old.binary_search(k).is_err())
        .cloned()
        .collect();
    (removed, added)
}

pub(crate) fn key_error(collection: &str, index: &IndexMeta, e: KeyError) -> Error {
    match e {
        KeyError::ParallelArrays { first, second } => Error::ParallelArrays {
            collection: collection.to_owned(),
            index: index.spec.name().to_owned(),
            first,
            second,
        },
        KeyError::HashedArray { path } => Error::HashedIndexArray {
            collection: collection.to_owned(),
            index: index.spec.name().to_owned(),
            path,
        },
        KeyError::Text(reason) => Error::TextIndexDocument {
            collection: collection.to_owned(),
            index: index.spec.name().to_owned(),
            reason,
        },
        KeyError::Geo { document, error } => Error::GeoIndexDocument {
            collection: collection.to_owned(),
            index: index.spec.name().to_owned(),
            code: error.code,
            document,
            reason: error.reason,
        },
        KeyError::TooManyKeys { limit } => Error::TooManyIndexKeys {
            collection: collection.to_owned(),
            index: index.spec.name().to_owned(),
            limit,
        },
        KeyError::Malformed(damaged) => invalid(
            collection,
            DocumentError::Malformed {
                reason: damaged.to_string(),
            },
        ),
    }
}
