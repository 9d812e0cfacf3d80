//! The event loop connections are served on: its runtime, the accept loop, and the connection
//! cap.
//!
//! Rules:
//! - **An idle connection costs no thread, and once quiet no task.** Sockets are read and
//!   written by tasks on a few worker threads; a command runs on a blocking thread only while
//!   it runs (`connection`), and a connection quiet for a second parks (`parking`), so 10,000
//!   idle sockets hold a few MB (the `server_idle` test measures it).
//! - **Blocking threads never run out while connections wait.** Each connection has at most one
//!   command in flight, and commands may block for long (an awaitable `hello`, a change stream's
//!   `getMore`, a fail point's pause), so the blocking pool may grow to one thread per allowed
//!   connection plus a margin: a thread exists only while its command runs (and briefly after,
//!   idle), and no wait can starve another connection of one. Each has the stack
//!   `QUERY_THREAD_STACK_BYTES` that queries need.
//! - **The cap is checked right after accept**, before anything of the connection is allocated:
//!   past it the socket is closed unanswered and established connections are untouched.
//! - **Running out of file descriptors does not spin**: accept errors that mean exhaustion wait
//!   a little before the next try.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Shared, Stats, connection};

/// MongoDB's default `net.maxIncomingConnections` (its `DEFAULT_MAX_CONN`), before the
/// open-file limit lowers it.
const MONGODB_MAX_CONNECTIONS: usize = 1_000_000;

/// Blocking threads beyond one per allowed connection, for what is not a connection's command.
const BLOCKING_MARGIN: usize = 64;

/// The connection cap when none is configured, as MongoDB derives it: 80% of the process's
/// soft open-file limit (`RLIMIT_NOFILE`), the rest left to database files, logs and the
/// listener; at most MongoDB's own default of 1,000,000.
pub fn default_max_connections() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    match limit.current {
        Some(soft) => connections_for_open_files(soft),
        None => MONGODB_MAX_CONNECTIONS,
    }
}

/// 80% of `open_files`, within 1..=1,000,000.
fn connections_for_open_files(open_files: u64) -> usize {
    let cap = open_files / 5 * 4 + open_files % 5 * 4 / 5;
    usize::try_from(cap)
        .unwrap_or(usize::MAX)
        .clamp(1, MONGODB_MAX_CONNECTIONS)
}

/// The runtime a server runs on: a few worker threads for the sockets and a blocking pool for
/// commands (see the module's rules).
pub(super) fn runtime(max_connections: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .max_blocking_threads(max_connections.saturating_add(BLOCKING_MARGIN))
        .thread_stack_size(odm_engine::QUERY_THREAD_STACK_BYTES)
        .thread_name("odm-serve")
        .enable_io()
        .enable_time()
        .build()
}

/// A place among the connections the cap allows, and the connection's entry among the open
/// ones (`connections`); held for the connection's life.
#[derive(Debug)]
pub(crate) struct Slot {
    shared: Arc<Shared>,
    id: u64,
    client: SocketAddr,
}

impl Slot {
    /// A place for connection `id` from `client`, unless the server already serves as many
    /// connections as it allows.
    fn take(shared: &Arc<Shared>, id: u64, client: SocketAddr) -> Option<Slot> {
        let max = shared.config.max_connections as u64;
        let current = &shared.stats.connections_current;
        current
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        Stats::add(&shared.stats.connections_total, 1);
        shared.connections.open(id, client);
        log_connection(shared, NETWORK_ACCEPTED, client, id);
        Some(Slot {
            shared: shared.clone(),
            id,
            client,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.shared.connections.close(self.id);
        self.shared
            .stats
            .connections_current
            .fetch_sub(1, Ordering::AcqRel);
        log_connection(&self.shared, NETWORK_ENDED, self.client, self.id);
    }
}

const NETWORK_ACCEPTED: (i32, &str) = (22943, "Connection accepted");
const NETWORK_ENDED: (i32, &str) = (22944, "Connection ended");

/// A connection's opening or closing in the log, as MongoDB's `NETWORK` component logs it.
fn log_connection(shared: &Shared, (id, message): (i32, &str), client: SocketAddr, conn: u64) {
    let count = shared.stats.connections_current.load(Ordering::Acquire);
    shared.log.info(
        super::log::Event {
            component: "NETWORK",
            id,
            context: "listener",
            message,
        },
        bson::doc! {
            "remote": client.to_string(),
            "connectionId": i64::try_from(conn).unwrap_or(i64::MAX),
            "connectionCount": i64::try_from(count).unwrap_or(i64::MAX),
        },
    );
}

/// Accepts connections until a stop is requested, a task each; then closes the listener.
pub(super) async fn accept(
    shared: Arc<Shared>,
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let mut stop = shared.shutdown.subscribe();
    let mut next_id = 1u64;
    if let Ok(local) = listener.local_addr() {
        shared.log.info(
            super::log::Event {
                component: "NETWORK",
                id: 23016,
                context: "listener",
                message: "Waiting for connections",
            },
            bson::doc! { "port": i32::from(local.port()), "ssl": if tls.is_some() { "on" } else { "off" } },
        );
    }
    loop {
        let accepted = tokio::select! {
            biased;
            () = super::shutdown::requested(&mut stop) => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                if is_exhaustion(&e) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                continue;
            }
        };
        // Over the cap: closed at once, as MongoDB does past `net.maxIncomingConnections`.
        let Some(slot) = Slot::take(&shared, next_id, peer) else {
            drop(stream);
            continue;
        };
        let id = next_id;
        next_id += 1;
        tokio::spawn(connection::serve(
            shared.clone(),
            stream,
            peer,
            id,
            tls.clone(),
            slot,
        ));
    }
}

/// Whether an accept failed for want of descriptors or memory (it would fail again at once).
fn is_exhaustion(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    let errno = Errno::from_io_error(e);
    [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM]
        .iter()
        .any(|exhausted| errno == Some(*exhausted))
}

/// Waits until no connection is left or the grace period has ended.
pub(super) async fn drain(shared: &Shared) {
    loop {
        if shared.stats.connections_current.load(Ordering::Acquire) == 0 {
            return;
        }
        match shared.shutdown.deadline() {
            Some(deadline) if std::time::Instant::now() >= deadline => return,
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::connections_for_open_files;

    #[test]
    fn the_default_cap_is_four_fifths_of_the_open_file_limit() {
        assert_eq!(connections_for_open_files(1024), 819);
        assert_eq!(connections_for_open_files(20_000), 16_000);
        assert_eq!(connections_for_open_files(0), 1);
        assert_eq!(connections_for_open_files(u64::MAX), 1_000_000);
    }
}
