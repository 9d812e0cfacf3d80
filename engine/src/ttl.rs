//! TTL indexes: documents expire once the date in the indexed field is older than the index's
//! `expire_after`.
//!
//! As in MongoDB: a document whose field is an array of dates expires by the earliest date; a
//! document whose field is not a date (or is missing) never expires. Expiry deletes the document
//! and all its index entries in one transaction, like any delete. [`Database::expire`] runs one
//! pass against a given clock reading; [`TtlMonitor`] runs passes in a background thread.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use bson::{DateTime, RawBsonRef};

use crate::db::{Database, WriteTxn};
use crate::error::{Error, Result};
use crate::index_store::IndexTablesMut;
use crate::keys::{self, Direction};
use crate::order::Bracket;

/// The most documents one expiry transaction deletes: a pass over many expired documents
/// commits in batches, so that it never holds the one writer for long.
pub const EXPIRY_BATCH: usize = 1_000;

impl Database {
    /// Deletes every document whose TTL has passed at `now`, [`EXPIRY_BATCH`] at a time, each
    /// batch in a transaction of its own; returns how many.
    pub fn expire(&self, now: DateTime) -> Result<u64> {
        Ok(self.expire_in_batches(now)?.deleted)
    }

    /// [`Database::expire`], with how many batches it took.
    pub fn expire_in_batches(&self, now: DateTime) -> Result<Expiry> {
        let mut expiry = Expiry::default();
        loop {
            let (found, deleted) = self.write(|txn| txn.expire_at_most(now, EXPIRY_BATCH))?;
            expiry.batches += 1;
            expiry.deleted += deleted;
            if found < EXPIRY_BATCH {
                return Ok(expiry);
            }
        }
    }

    /// Starts a background thread that runs [`Database::expire`] every `interval` (MongoDB's
    /// default is 60 seconds: [`TtlMonitor::DEFAULT_INTERVAL`]). The thread stops when the
    /// returned handle is dropped.
    pub fn start_ttl_monitor(&self, interval: Duration) -> TtlMonitor {
        self.start_ttl_monitor_with_clock(interval, DateTime::now)
    }

    /// [`Database::start_ttl_monitor`] with an injected clock, for tests.
    pub fn start_ttl_monitor_with_clock(
        &self,
        interval: Duration,
        clock: impl Fn() -> DateTime + Send + 'static,
    ) -> TtlMonitor {
        let state = Arc::new(MonitorState::default());
        let db = self.clone();
        let thread_state = state.clone();
        let handle = std::thread::spawn(move || {
            let mut stopped = thread_state
                .stop
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            loop {
                // A stop asked before this thread first took the lock finds no waiter to wake:
                // the flag is checked before waiting too, or the drop would wait an interval.
                if *stopped {
                    return;
                }
                let (guard, _) = thread_state
                    .wake
                    .wait_timeout(stopped, interval)
                    .unwrap_or_else(PoisonError::into_inner);
                stopped = guard;
                if *stopped {
                    return;
                }
                let outcome = db.expire(clock());
                let mut stats = thread_state
                    .stats
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                stats.passes += 1;
                match outcome {
                    Ok(n) => stats.expired += n,
                    Err(e) => stats.last_error = Some(e.to_string()),
                }
            }
        });
        TtlMonitor {
            state,
            handle: Some(handle),
        }
    }
}

/// What one expiry pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    pub deleted: u64,
    /// The transactions it took (MongoDB's TTL `subPasses`).
    pub batches: u64,
}

impl WriteTxn<'_> {
    /// One whole expiry pass inside this transaction.
    pub fn expire(&mut self, now: DateTime) -> Result<u64> {
        Ok(self.expire_at_most(now, usize::MAX)?.1)
    }

    /// Deletes up to `limit` of the documents whose TTL has passed at `now`: how many expired
    /// documents it found (at most `limit`) and how many it deleted.
    fn expire_at_most(&mut self, now: DateTime, limit: usize) -> Result<(usize, u64)> {
        self.flush_index_writes()?;
        let mut doomed: Vec<(String, BTreeSet<Vec<u8>>)> = Vec::new();
        let mut found = 0;
        for meta in self.catalog.collections.values() {
            if found >= limit {
                break;
            }
            let mut ids = BTreeSet::new();
            for index in &meta.indexes {
                let Some(after) = index.spec.ttl() else {
                    continue;
                };
                let cutoff = DateTime::from_millis(
                    now.timestamp_millis()
                        .saturating_sub(i64::try_from(after.as_millis()).unwrap_or(i64::MAX)),
                );
                let direction = index.spec.keys()[0].1;
                let tables = IndexTablesMut::open(&self.tables, meta.id, index.id)?;
                let (lower, upper) = expired_range(cutoff, direction);
                let range = tables.range(
                    lower.as_ref().map(Vec::as_slice),
                    upper.as_ref().map(Vec::as_slice),
                )?;
                for row in range {
                    if found + ids.len() >= limit {
                        break;
                    }
                    let (key, value) = row?;
                    let id = crate::read::entry_id(index, key.value(), value.value(), 0, 0)
                        .ok_or_else(|| {
                            Error::corrupt(
                                format!("index `{}` of `{}`", index.spec.name(), meta.name),
                                "an entry is not a well-formed key",
                            )
                        })?;
                    ids.insert(id.to_vec());
                }
                tables.put_back(&self.tables);
            }
            if !ids.is_empty() {
                found += ids.len();
                doomed.push((meta.name.clone(), ids));
            }
        }
        let mut expired = 0;
        for (collection, ids) in doomed {
            for id in ids {
                if self.delete_by_key(&collection, &id)?.is_some() {
                    expired += 1;
                }
            }
        }
        Ok((found, expired))
    }
}

/// The range of index keys holding dates before `cutoff`, in the index's direction.
fn expired_range(cutoff: DateTime, direction: Direction) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let date_tag = keys::bracket_tag(Bracket::Date);
    let mut cutoff_key = Vec::new();
    keys::encode_into(&mut cutoff_key, RawBsonRef::DateTime(cutoff), direction);
    match direction {
        // Dates ascend from the tag up to the cutoff; entries at the cutoff (with their `_id`
        // suffix) sort after it and are kept.
        Direction::Ascending => (Bound::Included(vec![date_tag]), Bound::Excluded(cutoff_key)),
        // Inverted: earlier dates sort later, up to the end of the inverted date tag.
        Direction::Descending => (
            keys::prefix_successor(&cutoff_key).map_or(Bound::Unbounded, Bound::Included),
            keys::prefix_successor(&[!date_tag]).map_or(Bound::Unbounded, Bound::Excluded),
        ),
    }
}

/// The background TTL thread; dropping it stops the thread and waits for it.
#[derive(Debug)]
pub struct TtlMonitor {
    state: Arc<MonitorState>,
    handle: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct MonitorState {
    stop: Mutex<bool>,
    wake: Condvar,
    stats: Mutex<TtlStats>,
}

/// What the monitor has done so far.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TtlStats {
    pub passes: u64,
    pub expired: u64,
    /// The message of the latest failed pass; the monitor keeps running after a failure.
    pub last_error: Option<String>,
}

impl TtlMonitor {
    /// MongoDB's TTL monitor interval.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_mins(1);

    pub fn stats(&self) -> TtlStats {
        self.state
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for TtlMonitor {
    fn drop(&mut self) {
        *self
            .state
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.state.wake.notify_all();
        if let Some(handle) = self.handle.take() {
            // A panicked monitor thread has nothing left to clean up.
            let _ = handle.join();
        }
    }
}
