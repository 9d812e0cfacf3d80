//! How the server stops. A request (a signal `odm serve` caught, the `shutdown` command,
//! [`ServerHandle::stop`](super::ServerHandle::stop)) sets the flag that every long wait checks
//! and wakes every connection; then, in order:
//!
//! 1. the listener closes, so new connections are refused;
//! 2. idle connections close at once; a connection running a command finishes it, sends its
//!    reply and closes. The server waits for them up to the grace period (MongoDB's quiesce
//!    period: `Config::shutdown_timeout`, 15 s as MongoDB's `shutdownTimeoutMillisForSignaledShutdown`;
//!    the `shutdown` command's `timeoutSecs`, or none with `force`) and abandons what still
//!    runs past it;
//! 3. open cursors and sessions are closed (their transactions abort);
//! 4. sampled queries are written and every database file is closed (`Storage::close`), so
//!    the next start has no log to replay.
//!
//! Rules: the earliest deadline of all requests holds (a `force` cuts a wait already under
//! way; a later, longer request does not extend it); requesting again is harmless.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// The server's stop request, shared by every connection.
#[derive(Debug)]
pub struct Shutdown {
    requested: AtomicBool,
    /// When the grace period ends; `None` until requested.
    deadline: Mutex<Option<Instant>>,
    /// Turns `true` once requested; connections wait on it while idle.
    wake: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Shutdown {
        Shutdown {
            requested: AtomicBool::new(false),
            deadline: Mutex::new(None),
            wake: watch::Sender::new(false),
        }
    }
}

impl Shutdown {
    /// Asks the server to stop, letting running commands finish for up to `grace`.
    pub fn request(&self, grace: Duration) {
        let now = Instant::now();
        // A grace period past what an instant can hold is as good as a year.
        let asked = now
            .checked_add(grace)
            .unwrap_or_else(|| now + Duration::from_hours(365 * 24));
        {
            let mut deadline = self
                .deadline
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *deadline = Some(deadline.map_or(asked, |d| d.min(asked)));
        }
        self.requested.store(true, Ordering::Release);
        self.wake.send_replace(true);
    }

    /// Whether a stop was requested.
    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// When the grace period ends, once a stop was requested.
    pub fn deadline(&self) -> Option<Instant> {
        *self
            .deadline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A receiver that sees the request.
    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.wake.subscribe()
    }
}

/// Waits until a stop is requested (at once if it was).
pub(crate) async fn requested(wake: &mut watch::Receiver<bool>) {
    // An error means the sender is gone: the server is gone, which is a stop too.
    let _ = wake.wait_for(|stop| *stop).await;
}

#[cfg(test)]
mod tests {
    use super::Shutdown;
    use std::time::Duration;

    #[test]
    fn the_earliest_deadline_holds() {
        let shutdown = Shutdown::default();
        assert!(!shutdown.is_requested());
        assert!(shutdown.deadline().is_none());
        shutdown.request(Duration::from_mins(1));
        let first = shutdown.deadline().unwrap();
        shutdown.request(Duration::from_mins(10));
        assert_eq!(
            shutdown.deadline(),
            Some(first),
            "a longer grace does not extend it"
        );
        shutdown.request(Duration::MAX);
        assert_eq!(
            shutdown.deadline(),
            Some(first),
            "no overflow, no extension"
        );
        shutdown.request(Duration::ZERO);
        assert!(
            shutdown.deadline().unwrap() < first,
            "a forced stop cuts it"
        );
        assert!(shutdown.is_requested());
        assert!(*shutdown.subscribe().borrow());
    }
}
