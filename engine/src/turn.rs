//! The writer's turn: a database has one writer at a time (redb's write lock), and a writer
//! waits for its turn here, before it asks redb for the lock, so that the wait can end.
//!
//! Rules:
//! - **A wait for the turn is interruptible.** A writer whose operation has an interrupt
//!   entered (`maxTimeMS`, `killOp`; see [`crate::interrupt`]) looks at it at least every
//!   [`LOOK_EVERY`](crate::interrupt::LOOK_EVERY) while it waits (and at its deadline, when
//!   that comes sooner), and fails with its error ([`Error::TimeLimitExceeded`],
//!   [`Error::Interrupted`]) having written nothing. redb's own wait for its lock cannot be
//!   interrupted; behind the turn it only waits for commits of the group commit's syncs,
//!   which take no turn and last one sync.
//! - A writer without an interrupt waits as long as it takes, as before.
//! - The turn is given back when its guard drops, whatever the transaction's outcome
//!   (a panic too), and the next waiter is woken.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::{Error, Result};
use crate::interrupt::Interrupt;

/// A database's one writer's turn.
#[derive(Debug, Default)]
pub(crate) struct Turn {
    taken: Mutex<bool>,
    freed: Condvar,
}

/// The turn, held until dropped.
#[derive(Debug)]
pub(crate) struct Held<'t>(&'t Turn);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        *self.0.lock() = false;
        self.0.freed.notify_one();
    }
}

impl Turn {
    fn lock(&self) -> MutexGuard<'_, bool> {
        self.taken.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for the turn; fails when the current thread's interrupt stops the wait.
    pub(crate) fn take(&self) -> Result<Held<'_>> {
        let interrupt = Interrupt::current();
        let mut taken = self.lock();
        while *taken {
            if let Some(interrupt) = &interrupt {
                interrupt.status().map_err(Error::from)?;
                taken = self
                    .freed
                    .wait_timeout(taken, interrupt.next_look())
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            } else {
                taken = self
                    .freed
                    .wait(taken)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
        // Interrupted just as the turn came: give it to the next waiter instead.
        if let Some(Err(stopped)) = interrupt.as_ref().map(Interrupt::status) {
            drop(taken);
            self.freed.notify_one();
            return Err(Error::from(stopped));
        }
        *taken = true;
        Ok(Held(self))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::Turn;
    use crate::error::Error;
    use crate::interrupt::Interrupt;

    #[test]
    fn a_waiting_writer_stops_at_its_deadline_and_at_its_kill() {
        let turn = Arc::new(Turn::default());
        let held = turn.take().unwrap();
        let waiter = {
            let turn = turn.clone();
            std::thread::spawn(move || {
                let _entered = Interrupt::within(Some(Duration::from_millis(50))).enter();
                let started = Instant::now();
                let outcome = turn.take().map(drop);
                (outcome, started.elapsed())
            })
        };
        let (outcome, waited) = waiter.join().unwrap();
        assert!(
            matches!(outcome, Err(Error::TimeLimitExceeded)),
            "{outcome:?}"
        );
        assert!(waited < Duration::from_secs(2), "waited {waited:?}");
        // A deadline shorter than one look ends the wait at the deadline, not a look later
        // (the shortest of a few waits, so that a busy machine's scheduling does not count).
        let short_waits = (0..5).map(|_| {
            let turn = turn.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                let _entered = Interrupt::within(Some(Duration::from_micros(200))).enter();
                let outcome = turn.take().map(drop);
                assert!(
                    matches!(outcome, Err(Error::TimeLimitExceeded)),
                    "{outcome:?}"
                );
                started.elapsed()
            })
            .join()
            .unwrap()
        });
        let shortest = short_waits.min().unwrap();
        assert!(
            shortest < crate::interrupt::LOOK_EVERY,
            "waited {shortest:?}"
        );
        let kill = Interrupt::new();
        let killed = {
            let (turn, kill) = (turn.clone(), kill.clone());
            std::thread::spawn(move || {
                let _entered = kill.enter();
                turn.take().map(drop)
            })
        };
        std::thread::sleep(Duration::from_millis(30));
        kill.kill();
        assert!(matches!(killed.join().unwrap(), Err(Error::Interrupted)));
        drop(held);
        let _again = turn.take().expect("the turn is free once given back");
    }

    #[test]
    fn the_turn_passes_from_writer_to_writer() {
        let turn = Arc::new(Turn::default());
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let writers: Vec<_> = (0..8)
            .map(|_| {
                let (turn, count) = (turn.clone(), count.clone());
                std::thread::spawn(move || {
                    let _entered = Interrupt::new().enter();
                    for _ in 0..50 {
                        let _held = turn.take().unwrap();
                        let inside = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        assert_eq!(inside, 0, "one writer at a time");
                        count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
    }
}
