//! `Txn` and `TxnCollection`: typed writes (and reads that see them) inside one transaction.
//!
//! A [`Txn`] is what [`Database::write`] hands its closure. `txn.collection::<T>()` or
//! `txn.collection_named::<T>(name)` opens a model's collection in it (syncing the model's
//! declarations onto that collection the first time), and the [`TxnCollection`] it returns
//! holds every operation. The shorthands on `Txn` itself (`txn.insert_one(&value)`) act on the
//! model's declared collection.

use std::any::TypeId;
use std::marker::PhantomData;

use bson::Bson;
use odm_engine::update::{
    BulkResult, BulkWrite, DeleteOptions, FindAndModify, Modify, UpdateModifications,
    UpdateOptions, UpdateResult, WriteOp,
};

use crate::codec::{from_raw, to_raw};
use crate::collection::{Find, InTxn, ModifyOptions};
use crate::database::{Database, Synced};
use crate::error::{BuildError, Error, Result};
use crate::filter::{Filter, PreparedConditions};
use crate::hooks::{self, Write};
use crate::indexes::{Index, IndexPlan, sync};
use crate::kept::{self, Kept};
use crate::model::Document;
use crate::update::{PreparedUpdate, Update};
use crate::writer::Writer;

/// A write transaction over typed models; see [`Database::write`]. Its shorthands
/// (`insert_one`, `get`, `update_one`, ...) act on a model's declared collection; for
/// several operations on one collection, or a collection named at run time, take a
/// [`TxnCollection`].
///
/// ```
/// use odm::{Database, Document, UpdateOptions};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "notes")]
/// struct Note {
///     #[odm(id)]
///     id: i64,
///     text: String,
/// }
///
/// let db = Database::in_memory()?;
/// db.write(|tx| {
///     tx.insert_one(&Note { id: 1, text: "one".into() })?;
///     let f = Note::fields();
///     tx.update_one(f.id.eq(1), f.text.set("uno"), &UpdateOptions::default())?;
///     assert_eq!(tx.get::<Note>(&1.into())?.unwrap().text, "uno");
///     Ok(())
/// })?;
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Txn<'t, 'db> {
    db: &'t Database,
    pub(crate) inner: Writer<'t, 'db>,
    /// Models this transaction synced, recorded as synced once it commits.
    pub(crate) synced: &'t mut Vec<Synced>,
    /// Shard keys of collections a MongoDB transaction synced: `shardCollection` never runs in
    /// a transaction, so they deploy once it commits.
    #[cfg(feature = "mongodb")]
    pub(crate) pending_shard_keys: Vec<(String, odm_engine::ShardKey)>,
    /// Declared schemas a MongoDB transaction synced: `collMod` cannot run in a transaction,
    /// so they deploy after the commit.
    #[cfg(feature = "mongodb")]
    pub(crate) pending_schemas: Vec<(String, crate::DeclaredSchema)>,
}

impl std::fmt::Debug for Txn<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Txn").finish_non_exhaustive()
    }
}

impl<'t, 'db> Txn<'t, 'db> {
    pub(crate) fn new(
        db: &'t Database,
        inner: Writer<'t, 'db>,
        synced: &'t mut Vec<Synced>,
    ) -> Self {
        Txn {
            db,
            inner,
            synced,
            #[cfg(feature = "mongodb")]
            pending_shard_keys: Vec::new(),
            #[cfg(feature = "mongodb")]
            pending_schemas: Vec::new(),
        }
    }

