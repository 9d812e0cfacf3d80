//! The TTL monitor of `odm serve`, as MongoDB runs one: every `ttlMonitorSleepSecs` (60 by
//! default) a pass deletes the expired documents of every database served, in transactions of
//! at most [`odm_engine::EXPIRY_BATCH`] documents, so that a pass over many expired documents
//! never holds a database's one writer for long. `setParameter` changes the interval and
//! turns the monitor off and on (`ttlMonitorEnabled`); `serverStatus.metrics.ttl` counts its
//! passes, sub-passes (batches) and deleted documents. Each pass also drops the records of
//! retryable writes older than a session lives (see `odm_engine::retryable`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bson::{DateTime, doc};

use super::Shared;

/// MongoDB's default `ttlMonitorSleepSecs`.
pub const DEFAULT_SLEEP_SECS: u64 = 60;

/// How long a retryable write's record is kept: a session unused this long has ended
/// (MongoDB's `logicalSessionTimeoutMinutes`, 30).
const RETRY_RECORD_LIFETIME_MS: i64 = 30 * 60 * 1000;

/// How often the monitor looks at the stop request and its settings while it sleeps.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// The monitor's settings and counters.
#[derive(Debug)]
pub struct Ttl {
    enabled: AtomicBool,
    sleep_secs: AtomicU64,
    passes: AtomicU64,
    sub_passes: AtomicU64,
    deleted: AtomicU64,
}

impl Default for Ttl {
    fn default() -> Ttl {
        Ttl {
            enabled: AtomicBool::new(true),
            sleep_secs: AtomicU64::new(DEFAULT_SLEEP_SECS),
            passes: AtomicU64::new(0),
            sub_passes: AtomicU64::new(0),
            deleted: AtomicU64::new(0),
        }
    }
}

impl Ttl {
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    pub fn sleep_secs(&self) -> u64 {
        self.sleep_secs.load(Ordering::Relaxed)
    }

    /// A new interval; the wait in progress measures against it at once.
    pub fn set_sleep_secs(&self, secs: u64) {
        self.sleep_secs.store(secs, Ordering::Relaxed);
    }

    /// `serverStatus.metrics.ttl`.
    pub fn metrics(&self) -> bson::Document {
        let n = |c: &AtomicU64| i64::try_from(c.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
        doc! {
            "deletedDocuments": n(&self.deleted),
            "passes": n(&self.passes),
            "subPasses": n(&self.sub_passes),
        }
    }
}

/// Starts the monitor's thread; it ends when the server stops.
pub(super) fn start(shared: &Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    let shared = shared.clone();
    std::thread::Builder::new()
        .name("odm-ttl-monitor".into())
        .spawn(move || {
            let mut last = Instant::now();
            while !shared.is_stopping() {
                std::thread::sleep(LOOK_EVERY);
                let interval = Duration::from_secs(shared.ttl.sleep_secs());
                if last.elapsed() < interval {
                    continue;
                }
                last = Instant::now();
                if shared.ttl.enabled() {
                    pass(&shared);
                }
            }
        })
        .ok()
}

/// One pass over every database served. A database that fails (a file that cannot be opened,
/// a pass that errs) is skipped until the next pass; the others are not held back.
fn pass(shared: &Shared) {
    let Ok(names) = shared.storage.names() else {
        return;
    };
    for name in names {
        if shared.is_stopping() {
            return;
        }
        let Ok(Some(db)) = shared.storage.get(&name) else {
            continue;
        };
        if let Ok(expiry) = db.expire_in_batches(DateTime::now()) {
            shared
                .ttl
                .sub_passes
                .fetch_add(expiry.batches, Ordering::Relaxed);
            shared
                .ttl
                .deleted
                .fetch_add(expiry.deleted, Ordering::Relaxed);
        }
        // Retryable writes' records outlive their sessions by no more than a session lives.
        let cutoff =
            DateTime::from_millis(DateTime::now().timestamp_millis() - RETRY_RECORD_LIFETIME_MS);
        let _ = db.write(|t| t.forget_retryable_writes(cutoff));
    }
    shared.ttl.passes.fetch_add(1, Ordering::Relaxed);
}
