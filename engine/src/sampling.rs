//! Query sampling: MongoDB's `configureQueryAnalyzer` and `$listSampledQueries`, on one file.
//!
//! A collection's query analyzer (`mode: "full"`, `samplesPerSecond`) is part of its catalog
//! entry, so it survives restarts, follows a rename and goes with a drop. While it is on, the
//! commands an application sends (finds, aggregates with their leading `$match`, counts,
//! distincts, update and delete statements, findAndModify) are offered to
//! [`Database::sample_query`] by whoever runs them: `odm serve`'s command handlers and the typed
//! layer. The engine's own internal reads are never offered, as MongoDB samples commands, not
//! the reads they make.
//!
//! Rules, MongoDB's where it has one:
//! - a token bucket per collection decides: it refills at `samplesPerSecond` and holds at most
//!   twice that (MongoDB's burst multiplier of 2); a query is sampled when a whole token is
//!   there. `samplesPerSecond` is above 0 and at most 50;
//! - a sample is `{_id, collection, collectionUuid, cmdName, cmd, expireAt}`; `cmd` holds the
//!   filter and collation of a read, or the one sampled statement of a write. It expires 7 days
//!   after it was taken (MongoDB's `queryAnalysisSampleExpirationSecs`); a sample over
//!   16 MiB − 100 KiB is dropped, as MongoDB drops it;
//! - samples wait in memory (at most [`MAX_PENDING`] samples and [`MAX_PENDING_BYTES`] bytes;
//!   more are dropped and counted) and are written by the next write transaction's commit (best
//!   effort: a failure to write them never fails the commit), by
//!   [`Database::flush_sampled_queries`] (`odm serve` calls it every few seconds), or when the
//!   last handle closes: a crash loses at most the waiting ones, as MongoDB's writer loses what
//!   it has not flushed. Listings read the waiting ones too, without writing;
//! - the stored samples are bounded: past [`MAX_STORED_SAMPLES`] samples or
//!   [`MAX_STORED_BYTES`] bytes the oldest go first, and expired ones are removed as new ones
//!   arrive. (MongoDB bounds them by age only.)

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use bson::{Bson, DateTime, Document, Uuid, doc};
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

use crate::catalog::Catalog;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::tables::{META, SAMPLED_BYTES_KEY, SAMPLED_QUERIES};

/// MongoDB's upper bound of `samplesPerSecond`.
pub const MAX_SAMPLES_PER_SECOND: f64 = 50.0;

/// MongoDB's `queryAnalysisSamplerBurstMultiplier`: a bucket holds this many seconds of tokens.
pub const BURST_MULTIPLIER: f64 = 2.0;

/// MongoDB's default `queryAnalysisSampleExpirationSecs`: 7 days.
pub const SAMPLE_EXPIRATION: Duration = Duration::from_hours(7 * 24);

/// The largest sample kept (MongoDB's `kMaxBSONObjSizePerInsertBatch`).
pub const MAX_SAMPLE_BYTES: usize = 16 * 1024 * 1024 - 100 * 1024;

/// Samples waiting in memory for a write transaction.
pub const MAX_PENDING: usize = 10_000;

/// Bytes of samples waiting in memory.
pub const MAX_PENDING_BYTES: usize = 16 * 1024 * 1024;

/// The most samples a file keeps.
pub const MAX_STORED_SAMPLES: u64 = 100_000;

/// The most bytes of samples a file keeps.
pub const MAX_STORED_BYTES: u64 = 64 * 1024 * 1024;

/// `mode` of `configureQueryAnalyzer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnalyzerMode {
    Full,
    Off,
}

impl AnalyzerMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AnalyzerMode::Full => "full",
            AnalyzerMode::Off => "off",
        }
    }

    /// `"full"` or `"off"`, as the command spells them.
    pub fn parse(text: &str) -> Result<AnalyzerMode> {
        match text {
            "full" => Ok(AnalyzerMode::Full),
            "off" => Ok(AnalyzerMode::Off),
            other => Err(Error::InvalidQueryAnalyzer(format!(
                "mode must be \"full\" or \"off\", not \"{other}\""
            ))),
        }
    }
}

