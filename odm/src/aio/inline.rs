//! Reads on the embedded engine run on the calling task's thread first, for a slice of time:
//! a get or an indexed find takes microseconds, less than handing it to a worker and back
//! would cost, and it never waits for a lock (a read works on its own snapshot). A read still
//! going when its slice ends is stopped by the engine's interrupt at its next check and runs
//! again, whole, on a worker; it has changed nothing, and its caller sees one answer, from the
//! snapshot of the run that finished.
//!
//! So a read holds the task's thread for at most [`INLINE_SLICE`], plus the decoding of the
//! document in hand when the slice ends (documents are decoded between checks), plus, for a
//! database file whose pages are not in memory, the disk reads of the pages it visits. Writes
//! (which wait for the writer's turn and the disk), streams (which live long), reads with a
//! time limit of their own (whose interrupt is the query's, not the slice's) and everything on
//! the MongoDB back end (the network) always run on a worker.

use std::time::Duration;

use odm_engine::interrupt::Interrupt;

use crate::error::{Error, Result};

use super::pool;

/// How long a read may run on the calling task's thread before it moves to a worker.
pub const INLINE_SLICE: Duration = Duration::from_micros(100);

/// Runs the read `work`: on this thread for a slice when `inline`, else (or when the slice
/// ran out) on a worker.
pub(crate) async fn read<R: Send + 'static>(
    inline: bool,
    work: impl Fn() -> Result<R> + Send + 'static,
) -> Result<R> {
    if inline {
        let slice = Interrupt::within(Some(INLINE_SLICE));
        let first = {
            let _entered = slice.enter();
            work()
        };
        match first {
            // The slice's deadline, the only one this read has: run it where it may take long.
            Err(Error::Engine(odm_engine::Error::TimeLimitExceeded)) => {}
            done => return done,
        }
    }
    pool::run(work).await
}