    /// The engine transaction underneath, for raw documents; `None` on the MongoDB back end.
    pub fn engine(&mut self) -> Option<&mut odm_engine::WriteTxn<'db>> {
        self.inner.engine()
    }

    /// The declared collection of `T` in this transaction.
    pub fn collection<T: Document>(&mut self) -> Result<TxnCollection<'_, 'db, T>> {
        self.collection_named(T::COLLECTION)
    }

    /// A collection of `T` named at run time, in this transaction; the model's declarations
    /// are applied to it the first time (see [`Database::collection_named`]).
    pub fn collection_named<'a, T: Document>(
        &'a mut self,
        name: &'a str,
    ) -> Result<TxnCollection<'a, 'db, T>> {
        let synced = self.db.is_synced::<T>(name)
            || self
                .synced
                .iter()
                .any(|(id, synced)| *id == TypeId::of::<T>() && synced == name);
        if !synced {
            self.sync_declared::<T>(name, false)?;
        }
        Ok(TxnCollection {
            inner: self.inner.reborrow(),
            name,
            _model: PhantomData,
        })
    }

    /// Brings the collection `name` in line with the declarations of `T`: in this transaction
    /// on the embedded back end (an abort undoes it); on MongoDB, through index commands that
    /// run outside the transaction and stay whether it commits or not.
    pub(crate) fn sync_declared<T: Document>(
        &mut self,
        name: &str,
        drop_undeclared: bool,
    ) -> Result<IndexPlan> {
        consistent::<T>(name)?;
        match &mut self.inner {
            Writer::Embedded(txn) => {
                let plan = sync::<T>(txn, name, drop_undeclared)?;
                self.synced.push((TypeId::of::<T>(), name.to_owned()));
                Ok(plan)
            }
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => {
                let in_transaction = session.is_some();
                let plan = crate::indexes::sync_remote::<T>(
                    remote,
                    name,
                    drop_undeclared,
                    session.as_deref_mut(),
                )?;
                // Outside a transaction the commands stay; inside one they commit or abort
                // with it, and the shard key deploys after the commit.
                let synced = (TypeId::of::<T>(), name.to_owned());
                if in_transaction {
                    self.synced.push(synced);
                    if let Some(key) = T::shard_key() {
                        self.pending_shard_keys.push((name.to_owned(), key));
                    }
                    if let Some(schema) = T::declared_schema() {
                        self.pending_schemas.push((name.to_owned(), schema));
                    }
                } else {
                    self.db.mark_synced(vec![synced]);
                }
                Ok(plan)
            }
        }
    }

    /// Inserts a model into its declared collection; returns its `_id`.
    pub fn insert_one<T: Document>(&mut self, value: &T) -> Result<Bson> {
        self.collection::<T>()?.insert_one(value)
    }

    /// Inserts models into their declared collection; see [`TxnCollection::insert_many`].
    pub fn insert_many<'v, T: Document>(
        &mut self,
        values: impl IntoIterator<Item = &'v T>,
    ) -> Result<Vec<Bson>> {
        self.collection::<T>()?.insert_many(values)
    }

    /// The model stored under `id` in its declared collection.
    pub fn get<T: Document>(&mut self, id: &Bson) -> Result<Option<T>> {
        self.collection::<T>()?.get(id)
    }

    pub fn update_one<T: Document>(
        &mut self,
        filter: Filter<T>,
        update: Update<T>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.collection::<T>()?.update_one(filter, update, options)
    }

    /// Updates every match; all or nothing (see [`UpdateOptions`]).
    pub fn update_many<T: Document>(
        &mut self,
        filter: Filter<T>,
        update: Update<T>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.collection::<T>()?.update_many(filter, update, options)
    }

    /// Replaces the first match with `value` (its id must be the match's, or absent).
    pub fn replace_one<T: Document>(
        &mut self,
        filter: Filter<T>,
        value: &T,
        upsert: bool,
    ) -> Result<UpdateResult> {
        self.collection::<T>()?.replace_one(filter, value, upsert)
    }

    pub fn delete_one<T: Document>(&mut self, filter: Filter<T>) -> Result<u64> {
        self.collection::<T>()?.delete_one(filter)
    }

    pub fn delete_many<T: Document>(&mut self, filter: Filter<T>) -> Result<u64> {
        self.collection::<T>()?.delete_many(filter)
    }

    /// See [`TxnCollection::find_one_and_update`].
    pub fn find_one_and_update<T: Document>(
        &mut self,
        filter: Filter<T>,
        update: Update<T>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        self.collection::<T>()?
            .find_one_and_update(filter, update, options)
    }

    /// See [`TxnCollection::find_one_and_replace`].
    pub fn find_one_and_replace<T: Document>(
        &mut self,
        filter: Filter<T>,
        value: &T,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        self.collection::<T>()?
            .find_one_and_replace(filter, value, options)
    }

    /// See [`TxnCollection::bulk_write`].
    pub fn bulk_write<T: Document>(
        &mut self,
        models: impl IntoIterator<Item = WriteModel<T>>,
        ordered: bool,
    ) -> Result<BulkResult> {
        self.collection::<T>()?.bulk_write(models, ordered)
    }

    /// See [`TxnCollection::find_one_and_delete`].
    pub fn find_one_and_delete<T: Document>(
        &mut self,
        filter: Filter<T>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        self.collection::<T>()?.find_one_and_delete(filter, options)
    }
}

