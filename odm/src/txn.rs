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
    BulkResult, BulkWrite, DeleteOptions, FindAndModify, UpdateOptions, UpdateResult, WriteOp,
};

use crate::codec::{from_raw, to_raw};
use crate::collection::{Find, InTxn, ModifyOptions};
use crate::database::{Database, Synced};
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::indexes::{Index, sync};
use crate::model::Document;
use crate::update::Update;

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
    pub(crate) inner: &'t mut odm_engine::WriteTxn<'db>,
    /// Models this transaction synced, recorded as synced once it commits.
    pub(crate) synced: &'t mut Vec<Synced>,
}

impl std::fmt::Debug for Txn<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Txn").finish_non_exhaustive()
    }
}

impl<'t, 'db> Txn<'t, 'db> {
    pub(crate) fn new(
        db: &'t Database,
        inner: &'t mut odm_engine::WriteTxn<'db>,
        synced: &'t mut Vec<Synced>,
    ) -> Self {
        Txn { db, inner, synced }
    }

    /// The engine transaction underneath, for raw documents.
    pub fn engine(&mut self) -> &mut odm_engine::WriteTxn<'db> {
        self.inner
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
            sync::<T>(self.inner, name, false)?;
            self.synced.push((TypeId::of::<T>(), name.to_owned()));
        }
        Ok(TxnCollection {
            inner: self.inner,
            name,
            _model: PhantomData,
        })
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
    inner: &'a mut odm_engine::WriteTxn<'db>,
    name: &'a str,
    _model: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for TxnCollection<'_, '_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TxnCollection({})", self.name)
    }
}

/// The filter, update or value of a typed call, or why it could not be written as BSON.
pub(crate) fn serialized<V>(collection: &str, value: Result<V, String>) -> Result<V> {
    value.map_err(|reason| Error::Serialize {
        collection: collection.to_owned(),
        reason,
    })
}