/// A collection's query analyzer, as stored in its catalog entry.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryAnalyzer {
    pub mode: AnalyzerMode,
    /// Kept when sampling is turned off, as MongoDB keeps it.
    pub samples_per_second: Option<f64>,
    /// When sampling last changed mode.
    pub start_time: DateTime,
    /// When sampling was turned off.
    pub stop_time: Option<DateTime>,
    /// Names this incarnation of the collection in its samples (MongoDB's `collectionUuid`):
    /// samples of a dropped collection never mix with those of a new one of the same name.
    pub collection_uuid: Uuid,
}

impl QueryAnalyzer {
    /// The configuration as `configureQueryAnalyzer` reports it: `{mode, samplesPerSecond}`.
    pub fn configuration(&self) -> Document {
        let mut d = doc! { "mode": self.mode.as_str() };
        if let Some(rate) = self.samples_per_second {
            d.insert("samplesPerSecond", rate);
        }
        d
    }

    pub(crate) fn to_document(&self) -> Document {
        let mut d = self.configuration();
        d.insert("startTime", self.start_time);
        if let Some(stop) = self.stop_time {
            d.insert("stopTime", stop);
        }
        d.insert("collectionUuid", self.collection_uuid);
        d
    }

    pub(crate) fn from_document(d: &Document) -> Result<QueryAnalyzer> {
        let bad = |reason: &str| Error::corrupt("catalog", format!("query analyzer: {reason}"));
        let mode = AnalyzerMode::parse(d.get_str("mode").map_err(|_| bad("no mode"))?)
            .map_err(|_| bad("unknown mode"))?;
        let collection_uuid = match d.get("collectionUuid") {
            Some(Bson::Binary(b)) => b.to_uuid().map_err(|_| bad("collectionUuid"))?,
            _ => return Err(bad("no collectionUuid")),
        };
        Ok(QueryAnalyzer {
            mode,
            samples_per_second: d.get_f64("samplesPerSecond").ok(),
            start_time: *d
                .get_datetime("startTime")
                .map_err(|_| bad("no startTime"))?,
            stop_time: d.get_datetime("stopTime").ok().copied(),
            collection_uuid,
        })
    }
}

/// What [`Database::configure_query_analyzer`] did: the configuration before (when there was
/// one) and after.
#[derive(Debug, Clone, PartialEq)]
pub struct Configured {
    pub old: Option<QueryAnalyzer>,
    pub new: QueryAnalyzer,
}

impl Configured {
    /// `configureQueryAnalyzer`'s reply: `{newConfiguration, oldConfiguration?}`.
    pub fn to_document(&self) -> Document {
        let mut d = doc! { "newConfiguration": self.new.configuration() };
        if let Some(old) = &self.old {
            d.insert("oldConfiguration", old.configuration());
        }
        d
    }
}

/// The commands that are sampled, by their `cmdName`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampledCommand {
    Find,
    Aggregate,
    Count,
    Distinct,
    Update,
    Delete,
    FindAndModify,
}

impl SampledCommand {
    pub const ALL: [SampledCommand; 7] = [
        SampledCommand::Find,
        SampledCommand::Aggregate,
        SampledCommand::Count,
        SampledCommand::Distinct,
        SampledCommand::Update,
        SampledCommand::Delete,
        SampledCommand::FindAndModify,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SampledCommand::Find => "find",
            SampledCommand::Aggregate => "aggregate",
            SampledCommand::Count => "count",
            SampledCommand::Distinct => "distinct",
            SampledCommand::Update => "update",
            SampledCommand::Delete => "delete",
            SampledCommand::FindAndModify => "findAndModify",
        }
    }

    pub fn parse(name: &str) -> Option<SampledCommand> {
        SampledCommand::ALL.into_iter().find(|c| c.as_str() == name)
    }

    pub fn is_read(self) -> bool {
        matches!(
            self,
            SampledCommand::Find
                | SampledCommand::Aggregate
                | SampledCommand::Count
                | SampledCommand::Distinct
        )
    }
}

