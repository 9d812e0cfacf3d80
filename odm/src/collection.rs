//! `Collection<T>`: the typed operations on one collection of a model, and the `Find`
//! builder.
//!
//! Reads run on a snapshot and decode stored bytes straight into `T`; writes each run in their
//! own transaction through [`TxnCollection`](crate::TxnCollection). Filters and updates are
//! typed by `T`, and a plain `bson::Document` converts into either where the typed API falls
//! short.

use std::marker::PhantomData;
use std::sync::Arc;

use bson::Bson;
use odm_engine::Durability;
use odm_engine::interrupt::Interrupt;
use odm_engine::query::{Explain, FindOptions};
use odm_engine::sampling::SampledCommand;
use odm_engine::update::{BulkResult, UpdateOptions, UpdateResult};

use crate::aggregate::Aggregate;
use crate::codec::{from_raw, id_alias};
use crate::cursor::Cursor;
use crate::database::{Database, Store, sample_read};
use crate::error::Result;
use crate::field::Field;
use crate::filter::{Filter, PreparedConditions};
use crate::indexes::IndexPlan;
use crate::model::Document;
use crate::sort::{Projection, Sort};
use crate::txn::{Txn, TxnCollection, WriteModel, serialized};
use crate::update::{PreparedUpdate, Update};
use crate::writer::Writer;

/// A collection of the model `T`: its declared one ([`Database::collection`]) or one named at
/// run time ([`Database::collection_named`]).
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
/// let notes = db.collection::<Note>()?;
/// notes.insert_many(&[Note { id: 1, text: "a".into() }, Note { id: 2, text: "b".into() }])?;
/// let f = Note::fields();
/// notes.update_one(f.id.eq(2), f.text.set("B"))?;
/// assert_eq!(notes.get(2)?.unwrap().text, "B");
/// assert_eq!(notes.find_one(f.text.eq("a"))?.map(|n| n.id), Some(1));
/// assert_eq!(notes.distinct(&f.text, Filter::all())?.len(), 2);
/// assert_eq!(notes.delete_many(f.id.lt(2))?, 1);
/// assert_eq!(notes.count(Filter::all())?, 1);
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Collection<T> {
    db: Database,
    name: Arc<str>,
    durability: Durability,
    _model: PhantomData<fn() -> T>,
}

impl<T> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Collection {
            db: self.db.clone(),
            name: self.name.clone(),
            durability: self.durability,
            _model: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Collection({})", self.name)
    }
}

/// Options of `find_one_and_update`, `find_one_and_replace` and `find_one_and_delete`.
#[derive(Debug)]
pub struct ModifyOptions<T> {
    /// Which match: the first in this order.
    pub sort: Option<Sort<T>>,
    pub upsert: bool,
    /// Return the document after the update (otherwise before).
    pub return_after: bool,
}

impl<T> Default for ModifyOptions<T> {
    fn default() -> Self {
        ModifyOptions {
            sort: None,
            upsert: false,
            return_after: false,
        }
    }
}

impl<T: Document> Collection<T> {
    pub(crate) fn new(db: Database, name: &str) -> Self {
        Collection {
            durability: db.durability(),
            db,
            name: name.into(),
            _model: PhantomData,
        }
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The database the collection is in.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// The durability this collection's writes commit with.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// This collection with writes committed at `durability` (see
    /// [`Options::durability`](crate::Options::durability)).
    #[must_use]
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The handles on `T`'s fields.
    pub fn fields(&self) -> T::Fields {
        T::fields()
    }

    /// Runs `f`, one operation, on this collection: in a write transaction of its own (on
    /// MongoDB, alone: the server makes one operation atomic).
    fn write<R>(&self, f: impl FnOnce(&mut TxnCollection<'_, '_, T>) -> Result<R>) -> Result<R> {
        self.db
            .write_alone(self.durability, false, |txn: &mut Txn<'_, '_>| {
                f(&mut txn.collection_named::<T>(&self.name)?)
            })
    }

    /// Runs `f`, a write promised all or nothing, in a transaction of its own (on a MongoDB
    /// deployment without transactions, document by document, as MongoDB's own writes).
    fn write_whole<R>(
        &self,
        f: impl FnOnce(&mut TxnCollection<'_, '_, T>) -> Result<R>,
    ) -> Result<R> {
        self.db
            .write_alone(self.durability, true, |txn: &mut Txn<'_, '_>| {
                f(&mut txn.collection_named::<T>(&self.name)?)
            })
    }

    fn filter_document(&self, filter: Filter<T>) -> Result<bson::Document> {
        serialized(&self.name, filter.into_document())
    }

    pub fn insert_one(&self, value: &T) -> Result<Bson> {
        self.write(|c| c.insert_one(value))
    }

    /// Inserts a stored document made by the caller (an enum model's variant, with its
    /// discriminator); returns its `_id`.
    pub(crate) fn insert_raw(&self, raw: bson::RawDocumentBuf) -> Result<Bson> {
        self.write(|c| c.insert_raw(raw))
    }

    /// Inserts all of `values` or, when one is refused, none (on a MongoDB deployment without
    /// transactions, those before the refused one stay, as MongoDB's ordered inserts).
    pub fn insert_many<'v>(&self, values: impl IntoIterator<Item = &'v T>) -> Result<Vec<Bson>>
    where
        T: 'v,
    {
        self.write_whole(|c| c.insert_many(values))
    }

