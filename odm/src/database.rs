//! `Database`: the typed entry point, its collections and its transactions.
//!
//! Every typed write goes through a [`Txn`]: `Collection` methods each run one, and
//! [`Database::write`] runs several models' writes in one, committed on `Ok` and aborted on
//! `Err`. The first typed write to a model's collection in a process makes sure the collection,
//! its shard key and the model's declared indexes exist, in the same transaction.

use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use odm_engine::{Durability, TtlMonitor, TtlStats};

use crate::collection::Collection;
use crate::error::Result;
use crate::indexes::IndexPlan;
use crate::model::Document;
use crate::txn::Txn;
use crate::writer::Writer;

/// A model and the collection it was synced to: a model's declarations apply to every
/// collection it is opened on ([`Database::collection_named`]), each synced once.
pub(crate) type Synced = (TypeId, String);

/// A database of typed models; cheap to clone, `Send + Sync`.
///
/// Models that declare a TTL index expire without more code: unless [`Options::ttl_interval`]
/// turns it off, a background monitor deletes expired documents every minute, as MongoDB's
/// does. It stops when the last clone of the database is dropped.
///
/// ```
/// use odm::{Database, Document, Durability, Filter, Options};
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
/// let dir = std::env::temp_dir().join(format!("odm-doc-database-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("notes.redb");
/// {
///     // Eventual commits skip the sync to disk; the next immediate one makes them durable.
///     let options = Options { durability: Durability::Eventual, ..Options::default() };
///     let db = Database::open_with(&path, &options)?;
///     let notes = db.collection::<Note>()?;
///     notes.insert_one(&Note { id: 1, text: "draft".into() })?;
///     notes
///         .with_durability(Durability::Immediate)
///         .insert_one(&Note { id: 2, text: "saved".into() })?;
/// }
/// let db = Database::open(&path)?;
/// assert_eq!(db.collection::<Note>()?.count(Filter::all())?, 2);
/// # drop(db);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), odm::Error>(())
/// ```
#[derive(Clone)]
pub struct Database {
    store: Store,
    /// The collections each model's declaration was synced to through this handle.
    synced: Arc<Mutex<BTreeMap<TypeId, BTreeSet<String>>>>,
    durability: Durability,
    /// Dropped (which stops the thread) with the last clone; declared after `engine` so that the
    /// engine handle is released first and the monitor's own is the last.
    ttl_monitor: Option<Arc<TtlMonitor>>,
}

/// Where a database's documents live.
#[derive(Clone)]
pub(crate) enum Store {
    /// In this process, in the engine.
    Embedded(odm_engine::Database),
    /// On a MongoDB deployment ([`Database::connect`]).
    #[cfg(feature = "mongodb")]
    Remote(Arc<crate::remote::Remote>),
}

