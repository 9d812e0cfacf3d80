//! The async API, for tokio applications (feature `async`): the typed surface of the sync API,
//! each operation a future and each result set a [`Stream`].
//!
//! One implementation of every operation: the async API runs the sync one on the process's
//! worker pool ([`pool_size`] threads) and awaits it, so the calling task's thread does not
//! block, and filters, updates, sorts and pipelines are built by the very same typed
//! builders. Reads on the embedded engine, and single inserts with eventual durability, first
//! run on the calling thread for at most [`INLINE_SLICE`] (a get or an indexed find is done in
//! microseconds; handing it to a worker would cost more than the read) and move to a worker
//! only when they need longer. Queries are built as in the sync API and run by the [`Query`]
//! trait's async methods; change streams by [`Subscribe`]. Writes take their values by value:
//! the value travels to the worker.
//!
//! Which runtime: any. The async API starts no runtime and needs none of its own; it works on
//! tokio's multi-thread and current-thread runtimes alike (and, on the embedded engine, on any
//! other executor).
//!
//! On the MongoDB back end (`Database::connect`, feature `mongodb`) the driver's async client
//! runs on the calling task's tokio runtime; no runtime of the project's or the driver's
//! starts. Operations run their typed logic on a worker as on the engine, the worker waiting
//! for the driver's futures on that runtime.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> odm::Result<()> {
//! use odm::aio::{Database, Query};
//! use odm::{Document, Filter, Sort};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Clone, Serialize, Deserialize, Document)]
//! #[odm(collection = "tasks")]
//! struct Task {
//!     #[odm(id)]
//!     id: i64,
//!     title: String,
//!     done: bool,
//! }
//!
//! let db = Database::in_memory().await?;
//! let tasks = db.collection::<Task>().await?;
//! let f = Task::fields();
//! tasks.insert_one(Task { id: 1, title: "write".into(), done: false }).await?;
//! tasks.insert_one(Task { id: 2, title: "test".into(), done: true }).await?;
//! tasks.update_one(f.id.eq(1), f.done.set(true)).await?;
//!
//! // Built as in the sync API, run by `Query`'s async methods.
//! let done = tasks.find(f.done.eq(true)).sort(Sort::asc(&f.id)).fetch_all().await?;
//! assert_eq!(done.iter().map(|t| t.id).collect::<Vec<_>>(), [1, 2]);
//!
//! // Both writes or neither; retried whole on a transient conflict.
//! db.transaction(|txn| async move {
//!     txn.insert_one(Task { id: 3, title: "ship".into(), done: false }).await?;
//!     txn.delete_one(Task::fields().id.eq(2)).await?;
//!     Ok(())
//! })
//! .await?;
//! assert_eq!(tasks.count(Filter::all()).await?, 2);
//! # Ok(())
//! # }
//! ```

mod collection;
mod inline;
mod pool;
mod query;
mod stream;
mod txn;
mod variant;

use std::future::Future;
use std::path::PathBuf;

use bson::Document as BsonDocument;

use crate::error::Result;
use crate::indexes::IndexPlan;
use crate::model::Document;

pub use collection::Collection;
pub use inline::INLINE_SLICE;
pub use pool::{pool_size, run};
pub use query::{Count, Query, Subscribe};
pub use stream::{STEP_WAIT, Step, Stream};
pub use txn::{TRANSACTION_RETRY_WINDOW, Txn};
pub use variant::VariantCollection;

/// A database of typed models, for async code; cheap to clone, `Send + Sync`.
///
/// It wraps a sync [`crate::Database`] ([`Database::from_sync`], [`Database::blocking`]), so
/// the two APIs can share one database in one program.
#[derive(Clone, Debug)]
pub struct Database {
    inner: crate::Database,
}

impl Database {
    /// Opens (or creates) a database file, with the default [`crate::Options`].
    pub async fn open(path: impl Into<PathBuf>) -> Result<Database> {
        Database::open_with(path, crate::Options::default()).await
    }

    /// Opens (or creates) a database file.
    pub async fn open_with(path: impl Into<PathBuf>, options: crate::Options) -> Result<Database> {
        let path = path.into();
        let inner = pool::run(move || crate::Database::open_with(&path, &options)).await?;
        Ok(Database { inner })
    }

