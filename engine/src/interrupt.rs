//! Stopping work: one operation's time limit (MongoDB's `maxTimeMS`) and its kill (`killOp`,
//! `killSessions`), as one [`Interrupt`].
//!
//! An [`Interrupt`] is a deadline and a kill flag shared by its clones; whoever runs the
//! operation holds one, whoever stops it (the server's `killOp`) holds another. It reaches the
//! loops through the thread that runs them: [`Interrupt::enter`] installs it on the current
//! thread for as long as the returned guard lives, and every loop that can run long (candidate
//! scans, the buffering of `$sort` and `$group`, accumulators, `$map`, `$filter`, `$reduce`,
//! `$range`) calls [`check`], which fails with [`Interrupted`] once the deadline has passed or
//! the operation was killed. A query runs on the thread that pulls its results, so the cursors
//! of `find` and `aggregate` enter the interrupt of their options for each pull: work done
//! between pulls belongs to nobody and is never interrupted.
//!
//! Rules: [`check`] is cheap, so a loop may call it at every step. It counts calls on its
//! thread and looks at the flag and the clock once every `period` calls (a clock read costs
//! some tens of nanoseconds); the period adapts to the work between looks, so that time, not
//! a count, bounds how late a stop is seen: it starts at one call, doubles while looks come
//! less than [`QUICK_LOOKS`] apart (up to [`CHECK_EVERY`]), and falls back to one as soon as
//! two looks are more than [`SLOW_LOOKS`] apart (a step that takes long, such as a `$reduce`
//! whose value doubles at each step, is looked at after each step). The counter is shared by
//! every loop of the thread, so nested loops still reach a real check within a period of inner
//! steps. A thread with no interrupt entered is never interrupted. A failed check leaves
//! nothing behind: a write fails inside its transaction, which is then aborted.
//!
//! An interrupt also counts the operation's work for whoever reports on it (the profiler,
//! `currentOp`): the index keys and documents its query plans examined (`note_examined`, at
//! each candidate) and the summary of the last plan it chose (`note_plan`). Work done with no
//! interrupt entered is counted by nobody.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

pub use crate::error::Interrupted;

/// The most calls of [`check`] a thread makes between two looks at the flag and the clock.
pub const CHECK_EVERY: u32 = 64;

/// Looks closer together than this mean the steps are quick: the period doubles.
pub const QUICK_LOOKS: Duration = Duration::from_micros(50);

/// Looks further apart than this mean the steps are slow: the period falls back to one call.
pub const SLOW_LOOKS: Duration = Duration::from_millis(1);

/// How often a wait that can be interrupted (for the writer's turn, for a transaction's
/// thread) looks at its interrupt, and so at most how late it sees it.
pub const LOOK_EVERY: Duration = Duration::from_millis(10);

/// The state's value once killed (0 while running).
const KILLED: u8 = 1;

/// One operation's deadline and kill flag; clones share the flag and the counts of work.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    deadline: Option<Instant>,
    state: Arc<State>,
}

/// What clones of an interrupt share.
#[derive(Debug, Default)]
struct State {
    /// 0 while running, [`KILLED`] once killed.
    flag: AtomicU8,
    keys_examined: AtomicU64,
    docs_examined: AtomicU64,
    plan: Mutex<Option<String>>,
}

impl Interrupt {
    /// An interrupt with no deadline, stopped only by [`Interrupt::kill`].
    #[must_use]
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// An interrupt whose operation must end by `deadline`.
    #[must_use]
    pub fn with_deadline(deadline: Instant) -> Interrupt {
        Interrupt {
            deadline: Some(deadline),
            state: Arc::default(),
        }
    }

    /// An interrupt whose operation must end within `limit` from now; `None` for no limit.
    #[must_use]
    pub fn within(limit: Option<Duration>) -> Interrupt {
        match limit.and_then(|l| Instant::now().checked_add(l)) {
            Some(deadline) => Interrupt::with_deadline(deadline),
            None => Interrupt::new(),
        }
    }