/// How a [`Database`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How often expired documents are deleted; `None` turns expiry off (then
    /// [`odm_engine::Database::expire`] deletes them on demand). MongoDB's default: 60 seconds.
    pub ttl_interval: Option<Duration>,
    /// When typed writes reach the disk: [`Durability::Immediate`] (the default) syncs each
    /// commit; [`Durability::Eventual`] leaves it to the next immediate commit, so a crash may
    /// lose the latest commits whole (never part of one). [`Collection::with_durability`]
    /// chooses per collection handle.
    pub durability: Durability,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            ttl_interval: Some(TtlMonitor::DEFAULT_INTERVAL),
            durability: Durability::Immediate,
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
            store: Store::Embedded(engine),
            synced: Arc::default(),
            durability: options.durability,
            ttl_monitor,
        }
    }

    /// What the TTL monitor has done, when it runs.
    pub fn ttl_stats(&self) -> Option<TtlStats> {
        self.ttl_monitor.as_ref().map(|m| m.stats())
    }

    /// A database on a MongoDB deployment, through the official driver: the database the
    /// connection string names (`mongodb://host:27017/appdb?replicaSet=rs0`), as the driver
    /// reads it. Everything typed works as on an embedded file: collections sync their
    /// declared indexes through `createIndexes` (and shard keys through `shardCollection`),
    /// filters, updates, sorts and pipelines are the same documents, and
    /// [`Database::write`] runs a driver transaction (a standalone server has none:
    /// [`Error::TransactionsUnsupported`](crate::Error::TransactionsUnsupported)). Expiry is
    /// the server's own TTL monitor's; [`Options::durability`] is left to the server's write
    /// concern.
    #[cfg(feature = "mongodb")]
    pub fn connect(uri: &str) -> Result<Database> {
        crate::remote::Remote::connect(uri).map(Database::on_remote)
    }

    /// A database on a connected MongoDB deployment.
    #[cfg(feature = "mongodb")]
    pub(crate) fn on_remote(remote: crate::remote::Remote) -> Database {
        Database {
            store: Store::Remote(Arc::new(remote)),
            synced: Arc::default(),
            durability: Durability::Immediate,
            ttl_monitor: None,
        }
    }

    /// The untyped engine underneath, for raw documents; `None` on the MongoDB back end.
    pub fn engine(&self) -> Option<&odm_engine::Database> {
        match &self.store {
            Store::Embedded(engine) => Some(engine),
            #[cfg(feature = "mongodb")]
            Store::Remote(_) => None,
        }
    }

    /// The names of the database's collections, in order.
    pub fn collection_names(&self) -> Result<Vec<String>> {
        match &self.store {
            Store::Embedded(engine) => {
                let mut names = engine.list_collections();
                names.sort();
                Ok(names)
            }
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => remote.wait(remote.collection_names()),
        }
    }

    /// Where the documents live.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// The collection of `T` (its declared `COLLECTION`), creating it, its shard key and its
    /// declared indexes when missing. A declared index stored with another definition is
    /// [`Error::IndexMismatch`](crate::Error::IndexMismatch).
    pub fn collection<T: Document>(&self) -> Result<Collection<T>> {
        self.collection_named(T::COLLECTION)
    }

    /// Drops a collection with its documents and indexes; whether it existed. Change streams
    /// on it see `drop`, then `invalidate`. Opening it again creates it with its declaration.
    pub fn drop_collection(&self, name: &str) -> Result<bool> {
        let existed = match &self.store {
            Store::Embedded(engine) => engine.write(|w| w.drop_collection(name))?,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => remote.wait(remote.drop_collection(name))?,
        };
        let mut synced = self
            .synced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for names in synced.values_mut() {
            names.remove(name);
        }
        Ok(existed)
    }

    /// A collection of `T` under a name chosen at run time (one per tenant, per owner, ...),
    /// with the model's declared indexes, shard key and schema version applied to it as to the
    /// declared collection.
    ///
    /// ```
    /// use odm::{Database, Document, Filter};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "orders", index(keys(customer = 1)))]
    /// struct Order {
    ///     #[odm(id)]
    ///     id: i64,
    ///     customer: String,
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// let acme = db.collection_named::<Order>("orders_acme")?;
    /// acme.insert_one(&Order { id: 1, customer: "ann".into() })?;
    /// let f = Order::fields();
    /// // The declared index exists on the named collection, and serves the query.
    /// let plan = acme.find(f.customer.eq("ann")).explain()?;
    /// assert_eq!(plan.index_used(), Some("customer_1"));
    /// assert_eq!(db.collection::<Order>()?.count(Filter::all())?, 0);
    /// # Ok::<(), odm::Error>(())
    /// ```
    pub fn collection_named<T: Document>(&self, name: &str) -> Result<Collection<T>> {
        self.write_alone(self.durability, false, |txn| {
            txn.collection_named::<T>(name).map(drop)
        })?;
        Ok(Collection::new(self.clone(), name))
    }

    /// Syncs the declared indexes of `T` on its collection, dropping undeclared ones when
    /// `drop_undeclared`.
    pub fn sync_indexes<T: Document>(&self, drop_undeclared: bool) -> Result<IndexPlan> {
        self.sync_indexes_named::<T>(T::COLLECTION, drop_undeclared)
    }

    /// [`Database::sync_indexes`] on a collection of `T` named at run time.
    pub fn sync_indexes_named<T: Document>(
        &self,
        name: &str,
        drop_undeclared: bool,
    ) -> Result<IndexPlan> {
        match &self.store {
            Store::Embedded(_) => self.write(|txn| txn.sync_declared::<T>(name, drop_undeclared)),
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                crate::txn::consistent::<T>(name)?;
                let plan = crate::indexes::sync_remote::<T>(remote, name, drop_undeclared, None)?;
                self.mark_synced(vec![(TypeId::of::<T>(), name.to_owned())]);
                Ok(plan)
            }
        }
    }

    /// Runs `f` in one write transaction over any models: commits on `Ok`, aborts on `Err`;
    /// with the database's durability ([`Options::durability`]).
    ///
    /// ```
    /// use odm::{Database, Document, UpdateOptions};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "orders")]
    /// struct Order {
    ///     #[odm(id)]
    ///     id: i64,
    ///     item: String,
    /// }
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "stock")]
    /// struct Stock {
    ///     #[odm(id)]
    ///     item: String,
    ///     left: i32,
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// db.collection::<Stock>()?.insert_one(&Stock { item: "pen".into(), left: 3 })?;
    /// let s = Stock::fields();
    /// // Both writes or neither.
    /// db.write(|txn| {
    ///     txn.insert_one(&Order { id: 1, item: "pen".into() })?;
    ///     txn.update_one(s.item.eq("pen"), s.left.inc(-1), &UpdateOptions::default())?;
    ///     Ok(())
    /// })?;
    /// assert_eq!(db.collection::<Stock>()?.get("pen")?.unwrap().left, 2);
    /// # Ok::<(), odm::Error>(())
    /// ```
    pub fn write<R>(&self, f: impl FnOnce(&mut Txn<'_, '_>) -> Result<R>) -> Result<R> {
        self.transaction_with(self.durability, f)
    }

    /// [`Database::write`] with a chosen durability.
    pub fn write_with<R>(
        &self,
        durability: Durability,
        f: impl FnOnce(&mut Txn<'_, '_>) -> Result<R>,
    ) -> Result<R> {
        self.transaction_with(durability, f)
    }

    /// [`Database::write`] for a closure that fails with the caller's own error type (any
    /// that a typed-layer [`Error`](crate::Error) converts into), so that the caller's own
    /// refusals abort the transaction too.
    ///
    /// ```
    /// use odm::{Database, Document, Filter, UpdateOptions};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "accounts")]
    /// struct Account {
    ///     #[odm(id)]
    ///     id: String,
    ///     balance: i64,
    /// }
    ///
    /// #[derive(Debug)]
    /// enum BankError {
    ///     Odm(odm::Error),
    ///     Overdrawn,
    /// }
    /// impl From<odm::Error> for BankError {
    ///     fn from(e: odm::Error) -> Self {
    ///         BankError::Odm(e)
    ///     }
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// let accounts = db.collection::<Account>()?;
    /// accounts.insert_one(&Account { id: "ann".into(), balance: 10 })?;
    /// let f = Account::fields();
    /// let outcome = db.transaction(|txn| {
    ///     let mut accounts = txn.collection::<Account>()?;
    ///     accounts.update_one(f.id.eq("ann"), f.balance.inc(-25), &UpdateOptions::default())?;
    ///     let ann = accounts.find_one(f.id.eq("ann"))?.expect("inserted above");
    ///     if ann.balance < 0 {
    ///         return Err(BankError::Overdrawn); // aborts: the update is undone
    ///     }
    ///     Ok(ann.balance)
    /// });
    /// assert!(matches!(outcome, Err(BankError::Overdrawn)));
    /// assert_eq!(accounts.get("ann")?.unwrap().balance, 10);
    /// # Ok::<(), odm::Error>(())
    /// ```
    pub fn transaction<R, E: From<crate::Error>>(
        &self,
        f: impl FnOnce(&mut Txn<'_, '_>) -> Result<R, E>,
    ) -> Result<R, E> {
        self.transaction_with(self.durability, f)
    }

    /// [`Database::transaction`] with a chosen durability.
    pub fn transaction_with<R, E: From<crate::Error>>(
        &self,
        durability: Durability,
        f: impl FnOnce(&mut Txn<'_, '_>) -> Result<R, E>,
    ) -> Result<R, E> {
        /// The caller's error, carried through the engine's transaction, which converts its
        /// own errors into it.
        struct Failed<E>(E);
        impl<E: From<crate::Error>> From<odm_engine::Error> for Failed<E> {
            fn from(e: odm_engine::Error) -> Self {
                Failed(E::from(crate::Error::from(e)))
            }
        }
        let mut synced = Vec::new();
        let result = match &self.store {
            Store::Embedded(engine) => engine
                .write_with(durability, |inner| {
                    let mut txn = Txn::new(self, Writer::Embedded(inner), &mut synced);
                    f(&mut txn).map_err(Failed)
                })
                .map_err(|Failed(e)| e),
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                let _ = durability;
                let mut session = remote.wait(remote.start_transaction()).map_err(E::from)?;
                let mut txn = Txn::new(
                    self,
                    Writer::Remote {
                        remote,
                        session: Some(&mut session),
                    },
                    &mut synced,
                );
                let result = f(&mut txn);
                let shard_keys = std::mem::take(&mut txn.pending_shard_keys);
                let schemas = std::mem::take(&mut txn.pending_schemas);
                drop(txn);
                match result {
                    Ok(value) => {
                        remote
                            .wait(crate::remote::commit(&mut session))
                            .map_err(E::from)?;
                        for (name, key) in &shard_keys {
                            remote
                                .wait(remote.deploy_shard_key(name, key))
                                .map_err(E::from)?;
                        }
                        for (name, schema) in &schemas {
                            remote
                                .wait(remote.deploy_schema(name, schema))
                                .map_err(E::from)?;
                        }
                        Ok(value)
                    }
                    Err(e) => {
                        // The caller's error is the one to report; a failed abort ends with
                        // the session anyway (the server aborts what it left open).
                        let _ = remote.wait(async {
                            session
                                .abort_transaction()
                                .await
                                .map_err(crate::remote::driver_error)
                        });
                        Err(e)
                    }
                }
            }
        };
        // Declarations synced by an aborted transaction were rolled back with it.
        if result.is_ok() {
            self.mark_synced(synced);
        }
        result
    }

    /// Runs one typed write of a [`Collection`](crate::Collection) method: in a transaction of
    /// its own on the embedded back end; on MongoDB, alone (the server makes one operation
    /// atomic), or, when `whole` (a write the API promises all or nothing), in a transaction
    /// where the deployment has them.
    pub(crate) fn write_alone<R>(
        &self,
        durability: Durability,
        whole: bool,
        f: impl FnOnce(&mut Txn<'_, '_>) -> Result<R>,
    ) -> Result<R> {
        match &self.store {
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) if !(whole && remote.transactions) => {
                let mut synced = Vec::new();
                let result = f(&mut Txn::new(
                    self,
                    Writer::Remote {
                        remote,
                        session: None,
                    },
                    &mut synced,
                ));
                self.mark_synced(synced);
                result
            }
            _ => {
                let _ = whole; // every embedded write is whole
                self.transaction_with(durability, f)
            }
        }
    }

    pub(crate) fn mark_synced(&self, synced: Vec<Synced>) {
        if synced.is_empty() {
            return;
        }
        let mut map = self.synced.lock().unwrap_or_else(PoisonError::into_inner);
        for (model, name) in synced {
            map.entry(model).or_default().insert(name);
        }
    }

    /// The durability typed writes commit with, unless a collection handle chose its own.
    pub(crate) fn durability(&self) -> Durability {
        self.durability
    }

    pub(crate) fn is_synced<T: Document>(&self, name: &str) -> bool {
        self.synced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&TypeId::of::<T>())
            .is_some_and(|names| names.contains(name))
    }
}

