//! `Database` and `Txn`: the typed entry points, and multi-collection transactions.
//!
//! Every typed write goes through a [`Txn`]: `Collection` methods each run one, and
//! [`Database::write`] runs several models' writes in one, committed on `Ok` and aborted on
//! `Err`. The first typed write to a model in a process makes sure its collection, shard key and
//! declared indexes exist, in the same transaction.

use std::any::TypeId;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bson::Bson;
use odm_engine::update::{
    BulkResult, BulkWrite, DeleteOptions, FindAndModify, UpdateOptions, UpdateResult, WriteOp,
};
use odm_engine::{TtlMonitor, TtlStats};

use crate::codec::{from_raw, to_raw};
use crate::collection::{Collection, ModifyOptions};
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::indexes::{IndexPlan, sync};
use crate::model::Document;
use crate::update::Update;

/// A database of typed models; cheap to clone, `Send + Sync`.
///
/// Models that declare a TTL index expire without more code: unless [`Options::ttl_interval`]
/// turns it off, a background monitor deletes expired documents every minute, as MongoDB's
/// does. It stops when the last clone of the database is dropped.
#[derive(Clone)]
pub struct Database {
    engine: odm_engine::Database,
    /// Models whose declaration was synced through this handle.
    synced: Arc<Mutex<BTreeSet<TypeId>>>,
    /// Dropped (which stops the thread) with the last clone; declared after `engine` so that the
    /// engine handle is released first and the monitor's own is the last.
    ttl_monitor: Option<Arc<TtlMonitor>>,
}

/// How a [`Database`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How often expired documents are deleted; `None` turns expiry off (then
    /// [`odm_engine::Database::expire`] deletes them on demand). MongoDB's default: 60 seconds.
    pub ttl_interval: Option<Duration>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            ttl_interval: Some(TtlMonitor::DEFAULT_INTERVAL),
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").finish_non_exhaustive()
    }
}

impl Database {
    /// Opens (or creates) a database file, with the default [`Options`].
    pub fn open(path: impl AsRef<Path>) -> Result<Database> {
        Database::open_with(path, &Options::default())
    }

    /// Opens (or creates) a database file.
    pub fn open_with(path: impl AsRef<Path>, options: &Options) -> Result<Database> {
        Ok(Database::from_engine_with(
            odm_engine::Database::open(path)?,
            options,
        ))
    }

    pub fn in_memory() -> Result<Database> {
        Database::in_memory_with(&Options::default())
    }

    pub fn in_memory_with(options: &Options) -> Result<Database> {
        Ok(Database::from_engine_with(
            odm_engine::Database::in_memory()?,
            options,
        ))
    }

    /// The typed layer over an engine database, with the default [`Options`].
    pub fn from_engine(engine: odm_engine::Database) -> Database {
        Database::from_engine_with(engine, &Options::default())
    }

    /// The typed layer over an engine database.
    pub fn from_engine_with(engine: odm_engine::Database, options: &Options) -> Database {
        let ttl_monitor = options
            .ttl_interval
            .map(|interval| Arc::new(engine.start_ttl_monitor(interval)));
        Database {
            engine,
            synced: Arc::default(),
            ttl_monitor,
        }
    }

    /// What the TTL monitor has done, when it runs.
    pub fn ttl_stats(&self) -> Option<TtlStats> {
        self.ttl_monitor.as_ref().map(|m| m.stats())
    }

    /// The untyped engine underneath, for raw documents.
    pub fn engine(&self) -> &odm_engine::Database {
        &self.engine
    }

    /// The collection of `T`, creating it, its shard key and its declared indexes when missing.
    /// A declared index stored with another definition is [`Error::IndexMismatch`].
    pub fn collection<T: Document>(&self) -> Result<Collection<T>> {
        #[allow(clippy::redundant_closure_for_method_calls)]
        // the method's lifetimes are too narrow
        self.write(|txn| txn.ensure::<T>())?;
        Ok(Collection::new(self.clone()))
    }

    /// Syncs the declared indexes of `T`, dropping undeclared ones when `drop_undeclared`.
    pub fn sync_indexes<T: Document>(&self, drop_undeclared: bool) -> Result<IndexPlan> {
        self.write(|txn| {
            let plan = sync::<T>(txn.inner, drop_undeclared)?;
            txn.synced.push(TypeId::of::<T>());
            Ok(plan)
        })
    }

    /// Runs `f` in one write transaction over any models: commits on `Ok`, aborts on `Err`.
    pub fn write<R>(&self, f: impl FnOnce(&mut Txn<'_, '_>) -> Result<R>) -> Result<R> {
        let mut synced = Vec::new();
        let result = self.engine.write(|inner| {
            let mut txn = Txn {
                db: self,
                inner,
                synced: &mut synced,
            };
            f(&mut txn)
        });
        // Declarations synced by an aborted transaction were rolled back with it.
        if result.is_ok() {
            let mut set = self.synced.lock().unwrap_or_else(PoisonError::into_inner);
            set.extend(synced);
        }
        result
    }