/// A collection of `T` inside a transaction: writes, and reads that see the transaction's own
/// earlier writes. Get it from [`Txn::collection`] or [`Txn::collection_named`].
///
/// ```
/// use odm::{Database, Document, Filter};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "notes")]
/// struct Note {
///     #[odm(id)]
///     id: i64,
///     text: String,
/// }
///
/// let db = Database::in_memory()?;
/// db.write(|tx| {
///     let mut notes = tx.collection_named::<Note>("notes_ann")?;
///     notes.insert_one(&Note { id: 1, text: "seen before commit".into() })?;
///     assert_eq!(notes.find(Filter::all()).to_vec()?.len(), 1);
///     Ok(())
/// })?;
/// assert_eq!(db.collection_named::<Note>("notes_ann")?.count(Filter::all())?, 1);
/// assert_eq!(db.collection::<Note>()?.count(Filter::all())?, 0);
/// # Ok::<(), odm::Error>(())
/// ```
pub struct TxnCollection<'a, 'db, T> {
    inner: Writer<'a, 'db>,
    name: &'a str,
    _model: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for TxnCollection<'_, '_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TxnCollection({})", self.name)
    }
}

/// The filter, update or value of a typed call, or why it could not be written as BSON.
pub(crate) fn serialized<V, E: Into<BuildError>>(
    collection: &str,
    value: std::result::Result<V, E>,
) -> Result<V> {
    value.map_err(|e| Error::serialize(collection, e))
}