    /// The document with this `_id`.
    pub fn get(&self, id: impl Into<Bson>) -> Result<Option<T>> {
        let id = id.into();
        let engine = match self.db.store() {
            Store::Embedded(engine) => engine,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                return remote
                    .wait(remote.get(None, &self.name, &id))?
                    .map(|raw| from_raw::<T>(&raw, &self.name))
                    .transpose();
            }
        };
        crate::database::sample_get(engine, &self.name, &id);
        let txn = engine.read()?;
        let Some(coll) = txn.collection(&self.name)? else {
            return Ok(None);
        };
        coll.get(&id)?
            .map(|stored| from_raw::<T>(stored.as_raw()?, &self.name))
            .transpose()
    }

    /// A find, refined with the builder's methods and run by `to_vec`, `iter`, `first` or
    /// `explain`.
    pub fn find(&self, filter: impl Into<Filter<T>>) -> Find<T> {
        Find::new(
            Snapshot {
                db: self.db.clone(),
                name: self.name.clone(),
            },
            filter.into(),
        )
    }

    pub fn find_one(&self, filter: impl Into<Filter<T>>) -> Result<Option<T>> {
        self.find(filter).first()
    }

    pub fn count(&self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = self.filter_document(filter.into())?;
        let engine = match self.db.store() {
            Store::Embedded(engine) => engine,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => return remote.wait(remote.count(&self.name, &filter)),
        };
        // Sampled as what the MongoDB back end sends for it: an aggregate.
        engine.sample_query(&self.name, SampledCommand::Aggregate, |_| {
            odm_engine::sampling::aggregate_command(
                &[bson::doc! { "$match": filter.clone() }],
                None,
                None,
            )
        });
        let txn = engine.read()?;
        match txn.collection(&self.name)? {
            Some(coll) => Ok(coll.count_matching(&filter, 0, 0)?),
            None => Ok(0),
        }
    }

    /// MongoDB's `analyzeShardKey` of the model's declared shard key on this collection, in
    /// one call: its characteristics and the distribution of the collection's sampled queries
    /// (turn sampling on with [`Collection::configure_query_analyzer`]).
    pub fn analyze_shard_key(
        &self,
        options: &crate::advisor::AnalyzeOptions,
    ) -> Result<crate::advisor::ShardKeyAnalysis> {
        let key = T::shard_key().ok_or_else(|| crate::Error::NoShardKey(self.name.to_string()))?;
        self.db.analyze_shard_key(&self.name, &key, options)
    }

    /// MongoDB's `configureQueryAnalyzer` on this collection (see
    /// [`Database::configure_query_analyzer`]).
    pub fn configure_query_analyzer(
        &self,
        mode: odm_engine::sampling::AnalyzerMode,
        samples_per_second: Option<f64>,
    ) -> Result<bson::Document> {
        self.db
            .configure_query_analyzer(&self.name, mode, samples_per_second)
    }

    /// A typed aggregation pipeline over the collection, built stage by stage and run by
    /// `to_vec`, `iter`, `first`, `count` or `explain`; see [`Aggregate`]. A leading `filter`
    /// uses indexes, as a find.
    pub fn aggregate(&self) -> Aggregate<T> {
        Aggregate::new(self)
    }

    /// The distinct values of a field among matches (array elements counted one by one).
    pub fn distinct<V>(
        &self,
        field: &Field<T, V>,
        filter: impl Into<Filter<T>>,
    ) -> Result<Vec<Bson>> {
        let filter = self.filter_document(filter.into())?;
        let engine = match self.db.store() {
            Store::Embedded(engine) => engine,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                return remote.wait(remote.distinct(&self.name, field.path(), &filter));
            }
        };
        sample_read(
            engine,
            &self.name,
            SampledCommand::Distinct,
            &filter,
            None,
            None,
        );
        let txn = engine.read()?;
        match txn.collection(&self.name)? {
            Some(coll) => Ok(coll.distinct(field.path(), &filter)?),
            None => Ok(Vec::new()),
        }
    }

    pub fn update_one(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        self.update_one_with(filter, update, &UpdateOptions::default())
    }

    /// Updates the first match, or inserts a document seeded from the filter's equalities.
    pub fn upsert_one(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let options = UpdateOptions {
            upsert: true,
            ..UpdateOptions::default()
        };
        self.update_one_with(filter, update, &options)
    }

    /// Checks and parses `update` once, to apply it many times in transactions
    /// ([`crate::TxnCollection::update_one_prepared`]).
    pub fn prepare_update(&self, update: impl Into<Update<T>>) -> Result<PreparedUpdate<T>> {
        PreparedUpdate::new(update.into(), &self.name)
    }

    /// Checks and parses `conditions` once, to update documents by id under them in
    /// transactions ([`crate::TxnCollection::update_one_by_id_prepared`]).
    pub fn prepare_conditions(
        &self,
        conditions: impl Into<Filter<T>>,
    ) -> Result<PreparedConditions<T>> {
        PreparedConditions::new(conditions.into(), &self.name)
    }

    /// `update_one` with the engine's options (upsert, array filters, sort, hint).
    pub fn update_one_with(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.write(|c| c.update_one(filter, update, options))
    }

    /// Updates every match, all or nothing (on a MongoDB deployment without transactions,
    /// document by document, as MongoDB's own `updateMany`).
    pub fn update_many(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.write_whole(|c| c.update_many(filter, update, &UpdateOptions::default()))
    }

    /// Replaces the first match with `value`.
    pub fn replace_one(&self, filter: impl Into<Filter<T>>, value: &T) -> Result<UpdateResult> {
        let filter = filter.into();
        self.write(|c| c.replace_one(filter, value, false))
    }

    /// Stores `value` in place of the document with its `_id`, or inserts it; the filter is
    /// the document's identity (its `_id` and shard key values), so on a cluster the write
    /// goes to one shard. See [`TxnCollection::save`], which also tells how a model with kept
    /// fields (timestamps, a revision) brings `value` up to date and makes the save conditional.
    ///
    /// ```
    /// use odm::{Database, Document, Filter};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "carts", shard_key(user))]
    /// struct Cart {
    ///     #[odm(id)]
    ///     id: i64,
    ///     user: String,
    ///     items: Vec<String>,
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// let carts = db.collection::<Cart>()?;
    /// let mut cart = Cart { id: 1, user: "ann".into(), items: vec![] };
    /// carts.save(&mut cart)?; // inserted
    /// cart.items.push("pen".into());
    /// carts.save(&mut cart)?; // replaced, found by `{_id: 1, user: "ann"}`
    /// assert_eq!(carts.get(1)?.unwrap().items, ["pen"]);
    /// assert_eq!(carts.delete_document(&cart)?, 1);
    /// assert_eq!(carts.count(Filter::all())?, 0);
    /// # Ok::<(), odm::Error>(())
    /// ```
    pub fn save(&self, value: &mut T) -> Result<UpdateResult> {
        self.write(|c| c.save(value))
    }

    /// Applies `update` to the document `value` is; for a model with an `#[odm(version)]`
    /// field, only if it is still at the revision `value` holds. See
    /// [`TxnCollection::update_document`].
    pub fn update_document(&self, value: &T, update: impl Into<Update<T>>) -> Result<UpdateResult> {
        let update = update.into();
        self.write(|c| c.update_document(value, update))
    }

    /// Deletes the document `value` is, found by its identity as [`Collection::save`] finds it.
    pub fn delete_document(&self, value: &T) -> Result<u64> {
        self.write(|c| c.delete_document(value))
    }

    pub fn delete_one(&self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = filter.into();
        self.write(|c| c.delete_one(filter))
    }

    pub fn delete_many(&self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = filter.into();
        self.write(|c| c.delete_many(filter))
    }

    /// Updates the first match (in the options' sort order) and returns it, before or after
    /// the update; one step, so two callers never get the same document.
    ///
    /// ```
    /// use odm::{Database, Document, ModifyOptions, Sort};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "tickets")]
    /// struct Ticket {
    ///     #[odm(id)]
    ///     id: i64,
    ///     taken: bool,
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// let tickets = db.collection::<Ticket>()?;
    /// for id in 1..=3 {
    ///     tickets.insert_one(&Ticket { id, taken: false })?;
    /// }
    /// let f = Ticket::fields();
    /// let options = ModifyOptions { sort: Some(Sort::asc(&f.id)), return_after: true, ..ModifyOptions::default() };
    /// let first = tickets.find_one_and_update(f.taken.eq(false), f.taken.set(true), &options)?;
    /// let second = tickets.find_one_and_update(f.taken.eq(false), f.taken.set(true), &options)?;
    /// assert_eq!((first.unwrap().id, second.unwrap().id), (1, 2));
    /// # Ok::<(), odm::Error>(())
    /// ```
    pub fn find_one_and_update(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let (filter, update) = (filter.into(), update.into());
        self.write(|c| c.find_one_and_update(filter, update, options))
    }

    /// Replaces the first match with `value`; see [`TxnCollection::find_one_and_replace`].
    pub fn find_one_and_replace(
        &self,
        filter: impl Into<Filter<T>>,
        value: &T,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let filter = filter.into();
        self.write(|c| c.find_one_and_replace(filter, value, options))
    }

    /// A mix of writes in one transaction; see [`TxnCollection::bulk_write`]. The operations
    /// that succeeded are committed, the failures reported by position.
    pub fn bulk_write(
        &self,
        models: impl IntoIterator<Item = WriteModel<T>>,
        ordered: bool,
    ) -> Result<BulkResult> {
        self.write(|c| c.bulk_write(models, ordered))
    }

    pub fn find_one_and_delete(
        &self,
        filter: impl Into<Filter<T>>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let filter = filter.into();
        self.write(|c| c.find_one_and_delete(filter, options))
    }

    /// The stored documents that break the model's declared schema (`#[odm(schema)]`), each
    /// with the path and reason of every failing value; none for a model without one. A
    /// validator checks writes only, so documents stored before it was deployed, by another
    /// program or under `validationAction: "warn"`, are found here. The server selects them
    /// (`$nor` of the validator); the reasons are MongoDB's `schemaRulesNotSatisfied`.
    ///
    /// ```
    /// use odm::{Database, Document};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "sensors", schema)]
    /// struct Sensor {
    ///     #[odm(id)]
    ///     id: i64,
    ///     #[odm(schema(minimum = -40, maximum = 125))]
    ///     celsius: f64,
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// let raw = db.engine().expect("an embedded database").collection("sensors");
    /// raw.insert_one(bson::doc! { "_id": 1_i64, "celsius": 400.0 })?; // before the schema
    /// let sensors = db.collection::<Sensor>()?; // deploys it
    /// let found = sensors.schema_violations()?;
    /// assert_eq!(found.len(), 1);
    /// assert_eq!(found[0].problems[0].path, "celsius");
    /// assert!(raw.insert_one(bson::doc! { "_id": 2_i64, "celsius": "hot" }).is_err());
    /// # Ok::<(), odm::Error>(())
    /// ```
    pub fn schema_violations(&self) -> Result<Vec<crate::SchemaViolation>> {
        let Some(schema) = T::declared_schema() else {
            return Ok(Vec::new());
        };
        let parsed =
            odm_engine::query::JsonSchema::parse(&Bson::Document(schema.json_schema.clone()))
                .map_err(odm_engine::Error::from)?;
        let breaking = bson::doc! { "$nor": [schema.validator()] };
        self.find(Filter::from(breaking))
            .documents(None)?
            .iter()
            .map(|document| crate::schema::violation(&parsed, document, &self.name))
            .collect()
    }

    /// Rewrites every document of an earlier schema version at the model's version (reads
    /// migrate lazily anyway); returns how many were rewritten. Runs in batches of
    /// [`MIGRATION_BATCH`] documents, each all or nothing (on MongoDB, where the deployment
    /// runs transactions); after a failure the batches before
    /// it stay rewritten, and running it again goes on with the rest. See
    /// [`Collection::migrate_with_progress`].
    ///
    /// ```
    /// use odm::{Database, Document, Filter};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "users")]
    /// struct UserV1 {
    ///     #[odm(id)]
    ///     id: i64,
    ///     name: String,
    /// }
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "users", version = 2, from = UserV1)]
    /// struct User {
    ///     #[odm(id)]
    ///     id: i64,
    ///     first: String,
    ///     last: String,
    /// }
    ///
    /// impl From<UserV1> for User {
    ///     fn from(v1: UserV1) -> User {
    ///         let (first, last) = v1.name.split_once(' ').unwrap_or((&v1.name, ""));
    ///         User { id: v1.id, first: first.into(), last: last.into() }
    ///     }
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// db.collection::<UserV1>()?.insert_one(&UserV1 { id: 1, name: "Ann Lee".into() })?;
    /// let users = db.collection::<User>()?;
    /// assert_eq!(users.get(1)?.unwrap().last, "Lee"); // migrated as it is read
    /// assert_eq!(users.migrate()?, 1); // and rewritten at version 2
    /// assert_eq!(users.migrate()?, 0);
    /// # Ok::<(), odm::Error>(())
    /// ```
    pub fn migrate(&self) -> Result<u64> {
        self.migrate_with_progress(MIGRATION_BATCH, |_| {})
    }

    /// [`Collection::migrate`] in batches of `batch` documents (at least one), calling
    /// `progress` after each committed batch.
    pub fn migrate_with_progress(
        &self,
        batch: usize,
        mut progress: impl FnMut(MigrationProgress),
    ) -> Result<u64> {
        if T::VERSION == 0 {
            return Ok(0);
        }
        let outdated = bson::doc! { "$or": [
            { "_v": { "$exists": false } },
            { "_v": { "$lt": i64::from(T::VERSION) } },
        ] };
        let options = FindOptions {
            projection: Some(bson::doc! { "_id": 1 }),
            ..FindOptions::default()
        };
        let ids: Vec<Bson> = match self.db.store() {
            Store::Embedded(engine) => {
                let txn = engine.read()?;
                let Some(coll) = txn.collection(&self.name)? else {
                    return Ok(0);
                };
                coll.find(&outdated, &options)?
                    .map(|doc| doc.map(|d| d.get("_id").cloned().unwrap_or(Bson::Null)))
                    .collect::<odm_engine::Result<_>>()?
            }
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => remote
                .wait(remote.find(None, &self.name, &outdated, &options))?
                .iter()
                .map(|raw| {
                    raw.get("_id")
                        .ok()
                        .flatten()
                        .and_then(|id| Bson::try_from(id).ok())
                        .unwrap_or(Bson::Null)
                })
                .collect(),
        };
        let name = &*self.name;
        let mut rewritten = 0;
        let mut done = 0;
        for chunk in ids.chunks(batch.max(1)) {
            rewritten += self.db.write_alone(self.durability, true, |t| {
                let mut rewritten = 0;
                for id in chunk {
                    let Some(stored) = t.inner.get(name, id)? else {
                        continue;
                    };
                    if crate::codec::stored_version(&stored) >= T::VERSION {
                        continue;
                    }
                    let current = crate::codec::to_raw(&from_raw::<T>(&stored, name)?, name)?;
                    t.inner.replace_by_id(name, id, current)?;
                    rewritten += 1;
                }
                Ok(rewritten)
            })?;
            done += chunk.len() as u64;
            progress(MigrationProgress {
                examined: done,
                outdated: ids.len() as u64,
                rewritten,
            });
        }
        Ok(rewritten)
    }

    /// Creates missing declared indexes and reports stored ones the model does not declare,
    /// dropping them when `drop_undeclared`.
    ///
    /// ```
    /// use odm::{Database, Document};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "events", index(keys(kind = 1)))]
    /// struct Event {
    ///     #[odm(id)]
    ///     id: i64,
    ///     kind: String,
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// let events = db.collection::<Event>()?;
    /// db.engine().expect("an embedded database").collection("events").create_index(odm::engine::IndexSpec::ascending("old")?)?;
    /// let plan = events.sync_indexes(true)?;
    /// assert_eq!(plan.unchanged, ["kind_1"]);
    /// assert_eq!(plan.dropped, ["old_1"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sync_indexes(&self, drop_undeclared: bool) -> Result<IndexPlan> {
        self.db.sync_indexes_named::<T>(&self.name, drop_undeclared)
    }

    /// Creates an index chosen at run time (see [`Index`](crate::Index)), or keeps it when it
    /// exists with the same definition; returns its name.
    pub fn create_index(&self, index: crate::Index<T>) -> Result<String> {
        self.write(|c| c.create_index(index))
    }
}

