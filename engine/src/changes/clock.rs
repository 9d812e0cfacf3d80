//! The cluster time: one clock for the whole process, shared by every database it opens and by
//! `odm serve`'s replies, so that a change's `clusterTime` and a reply's `operationTime` compare.
//!
//! Rules: a time is seconds since the epoch (high 32 bits) and an increment within the second
//! (low 32 bits); each [`tick`] is later than every time handed out before in this process, and
//! opening a database moves the clock past the last change its log holds (`observe`), so
//! times also go forward across restarts.
//!
//! A commit takes its time inside its database's write lock, but commits of different files run
//! side by side: one may take time 5, another 6, and 6 become visible first. A reader that
//! merged several files and moved past 6 would then never see 5. So a commit holds its time in
//! `InFlight` until redb has committed it, and readers go no further than `stable`: the
//! last time before every commit still in flight.
//!
//! The clock also carries the signal that readers waiting for new changes block on
//! (`wait_for_commit`): every commit that recorded changes wakes them, and a waiting reader
//! holds no lock a writer needs.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use bson::Timestamp;

/// The last time handed out; see the module documentation.
static LAST: AtomicU64 = AtomicU64::new(0);

/// Times taken by commits not yet visible to readers.
static IN_FLIGHT: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

/// Counts commits that wrote changes, and wakes readers waiting for one.
static COMMITTED: Mutex<u64> = Mutex::new(0);
static COMMITTED_SIGNAL: Condvar = Condvar::new();

/// A time later than every one handed out before in this process.
pub fn tick() -> Timestamp {
    to_timestamp(tick_u64())
}

fn tick_u64() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        .min(u64::from(u32::MAX));
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = (now << 32).max(last.saturating_add(1));
        match LAST.compare_exchange_weak(last, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// Moves the clock to at least `time`, so that later ticks come after it.
pub(crate) fn observe(time: u64) {
    LAST.fetch_max(time, Ordering::AcqRel);
}

/// The last time handed out (0 before any).
pub fn now() -> Timestamp {
    to_timestamp(LAST.load(Ordering::Acquire))
}

/// The last time before every commit still in flight: a reader that stops there misses
/// nothing that commits later. See the module documentation.
pub(crate) fn stable() -> u64 {
    let in_flight = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
    // Read under the lock: a commit registers its tick under it too, so a time not yet
    // registered is later than this one.
    let last = LAST.load(Ordering::Acquire);
    match in_flight.first() {
        Some(&first) => first - 1,
        None => last,
    }
}

/// A time as a BSON timestamp.
pub fn to_timestamp(time: u64) -> Timestamp {
    Timestamp {
        time: (time >> 32) as u32,
        increment: time as u32,
    }
}

/// A BSON timestamp as a time.
pub fn from_timestamp(t: Timestamp) -> u64 {
    (u64::from(t.time) << 32) | u64::from(t.increment)
}

/// A commit's time, held in flight until dropped (after redb's commit, or its failure).
pub(crate) struct InFlight(u64);

impl InFlight {
    pub(crate) fn take() -> InFlight {
        let mut in_flight = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
        let time = tick_u64();
        in_flight.insert(time);
        InFlight(time)
    }

    pub(crate) fn time(&self) -> u64 {
        self.0
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.0);
        let mut committed = COMMITTED.lock().unwrap_or_else(PoisonError::into_inner);
        *committed += 1;
        COMMITTED_SIGNAL.notify_all();
    }
}

/// The number of commits that wrote changes so far, in any database of this process: pass it
/// to [`wait_for_commit`].
pub fn commits() -> u64 {
    *COMMITTED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits until a commit that wrote changes ends after `seen` ([`commits`]) or `timeout` passes;
/// returns whether one did. Waiting readers hold no lock that a writer needs.
pub fn wait_for_commit(seen: u64, timeout: Duration) -> bool {
    let committed = COMMITTED.lock().unwrap_or_else(PoisonError::into_inner);
    let (committed, _) = COMMITTED_SIGNAL
        .wait_timeout_while(committed, timeout, |n| *n == seen)
        .unwrap_or_else(PoisonError::into_inner);
    *committed != seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_only_go_forward() {
        let mut before = tick();
        for _ in 0..10_000 {
            let next = tick();
            assert!((next.time, next.increment) > (before.time, before.increment));
            before = next;
        }
    }

    #[test]
    fn stable_stays_before_a_commit_in_flight() {
        let held = InFlight::take();
        assert!(stable() < held.time());
        let later = tick_u64();
        assert!(
            stable() < held.time(),
            "a later tick does not pass a commit in flight"
        );
        assert!(later > held.time());
    }

    #[test]
    fn observing_a_later_time_moves_the_clock() {
        let far = tick_u64() + (10 << 32);
        observe(far);
        assert!(tick_u64() > far);
    }
}