impl<'db, T: Document> TxnCollection<'_, 'db, T> {
    /// The collection's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// Inserts a model; returns its `_id`. Kept timestamps are set to now (see
    /// [`Document::CREATED_AT`]).
    pub fn insert_one(&mut self, value: &T) -> Result<Bson> {
        hooks::before(value, Write::Insert, self.name)?;
        let raw = kept::inserted::<T>(to_raw(value, self.name)?, kept::now(), None, self.name)?;
        let id = self
            .inner
            .insert(self.name, vec![raw])?
            .pop()
            .unwrap_or(Bson::Null);
        hooks::after(value, Write::Insert, &id);
        Ok(id)
    }

    /// Inserts a stored document made by the caller; returns its `_id`.
    pub(crate) fn insert_raw(&mut self, raw: bson::RawDocumentBuf) -> Result<Bson> {
        Ok(self
            .inner
            .insert(self.name, vec![raw])?
            .pop()
            .unwrap_or(Bson::Null))
    }

    /// Inserts models in order; the first refused one fails the call (undo the rest by
    /// returning the error from the transaction).
    pub fn insert_many<'v>(&mut self, values: impl IntoIterator<Item = &'v T>) -> Result<Vec<Bson>>
    where
        T: 'v,
    {
        let values: Vec<&T> = values.into_iter().collect();
        let now = kept::now();
        let raws = values
            .iter()
            .map(|value| {
                hooks::before(*value, Write::Insert, self.name)?;
                kept::inserted::<T>(to_raw(*value, self.name)?, now, None, self.name)
            })
            .collect::<Result<Vec<_>>>()?;
        let ids = self.inner.insert(self.name, raws)?;
        for (value, id) in values.iter().zip(&ids) {
            hooks::after(*value, Write::Insert, id);
        }
        Ok(ids)
    }

    /// The model stored under `id`, as this transaction sees it.
    pub fn get(&mut self, id: &Bson) -> Result<Option<T>> {
        self.inner
            .get(self.name, id)?
            .map(|raw| from_raw::<T>(&raw, self.name))
            .transpose()
    }

    /// A find over this transaction's own tables (its earlier writes count), refined with the
    /// builder's methods and run by `to_vec` or `first`.
    pub fn find(&mut self, filter: impl Into<Filter<T>>) -> Find<T, InTxn<'_, 'db>> {
        Find::new(
            InTxn {
                inner: self.inner.reborrow(),
                name: self.name,
            },
            filter.into(),
        )
    }

    /// The first match, as this transaction sees it.
    pub fn find_one(&mut self, filter: impl Into<Filter<T>>) -> Result<Option<T>> {
        self.find(filter).first()
    }

    pub fn update_one(
        &mut self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let filter = serialized(self.name, filter.into().into_document())?;
        let update = serialized(self.name, update.into().into_modifications())?;
        let update = kept::updated::<T>(update, options.upsert, kept::now());
        self.inner
            .update(self.name, &filter, update, options, false)
    }

    /// Updates every match; all or nothing (see [`UpdateOptions`]).
    pub fn update_many(
        &mut self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let filter = serialized(self.name, filter.into().into_document())?;
        let update = serialized(self.name, update.into().into_modifications())?;
        let update = kept::updated::<T>(update, options.upsert, kept::now());
        self.inner.update(self.name, &filter, update, options, true)
    }

    /// [`TxnCollection::update_one`] with an update prepared once
    /// ([`Collection::prepare_update`](crate::Collection::prepare_update)); `options` must hold
    /// no array filters (an update that needs them, or a pipeline reading the call's `let`
    /// variables, is not prepared: use `update_one`).
    pub fn update_one_prepared(
        &mut self,
        filter: impl Into<Filter<T>>,
        update: &PreparedUpdate<T>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let filter = serialized(self.name, filter.into().into_document())?;
        if let Some(stamped) = stamped_per_call::<T>(update, options) {
            return self
                .inner
                .update(self.name, &filter, stamped, options, false);
        }
        self.inner
            .update_prepared(self.name, &filter, update, options, false)
    }

    /// [`TxnCollection::update_one_prepared`] of the document whose id is `id`, if it meets
    /// `conditions` ([`Collection::prepare_conditions`](crate::Collection::prepare_conditions)):
    /// the update of the filter `{_id: id}` followed by the conditions, which is what a MongoDB
    /// deployment is sent. The embedded engine reads the document by its key and judges it by
    /// the conditions parsed once, where that filter would read the key (an id of a plain
    /// scalar type; no upsert, hint, sort, collation or `let`); otherwise it runs the filter.
    pub fn update_one_by_id_prepared(
        &mut self,
        id: impl Into<Bson>,
        conditions: &PreparedConditions<T>,
        update: &PreparedUpdate<T>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let id = id.into();
        if let Some(stamped) = stamped_per_call::<T>(update, options) {
            let filter = conditions.parsed().filter(&id);
            return self
                .inner
                .update(self.name, &filter, stamped, options, false);
        }
        self.inner
            .update_by_id_prepared(self.name, &id, conditions, update, options)
    }

    /// [`TxnCollection::update_many`] with an update prepared once; `options` must hold no
    /// array filters.
    pub fn update_many_prepared(
        &mut self,
        filter: impl Into<Filter<T>>,
        update: &PreparedUpdate<T>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let filter = serialized(self.name, filter.into().into_document())?;
        if let Some(stamped) = stamped_per_call::<T>(update, options) {
            return self
                .inner
                .update(self.name, &filter, stamped, options, true);
        }
        self.inner
            .update_prepared(self.name, &filter, update, options, true)
    }

    /// Replaces the first match with `value` (its id must be the match's, or absent).
    pub fn replace_one(
        &mut self,
        filter: impl Into<Filter<T>>,
        value: &T,
        upsert: bool,
    ) -> Result<UpdateResult> {
        let filter = serialized(self.name, filter.into().into_document())?;
        hooks::before(value, Write::Replace, self.name)?;
        let replacement = replacement_of(value, self.name)?;
        let options = UpdateOptions {
            upsert,
            ..UpdateOptions::default()
        };
        let result = match kept::replacing::<T>(&replacement, kept::now()) {
            Some(keeping) => self
                .inner
                .update(self.name, &filter, keeping, &options, false)?,
            None => self
                .inner
                .replace_one(self.name, &filter, &replacement, &options)?,
        };
        if result.matched > 0 || result.upserted_id.is_some() {
            hooks::after(value, Write::Replace, &Bson::Null);
        }
        Ok(result)
    }

    pub fn delete_one(&mut self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = serialized(self.name, filter.into().into_document())?;
        self.inner.delete(self.name, &filter, false)
    }

    pub fn delete_many(&mut self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = serialized(self.name, filter.into().into_document())?;
        self.inner.delete(self.name, &filter, true)
    }

    /// Stores `value` in place of the document with its `_id`, or inserts it: one replacement
    /// whose filter is the document's identity, its `_id` and, for a model with a shard key,
    /// the key's values, so that on a cluster it goes to the one shard holding the document.
    ///
    /// For a model with kept fields, `value` is brought up to what was stored: its
    /// `updated_at`, its `created_at` when the save inserted it, and its revision. With an
    /// `#[odm(version)]` field the save is conditional: it replaces the document only if it is
    /// still at the revision `value` holds, and stores the next one; a value at revision 0 that
    /// matches nothing is inserted. Anything else is [`Error::VersionConflict`], and nothing
    /// is written.
    pub fn save(&mut self, value: &mut T) -> Result<UpdateResult> {
        hooks::before_save(value, self.name)?;
        let result = self.save_value(value)?;
        hooks::after_save(value);
        Ok(result)
    }

    /// [`TxnCollection::save`] past the hooks.
    fn save_value(&mut self, value: &mut T) -> Result<UpdateResult> {
        let replacement = replacement_of(value, self.name)?;
        if kept::keeps::<T>() {
            return self.save_kept(value, &replacement);
        }
        if !replacement.contains_key("_id") {
            // No identity yet: a new document, with an `_id` generated as an insert does.
            let id = self.insert_one(value)?;
            return Ok(UpdateResult {
                matched: 0,
                modified: 0,
                upserted_id: Some(id),
            });
        }
        let filter = identity_of::<T>(&replacement);
        let options = UpdateOptions {
            upsert: true,
            ..UpdateOptions::default()
        };
        self.inner
            .replace_one(self.name, &filter, &replacement, &options)
    }

    /// [`TxnCollection::save`] of a model with kept fields.
    fn save_kept(&mut self, value: &mut T, replacement: &bson::Document) -> Result<UpdateResult> {
        let now = kept::now();
        let read_at = value.revision();
        let next = T::REVISION.map(|_| read_at.saturating_add(1));
        if replacement.contains_key("_id") {
            let filter = known_document(value, replacement);
            let options = UpdateOptions {
                upsert: T::REVISION.is_none(),
                ..UpdateOptions::default()
            };
            if let Some(keeping) = kept::replacing::<T>(replacement, now) {
                let result = self
                    .inner
                    .update(self.name, &filter, keeping, &options, false)?;
                if result.matched > 0 || result.upserted_id.is_some() {
                    value.keep(&Kept {
                        created_at: result.upserted_id.is_some().then_some(now),
                        updated_at: Some(now),
                        revision: next,
                    });
                    return Ok(result);
                }
            }
            if read_at != 0 {
                return Err(kept::conflict(self.name, &filter, read_at));
            }
        }
        // A new document, stored at the next revision.
        let raw = kept::inserted::<T>(to_raw(value, self.name)?, now, next, self.name)?;
        let id = match self.inner.insert(self.name, vec![raw]) {
            Err(e) if T::REVISION.is_some() && kept::duplicate_id(&e) => {
                return Err(kept::conflict(self.name, replacement, read_at));
            }
            inserted => inserted?.pop().unwrap_or(Bson::Null),
        };
        value.keep(&Kept {
            created_at: Some(now),
            updated_at: Some(now),
            revision: next,
        });
        Ok(UpdateResult {
            matched: 0,
            modified: 0,
            upserted_id: Some(id),
        })
    }

    /// Applies `update` to the document `value` is (found by its identity, as
    /// [`TxnCollection::save`] finds it). For a model with an `#[odm(version)]` field, only if
    /// the document is still at the revision `value` holds, else [`Error::VersionConflict`];
    /// the update increments the revision (read the document again to see it).
    pub fn update_document(
        &mut self,
        value: &T,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let filter = known_document(value, &replacement_of(value, self.name)?);
        let update = serialized(self.name, update.into().into_modifications())?;
        let update = kept::updated::<T>(update, false, kept::now());
        let result =
            self.inner
                .update(self.name, &filter, update, &UpdateOptions::default(), false)?;
        if result.matched == 0 && T::REVISION.is_some() {
            return Err(kept::conflict(self.name, &filter, value.revision()));
        }
        Ok(result)
    }

    /// Deletes the document `value` is (by its identity, as [`TxnCollection::save`] finds it);
    /// returns how many were deleted (0 or 1). For a model with an `#[odm(version)]` field,
    /// only if the document is still at the revision `value` holds, else
    /// [`Error::VersionConflict`].
    pub fn delete_document(&mut self, value: &T) -> Result<u64> {
        hooks::before(value, Write::Delete, self.name)?;
        let filter = known_document(value, &replacement_of(value, self.name)?);
        let deleted = self.inner.delete(self.name, &filter, false)?;
        if deleted == 0 && T::REVISION.is_some() {
            return Err(kept::conflict(self.name, &filter, value.revision()));
        }
        if deleted > 0 {
            hooks::after(value, Write::Delete, &Bson::Null);
        }
        Ok(deleted)
    }

    /// Updates the first match (in the options' sort order) and returns it, before or after.
    pub fn find_one_and_update(
        &mut self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let filter = serialized(self.name, filter.into().into_document())?;
        let update = serialized(self.name, update.into().into_modifications())?;
        let update = kept::updated::<T>(update, options.upsert, kept::now());
        let found = self.inner.find_and_modify(
            self.name,
            &filter,
            Modify::Update(update),
            &options.engine(),
        )?;
        decode_document::<T>(found, self.name)
    }

    /// Replaces the first match (in the options' sort order) with `value` and returns the
    /// document before or after; with `upsert`, inserts `value` when nothing matches.
    pub fn find_one_and_replace(
        &mut self,
        filter: impl Into<Filter<T>>,
        value: &T,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let filter = serialized(self.name, filter.into().into_document())?;
        hooks::before(value, Write::Replace, self.name)?;
        let replacement = replacement_of(value, self.name)?;
        let modify = match kept::replacing::<T>(&replacement, kept::now()) {
            Some(keeping) => Modify::Update(keeping),
            None => Modify::Replace(replacement),
        };
        let found = self
            .inner
            .find_and_modify(self.name, &filter, modify, &options.engine())?;
        // An upsert writes either way; otherwise a match was replaced when one was found.
        if found.is_some() || options.upsert {
            hooks::after(value, Write::Replace, &Bson::Null);
        }
        decode_document::<T>(found, self.name)
    }

    /// Deletes the first match (in the options' sort order) and returns it.
    pub fn find_one_and_delete(
        &mut self,
        filter: impl Into<Filter<T>>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let filter = serialized(self.name, filter.into().into_document())?;
        let found =
            self.inner
                .find_and_modify(self.name, &filter, Modify::Delete, &options.engine())?;
        decode_document::<T>(found, self.name)
    }

    /// Creates an index chosen at run time (see [`Index`]), or keeps it when it exists with
    /// the same definition; returns its name.
    pub fn create_index(&mut self, index: Index<T>) -> Result<String> {
        let spec = index.into_spec()?;
        self.inner.create_index(self.name, spec)
    }

    /// Runs a mix of writes on the collection, each reported by its position. Ordered: stops
    /// at the first failing operation; unordered: goes on past failures. The operations that
    /// succeeded stay in this transaction (return an error to undo them all).
    pub fn bulk_write(
        &mut self,
        models: impl IntoIterator<Item = WriteModel<T>>,
        ordered: bool,
    ) -> Result<BulkResult> {
        let mut ops = Vec::new();
        let mut hooked = Vec::new();
        for (position, model) in models.into_iter().enumerate() {
            let (op, value) = model.into_op(self.name)?;
            ops.push(op);
            if let Some(value) = value.filter(|(_, v)| v.hooks().is_some()) {
                hooked.push((position, value));
            }
        }
        let result = self.inner.bulk_write(
            self.name,
            BulkWrite {
                ops,
                ordered,
                let_vars: None,
            },
        )?;
        after_bulk(&result, ordered, hooked);
        Ok(result)
    }
}