    fn is_synced<T: Document>(&self) -> bool {
        self.synced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&TypeId::of::<T>())
    }
}

/// A write transaction over typed models; see [`Database::write`].
pub struct Txn<'t, 'db> {
    db: &'t Database,
    pub(crate) inner: &'t mut odm_engine::WriteTxn<'db>,
    /// Models this transaction synced, recorded as synced once it commits.
    synced: &'t mut Vec<TypeId>,
}

impl std::fmt::Debug for Txn<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Txn").finish_non_exhaustive()
    }
}

/// The filter, update or value of a typed call, or why it could not be written as BSON.
fn serialized<T: Document, V>(value: Result<V, String>) -> Result<V> {
    value.map_err(|reason| Error::Serialize {
        collection: T::COLLECTION.to_owned(),
        reason,
    })
}

impl<'db> Txn<'_, 'db> {
    /// Makes sure the collection of `T` and its declarations exist (once per database handle).
    pub(crate) fn ensure<T: Document>(&mut self) -> Result<()> {
        let id = TypeId::of::<T>();
        if !self.db.is_synced::<T>() && !self.synced.contains(&id) {
            sync::<T>(self.inner, false)?;
            self.synced.push(id);
        }
        Ok(())
    }

    /// The engine transaction underneath, for raw documents.
    pub fn engine(&mut self) -> &mut odm_engine::WriteTxn<'db> {
        self.inner
    }

    /// Inserts a model; returns its `_id`.
    pub fn insert_one<T: Document>(&mut self, value: &T) -> Result<Bson> {
        self.ensure::<T>()?;
        let raw = to_raw(value)?;
        Ok(self.inner.insert_one(T::COLLECTION, raw)?)
    }

    /// Inserts models in order; the first refused one fails the call (undo the rest by
    /// returning the error from the transaction).
    pub fn insert_many<'v, T: Document>(
        &mut self,
        values: impl IntoIterator<Item = &'v T>,
    ) -> Result<Vec<Bson>> {
        self.ensure::<T>()?;
        let raws = values.into_iter().map(to_raw).collect::<Result<Vec<_>>>()?;
        let mut result = self.inner.insert_many(T::COLLECTION, raws, true)?;
        if !result.failures.is_empty() {
            return Err(result.failures.swap_remove(0).1.into());
        }
        Ok(result.inserted.into_iter().map(|(_, id)| id).collect())
    }

    /// The model stored under `id`.
    pub fn get<T: Document>(&mut self, id: &Bson) -> Result<Option<T>> {
        self.ensure::<T>()?;
        self.inner
            .get(T::COLLECTION, id)?
            .map(|raw| from_raw::<T>(&raw))
            .transpose()
    }

    pub fn update_one<T: Document>(
        &mut self,
        filter: Filter<T>,
        update: Update<T>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.ensure::<T>()?;
        let filter = serialized::<T, _>(filter.into_document())?;
        let update = serialized::<T, _>(update.into_modifications())?;
        Ok(self
            .inner
            .update_one(T::COLLECTION, &filter, update, options)?)
    }

    /// Updates every match; all or nothing (see [`UpdateOptions`]).
    pub fn update_many<T: Document>(
        &mut self,
        filter: Filter<T>,
        update: Update<T>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.ensure::<T>()?;
        let filter = serialized::<T, _>(filter.into_document())?;
        let update = serialized::<T, _>(update.into_modifications())?;
        Ok(self
            .inner
            .update_many(T::COLLECTION, &filter, update, options)?)
    }

    /// Replaces the first match with `value` (its id must be the match's, or absent).
    pub fn replace_one<T: Document>(
        &mut self,
        filter: Filter<T>,
        value: &T,
        upsert: bool,
    ) -> Result<UpdateResult> {
        self.ensure::<T>()?;
        let filter = serialized::<T, _>(filter.into_document())?;
        let replacement = replacement_of(value)?;
        let options = UpdateOptions {
            upsert,
            ..UpdateOptions::default()
        };
        Ok(self
            .inner
            .replace_one(T::COLLECTION, &filter, &replacement, &options)?)
    }

    pub fn delete_one<T: Document>(&mut self, filter: Filter<T>) -> Result<u64> {
        self.ensure::<T>()?;
        let filter = serialized::<T, _>(filter.into_document())?;
        Ok(self.inner.delete_one(T::COLLECTION, &filter)?)
    }

    pub fn delete_many<T: Document>(&mut self, filter: Filter<T>) -> Result<u64> {
        self.ensure::<T>()?;
        let filter = serialized::<T, _>(filter.into_document())?;
        Ok(self.inner.delete_many(T::COLLECTION, &filter)?)
    }

    /// Updates the first match (in the options' sort order) and returns it, before or after.
    pub fn find_one_and_update<T: Document>(
        &mut self,
        filter: Filter<T>,
        update: Update<T>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        self.ensure::<T>()?;
        let filter = serialized::<T, _>(filter.into_document())?;
        let update = serialized::<T, _>(update.into_modifications())?;
        let found =
            self.inner
                .find_one_and_update(T::COLLECTION, &filter, update, &options.engine())?;
        decode_document::<T>(found)
    }

    /// Replaces the first match (in the options' sort order) with `value` and returns the
    /// document before or after; with `upsert`, inserts `value` when nothing matches.
    pub fn find_one_and_replace<T: Document>(
        &mut self,
        filter: Filter<T>,
        value: &T,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        self.ensure::<T>()?;
        let filter = serialized::<T, _>(filter.into_document())?;
        let replacement = replacement_of(value)?;
        let found = self.inner.find_one_and_replace(
            T::COLLECTION,
            &filter,
            &replacement,
            &options.engine(),
        )?;
        decode_document::<T>(found)
    }

    /// Runs a mix of writes on the collection of `T`, each reported by its position. Ordered:
    /// stops at the first failing operation; unordered: goes on past failures. The operations
    /// that succeeded stay in this transaction (return an error to undo them all).
    pub fn bulk_write<T: Document>(
        &mut self,
        models: impl IntoIterator<Item = WriteModel<T>>,
        ordered: bool,
    ) -> Result<BulkResult> {
        self.ensure::<T>()?;
        let ops = models
            .into_iter()
            .map(WriteModel::into_op)
            .collect::<Result<Vec<_>>>()?;
        Ok(self.inner.bulk_write(
            T::COLLECTION,
            BulkWrite {
                ops,
                ordered,
                let_vars: None,
            },
        )?)
    }

    /// Deletes the first match (in the options' sort order) and returns it.
    pub fn find_one_and_delete<T: Document>(
        &mut self,
        filter: Filter<T>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        self.ensure::<T>()?;
        let filter = serialized::<T, _>(filter.into_document())?;
        let found = self
            .inner
            .find_one_and_delete(T::COLLECTION, &filter, &options.engine())?;
        decode_document::<T>(found)
    }
}