    /// The same kill flag with another deadline (a cursor's `getMore` running on its
    /// remaining time).
    #[must_use]
    pub fn until(&self, deadline: Option<Instant>) -> Interrupt {
        Interrupt {
            deadline,
            state: self.state.clone(),
        }
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Time left before the deadline (zero once past); `None` without a deadline.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// How long a wait under this interrupt may sleep before it looks again: [`LOOK_EVERY`],
    /// or less when the deadline comes sooner, so that a short deadline (the async API's
    /// slice of a task's thread) ends the wait on time rather than up to `LOOK_EVERY` late.
    pub fn next_look(&self) -> Duration {
        self.remaining()
            .map_or(LOOK_EVERY, |left| left.min(LOOK_EVERY))
    }

    /// Marks the operation killed: its next real check fails with [`Interrupted::Killed`].
    pub fn kill(&self) {
        self.state.flag.store(KILLED, Ordering::Release);
    }

    pub fn is_killed(&self) -> bool {
        self.state.flag.load(Ordering::Acquire) == KILLED
    }

    /// The index keys and the documents the operation's plans have examined so far.
    pub fn examined(&self) -> (u64, u64) {
        (
            self.state.keys_examined.load(Ordering::Relaxed),
            self.state.docs_examined.load(Ordering::Relaxed),
        )
    }

    /// The summary of the last plan the operation chose (`COLLSCAN`, `IXSCAN { a: 1 }`).
    pub fn plan_summary(&self) -> Option<String> {
        self.state
            .plan
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether the operation must stop now, looking at the flag and the clock.
    pub fn status(&self) -> Result<(), Interrupted> {
        if self.is_killed() {
            return Err(Interrupted::Killed);
        }
        match self.deadline {
            Some(deadline) if Instant::now() >= deadline => Err(Interrupted::TimeLimit),
            _ => Ok(()),
        }
    }

    /// Installs this interrupt on the current thread until the guard drops (the one installed
    /// before comes back then).
    #[must_use = "the interrupt is installed only while the guard lives"]
    pub fn enter(&self) -> Entered {
        let previous = CURRENT.with_borrow_mut(|c| c.replace(self.clone()));
        Entered {
            previous,
            _not_send: PhantomData,
        }
    }

    /// The interrupt installed on the current thread, if any.
    pub fn current() -> Option<Interrupt> {
        CURRENT.with_borrow(Clone::clone)
    }
}

/// While it lives, an [`Interrupt`] is the current thread's (see [`Interrupt::enter`]).
#[derive(Debug)]
pub struct Entered {
    previous: Option<Interrupt>,
    /// The guard restores the thread it was made on.
    _not_send: PhantomData<std::rc::Rc<()>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with_borrow_mut(|c| *c = previous);
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Interrupt>> = const { RefCell::new(None) };
    /// Calls since the last look, the calls between looks, and when the last look was.
    static CALLS: Cell<u32> = const { Cell::new(0) };
    static PERIOD: Cell<u32> = const { Cell::new(1) };
    static LAST_LOOK: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Fails once the current thread's operation is past its deadline or killed; looks at them
/// once a period of calls, the period adapting to the time between looks (see the module
/// documentation).
pub fn check() -> Result<(), Interrupted> {
    let calls = CALLS.get() + 1;
    if calls < PERIOD.get() {
        CALLS.set(calls);
        return Ok(());
    }
    CALLS.set(0);
    let now = Instant::now();
    let since = LAST_LOOK
        .get()
        .map(|last| now.saturating_duration_since(last));
    LAST_LOOK.set(Some(now));
    PERIOD.set(match since {
        Some(since) if since < QUICK_LOOKS => (PERIOD.get() * 2).min(CHECK_EVERY),
        Some(since) if since <= SLOW_LOOKS => PERIOD.get(),
        _ => 1,
    });
    check_now()
}

/// [`check`] looking at the flag and the clock now (before a step that cannot be
/// interrupted, or between batches).
pub fn check_now() -> Result<(), Interrupted> {
    CURRENT.with_borrow(|c| c.as_ref().map_or(Ok(()), Interrupt::status))
}

/// Adds to the current operation's counts of examined index keys and documents.
pub(crate) fn note_examined(keys: u64, docs: u64) {
    CURRENT.with_borrow(|c| {
        if let Some(interrupt) = c {
            interrupt
                .state
                .keys_examined
                .fetch_add(keys, Ordering::Relaxed);
            interrupt
                .state
                .docs_examined
                .fetch_add(docs, Ordering::Relaxed);
        }
    });
}

/// Records the plan the current operation chose; `summary` runs only when there is one.
pub(crate) fn note_plan(summary: impl FnOnce() -> String) {
    CURRENT.with_borrow(|c| {
        if let Some(interrupt) = c {
            *interrupt
                .state
                .plan
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(summary());
        }
    });
}

/// An iterator whose every pull runs with `interrupt` entered, and that fails (once, then
/// ends) when the interrupt stops it between two items.
pub(crate) struct Interruptible<I> {
    inner: I,
    interrupt: Interrupt,
    failed: bool,
}

impl<I> Interruptible<I> {
    pub(crate) fn new(inner: I, interrupt: Interrupt) -> Self {
        Interruptible {
            inner,
            interrupt,
            failed: false,
        }
    }
}

impl<T, E: From<Interrupted>, I: Iterator<Item = Result<T, E>>> Iterator for Interruptible<I> {
    type Item = Result<T, E>;

    fn next(&mut self) -> Option<Result<T, E>> {
        if self.failed {
            return None;
        }
        let _entered = self.interrupt.enter();
        let next = match check_now() {
            Ok(()) => self.inner.next(),
            Err(e) => Some(Err(e.into())),
        };
        self.failed = matches!(next, Some(Err(_)));
        next
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{CHECK_EVERY, Interrupt, Interrupted, check, check_now};

    #[test]
    fn a_thread_without_an_interrupt_is_never_stopped() {
        for _ in 0..CHECK_EVERY * 2 {
            assert!(check().is_ok());
        }
        assert!(check_now().is_ok());
    }

    #[test]
    fn a_kill_is_seen_within_check_every_calls_and_only_while_entered() {
        let interrupt = Interrupt::new();
        let other = interrupt.clone();
        {
            let _entered = interrupt.enter();
            other.kill();
            let failed = (0..CHECK_EVERY).find_map(|_| check().err());
            assert_eq!(failed, Some(Interrupted::Killed));
        }
        assert!(check_now().is_ok(), "the guard took the interrupt away");
    }

    /// After thousands of quick steps (the period at its most), steps that each take longer
    /// than `SLOW_LOOKS` are looked at again within a period, then after every step: a kill
    /// made during the third slow step is seen by the end of a step, not 64 slow steps on.
    #[test]
    fn slow_steps_are_looked_at_after_each_step() {
        let interrupt = Interrupt::new();
        let other = interrupt.clone();
        let _entered = interrupt.enter();
        for _ in 0..10_000 {
            check().unwrap();
        }
        let slow_step = || std::thread::sleep(super::SLOW_LOOKS * 2);
        // At most one period of slow steps before the next look, which then resets it.
        for _ in 0..CHECK_EVERY {
            slow_step();
            check().unwrap();
        }
        slow_step();
        check().unwrap();
        other.kill();
        slow_step();
        assert_eq!(check(), Err(Interrupted::Killed));
    }

    #[test]
    fn a_past_deadline_fails_with_the_time_limit_and_nesting_restores_the_outer() {
        let outer = Interrupt::with_deadline(Instant::now());
        let _outer = outer.enter();
        assert_eq!(check_now(), Err(Interrupted::TimeLimit));
        {
            let _inner = Interrupt::within(None).enter();
            assert!(check_now().is_ok());
        }
        assert_eq!(check_now(), Err(Interrupted::TimeLimit));
        assert_eq!(
            Interrupt::within(Some(Duration::from_mins(1))).status(),
            Ok(())
        );
    }
}
