//! Opening a database, and its read and write transactions.
//!
//! A file is opened through the write-ahead log (`wal`), with the default page cache or a
//! chosen one (`Database::open_with_cache`); a database may also live in memory. A commit's
//! [`Durability`] is immediate (on disk when `write` returns; concurrent writers share a sync,
//! see `group_commit`) or eventual (visible at once, on disk with the next immediate commit).
//!
//! A [`Database`] is `Send + Sync` and cheap to clone; share it across threads. Reads run on
//! snapshots ([`ReadTxn`]) concurrently with the one writer. A write transaction
//! ([`Database::write`]) spans any number of collections: it commits when the closure returns
//! `Ok` and aborts when it returns `Err`, so a failed operation leaves nothing behind.
//!
//! The catalog is cached in memory. Invariant: the cache always equals the catalog of the latest
//! committed transaction. A transaction that changes the catalog commits and swaps the cache
//! while holding the cache's write lock; readers pair their snapshot with the cache under the
//! read lock, and writers read the cache only after redb has given them the write lock, so every
//! transaction sees the catalog of its own snapshot.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::budget::SpillDir;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, PoisonError, RwLock};

use bson::Document;
use redb::{ReadableDatabase, ReadableTable};

use crate::catalog::{Catalog, FORMAT_VERSION, UPGRADABLE_FROM};
use crate::changes::{ChangeLogOptions, TxnChanges, clock, log as change_log};
use crate::error::{Error, Result};
use crate::group_commit::GroupCommit;
use crate::index_store::{self, Change};
use crate::query::PlanCache;
use crate::sampling::Sampler;
use crate::table_pool::TablePool;
use crate::tables::{self, CATALOG_KEY, FORMAT_VERSION_KEY, META};
use crate::turn::Turn;
use crate::upgrade;
use crate::wal::Wal;

/// When a committed write transaction reaches the disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// Committed data is on disk when `commit` returns (an fsync per commit).
    #[default]
    Immediate,
    /// Committed data is visible at once and reaches the disk with the next immediate commit;
    /// a crash before that loses it (never half of it). Much cheaper for bulk loads.
    Eventual,
}

/// An embedded document database stored in one redb file, or in memory.
#[derive(Clone)]
pub struct Database {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) redb: redb::Database,
    /// See the module comment for the invariant this cache keeps.
    pub(crate) catalog: RwLock<Arc<Catalog>>,
    /// The minimum size of an index's delta table before it is merged.
    merge_threshold: AtomicU64,
    pub(crate) plan_cache: Arc<PlanCache>,
    /// The file, when the database is one.
    path: Option<PathBuf>,
    /// redb's page size, for the sizes stats report.
    pub(crate) page_size: u64,
    /// Query sampling's in-memory side (see [`crate::sampling`]).
    pub(crate) sampler: Sampler,
    /// The change log's options, as stored in the file (see [`crate::changes`]).
    change_log: RwLock<ChangeLogOptions>,
    /// The bytes of the change log's records as of the last commit (see
    /// `changes::log::Log::bytes`); only the writer changes it.
    log_bytes: AtomicU64,
    /// Concurrent durable writers share syncs (see [`crate::group_commit`]).
    group: GroupCommit,
    /// The one writer's turn, whose wait can be interrupted (see [`crate::turn`]).
    turn: Turn,
    /// Where blocking stages write their temporary files (see [`crate::budget`]).
    pub(crate) spill_dir: SpillDir,
}

impl Drop for Shared {
    /// Writes the samples still waiting in memory; a failure loses them, never data.
    fn drop(&mut self) {
        if self.path.is_some() {
            self.spill_dir.remove_if_empty();
        }
        // Unwinding from a panic: a write transaction dropped now would mark the file as
        // needing repair; the samples are lost instead.
        if std::thread::panicking() {
            return;
        }
        let (pending, limits) = self.sampler.take_pending();
        if pending.is_empty() {
            return;
        }
        if let Ok(txn) = self.redb.begin_write() {
            if crate::sampling::write_samples(&txn, pending, limits).is_ok() {
                let _ = txn.commit();
            } else {
                let _ = txn.abort();
            }
        }
    }
}