/// One operation of a typed bulk write ([`Txn::bulk_write`], [`Collection::bulk_write`](crate::Collection::bulk_write)).
///
/// ```
/// use odm::{Database, Document, Filter, WriteModel};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "notes")]
/// struct Note {
///     #[odm(id)]
///     id: i64,
///     text: String,
/// }
///
/// let db = Database::in_memory()?;
/// let notes = db.collection::<Note>()?;
/// let f = Note::fields();
/// let result = notes.bulk_write([
///     WriteModel::InsertOne(Note { id: 1, text: "a".into() }),
///     WriteModel::InsertOne(Note { id: 2, text: "b".into() }),
///     WriteModel::UpdateOne { filter: f.id.eq(2), update: f.text.set("B"), upsert: false },
///     WriteModel::DeleteOne(f.id.eq(1)),
/// ], true)?; // ordered: stop at the first failure
/// assert_eq!((result.inserted, result.modified, result.deleted), (2, 1, 1));
/// assert_eq!(notes.find(Filter::all()).to_vec()?[0].text, "B");
/// # Ok::<(), odm::Error>(())
/// ```
#[derive(Debug)]
pub enum WriteModel<T> {
    InsertOne(T),
    UpdateOne {
        filter: Filter<T>,
        update: Update<T>,
        upsert: bool,
    },
    UpdateMany {
        filter: Filter<T>,
        update: Update<T>,
    },
    /// The replacement's id must be the match's, or absent.
    ReplaceOne {
        filter: Filter<T>,
        replacement: T,
        upsert: bool,
    },
    DeleteOne(Filter<T>),
    DeleteMany(Filter<T>),
}