/// The `cmd` of a sampled read: its filter and collation (`{}`: the simple collation), and its
/// `let` variables when it has some.
pub fn read_command(
    filter: &Document,
    collation: Option<&Document>,
    let_vars: Option<&Document>,
) -> Document {
    let mut cmd = doc! {
        "filter": filter.clone(),
        "collation": collation.cloned().unwrap_or_default(),
    };
    if let Some(vars) = let_vars {
        cmd.insert("let", vars.clone());
    }
    cmd
}

/// The `cmd` of a sampled aggregate: the filter of its first stage when that is a `$match`,
/// its collation (`{locale: "simple"}` without one, as MongoDB records it) and `let`.
pub fn aggregate_command(
    pipeline: &[Document],
    collation: Option<&Document>,
    let_vars: Option<&Document>,
) -> Document {
    let filter = pipeline
        .first()
        .and_then(|stage| stage.get_document("$match").ok())
        .cloned()
        .unwrap_or_default();
    let simple = doc! { "locale": "simple" };
    read_command(&filter, Some(collation.unwrap_or(&simple)), let_vars)
}

/// One stored sample.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledQuery {
    pub id: Uuid,
    pub collection: String,
    pub collection_uuid: Uuid,
    pub command: SampledCommand,
    pub cmd: Document,
    pub expire_at: DateTime,
}

impl SampledQuery {
    /// The sample as `$listSampledQueries` shows it, in the database named `db`:
    /// `{_id, ns, collectionUuid, cmdName, cmd, expireAt}`.
    pub fn to_document(&self, db: &str) -> Document {
        doc! {
            "_id": self.id,
            "ns": format!("{db}.{}", self.collection),
            "collectionUuid": self.collection_uuid,
            "cmdName": self.command.as_str(),
            "cmd": self.cmd.clone(),
            "expireAt": self.expire_at,
        }
    }

    fn to_stored(&self) -> Document {
        doc! {
            "_id": self.id,
            "collection": &self.collection,
            "collectionUuid": self.collection_uuid,
            "cmdName": self.command.as_str(),
            "cmd": self.cmd.clone(),
            "expireAt": self.expire_at,
        }
    }

    fn from_stored(bytes: &[u8]) -> Result<SampledQuery> {
        let bad = |reason: &str| Error::corrupt("sampled queries", reason);
        let d = Document::from_reader(bytes).map_err(|e| bad(&e.to_string()))?;
        let uuid = |field: &str| match d.get(field) {
            Some(Bson::Binary(b)) => b.to_uuid().map_err(|_| bad(field)),
            _ => Err(bad(field)),
        };
        Ok(SampledQuery {
            id: uuid("_id")?,
            collection: d
                .get_str("collection")
                .map_err(|_| bad("collection"))?
                .to_owned(),
            collection_uuid: uuid("collectionUuid")?,
            command: d
                .get_str("cmdName")
                .ok()
                .and_then(SampledCommand::parse)
                .ok_or_else(|| bad("cmdName"))?,
            cmd: d.get_document("cmd").map_err(|_| bad("cmd"))?.clone(),
            expire_at: *d.get_datetime("expireAt").map_err(|_| bad("expireAt"))?,
        })
    }
}

/// How many queries were offered while sampling was on, taken, and dropped (over the size
/// bound, or with the waiting list full), since the database was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SamplerStats {
    pub offered: u64,
    pub sampled: u64,
    pub dropped: u64,
}

/// The bounds of sampling; [`SamplingLimits::default`] holds the constants above. Tests lower
/// them with [`Database::set_sampling_limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplingLimits {
    pub max_stored: u64,
    pub max_stored_bytes: u64,
    pub max_pending: usize,
    pub max_pending_bytes: usize,
    pub expiration: Duration,
}

impl Default for SamplingLimits {
    fn default() -> Self {
        SamplingLimits {
            max_stored: MAX_STORED_SAMPLES,
            max_stored_bytes: MAX_STORED_BYTES,
            max_pending: MAX_PENDING,
            max_pending_bytes: MAX_PENDING_BYTES,
            expiration: SAMPLE_EXPIRATION,
        }
    }
}