impl<'db, T: Document> TxnCollection<'_, 'db, T> {
    /// The collection's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// Inserts a model; returns its `_id`.
    pub fn insert_one(&mut self, value: &T) -> Result<Bson> {
        let raw = to_raw(value, self.name)?;
        Ok(self.inner.insert_one(self.name, raw)?)
    }

    /// Inserts models in order; the first refused one fails the call (undo the rest by
    /// returning the error from the transaction).
    pub fn insert_many<'v>(&mut self, values: impl IntoIterator<Item = &'v T>) -> Result<Vec<Bson>>
    where
        T: 'v,
    {
        let raws = values
            .into_iter()
            .map(|value| to_raw(value, self.name))
            .collect::<Result<Vec<_>>>()?;
        let mut result = self.inner.insert_many(self.name, raws, true)?;
        if !result.failures.is_empty() {
            return Err(result.failures.swap_remove(0).1.into());
        }
        Ok(result.inserted.into_iter().map(|(_, id)| id).collect())
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
                inner: &mut *self.inner,
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
        Ok(self.inner.update_one(self.name, &filter, update, options)?)
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
        Ok(self
            .inner
            .update_many(self.name, &filter, update, options)?)
    }

    /// Replaces the first match with `value` (its id must be the match's, or absent).
    pub fn replace_one(
        &mut self,
        filter: impl Into<Filter<T>>,
        value: &T,
        upsert: bool,
    ) -> Result<UpdateResult> {
        let filter = serialized(self.name, filter.into().into_document())?;
        let replacement = replacement_of(value, self.name)?;
        let options = UpdateOptions {
            upsert,
            ..UpdateOptions::default()
        };
        Ok(self
            .inner
            .replace_one(self.name, &filter, &replacement, &options)?)
    }

    pub fn delete_one(&mut self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = serialized(self.name, filter.into().into_document())?;
        Ok(self.inner.delete_one(self.name, &filter)?)
    }

    pub fn delete_many(&mut self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = serialized(self.name, filter.into().into_document())?;
        Ok(self.inner.delete_many(self.name, &filter)?)
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
        let found =
            self.inner
                .find_one_and_update(self.name, &filter, update, &options.engine())?;
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
        let replacement = replacement_of(value, self.name)?;
        let found =
            self.inner
                .find_one_and_replace(self.name, &filter, &replacement, &options.engine())?;
        decode_document::<T>(found, self.name)
    }

    /// Deletes the first match (in the options' sort order) and returns it.
    pub fn find_one_and_delete(
        &mut self,
        filter: impl Into<Filter<T>>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let filter = serialized(self.name, filter.into().into_document())?;
        let found = self
            .inner
            .find_one_and_delete(self.name, &filter, &options.engine())?;
        decode_document::<T>(found, self.name)
    }

    /// Creates an index chosen at run time (see [`Index`]), or keeps it when it exists with
    /// the same definition; returns its name.
    pub fn create_index(&mut self, index: Index<T>) -> Result<String> {
        let spec = index.into_spec()?;
        Ok(self.inner.create_index(self.name, spec)?)
    }

    /// Runs a mix of writes on the collection, each reported by its position. Ordered: stops
    /// at the first failing operation; unordered: goes on past failures. The operations that
    /// succeeded stay in this transaction (return an error to undo them all).
    pub fn bulk_write(
        &mut self,
        models: impl IntoIterator<Item = WriteModel<T>>,
        ordered: bool,
    ) -> Result<BulkResult> {
        let ops = models
            .into_iter()
            .map(|model| model.into_op(self.name))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.inner.bulk_write(
            self.name,
            BulkWrite {
                ops,
                ordered,
                let_vars: None,
            },
        )?)
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
    /// The engine operation: the same documents MongoDB would receive.
    fn into_op(self, collection: &str) -> Result<WriteOp> {
        let upserting = |upsert| UpdateOptions {
            upsert,
            ..UpdateOptions::default()
        };
        let filter = |filter: Filter<T>| serialized(collection, filter.into_document());
        let update = |update: Update<T>| serialized(collection, update.into_modifications());
        Ok(match self {
            WriteModel::InsertOne(value) => WriteOp::InsertOne(replacement_of(&value, collection)?),
            WriteModel::UpdateOne {
                filter: f,
                update: u,
                upsert,
            } => WriteOp::UpdateOne {
                filter: filter(f)?,
                update: update(u)?,
                options: upserting(upsert),
            },
            WriteModel::UpdateMany {
                filter: f,
                update: u,
            } => WriteOp::UpdateMany {
                filter: filter(f)?,
                update: update(u)?,
                options: UpdateOptions::default(),
            },
            WriteModel::ReplaceOne {
                filter: f,
                replacement,
                upsert,
            } => WriteOp::ReplaceOne {
                filter: filter(f)?,
                replacement: replacement_of(&replacement, collection)?,
                options: upserting(upsert),
            },
            WriteModel::DeleteOne(f) => WriteOp::DeleteOne {
                filter: filter(f)?,
                options: DeleteOptions::default(),
            },
            WriteModel::DeleteMany(f) => WriteOp::DeleteMany {
                filter: filter(f)?,
                options: DeleteOptions::default(),
            },
        })
    }
}

/// A model as the document a replacement or an insert writes.
fn replacement_of<T: Document>(value: &T, collection: &str) -> Result<bson::Document> {
    bson::Document::try_from(to_raw(value, collection)?.as_ref()).map_err(|e| Error::Serialize {
        collection: collection.to_owned(),
        reason: e.to_string(),
    })
}

/// A document a find-and-modify returned, as the model.
fn decode_document<T: Document>(
    found: Option<bson::Document>,
    collection: &str,
) -> Result<Option<T>> {
    found
        .map(|doc| {
            let raw = bson::RawDocumentBuf::try_from(&doc).map_err(|e| Error::Serialize {
                collection: collection.to_owned(),
                reason: e.to_string(),
            })?;
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