impl<T: Document> WriteModel<T> {
    /// The engine operation: the same documents MongoDB would receive, after the value's
    /// before-hook; with the value of an insert or replacement, for its after-hook.
    fn into_op(self, collection: &str) -> Result<(WriteOp, Option<(Write, T)>)> {
        let upserting = |upsert| UpdateOptions {
            upsert,
            ..UpdateOptions::default()
        };
        let now = kept::now();
        let filter = |filter: Filter<T>| serialized(collection, filter.into_document());
        let update = |update: Update<T>, upsert| {
            serialized(collection, update.into_modifications())
                .map(|u| kept::updated::<T>(u, upsert, now))
        };
        let op = match self {
            WriteModel::InsertOne(value) => {
                hooks::before(&value, Write::Insert, collection)?;
                let raw = kept::inserted::<T>(to_raw(&value, collection)?, now, None, collection)?;
                let op = WriteOp::InsertOne(
                    bson::Document::try_from(raw.as_ref())
                        .map_err(|e| Error::serialize(collection, e))?,
                );
                return Ok((op, Some((Write::Insert, value))));
            }
            WriteModel::UpdateOne {
                filter: f,
                update: u,
                upsert,
            } => WriteOp::UpdateOne {
                filter: filter(f)?,
                update: update(u, upsert)?,
                options: upserting(upsert),
            },
            WriteModel::UpdateMany {
                filter: f,
                update: u,
            } => WriteOp::UpdateMany {
                filter: filter(f)?,
                update: update(u, false)?,
                options: UpdateOptions::default(),
            },
            WriteModel::ReplaceOne {
                filter: f,
                replacement,
                upsert,
            } => {
                hooks::before(&replacement, Write::Replace, collection)?;
                let document = replacement_of(&replacement, collection)?;
                let op = match kept::replacing::<T>(&document, now) {
                    Some(keeping) => WriteOp::UpdateOne {
                        filter: filter(f)?,
                        update: keeping,
                        options: upserting(upsert),
                    },
                    None => WriteOp::ReplaceOne {
                        filter: filter(f)?,
                        replacement: document,
                        options: upserting(upsert),
                    },
                };
                return Ok((op, Some((Write::Replace, replacement))));
            }
            WriteModel::DeleteOne(f) => WriteOp::DeleteOne {
                filter: filter(f)?,
                options: DeleteOptions::default(),
            },
            WriteModel::DeleteMany(f) => WriteOp::DeleteMany {
                filter: filter(f)?,
                options: DeleteOptions::default(),
            },
        };
        Ok((op, None))
    }
}