/// The in-memory side of sampling, shared by every handle of a database.
#[derive(Debug, Default)]
pub(crate) struct Sampler {
    /// Whether any collection samples: the one check a query pays when none does.
    active: AtomicBool,
    /// Whether `state.pending` holds samples (set and cleared under the state's lock).
    waiting: AtomicBool,
    state: Mutex<SamplerState>,
    offered: AtomicU64,
    sampled: AtomicU64,
    dropped: AtomicU64,
}

#[derive(Debug, Default)]
struct SamplerState {
    /// Per collection id: its bucket, for the configuration it was made for.
    buckets: HashMap<u64, Bucket>,
    pending: Vec<Vec<u8>>,
    pending_bytes: usize,
    limits: SamplingLimits,
}

#[derive(Debug)]
struct Bucket {
    start_time: DateTime,
    rate: f64,
    tokens: f64,
    refilled: Instant,
}

impl Bucket {
    fn new(start_time: DateTime, rate: f64) -> Bucket {
        Bucket {
            start_time,
            rate,
            // A new configuration starts with one second's tokens.
            tokens: rate.max(1.0),
            refilled: Instant::now(),
        }
    }

    fn take(&mut self) -> bool {
        let now = Instant::now();
        let capacity = (self.rate * BURST_MULTIPLIER).max(1.0);
        self.tokens = (self.tokens + now.duration_since(self.refilled).as_secs_f64() * self.rate)
            .min(capacity);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl Sampler {
    fn lock(&self) -> std::sync::MutexGuard<'_, SamplerState> {
        // Every change under the lock is one push, take or insert: consistent after a panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Follows a new catalog: whether any collection samples.
    pub(crate) fn refresh(&self, catalog: &Catalog) {
        let active = catalog.collections.values().any(|c| {
            c.query_analyzer
                .as_ref()
                .is_some_and(|a| a.mode == AnalyzerMode::Full)
        });
        self.active.store(active, Ordering::Relaxed);
    }

    /// Whether samples wait: one atomic load, for every commit to ask.
    pub(crate) fn has_pending(&self) -> bool {
        self.waiting.load(Ordering::Relaxed)
    }

    /// The waiting samples, and the bounds to store them under.
    pub(crate) fn take_pending(&self) -> (Vec<Vec<u8>>, SamplingLimits) {
        let mut state = self.lock();
        state.pending_bytes = 0;
        self.waiting.store(false, Ordering::Relaxed);
        (std::mem::take(&mut state.pending), state.limits)
    }

    /// Counts samples that were taken but will never be stored.
    pub(crate) fn lost(&self, n: usize) {
        self.dropped.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Writes waiting samples into the transaction, and removes expired and surplus ones.
pub(crate) fn write_samples(
    txn: &redb::WriteTransaction,
    samples: Vec<Vec<u8>>,
    limits: SamplingLimits,
) -> Result<()> {
    let mut table = txn.open_table(SAMPLED_QUERIES)?;
    let mut meta = txn.open_table(META)?;
    let mut bytes = meta
        .get(SAMPLED_BYTES_KEY)?
        .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
        .map_or(0, u64::from_be_bytes);
    let first = table.last()?.map_or(0, |(k, _)| k.value() + 1);
    for (number, sample) in (first..).zip(samples) {
        table.insert(number, sample.as_slice())?;
        bytes += sample.len() as u64;
    }
    let now = DateTime::now();
    loop {
        let over = table.len()? > limits.max_stored || bytes > limits.max_stored_bytes;
        let Some((_, first)) = table.first()? else {
            break;
        };
        // A sample that does not read is removed like an expired one.
        let expired = bson::RawDocument::from_bytes(first.value())
            .ok()
            .and_then(|d| d.get_datetime("expireAt").ok())
            .is_none_or(|at| at <= now);
        let size = first.value().len() as u64;
        drop(first);
        if !(over || expired) {
            break;
        }
        table.pop_first()?;
        bytes = bytes.saturating_sub(size);
    }
    meta.insert(SAMPLED_BYTES_KEY, bytes.to_be_bytes().as_slice())?;
    Ok(())
}

fn invalid(message: &str) -> Error {
    Error::InvalidQueryAnalyzer(message.to_owned())
}

impl Database {
    /// Turns query sampling of `collection` on (`Full`, with `samples_per_second` in (0, 50]) or
    /// off, as MongoDB's `configureQueryAnalyzer`: the answer holds the configuration before
    /// (when the collection had one) and after. Turning off a collection that does not sample
    /// changes nothing.
    pub fn configure_query_analyzer(
        &self,
        collection: &str,
        mode: AnalyzerMode,
        samples_per_second: Option<f64>,
    ) -> Result<Configured> {
        match (mode, samples_per_second) {
            (AnalyzerMode::Off, Some(_)) => {
                return Err(invalid(
                    "Cannot specify 'samplesPerSecond' when 'mode' is \"off\"",
                ));
            }
            (AnalyzerMode::Full, None) => {
                return Err(invalid(
                    "'samplesPerSecond' must be specified when 'mode' is not \"off\"",
                ));
            }
            (AnalyzerMode::Full, Some(rate)) if rate.is_nan() || rate <= 0.0 => {
                return Err(invalid("'samplesPerSecond' must be greater than 0"));
            }
            (AnalyzerMode::Full, Some(rate)) if rate > MAX_SAMPLES_PER_SECOND => {
                return Err(invalid(
                    "'samplesPerSecond' must be less than or equal to 50",
                ));
            }
            _ => {}
        }
        self.write(|t| {
            let meta = t
                .catalog
                .get(collection)
                .cloned()
                .ok_or_else(|| Error::CollectionNotFound(collection.to_owned()))?;
            let old = meta.query_analyzer.clone();
            let now = DateTime::now();
            let new = match (&old, mode) {
                // Off when nothing samples: nothing to record.
                (None, AnalyzerMode::Off) => {
                    return Ok(Configured {
                        old: None,
                        new: QueryAnalyzer {
                            mode,
                            samples_per_second: None,
                            start_time: now,
                            stop_time: None,
                            collection_uuid: Uuid::new(),
                        },
                    });
                }
                (Some(old), AnalyzerMode::Off) if old.mode == AnalyzerMode::Off => {
                    return Ok(Configured {
                        old: None,
                        new: QueryAnalyzer {
                            samples_per_second: None,
                            ..old.clone()
                        },
                    });
                }
                (Some(old), AnalyzerMode::Off) => QueryAnalyzer {
                    mode,
                    stop_time: Some(now),
                    ..old.clone()
                },
                (Some(old), AnalyzerMode::Full) => QueryAnalyzer {
                    mode,
                    samples_per_second,
                    start_time: if old.mode == mode {
                        old.start_time
                    } else {
                        now
                    },
                    stop_time: None,
                    collection_uuid: old.collection_uuid,
                },
                (None, AnalyzerMode::Full) => QueryAnalyzer {
                    mode,
                    samples_per_second,
                    start_time: now,
                    stop_time: None,
                    collection_uuid: Uuid::new(),
                },
            };
            let mut changed = (*meta).clone();
            changed.query_analyzer = Some(new.clone());
            t.catalog_mut()
                .collections
                .insert(collection.to_owned(), std::sync::Arc::new(changed));
            // The reply shows what was asked, as MongoDB's does.
            let mut shown = new;
            if mode == AnalyzerMode::Off {
                shown.samples_per_second = None;
            }
            Ok(Configured { old, new: shown })
        })
    }

    /// The query analyzer of `collection`, if it was ever configured.
    pub fn query_analyzer(&self, collection: &str) -> Option<QueryAnalyzer> {
        self.catalog()
            .get(collection)
            .and_then(|c| c.query_analyzer.clone())
    }

    /// Offers a command on `collection` to its query analyzer; `cmd` builds the sample's `cmd`
    /// from the sample's id (write statements carry it as `sampleId`) and runs only when the
    /// query is taken. Returns whether it was.
    pub fn sample_query(
        &self,
        collection: &str,
        command: SampledCommand,
        cmd: impl FnOnce(Uuid) -> Document,
    ) -> bool {
        let sampler = &self.shared.sampler;
        if !sampler.active.load(Ordering::Relaxed) {
            return false;
        }
        let catalog = self.catalog();
        let Some(meta) = catalog.get(collection) else {
            return false;
        };
        let Some(analyzer) = meta
            .query_analyzer
            .as_ref()
            .filter(|a| a.mode == AnalyzerMode::Full)
        else {
            return false;
        };
        let rate = analyzer.samples_per_second.unwrap_or(1.0);
        sampler.offered.fetch_add(1, Ordering::Relaxed);
        {
            let mut state = sampler.lock();
            let bucket = state
                .buckets
                .entry(meta.id)
                .or_insert_with(|| Bucket::new(analyzer.start_time, rate));
            if bucket.start_time != analyzer.start_time || bucket.rate.to_bits() != rate.to_bits() {
                *bucket = Bucket::new(analyzer.start_time, rate);
            }
            if !bucket.take() {
                return false;
            }
        }
        let id = Uuid::new();
        let sample = SampledQuery {
            id,
            collection: collection.to_owned(),
            collection_uuid: analyzer.collection_uuid,
            command,
            cmd: cmd(id),
            expire_at: DateTime::now().saturating_add_duration(sampler.lock().limits.expiration),
        };
        let bytes = match sample.to_stored().to_vec() {
            Ok(bytes) if bytes.len() <= MAX_SAMPLE_BYTES => bytes,
            _ => {
                sampler.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        };
        let mut state = sampler.lock();
        if state.pending.len() >= state.limits.max_pending
            || state.pending_bytes + bytes.len() > state.limits.max_pending_bytes
        {
            sampler.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        state.pending_bytes += bytes.len();
        state.pending.push(bytes);
        sampler.waiting.store(true, Ordering::Relaxed);
        sampler.sampled.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Writes the samples waiting in memory (a write transaction of its own).
    pub fn flush_sampled_queries(&self) -> Result<()> {
        if !self.shared.sampler.has_pending() {
            return Ok(());
        }
        // The commit writes them.
        self.write(|_| Ok::<(), Error>(()))
    }

    /// The stored samples that have not expired, of one collection or of all, oldest first
    /// (the waiting ones are written first).
    ///
    /// Reading needs no write transaction. A stored sample that does not read is skipped:
    /// one damaged sample does not hide the others.
    pub fn sampled_queries(&self, collection: Option<&str>) -> Result<Vec<SampledQuery>> {
        // The waiting ones are copied while the sampler is locked, and the snapshot is taken
        // before the lock is released: a commit takes waiting samples under that lock, so none
        // is listed twice (one being committed at that moment may be missed by this listing).
        let state = self.shared.sampler.lock();
        let waiting = state.pending.clone();
        let txn = self.shared.redb.begin_read()?;
        drop(state);
        let now = DateTime::now();
        let keep = |sample: &SampledQuery| {
            sample.expire_at > now && collection.is_none_or(|c| c == sample.collection)
        };
        let mut out = Vec::new();
        match txn.open_table(SAMPLED_QUERIES) {
            Ok(table) => {
                for entry in table.iter()? {
                    let (_, value) = entry?;
                    if let Ok(sample) = SampledQuery::from_stored(value.value())
                        && keep(&sample)
                    {
                        out.push(sample);
                    }
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e.into()),
        }
        out.extend(
            waiting
                .iter()
                .filter_map(|bytes| SampledQuery::from_stored(bytes).ok())
                .filter(keep),
        );
        Ok(out)
    }

    /// Changes the bounds of sampling (for tests: the defaults are MongoDB's, and large).
    #[doc(hidden)]
    pub fn set_sampling_limits(&self, limits: SamplingLimits) {
        self.shared.sampler.lock().limits = limits;
    }

    /// What the sampler did since the database was opened.
    pub fn sampler_stats(&self) -> SamplerStats {
        let s = &self.shared.sampler;
        SamplerStats {
            offered: s.offered.load(Ordering::Relaxed),
            sampled: s.sampled.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
        }
    }
}
