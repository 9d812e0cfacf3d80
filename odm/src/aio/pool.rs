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

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use odm_engine::QUERY_THREAD_STACK_BYTES;

use crate::error::Result;

type Job = Box<dyn FnOnce() + Send>;

/// The workers' queue.
struct Pool {
    jobs: Sender<Job>,
    workers: usize,
}

/// How many workers the pool runs on this machine.
pub fn pool_size() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    (2 * cores).max(4)
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let workers = (0..pool_size())
            .filter(|n| spawn_worker(*n, Arc::clone(&queue)).is_ok())
            .count();
        Pool { jobs, workers }
    })
}

fn spawn_worker(n: usize, queue: Arc<Mutex<Receiver<Job>>>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(format!("odm-async-{n}"))
        .stack_size(QUERY_THREAD_STACK_BYTES)
        .spawn(move || {
            loop {
                // The lock is held only to take a job, never while running one.
                let job = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                match job {
                    Ok(job) => job(),
                    Err(_) => return,
                }
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
    if pool.jobs.send(job).is_err() {
        return Err(no_thread(
            "async worker",
            std::io::Error::other("the worker pool has stopped"),
        )
        .into());
    }
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

/// Runs `body` on a thread of its own with the engine's query stack.
pub(crate) fn spawn_thread(what: &'static str, body: impl FnOnce() + Send + 'static) -> Result<()> {
    std::thread::Builder::new()
        .name(format!("odm-{what}"))
        .stack_size(QUERY_THREAD_STACK_BYTES)
        .spawn(body)
        .map(drop)
        .map_err(|source| no_thread(what, source))
}