/// How many documents [`Collection::migrate`] rewrites in one transaction.
pub const MIGRATION_BATCH: usize = 1000;

/// Where a migration stands, after each batch: of the documents found outdated when it
/// started, how many it has examined, and how many it rewrote (another writer may have
/// rewritten some meanwhile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrationProgress {
    pub examined: u64,
    pub outdated: u64,
    pub rewritten: u64,
}

/// Runs a find of the collection `name` in `txn` and gives each match, decoded, to `f` until
/// it returns `Ok(false)`.
fn each_match<T: Document>(
    txn: &odm_engine::ReadTxn,
    name: &str,
    filter: &bson::Document,
    options: &FindOptions,
    mut f: impl FnMut(Result<T>) -> Result<bool>,
) -> Result<()> {
    let Some(coll) = txn.collection(name)? else {
        return Ok(());
    };
    if T::VERSION > 0 {
        // Versioned models check each document's version (and migrate older ones).
        for raw in coll.find_raw(filter, options)? {
            if !f(raw
                .map_err(crate::Error::from)
                .and_then(|raw| from_raw::<T>(&raw, name)))?
            {
                break;
            }
        }
        return Ok(());
    }
    for item in coll.find_as_with_id::<T>(filter, options, id_alias::<T>())? {
        if !f(item.map_err(crate::Error::from))? {
            break;
        }
    }
    Ok(())
}