/// One operation of a typed bulk write ([`Txn::bulk_write`], [`Collection::bulk_write`]).
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
    fn into_op(self) -> Result<WriteOp> {
        let upserting = |upsert| UpdateOptions {
            upsert,
            ..UpdateOptions::default()
        };
        Ok(match self {
            WriteModel::InsertOne(value) => WriteOp::InsertOne(replacement_of(&value)?),
            WriteModel::UpdateOne {
                filter,
                update,
                upsert,
            } => WriteOp::UpdateOne {
                filter: serialized::<T, _>(filter.into_document())?,
                update: serialized::<T, _>(update.into_modifications())?,
                options: upserting(upsert),
            },
            WriteModel::UpdateMany { filter, update } => WriteOp::UpdateMany {
                filter: serialized::<T, _>(filter.into_document())?,
                update: serialized::<T, _>(update.into_modifications())?,
                options: UpdateOptions::default(),
            },
            WriteModel::ReplaceOne {
                filter,
                replacement,
                upsert,
            } => WriteOp::ReplaceOne {
                filter: serialized::<T, _>(filter.into_document())?,
                replacement: replacement_of(&replacement)?,
                options: upserting(upsert),
            },
            WriteModel::DeleteOne(filter) => WriteOp::DeleteOne {
                filter: serialized::<T, _>(filter.into_document())?,
                options: DeleteOptions::default(),
            },
            WriteModel::DeleteMany(filter) => WriteOp::DeleteMany {
                filter: serialized::<T, _>(filter.into_document())?,
                options: DeleteOptions::default(),
            },
        })
    }
}

/// A model as the document a replacement or an insert writes.
fn replacement_of<T: Document>(value: &T) -> Result<bson::Document> {
    bson::Document::try_from(to_raw(value)?.as_ref()).map_err(|e| Error::Serialize {
        collection: T::COLLECTION.to_owned(),
        reason: e.to_string(),
    })
}

/// A document a find-and-modify returned, as the model.
fn decode_document<T: Document>(found: Option<bson::Document>) -> Result<Option<T>> {
    found
        .map(|doc| {
            let raw = bson::RawDocumentBuf::try_from(&doc).map_err(|e| Error::Serialize {
                collection: T::COLLECTION.to_owned(),
                reason: e.to_string(),
            })?;
            from_raw::<T>(&raw)
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