impl Database {
    /// MongoDB's `configureQueryAnalyzer` on a collection: turns sampling of the queries sent
    /// to it on (`Full`, at most `samples_per_second`, above 0 and at most 50) or off; the
    /// reply's `{newConfiguration, oldConfiguration}`. The embedded engine samples what the
    /// typed layer and `odm serve` run (see [`odm_engine::sampling`]); a MongoDB deployment
    /// samples as it does.
    pub fn configure_query_analyzer(
        &self,
        collection: &str,
        mode: odm_engine::sampling::AnalyzerMode,
        samples_per_second: Option<f64>,
    ) -> Result<bson::Document> {
        match self.store() {
            Store::Embedded(engine) => Ok(engine
                .configure_query_analyzer(collection, mode, samples_per_second)?
                .to_document()),
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                let mut command = bson::doc! {
                    "configureQueryAnalyzer": remote.namespace(collection),
                    "mode": mode.as_str(),
                };
                if let Some(rate) = samples_per_second {
                    command.insert("samplesPerSecond", rate);
                }
                remote.wait(remote.admin_command(command))
            }
        }
    }

    /// MongoDB's `analyzeShardKey` of `key` on a collection: the key's characteristics and,
    /// from the collection's sampled queries, its read and write distribution (see
    /// [`crate::advisor::analyze_shard_key`]). On MongoDB, the server's answer.
    pub fn analyze_shard_key(
        &self,
        collection: &str,
        key: &odm_engine::ShardKey,
        options: &crate::advisor::AnalyzeOptions,
    ) -> Result<crate::advisor::ShardKeyAnalysis> {
        match self.store() {
            Store::Embedded(engine) => Ok(crate::advisor::analyze_shard_key(
                engine, collection, key, options,
            )?),
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                let mut command = bson::doc! {
                    "analyzeShardKey": remote.namespace(collection),
                    "key": key.to_document(),
                    "keyCharacteristics": options.key_characteristics,
                    "readWriteDistribution": options.read_write_distribution,
                };
                if let Some(rate) = options.sample_rate {
                    command.insert("sampleRate", rate);
                }
                if let Some(size) = options.sample_size {
                    command.insert("sampleSize", size);
                }
                let reply = remote.wait(remote.admin_command(command))?;
                crate::advisor::ShardKeyAnalysis::from_document(key.clone(), &reply).map_err(
                    |reason| crate::Error::Driver {
                        reason: format!("an analyzeShardKey reply that does not read: {reason}"),
                        transient: false,
                    },
                )
            }
        }
    }
}

/// Offers a read the typed layer runs on the engine to the collection's query analyzer (see
/// [`odm_engine::sampling`]): its filter, collation and `let` variables, as MongoDB samples
/// them.
pub(crate) fn sample_read(
    engine: &odm_engine::Database,
    collection: &str,
    command: odm_engine::sampling::SampledCommand,
    filter: &bson::Document,
    collation: Option<&bson::Document>,
    let_vars: Option<&bson::Document>,
) {
    engine.sample_query(collection, command, |_| {
        odm_engine::sampling::read_command(filter, collation, let_vars)
    });
}

/// Offers a read of one document by `_id` to the query analyzer: the MongoDB back end sends it
/// as a find of that `_id`.
pub(crate) fn sample_get(engine: &odm_engine::Database, collection: &str, id: &bson::Bson) {
    sample_read(
        engine,
        collection,
        odm_engine::sampling::SampledCommand::Find,
        &bson::doc! { "_id": id.clone() },
        None,
        None,
    );
}