/// Where a [`Find`] runs: a snapshot of a collection ([`Collection::find`]).
#[derive(Debug, Clone)]
pub struct Snapshot {
    db: Database,
    name: Arc<str>,
}

/// Where a [`Find`] runs: inside a transaction, seeing its own writes
/// ([`TxnCollection::find`]).
pub struct InTxn<'a, 'db> {
    pub(crate) inner: Writer<'a, 'db>,
    pub(crate) name: &'a str,
}

impl std::fmt::Debug for InTxn<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InTxn({})", self.name)
    }
}

/// A find being built: the filter, sort, skip, limit, hint and collation of one query, and
/// where it runs (`S`: a [`Snapshot`], or [`InTxn`]); see [`Collection::find`].
///
/// ```
/// use odm::{Database, Document, Sort};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "people")]
/// struct Person {
///     #[odm(id)]
///     id: i64,
///     #[odm(index)]
///     name: String,
///     age: i32,
/// }
///
/// let db = Database::in_memory()?;
/// let people = db.collection::<Person>()?;
/// for (id, name, age) in [(1, "ann", 31), (2, "Bob", 17), (3, "cy", 45), (4, "dee", 22)] {
///     people.insert_one(&Person { id, name: name.into(), age })?;
/// }
/// let f = Person::fields();
/// let page = people.find(f.age.gte(18)).sort(Sort::asc(&f.name)).skip(1).limit(2).to_vec()?;
/// assert_eq!(page.iter().map(|p| p.id).collect::<Vec<_>>(), [3, 4]);
/// // Case-insensitive under a collation of strength 2.
/// let bob = people
///     .find(f.name.eq("bob"))
///     .collation(bson::doc! { "locale": "en", "strength": 2 })
///     .first()?;
/// assert_eq!(bob.map(|p| p.id), Some(2));
/// let plan = people.find(f.name.eq("cy")).hint("name_1").explain()?;
/// assert!(plan.to_string().contains("name_1"), "{plan}");
/// # Ok::<(), odm::Error>(())
/// ```
#[derive(Debug)]
pub struct Find<T, S = Snapshot> {
    source: S,
    filter: Filter<T>,
    sort: Option<Sort<T>>,
    skip: u64,
    limit: Option<u64>,
    hint: Option<Bson>,
    collation: Option<bson::Document>,
    interrupt: Option<Interrupt>,
    allow_disk_use: Option<bool>,
}