impl Shared {
    /// The length of the database's file; 0 in memory.
    pub(crate) fn file_bytes(&self) -> u64 {
        self.path
            .as_ref()
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len())
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field(
                "collections",
                &self.catalog().collections.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Database {
    /// Opens the database file at `path`, creating it when it does not exist. A file written by
    /// another storage format version is refused with [`Error::FormatVersion`].
    pub fn open(path: impl AsRef<Path>) -> Result<Database> {
        Database::open_at(path.as_ref(), redb::Database::builder())
    }

    /// [`Database::open`] with a page cache of at most `bytes` (redb's default is 1 GiB): what
    /// a reader whose file does not stay in memory sees, as the inbox showcase's cold reads
    /// measure.
    pub fn open_with_cache(path: impl AsRef<Path>, bytes: usize) -> Result<Database> {
        let mut builder = redb::Database::builder();
        builder.set_cache_size(bytes);
        Database::open_at(path.as_ref(), builder)
    }

    /// Opens the file through its write-ahead log (see [`crate::wal`]): the log is locked
    /// first, so that one process alone replays it, then recovered into the file.
    fn open_at(path: &Path, builder: redb::Builder) -> Result<Database> {
        if !path.exists() {
            create_file(path)?;
        }
        let locked = || Error::Locked {
            path: path.display().to_string(),
        };
        let file_error = |source: std::io::Error| Error::Io {
            path: path.display().to_string(),
            source,
        };
        let log_path = crate::wal::log_path(&resolved(path).map_err(file_error)?);
        let io = |source: std::io::Error| Error::Io {
            path: log_path.display().to_string(),
            source,
        };
        let created = !log_path.exists();
        let log = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&log_path)
            .map_err(io)?;
        if created {
            sync_directory_of(&log_path).map_err(io)?;
        }
        match log.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(locked()),
            // A file system without locks: as redb does, open without.
            Err(std::fs::TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        let guard = log.try_clone().map_err(io)?;
        let main = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(file_error)?;
        let wal = Wal::open(
            redb::backends::FileBackend::new(main)?,
            redb::backends::FileBackend::new(log)?,
            crate::wal::Limits::default(),
        )
        .map_err(io)?
        .holding(guard);
        let redb = builder.create_with_backend(wal).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => locked(),
            other => Error::from(other),
        })?;
        Database::init(redb, Some(path.to_path_buf()))
    }

    /// A database over any redb storage backend, opened when it holds one and created when it
    /// is empty: a file, memory, or the caller's own (a fault-injecting backend in tests).
    pub fn with_backend(backend: impl redb::StorageBackend) -> Result<Database> {
        Database::init(
            redb::Database::builder().create_with_backend(backend)?,
            None,
        )
    }

    /// [`Database::with_backend`] for a database file `main` made durable through the
    /// write-ahead log `log` (see [`crate::wal`]), as [`Database::open`] opens files: the log is
    /// replayed into `main` first. For tests that inject faults into both, with `limits` small
    /// enough to reach checkpoints.
    pub fn with_wal(
        main: impl redb::StorageBackend,
        log: impl redb::StorageBackend,
        limits: crate::wal::Limits,
    ) -> Result<Database> {
        let wal = Wal::open(main, log, limits).map_err(|e| Error::Storage(e.into()))?;
        Database::with_backend(wal)
    }

    /// A database that lives in memory only, for tests and scratch work.
    pub fn in_memory() -> Result<Database> {
        let redb =
            redb::Database::builder().create_with_backend(redb::backends::InMemoryBackend::new())?;
        Database::init(redb, None)
    }

