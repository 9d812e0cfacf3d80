//! Reads on the embedded engine run on the calling task's thread first, for a slice of time:
//! a get or an indexed find takes microseconds, less than handing it to a worker and back
//! would cost, and it never waits for a lock (a read works on its own snapshot). A read still
//! going when its slice ends is stopped by the engine's interrupt at its next check and runs
//! again, whole, on a worker; it has changed nothing, and its caller sees one answer, from the
//! snapshot of the run that finished.
//!
//! One kind of write runs the same way: a single document's insert on the embedded engine
//! with eventual durability (no disk sync), into a collection already synced for the model
//! (no index to build), of a value without lifecycle hooks (whose code could run twice). Its
//! work is bounded by the one document; the writer's turn, which another transaction may hold
//! for long, is waited for under the slice's deadline, and an insert stopped there (or by a
//! validator's expression) aborted its transaction, wrote nothing, and runs again on a worker.
//! (Past the turn, redb's own lock may still wait for one disk sync of a durable writer's
//! group commit.)
//!
//! So a read holds the task's thread for at most [`INLINE_SLICE`], plus the decoding of the
//! document in hand when the slice ends (documents are decoded between checks), plus, for a
//! database file whose pages are not in memory, the disk reads of the pages it visits. Other
//! writes (which may wait for the disk, or run long with no point to stop at), streams
//! (which live long), reads with a time limit of their own (whose interrupt is the query's,
//! not the slice's) and everything on the MongoDB back end (the network) always run on a
//! worker.

use std::time::Duration;

use odm_engine::interrupt::Interrupt;

use crate::error::{Error, Result};

use super::pool;

/// How long a read (or an insert) may run on the calling task's thread before it moves to a
/// worker.
pub const INLINE_SLICE: Duration = Duration::from_micros(100);

/// Runs the read `work`: on this thread for a slice when `inline`, else (or when the slice
/// ran out) on a worker.
pub(crate) async fn read<R: Send + 'static>(
    inline: bool,
    work: impl Fn() -> Result<R> + Send + 'static,
) -> Result<R> {
    if inline && let Some(done) = attempt(&work) {
        return done;
    }
    pool::run(work).await
}

/// Runs `work` on this thread under the slice's deadline: its outcome, or `None` when the
/// deadline stopped it, the only deadline it has, so that it changed nothing and is to run
/// again on a worker.
pub(crate) fn attempt<R>(work: impl FnOnce() -> Result<R>) -> Option<Result<R>> {
    let slice = Interrupt::within(Some(INLINE_SLICE));
    let outcome = {
        let _entered = slice.enter();
        work()
    };
    match outcome {
        Err(Error::Engine(odm_engine::Error::TimeLimitExceeded)) => None,
        done => Some(done),
    }
}
