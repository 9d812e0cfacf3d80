//! Where the async API does the engine's blocking work: a fixed pool of worker threads for
//! single operations, and a reader thread per open stream.
//!
//! The pool is the process's own, made at first use: twice the machine's cores, at least
//! four, so that a durable commit waiting on the disk does not hold up every other task. Its
//! threads carry [`QUERY_THREAD_STACK_BYTES`] of stack, which deeply nested documents need
//! (tokio's own blocking threads are smaller). However many tasks call at once, at most that
//! many operations run; the rest wait in the queue without a thread each.
//!
//! A stream's producer runs on a thread of its own instead: it blocks whenever its reader is
//! slow, and a pool worker blocked that way could starve the very task that would drain it.
//!
//! Cancellation: an operation whose future is dropped before a worker takes it is never run;
//! one already running finishes (every operation is short and atomic) and its result is
//! discarded. A stream dropped stops its producer at the next result, which releases the
//! snapshot it held.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::Thread;

use crate::cursor::spawn_query_thread;
use crate::error::Result;

type Job = Box<dyn FnOnce() + Send>;

/// The workers' queue, and the workers waiting for a job, the last to wait on top: a job goes
/// to the worker that finished most recently, whose caches (the CPU's, the engine's per
/// thread) are warm, rather than round the pool.
struct Pool {
    state: Mutex<State>,
    workers: usize,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    /// Idle workers by number, most recently idle last.
    idle: Vec<(usize, Thread)>,
}

/// How many workers the pool runs on this machine.
pub fn pool_size() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    (2 * cores).max(4)
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut pool = Pool {
            state: Mutex::new(State::default()),
            workers: 0,
        };
        pool.workers = (0..pool_size())
            .filter(|&n| spawn_worker(n).is_ok())
            .count();
        pool
    })
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `job` and wakes the most recently idle worker, if one waits.
    fn submit(&self, job: Job) {
        let woken = {
            let mut state = self.lock();
            state.jobs.push_back(job);
            state.idle.pop()
        };
        if let Some((_, worker)) = woken {
            worker.unpark();
        }
    }

    /// The next job for worker `n`, waiting (parked) while there is none.
    fn next_job(&self, n: usize) -> Job {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                // Woken by a submit, or found the job before sleeping: no longer idle.
                state.idle.retain(|(id, _)| *id != n);
                return job;
            }
            if !state.idle.iter().any(|(id, _)| *id == n) {
                state.idle.push((n, std::thread::current()));
            }
            drop(state);
            // An unpark that came before this call makes it return at once.
            std::thread::park();
            state = self.lock();
        }
    }
}

fn spawn_worker(n: usize) -> Result<()> {
    spawn_query_thread("async", move || {
        // The pool is made before its workers take jobs: `get` waits for its init.
        let pool = pool();
        loop {
            (pool.next_job(n))();
        }
    })
    .map(drop)
}

fn no_thread(what: &'static str, source: std::io::Error) -> crate::Error {
    odm_engine::Error::ThreadUnavailable { what, source }.into()
}

/// Runs `work`, any sync code, on a worker of the pool and waits for its result without
/// blocking the caller's thread: how the async API runs each operation, and how code built on
/// the sync API (a pattern's operation) becomes async. A panic in `work` goes on in the
/// caller, as it would have in a blocking call.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let sum = odm::aio::run(|| Ok::<_, odm::Error>((1..=100).sum::<u32>())).await;
/// assert_eq!(sum.unwrap(), 5050);
/// # }
/// ```
pub async fn run<R: Send + 'static, E: From<crate::Error> + Send + 'static>(
    work: impl FnOnce() -> Result<R, E> + Send + 'static,
) -> Result<R, E> {
    let pool = pool();
    if pool.workers == 0 {
        return Err(no_thread(
            "async worker",
            std::io::Error::other("no worker thread could be started"),
        )
        .into());
    }
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        // Dropped before it ran: nobody waits for the result, so the work is not done.
        if sender.is_closed() {
            return;
        }
        let _ = sender.send(catch_unwind(AssertUnwindSafe(work)));
    });
    pool.submit(job);
    match receiver.await {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => resume_unwind(panic),
        // A job is always answered or dropped with its sender only after a panic that
        // `catch_unwind` could not catch (an abort would not return here).
        Err(_) => Err(no_thread(
            "async worker",
            std::io::Error::other("the worker stopped before answering"),
        )
        .into()),
    }
}