    fn init(redb: redb::Database, path: Option<PathBuf>) -> Result<Database> {
        let spill_dir = match &path {
            Some(file) => SpillDir::beside(file)?,
            None => SpillDir::temporary(),
        };
        let txn = redb.begin_write()?;
        // Fixed when the file was made: what stats multiply page counts by.
        let page_size = txn
            .stats()
            .map_err(|e| Error::Storage(e.into()))?
            .page_size() as u64;
        let has_other_tables = txn
            .list_tables()?
            .any(|t| redb::TableHandle::name(&t) != tables::META_NAME);
        let (mut catalog, changed, found) = {
            let mut meta = txn.open_table(META)?;
            let version = meta.get(FORMAT_VERSION_KEY)?.map(|v| v.value().to_vec());
            match version {
                Some(bytes) => {
                    let found = <[u8; 4]>::try_from(bytes.as_slice())
                        .map(u32::from_be_bytes)
                        .map_err(|_| Error::corrupt("format version", "not a 4-byte integer"))?;
                    let upgrade = UPGRADABLE_FROM.contains(&found);
                    if found != FORMAT_VERSION && !upgrade {
                        return Err(Error::FormatVersion {
                            found,
                            supported: FORMAT_VERSION,
                        });
                    }
                    if upgrade {
                        meta.insert(FORMAT_VERSION_KEY, FORMAT_VERSION.to_be_bytes().as_slice())?;
                    }
                    let bytes = meta
                        .get(CATALOG_KEY)?
                        .ok_or_else(|| Error::corrupt("catalog", "missing"))?
                        .value()
                        .to_vec();
                    (decode_catalog(&bytes)?, upgrade, found)
                }
                None if has_other_tables => {
                    return Err(Error::corrupt(
                        "file",
                        "a redb file that this engine did not create",
                    ));
                }
                None => {
                    let catalog = Catalog::default();
                    meta.insert(FORMAT_VERSION_KEY, FORMAT_VERSION.to_be_bytes().as_slice())?;
                    meta.insert(CATALOG_KEY, encode_catalog(&catalog)?.as_slice())?;
                    (catalog, true, FORMAT_VERSION)
                }
            }
        };
        if found < upgrade::COMPACT_NUMBERS {
            upgrade::rekey(&txn, &mut catalog)?;
        }
        if found < upgrade::COLLATED_IDS {
            upgrade::index_collated_ids(&txn, &mut catalog)?;
        }
        if found < FORMAT_VERSION {
            let mut meta = txn.open_table(META)?;
            meta.insert(CATALOG_KEY, encode_catalog(&catalog)?.as_slice())?;
        }
        let change_log = {
            let meta = txn.open_table(META)?;
            change_log::stored_options(&meta)?
        };
        // Later commits of this process must come after every change the file holds.
        let log_bytes = {
            let log = change_log::Log {
                main: Some(txn.open_table(tables::CHANGES)?),
                head: Some(txn.open_table(tables::CHANGES_HEAD)?),
            };
            if let Some(last) = log.last()? {
                clock::observe(last.0);
            }
            log.bytes()?
        };
        if changed {
            txn.commit()?;
        } else {
            txn.abort()?;
        }
        let sampler = Sampler::default();
        sampler.refresh(&catalog);
        Ok(Database {
            shared: Arc::new(Shared {
                redb,
                catalog: RwLock::new(Arc::new(catalog)),
                merge_threshold: AtomicU64::new(index_store::DELTA_MIN),
                plan_cache: Arc::new(PlanCache::default()),
                path,
                page_size,
                sampler,
                change_log: RwLock::new(change_log),
                log_bytes: AtomicU64::new(log_bytes),
                group: GroupCommit::default(),
                turn: Turn::default(),
                spill_dir,
            }),
        })
    }

    /// Tunes when an index's table of recent entries is merged into its main table: once it
    /// holds more than `min_entries` entries and more than an eighth of the main table. Lower
    /// values keep reads simpler, higher values make bulk loads cheaper; the default is 4096.
    /// Tests set it low so that merges happen often.
    pub fn set_index_merge_threshold(&self, min_entries: u64) {
        self.shared
            .merge_threshold
            .store(min_entries, AtomicOrdering::Relaxed);
    }

