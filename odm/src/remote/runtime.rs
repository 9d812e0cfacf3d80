//! Where the MongoDB back end's futures run: the tokio runtime its driver client was made on.
//!
//! The back end talks to the server through the driver's async client only. A client made
//! by `odm::aio::Database::connect` lives on the caller's
//! runtime: the async API awaits its futures there, and no runtime of the project's starts.
//! A client made by the sync [`crate::Database::connect`] lives on a runtime of the project's
//! own ([`Runtime::own`], made at the first such connect, as the driver's own sync API makes
//! one).
//!
//! The sync API blocks on a future with [`Runtime::wait`], by where the calling thread is:
//! - outside any runtime (a plain thread, the async API's pool workers): blocks right there,
//!   the client's runtime driving the network for it;
//! - on a thread of a multi-thread runtime: the same inside `block_in_place`, so that the
//!   runtime moves its other tasks off this thread first;
//! - on a current-thread runtime, with the project's runtime: on a scoped thread;
//! - on a current-thread runtime, with a client of the caller's runtime: refused with
//!   [`Error::SyncCallInRuntime`]. That runtime may be this very thread, which would then
//!   wait for itself.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Handle, RuntimeFlavor};

use crate::error::{Error, Result};

/// The runtime of one client, and whether it is the project's own.
#[derive(Clone, Debug)]
pub(crate) struct Runtime {
    handle: Handle,
    own: bool,
}

/// The worker threads of the project's own runtime: the driver's background tasks (server
/// monitors, the connection pool) and the network's readiness; the operations themselves are
/// polled on the threads that wait for them.
const OWN_WORKERS: usize = 2;

impl Runtime {
    /// The project's own runtime, made at first use.
    pub(crate) fn own() -> Result<Runtime> {
        static OWN: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
            OnceLock::new();
        let made = OWN.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(OWN_WORKERS)
                .thread_name("odm-mongodb")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        });
        match made {
            Ok(runtime) => Ok(Runtime {
                handle: runtime.handle().clone(),
                own: true,
            }),
            Err(reason) => Err(Error::Driver {
                reason: format!("cannot start the runtime the MongoDB driver runs on: {reason}"),
                transient: false,
            }),
        }
    }

    /// The runtime of the calling task.
    #[cfg(feature = "async")]
    pub(crate) fn current() -> Result<Runtime> {
        match Handle::try_current() {
            Ok(handle) => Ok(Runtime { handle, own: false }),
            Err(_) => Err(Error::Driver {
                reason: "the MongoDB back end of the async API runs on tokio: call it from a \
                         tokio runtime"
                    .to_owned(),
                transient: false,
            }),
        }
    }

    /// Whether the calling thread is inside a tokio runtime.
    pub(crate) fn in_one() -> bool {
        Handle::try_current().is_ok()
    }

    /// Runs `work` to its end, blocking the calling thread (see the module's rules).
    pub(crate) fn wait<R: Send>(&self, work: impl Future<Output = Result<R>> + Send) -> Result<R> {
        let Ok(current) = Handle::try_current() else {
            return self.handle.block_on(work);
        };
        match current.runtime_flavor() {
            RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| self.handle.block_on(work))
            }
            _ if self.own => std::thread::scope(|scope| {
                scope
                    .spawn(|| self.handle.block_on(work))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }),
            _ => Err(Error::SyncCallInRuntime),
        }
    }
}