/// The same find, to run again (the async API runs a read a second time when its first try
/// ran out of its slice of the caller's thread).
impl<T> Clone for Find<T> {
    fn clone(&self) -> Self {
        Find {
            source: self.source.clone(),
            filter: self.filter.clone(),
            sort: self.sort.clone(),
            skip: self.skip,
            limit: self.limit,
            hint: self.hint.clone(),
            collation: self.collation.clone(),
            interrupt: self.interrupt.clone(),
            allow_disk_use: self.allow_disk_use,
        }
    }
}

#[cfg(feature = "async")]
impl<T> Find<T> {
    /// Whether the find has a time limit of its own ([`Find::max_time`]).
    pub(crate) fn has_time_limit(&self) -> bool {
        self.interrupt.is_some()
    }

    pub(crate) fn database(&self) -> &Database {
        &self.source.db
    }
}

impl<T: Document, S> Find<T, S> {
    pub(crate) fn new(source: S, filter: Filter<T>) -> Self {
        Find {
            source,
            filter,
            sort: None,
            skip: 0,
            limit: None,
            hint: None,
            collation: None,
            interrupt: None,
            allow_disk_use: None,
        }
    }

    /// The find must end within `limit` of this call, or fail with
    /// [`odm_engine::Error::TimeLimitExceeded`] (MongoDB's `MaxTimeMSExpired`, 50); on MongoDB
    /// it is sent as `maxTimeMS`. The limit covers the whole iteration of the results.
    #[must_use]
    pub fn max_time(mut self, limit: std::time::Duration) -> Self {
        self.interrupt = Some(Interrupt::within(Some(limit)));
        self
    }