    pub(crate) fn merge_threshold(&self) -> u64 {
        self.shared.merge_threshold.load(AtomicOrdering::Relaxed)
    }

    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        self.shared
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether a collection of this name exists now (the latest committed catalog, without a
    /// read snapshot).
    pub fn has_collection(&self, name: &str) -> bool {
        self.catalog().get(name).is_some()
    }

    /// A read snapshot: sees every transaction committed before this call and nothing after.
    pub fn read(&self) -> Result<ReadTxn> {
        let guard = self
            .shared
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let txn = self.shared.redb.begin_read()?;
        Ok(ReadTxn {
            txn,
            catalog: guard.clone(),
            plan_cache: self.shared.plan_cache.clone(),
            page_size: self.shared.page_size,
            spill_dir: self.shared.spill_dir.clone(),
        })
    }

    /// Runs `f` in a write transaction with immediate durability: commits when it returns `Ok`,
    /// aborts when it returns `Err`.
    pub fn write<R, E>(&self, f: impl FnOnce(&mut WriteTxn<'_>) -> Result<R, E>) -> Result<R, E>
    where
        E: From<Error>,
    {
        self.write_with(Durability::Immediate, f)
    }

    /// [`Database::write`] with a chosen durability.
    pub fn write_with<R, E>(
        &self,
        durability: Durability,
        f: impl FnOnce(&mut WriteTxn<'_>) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<Error>,
    {
        // redb allows one writer at a time: a second write on the same thread would wait for
        // itself forever.
        if WRITING.with(Cell::get) {
            return Err(Error::NestedWrite.into());
        }
        let mut group = self.shared.group.enter();
        // The turn before redb's lock: a wait for it can be interrupted (see `turn`).
        let turn = self.shared.turn.take()?;
        let mut txn = self.shared.redb.begin_write().map_err(Error::from)?;
        WRITING.with(|w| w.set(true));
        let _writing = WritingGuard;
        let redb_durability = match durability {
            Durability::Immediate => redb::Durability::Immediate,
            Durability::Eventual => redb::Durability::None,
        };
        txn.set_durability(redb_durability)
            .map_err(|e| Error::Storage(e.into()))?;
        // Read after `begin_write`: see the module comment.
        let catalog = self.catalog();
        // A panic in `f` (the caller's code or ours) or in what the commit writes before redb's
        // own commit is caught here so that the transaction is aborted before unwinding goes
        // on: redb marks a file as needing repair when a write transaction is dropped during a
        // panic.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut write = WriteTxn {
                db: self,
                txn: &txn,
                tables: TablePool::new(&txn),
                catalog,
                catalog_changed: false,
                pending: BTreeMap::new(),
                changes: TxnChanges::new(self.change_log()),
                durability,
                bypass_validation: false,
            };
            f(&mut write).map(|value| (value, write.prepare_commit()))
        }));
        match outcome {
            Ok(Ok((value, ready))) => {
                let grouped = ready.and_then(|ready| self.commit(txn, ready));
                // Committed (without a sync when grouped): the next writer may begin.
                drop(turn);
                group.committed();
                if let Some(number) = grouped? {
                    self.wait_durable(number)?;
                }
                Ok(value)
            }
            Ok(Err(e)) => {
                // Dropping the redb transaction aborts it; an abort error changes nothing.
                drop(txn);
                Err(e)
            }
            Err(payload) => {
                // The abort's own error cannot be reported past the panic; nothing was committed.
                let _ = txn.abort();
                std::panic::resume_unwind(payload)
            }
        }
    }

    /// Commits a transaction [`WriteTxn::prepare_commit`] has readied; returns the group commit
    /// number to wait for when the caller asked for a durable commit that joins a group.
    fn commit(&self, mut txn: redb::WriteTransaction, ready: ReadyToCommit) -> Result<Option<u64>> {
        let group = &self.shared.group;
        let grouped = (ready.durability == Durability::Immediate && group.contended())
            .then(|| {
                txn.set_durability(redb::Durability::None)
                    .map_err(|e| Error::Storage(e.into()))?;
                Ok::<u64, Error>(group.issue())
            })
            .transpose()?;
        // The commit's time is released after the commit: readers merging files wait for it
        // (see `changes::clock`).
        let (_in_flight, held) = match ready.logged {
            Some((time, held)) => (Some(time), Some(held)),
            None => (None, None),
        };
        let log_bytes = &self.shared.log_bytes;
        let counted = |committed: Result<(), redb::CommitError>| {
            committed?;
            if let Some(held) = held {
                log_bytes.store(held, AtomicOrdering::Relaxed);
            }
            Ok::<(), Error>(())
        };
        let Some(catalog) = ready.catalog else {
            return counted(txn.commit()).map(|()| grouped);
        };
        let mut cache = self
            .shared
            .catalog
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        counted(txn.commit())?;
        self.shared.sampler.refresh(&catalog);
        *cache = catalog;
        Ok(grouped)
    }

    /// Returns once group commit `number` is on disk (see [`crate::group_commit`]).
    fn wait_durable(&self, number: u64) -> Result<()> {
        let redb = &self.shared.redb;
        self.shared.group.wait_durable(number, |lock_taken| {
            let mut txn = redb.begin_write()?;
            lock_taken();
            txn.set_durability(redb::Durability::Immediate)
                .map_err(|e| Error::Storage(e.into()))?;
            txn.commit()?;
            Ok(())
        })
    }

    /// The names of all collections, in order.
    pub fn list_collections(&self) -> Vec<String> {
        self.catalog().collections.keys().cloned().collect()
    }

    /// The name this database gives itself in change events' `ns.db`: its file's name
    /// without the extension, or `"memory"`.
    pub fn name(&self) -> String {
        self.shared
            .path
            .as_ref()
            .and_then(|p| p.file_stem())
            .map_or_else(|| "memory".to_owned(), |s| s.to_string_lossy().into_owned())
    }

    /// The change log's options (see [`crate::changes`]).
    pub fn change_log(&self) -> ChangeLogOptions {
        *self
            .shared
            .change_log
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets and stores the change log's options: whether commits record their changes, and
    /// how much history it keeps (applied at the next commit). Turning it on after it was off
    /// starts its history now.
    pub fn set_change_log(&self, options: ChangeLogOptions) -> Result<()> {
        let cache = &self.shared.change_log;
        let before = self.change_log();
        // The cache changes before this transaction lets go of the write lock, so that the
        // next writer records (or not) by the new options; a failed commit restores it.
        let outcome = self.write(|w| {
            change_log::store_options(w.txn, options)?;
            *cache.write().unwrap_or_else(PoisonError::into_inner) = options;
            Ok(())
        });
        if outcome.is_err() {
            *cache.write().unwrap_or_else(PoisonError::into_inner) = before;
        }
        outcome
    }
}

thread_local! {
    /// Whether this thread is inside [`Database::write_with`].
    static WRITING: Cell<bool> = const { Cell::new(false) };
}

/// Clears [`WRITING`] however the write ends, a panic in the closure included.
struct WritingGuard;

impl Drop for WritingGuard {
    fn drop(&mut self) {
        WRITING.with(|w| w.set(false));
    }
}

/// Buffered index writes of a write transaction, per index (collection id, index id): the net
/// change of each entry key. Written in key order at commit, which keeps B-tree inserts local;
/// lookups inside the transaction consult this buffer first.
pub(crate) type PendingIndexWrites = BTreeMap<(u64, u64), BTreeMap<Vec<u8>, Change>>;

/// A write transaction over any number of collections; see [`Database::write`].
pub struct WriteTxn<'db> {
    pub(crate) db: &'db Database,
    /// The redb transaction, owned by [`Database::write_with`], which commits it once this
    /// value (and so every table it holds open) is gone.
    pub(crate) txn: &'db redb::WriteTransaction,
    /// The documents and index tables kept open between operations (see `table_pool`).
    pub(crate) tables: TablePool<'db>,
    /// This transaction's catalog; written back at commit when `catalog_changed`.
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) catalog_changed: bool,
    pub(crate) pending: PendingIndexWrites,
    /// This transaction's records in the change log.
    pub(crate) changes: TxnChanges,
    /// What the caller asked for; a contended immediate commit joins a group.
    durability: Durability,
    /// Writes skip collections' validators (`bypassDocumentValidation`).
    pub(crate) bypass_validation: bool,
}

