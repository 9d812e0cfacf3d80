//! Group commit: concurrent writers that each need a durable commit share one disk sync.
//!
//! A durable commit in redb writes its pages and syncs the file (one `fdatasync`, about as
//! long as the rest of a small transaction together). When several threads write at once,
//! each transaction commits in turn without the sync (redb's `Durability::None`: visible at
//! once, lost whole in a crash until a later durable commit), then waits until a durable
//! commit covers it. One of the waiters (the leader) makes that durable commit, an empty
//! transaction whose sync persists every commit before it, and wakes the others; a writer
//! arriving meanwhile waits for the next one. redb holds its write lock through a sync, so
//! the leader first waits (at most 2 ms) for the writers already inside a
//! transaction to commit: then one sync covers them all. So N concurrent writers pay for
//! about one sync per round instead of N.
//!
//! Rules:
//! - A writer returns from a durable write only once a sync covers its commit, as without
//!   group commit; each transaction still succeeds or fails on its own (its own redb
//!   transaction), and a failed sync is reported to every writer it would have covered.
//! - A writer alone (no other thread inside a write) commits durably at once: waiting for a
//!   second commit would only add one.
//! - Other threads may read a commit before its sync returns, as MongoDB readers see a write
//!   before its journal is flushed; a crash then loses it, and its writer never saw success.
//!   A failed sync reports an error for a commit others may already have read (and a later
//!   sync may yet persist): as with any storage error, the writer cannot know whether its
//!   write is on disk, and a retry must be safe to apply twice.
//! - A grouped writer takes redb's write lock again after its commit (to sync). A write
//!   closure on another thread that waits for this writer's `write` call to return would wait
//!   forever; without other writers the commit is durable at once, as before.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

use crate::error::Result;

/// The shared state of a database's group commits.
#[derive(Debug, Default)]
pub(crate) struct GroupCommit {
    /// Threads inside a write transaction (waiting for it, running it or committing it).
    writers: AtomicUsize,
    state: Mutex<State>,
    synced: Condvar,
}

/// How long a leader waits for writers inside a transaction to commit before it syncs.
const GATHER: std::time::Duration = std::time::Duration::from_millis(2);

#[derive(Debug, Default)]
struct State {
    /// Threads inside a write that have not committed (or ended) yet.
    uncommitted: usize,
    /// The number of the latest commit made without a sync.
    issued: u64,
    /// Every commit numbered up to this one is on disk.
    durable: u64,
    /// Whether a leader is making a durable commit now.
    syncing: bool,
}

/// Ends a leader's turn when dropped: clears `syncing` and wakes the waiters.
struct Leading<'g>(&'g GroupCommit);

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        self.0.lock().syncing = false;
        self.0.synced.notify_all();
    }
}

/// Counts a thread inside a write while it lives, and as uncommitted until
/// [`Writing::committed`].
pub(crate) struct Writing<'g> {
    group: &'g GroupCommit,
    committed: bool,
}

impl Writing<'_> {
    /// The transaction has committed (or given up): a leader need not wait for it.
    pub(crate) fn committed(&mut self) {
        if !self.committed {
            self.committed = true;
            self.group.lock().uncommitted -= 1;
            self.group.synced.notify_all();
        }
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.committed();
        self.group.writers.fetch_sub(1, Ordering::SeqCst);
    }
}

impl GroupCommit {
    /// Marks this thread as writing until the guard drops.
    pub(crate) fn enter(&self) -> Writing<'_> {
        self.writers.fetch_add(1, Ordering::SeqCst);
        self.lock().uncommitted += 1;
        Writing {
            group: self,
            committed: false,
        }
    }

    /// Whether a durable commit made now should join a group: another thread is writing.
    pub(crate) fn contended(&self) -> bool {
        self.writers.load(Ordering::SeqCst) > 1
    }

    /// Numbers a commit about to be made without a sync. Called while holding redb's write
    /// lock, so numbers follow commit order.
    pub(crate) fn issue(&self) -> u64 {
        let mut state = self.lock();
        state.issued += 1;
        state.issued
    }

    /// Returns once commit `number` is on disk, making the durable commit itself when no
    /// other thread is: `sync` begins a write transaction (waiting for redb's write lock, so
    /// every commit numbered before it has finished), calls `before_commit` with it, and
    /// commits it durably.
    pub(crate) fn wait_durable(
        &self,
        number: u64,
        sync: impl Fn(&dyn Fn()) -> Result<()>,
    ) -> Result<()> {
        let mut state = self.lock();
        loop {
            if state.durable >= number {
                return Ok(());
            }
            if state.syncing {
                state = self
                    .synced
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            state.syncing = true;
            // However the sync ends (a panic included), the next waiter may lead.
            let leading = Leading(self);
            // Let the writers already inside a transaction commit first, so that this sync
            // covers them too (they cannot commit while it holds redb's write lock).
            let deadline = std::time::Instant::now() + GATHER;
            while state.uncommitted > 0 {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                state = self
                    .synced
                    .wait_timeout(state, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            drop(state);
            // Read under redb's write lock: the commits issued so far are all complete.
            let through = std::cell::Cell::new(0);
            let outcome = sync(&|| through.set(self.lock().issued));
            state = self.lock();
            if outcome.is_ok() {
                state.durable = state.durable.max(through.get());
            }
            drop(state);
            drop(leading);
            // A failed sync is this writer's error; the others try again themselves.
            outcome?;
            state = self.lock();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::GroupCommit;

    /// A leader whose sync panics hands the lead on: the next writer waiting for the same
    /// commit leads a sync of its own instead of waiting forever.
    #[test]
    fn a_panicking_leader_hands_the_lead_on() {
        let group = std::sync::Arc::new(GroupCommit::default());
        let number = group.issue();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            group.wait_durable(number, |_| panic!("the sync panics"))
        }));
        assert!(panicked.is_err());
        let (done, finished) = mpsc::channel();
        let next = group.clone();
        std::thread::spawn(move || {
            let outcome = next.wait_durable(number, |lock_taken| {
                lock_taken();
                Ok(())
            });
            let _ = done.send(outcome.is_ok());
        });
        assert_eq!(
            finished.recv_timeout(Duration::from_secs(10)),
            Ok(true),
            "the next writer did not lead a sync"
        );
    }
}