    /// Whether a sort that must hold more than 100 MiB may write temporary files (MongoDB's
    /// `allowDiskUse`, allowed unless set to `false`); without it such a sort fails with
    /// MongoDB's 292.
    #[must_use]
    pub fn allow_disk_use(mut self, allow: bool) -> Self {
        self.allow_disk_use = Some(allow);
        self
    }

    #[must_use]
    pub fn sort(mut self, sort: Sort<T>) -> Self {
        self.sort = Some(sort);
        self
    }

    #[must_use]
    pub fn skip(mut self, n: u64) -> Self {
        self.skip = n;
        self
    }

    #[must_use]
    pub fn limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Forces the plan to use this index.
    #[must_use]
    pub fn hint(mut self, index: &str) -> Self {
        self.hint = Some(Bson::String(index.to_owned()));
        self
    }

    /// Compares strings under a collation, MongoDB's `{locale, strength, ...}` document
    /// (`{locale: "en", strength: 2}` is case-insensitive); see [`odm_engine::collation`].
    #[must_use]
    pub fn collation(mut self, collation: bson::Document) -> Self {
        self.collation = Some(collation);
        self
    }

    /// The source, and the query as the engine takes it.
    fn parts(self, collection: &str) -> Result<(S, bson::Document, FindOptions)> {
        let filter = serialized(collection, self.filter.into_document())?;
        let options = FindOptions {
            sort: self.sort.map(|s| s.to_document().clone()),
            projection: None,
            skip: self.skip,
            limit: self.limit,
            hint: self.hint,
            let_vars: None,
            collation: self.collation,
            interrupt: self.interrupt,
            allow_disk_use: self.allow_disk_use,
            memory_limit: None,
            // A typed find returns whole documents of `T`: no key-shaped results.
            keys: odm_engine::query::KeyOptions::default(),
        };
        Ok((self.source, filter, options))
    }
}