impl std::fmt::Debug for WriteTxn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTxn")
            .field("catalog_changed", &self.catalog_changed)
            .field("pending_index_tables", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl<'db> WriteTxn<'db> {
    /// The database this transaction writes.
    pub fn database(&self) -> &'db Database {
        self.db
    }

    /// Makes the writes that follow skip (or check again) collections' validators, as
    /// MongoDB's `bypassDocumentValidation` does for one command.
    pub fn bypass_document_validation(&mut self, bypass: bool) {
        self.bypass_validation = bypass;
    }

    /// Fields every change this transaction records carries: `odm serve` gives a
    /// multi-document transaction's `lsid` and `txnNumber`, as change events show them.
    pub fn set_change_context(&mut self, context: &Document) -> Result<()> {
        self.changes.set_context(context)
    }
}

impl WriteTxn<'_> {
    /// The catalog for changing; marks it to be written at commit.
    pub(crate) fn catalog_mut(&mut self) -> &mut Catalog {
        self.catalog_changed = true;
        Arc::make_mut(&mut self.catalog)
    }

    /// Writes the buffered index entries of one collection, so that its tables can be read.
    pub(crate) fn flush_index_writes_of(&mut self, collection: u64) -> Result<()> {
        let ids: Vec<(u64, u64)> = self
            .pending
            .range((collection, 0)..=(collection, u64::MAX))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Some(changes) = self.pending.remove(&id) {
                index_store::apply(&self.tables, id.0, id.1, changes, self.db.merge_threshold())?;
            }
        }
        Ok(())
    }

    /// Writes the buffered index entries of every table.
    pub(crate) fn flush_index_writes(&mut self) -> Result<()> {
        for ((collection, index), changes) in std::mem::take(&mut self.pending) {
            index_store::apply(
                &self.tables,
                collection,
                index,
                changes,
                self.db.merge_threshold(),
            )?;
        }
        Ok(())
    }

    /// Does everything a commit writes before redb's own commit: the buffered index entries,
    /// the query samples taken meanwhile, the change log's records and trim, the catalog.
    /// Consumes the transaction, so that every table it holds open is closed.
    fn prepare_commit(mut self) -> Result<ReadyToCommit> {
        self.flush_index_writes()?;
        // Samples taken since the last commit ride along (see `sampling`), best effort: a
        // failure to store them loses them, never the transaction.
        let sampler = &self.db.shared.sampler;
        if sampler.has_pending() {
            let (pending, limits) = sampler.take_pending();
            let n = pending.len();
            if crate::sampling::write_samples(self.txn, pending, limits).is_err() {
                sampler.lost(n);
            }
        }
        let held = self.db.shared.log_bytes.load(AtomicOrdering::Relaxed);
        let logged = self.changes.finish(self.txn, held)?;
        if self.catalog_changed {
            let mut meta = self.txn.open_table(META)?;
            meta.insert(CATALOG_KEY, encode_catalog(&self.catalog)?.as_slice())?;
        }
        Ok(ReadyToCommit {
            durability: self.durability,
            logged,
            catalog: self.catalog_changed.then_some(self.catalog),
        })
    }
}