    /// A database in memory, gone when the last handle is dropped.
    pub async fn in_memory() -> Result<Database> {
        let inner = pool::run(crate::Database::in_memory).await?;
        Ok(Database { inner })
    }

    /// Connects to a MongoDB deployment (see [`crate::Database::connect`]) with a driver
    /// client of the calling task's tokio runtime: the network's work runs there, and no other
    /// runtime starts. Call it from a tokio runtime, and use the database on that runtime (a
    /// client outlives its runtime only as a handle that fails).
    ///
    /// The sync API over this database ([`Database::blocking`]) works on a pool worker, a
    /// plain thread and a multi-thread runtime's threads; on a current-thread runtime's thread
    /// it fails with [`crate::Error::SyncCallInRuntime`] rather than block the thread the
    /// client needs.
    #[cfg(feature = "mongodb")]
    pub async fn connect(uri: &str) -> Result<Database> {
        let runtime = crate::remote::Runtime::current()?;
        let remote = crate::remote::Remote::connect_on(uri, runtime).await?;
        Ok(Database {
            inner: crate::Database::on_remote(remote),
        })
    }

    /// The async API over a sync database.
    pub fn from_sync(inner: crate::Database) -> Database {
        Database { inner }
    }

    /// The sync API over the same database.
    pub fn blocking(&self) -> &crate::Database {
        &self.inner
    }

    /// Runs `work` with the sync API on a worker: any operation this module has no async
    /// method for (a pattern's, say) without blocking the calling task's thread.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> odm::Result<()> {
    /// let db = odm::aio::Database::in_memory().await?;
    /// let names = db.run(|db| db.collection_names()).await?;
    /// assert!(names.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run<R: Send + 'static>(
        &self,
        work: impl FnOnce(&crate::Database) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let db = self.inner.clone();
        pool::run(move || work(&db)).await
    }

    /// The collection of model `T`, its declarations synced; see
    /// [`crate::Database::collection`].
    pub async fn collection<T: Document + Send + Sync + 'static>(&self) -> Result<Collection<T>> {
        let inner = self.run(crate::Database::collection::<T>).await?;
        Ok(Collection::new(inner))
    }

    /// Model `T`'s documents in the collection `name`; see
    /// [`crate::Database::collection_named`].
    pub async fn collection_named<T: Document + Send + Sync + 'static>(
        &self,
        name: &str,
    ) -> Result<Collection<T>> {
        let name = name.to_owned();
        let inner = self.run(move |db| db.collection_named::<T>(&name)).await?;
        Ok(Collection::new(inner))
    }

    /// The names of the database's collections.
    pub async fn collection_names(&self) -> Result<Vec<String>> {
        self.run(crate::Database::collection_names).await
    }

    /// Drops a collection; `false` when there was none.
    pub async fn drop_collection(&self, name: &str) -> Result<bool> {
        let name = name.to_owned();
        self.run(move |db| db.drop_collection(&name)).await
    }

    /// Makes the database's indexes of `T` match its declaration; see
    /// [`crate::Database::sync_indexes`].
    pub async fn sync_indexes<T: Document + Send + Sync + 'static>(
        &self,
        drop_undeclared: bool,
    ) -> Result<IndexPlan> {
        self.run(move |db| db.sync_indexes::<T>(drop_undeclared))
            .await
    }

    /// Runs `f` in one transaction, committed when its future gives `Ok` and aborted on
    /// `Err`; see [`Txn`]. A transient conflict (MongoDB's `TransientTransactionError`: a
    /// write conflict, a lock timeout) runs `f` again, from the start, as the driver's
    /// `with_transaction` does, for up to [`TRANSACTION_RETRY_WINDOW`].
    pub async fn transaction<R, F, Fut>(&self, f: F) -> Result<R>
    where
        F: FnMut(Txn) -> Fut,
        Fut: Future<Output = Result<R>>,
    {
        txn::transaction(&self.inner, f).await
    }

    /// Every change to the database, as a [`crate::Watch`] to refine and open with
    /// [`Subscribe::stream`].
    pub fn watch(&self) -> crate::Watch<BsonDocument> {
        self.inner.watch()
    }
}