/// The after-hooks of a bulk write's inserts and replacements that ran: those that did not
/// fail and, in an ordered bulk, came before its failure; by position.
fn after_bulk<T: Document>(result: &BulkResult, ordered: bool, hooked: Vec<(usize, (Write, T))>) {
    let stopped_at = if ordered {
        result.failures.iter().map(|(i, _)| *i).min()
    } else {
        None
    };
    for (position, (write, value)) in hooked {
        let failed = result.failures.iter().any(|(i, _)| *i == position);
        if failed || stopped_at.is_some_and(|stop| position > stop) {
            continue;
        }
        let id = result
            .inserted_ids
            .iter()
            .find(|(i, _)| *i == position)
            .map_or(Bson::Null, |(_, id)| id.clone());
        hooks::after(&value, write, &id);
    }
}

/// A prepared update stamped again for this call, when it must be (see
/// [`kept::stamped_per_call`]).
fn stamped_per_call<T: Document>(
    update: &PreparedUpdate<T>,
    options: &UpdateOptions,
) -> Option<UpdateModifications> {
    let (modifications, _) = update.parts();
    kept::stamped_per_call::<T>(modifications, options.upsert)
        .then(|| kept::updated::<T>(modifications.clone(), true, kept::now()))
}

/// A model as the document a replacement or an insert writes.
fn replacement_of<T: Document>(value: &T, collection: &str) -> Result<bson::Document> {
    bson::Document::try_from(to_raw(value, collection)?.as_ref())
        .map_err(|e| Error::serialize(collection, e))
}