impl<T: Document> Find<T, InTxn<'_, '_>> {
    /// Every match, decoded as `T`, as the transaction sees them.
    pub fn to_vec(self) -> Result<Vec<T>> {
        let name = self.source.name;
        let (mut source, filter, options) = self.parts(name)?;
        let raws = source.inner.find(name, &filter, &options)?;
        raws.iter().map(|raw| from_raw::<T>(raw, name)).collect()
    }

    /// The first match.
    pub fn first(self) -> Result<Option<T>> {
        Ok(self.limit(1).to_vec()?.into_iter().next())
    }
}

impl<T: Document> Find<T> {
    fn snapshot_parts(self) -> Result<(Database, Arc<str>, bson::Document, FindOptions)> {
        let name = self.source.name.clone();
        let (source, filter, options) = self.parts(&name)?;
        Ok((source.db, name, filter, options))
    }

    /// Every match, decoded as `T`.
    pub fn to_vec(self) -> Result<Vec<T>> {
        let (db, name, filter, options) = self.snapshot_parts()?;
        let engine = match db.store() {
            Store::Embedded(engine) => engine,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                return remote
                    .wait(remote.find(None, &name, &filter, &options))?
                    .iter()
                    .map(|raw| from_raw::<T>(raw, &name))
                    .collect();
            }
        };
        sample_find(engine, &name, &filter, &options);
        let mut out = Vec::new();
        each_match::<T>(&engine.read()?, &name, &filter, &options, |item| {
            out.push(item?);
            Ok(true)
        })?;
        Ok(out)
    }

    /// The matches one at a time: each is read and decoded when pulled, and at most
    /// [`STREAM_BUFFER`](crate::STREAM_BUFFER) wait in memory, however many match. All come from one snapshot, taken
    /// when this is called. A document that does not decode is an `Err` item; the next pull
    /// goes on with the next match.
    ///
    /// A reader thread holds the snapshot (see [`Cursor`]); dropping the cursor stops it.
    ///
    /// ```
    /// use odm::{Database, Document, Filter, Sort};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "readings")]
    /// struct Reading {
    ///     #[odm(id)]
    ///     id: i64,
    ///     celsius: f64,
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// let readings = db.collection::<Reading>()?;
    /// let all: Vec<Reading> = (0..1000).map(|i| Reading { id: i, celsius: 20.0 }).collect();
    /// readings.insert_many(&all)?;
    /// let f = Reading::fields();
    /// let mut total = 0.0;
    /// for reading in readings.find(Filter::all()).sort(Sort::asc(&f.id)).iter()? {
    ///     total += reading?.celsius; // a document that does not decode is an `Err` here
    /// }
    /// assert_eq!(total, 20_000.0);
    /// # Ok::<(), odm::Error>(())
    /// ```
    // The name users of cursors expect; the outer `Result` holds the query's
    // own errors (a filter that does not serialize, a failed snapshot), before any match.
    #[allow(clippy::iter_not_returning_iterator)]
    pub fn iter(self) -> Result<Cursor<T>>
    where
        T: Send + 'static,
    {
        let (db, name, filter, options) = self.snapshot_parts()?;
        let engine = match db.store() {
            Store::Embedded(engine) => engine,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                let command = odm_engine::commands::find(&name, &filter, &options);
                let stream = remote.stream(command)?;
                return Ok(Cursor::over(
                    stream.map(move |raw| raw.and_then(|raw| from_raw::<T>(&raw, &name))),
                ));
            }
        };
        sample_find(engine, &name, &filter, &options);
        // Taken here, so that writes made after this call are not seen.
        let snapshot = engine.read()?;
        Ok(Cursor::spawn(snapshot, move |snapshot, sink| {
            each_match::<T>(snapshot, &name, &filter, &options, |item| Ok(sink(item)))
        }))
    }

    /// The first match.
    pub fn first(self) -> Result<Option<T>> {
        Ok(self.limit(1).to_vec()?.into_iter().next())
    }

    /// The matches as documents holding only the projected fields.
    pub fn project(self, projection: &Projection<T>) -> Result<Vec<bson::Document>> {
        self.documents(Some(projection.to_document().clone()))
    }

    /// The matches as documents, projected by `projection` when given; not decoded as `T`.
    fn documents(self, projection: Option<bson::Document>) -> Result<Vec<bson::Document>> {
        let (db, name, filter, mut options) = self.snapshot_parts()?;
        options.projection = projection;
        let engine = match db.store() {
            Store::Embedded(engine) => engine,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                return remote
                    .wait(remote.find(None, &name, &filter, &options))?
                    .iter()
                    .map(|raw| {
                        bson::Document::try_from(raw.as_ref()).map_err(|e| crate::Error::Driver {
                            reason: format!("a projected document that does not read: {e}"),
                            transient: false,
                        })
                    })
                    .collect();
            }
        };
        sample_find(engine, &name, &filter, &options);
        let txn = engine.read()?;
        let Some(coll) = txn.collection(&name)? else {
            return Ok(Vec::new());
        };
        Ok(coll
            .find(&filter, &options)?
            .collect::<odm_engine::Result<Vec<_>>>()?)
    }

    /// How the engine runs this find, and what running it examines.
    pub fn explain(self) -> Result<Explain> {
        let (db, name, filter, options) = self.snapshot_parts()?;
        let engine = match db.store() {
            Store::Embedded(engine) => engine,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                return remote.wait(remote.explain_find(
                    &name,
                    &filter,
                    &options,
                    T::shard_key().as_ref(),
                ));
            }
        };
        let txn = engine.read()?;
        let coll = txn
            .collection(&name)?
            .ok_or_else(|| odm_engine::Error::CollectionNotFound(name.to_string()))?;
        Ok(coll.explain(&filter, &options)?)
    }
}

/// Offers a find to the query analyzer (see [`crate::database::sample_read`]).
fn sample_find(
    engine: &odm_engine::Database,
    name: &str,
    filter: &bson::Document,
    options: &FindOptions,
) {
    sample_read(
        engine,
        name,
        SampledCommand::Find,
        filter,
        options.collation.as_ref(),
        options.let_vars.as_ref(),
    );
}