/// A transaction's side of a commit, once written: what [`Database::commit`] needs.
struct ReadyToCommit {
    durability: Durability,
    /// The change log's commit time (held until the commit is visible) and its bytes after.
    logged: Option<(clock::InFlight, u64)>,
    /// The catalog to publish, when the transaction changed it.
    catalog: Option<Arc<Catalog>>,
}

/// A read snapshot; see [`Database::read`].
pub struct ReadTxn {
    pub(crate) txn: redb::ReadTransaction,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) plan_cache: Arc<PlanCache>,
    pub(crate) page_size: u64,
    /// Where this snapshot's blocking stages spill (see [`crate::budget`]).
    pub(crate) spill_dir: SpillDir,
}

impl std::fmt::Debug for ReadTxn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadTxn").finish_non_exhaustive()
    }
}

impl ReadTxn {
    /// The names of the collections in this snapshot.
    pub fn list_collections(&self) -> Vec<String> {
        self.catalog.collections.keys().cloned().collect()
    }
}

/// Creates and initializes a new database file beside `path`, then renames it into place, so a
/// crash during creation never leaves at `path` a file that cannot be opened. A staging file
/// left by such a crash holds no data and is replaced.
fn create_file(path: &Path) -> Result<()> {
    let io = |source: std::io::Error| Error::Io {
        path: path.display().to_string(),
        source,
    };
    let mut staging = path.as_os_str().to_owned();
    staging.push(".creating");
    let staging = std::path::PathBuf::from(staging);
    remove_if_present(&staging).map_err(io)?;
    drop(Database::init(redb::Database::create(&staging)?, None)?);
    // A log left beside a file that is gone belongs to that file, not to this one.
    remove_if_present(&crate::wal::log_path(&resolved(path).map_err(io)?)).map_err(io)?;
    std::fs::rename(&staging, path).map_err(io)?;
    // Make the new directory entry durable too.
    sync_directory_of(path).map_err(io)
}

fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The directory holding `path` (`.` for a bare file name).
fn directory_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Syncs the directory holding `path`, so that an entry made in it survives power loss.
fn sync_directory_of(path: &Path) -> std::io::Result<()> {
    std::fs::File::open(directory_of(path))?.sync_all()
}

/// `path` with symbolic links resolved (its directory's, when the file does not exist yet): the
/// write-ahead log goes beside the real file, whichever link it is opened through.
fn resolved(path: &Path) -> std::io::Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Ok(real) => Ok(real),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let name = path.file_name().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name")
            })?;
            Ok(std::fs::canonicalize(directory_of(path))?.join(name))
        }
        Err(e) => Err(e),
    }
}

fn encode_catalog(catalog: &Catalog) -> Result<Vec<u8>> {
    catalog
        .to_document()
        .to_vec()
        .map_err(|e| Error::corrupt("catalog", format!("cannot encode: {e}")))
}

fn decode_catalog(bytes: &[u8]) -> Result<Catalog> {
    let doc = Document::from_reader(bytes).map_err(|e| Error::corrupt("catalog", e))?;
    Catalog::from_document(&doc)
}