/// The filter that finds the stored `document` and, on a cluster, its shard: its `_id` and the
/// values of the model's shard key fields (a missing one as `null`, as MongoDB places it).
pub(crate) fn identity_of<T: Document>(document: &bson::Document) -> bson::Document {
    let mut filter = bson::doc! { "_id": document.get("_id").cloned().unwrap_or(Bson::Null) };
    if let Some(key) = T::shard_key() {
        for path in key.paths() {
            let mut within = Some(document);
            let mut value = None;
            for segment in path.segments() {
                value = within.and_then(|d| d.get(segment));
                within = value.and_then(Bson::as_document);
            }
            filter.insert(path.as_str(), value.cloned().unwrap_or(Bson::Null));
        }
    }
    filter
}

/// The filter that finds the stored document `value` is (`stored`, its stored form): its
/// identity and, for a model with a revision, the revision `value` was read at.
fn known_document<T: Document>(value: &T, stored: &bson::Document) -> bson::Document {
    let mut filter = identity_of::<T>(stored);
    if let Some(path) = T::REVISION {
        filter.insert(path, value.revision());
    }
    filter
}

/// A document a find-and-modify returned, as the model.
fn decode_document<T: Document>(
    found: Option<bson::Document>,
    collection: &str,
) -> Result<Option<T>> {
    found
        .map(|doc| {
            let raw = bson::RawDocumentBuf::try_from(&doc)
                .map_err(|e| Error::serialize(collection, e))?;
            from_raw::<T>(&raw, collection)
        })
        .transpose()
}

impl<T> ModifyOptions<T> {
    pub(crate) fn engine(&self) -> FindAndModify {
        FindAndModify {
            sort: self.sort.as_ref().map(|s| s.to_document().clone()),
            projection: None,
            upsert: self.upsert,
            return_document: if self.return_after {
                odm_engine::update::ReturnDocument::After
            } else {
                odm_engine::update::ReturnDocument::Before
            },
            array_filters: Vec::new(),
            hint: None,
            let_vars: None,
            collation: None,
        }
    }
}

/// `T`'s declarations agree where the compiler cannot see it (see
/// [`Document::inconsistency`]); checked before a collection of it is first synced.
pub(crate) fn consistent<T: Document>(name: &str) -> Result<()> {
    match T::inconsistency() {
        Some(reason) => Err(Error::InconsistentModel {
            collection: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}
