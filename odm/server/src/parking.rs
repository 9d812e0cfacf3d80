//! Where quiet connections wait without a task. A connection that has sent nothing for
//! [`PARK_AFTER`] leaves the event loop: its socket (a plain descriptor again) and its state
//! are kept in a table, and the socket is watched by one epoll instance of the server's own,
//! which one thread waits on. When the client sends a byte (or closes), the connection takes a
//! task again and reads on.
//!
//! Rules:
//! - **A parked connection costs its state and its socket, not a task.** A task waiting on a
//!   socket holds its future, its registration with the event loop and the runtime's padding
//!   (about 2.5 KB a connection as measured); parked, a connection holds its few hundred bytes
//!   of `ConnectionState`, so 10,000 idle clients hold a few MB (`server_idle` measures it).
//! - **Only a quiet, plain, authenticated-or-open connection parks.** One that sends requests
//!   back to back never waits `PARK_AFTER`, so parking costs nothing on the hot path; a TLS
//!   session keeps decrypted bytes and state the descriptor alone cannot carry, and a
//!   connection still within its authentication deadline waits on that deadline.
//! - **The watch is one-shot.** A socket is armed once (`EPOLLONESHOT`) and removed from the
//!   watch when it wakes, before its task resumes, so an event is handled once.
//! - **Stopping closes parked connections**, as it closes idle ones: the stop wakes the watcher
//!   (an eventfd in its epoll set), which drops the table and ends; a connection parked after
//!   that is closed at once.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::event::epoll;

use super::Shared;
use super::connection::ConnectionState;
use super::listener::Slot;

/// How long a connection waits for its next message with a task before it parks. Drivers'
/// pooled connections and monitors go quiet for seconds between uses; a client sending
/// requests back to back never waits this long.
pub const PARK_AFTER: Duration = Duration::from_secs(1);

/// The events a parked socket wakes for: data, or the client closing its end.
fn wake_on() -> epoll::EventFlags {
    epoll::EventFlags::IN | epoll::EventFlags::RDHUP | epoll::EventFlags::ONESHOT
}

/// A connection without a task: what its task held across messages.
#[derive(Debug)]
struct Parked {
    socket: std::net::TcpStream,
    state: ConnectionState,
    slot: Slot,
}

/// The parked connections and the epoll instance that watches their sockets.
#[derive(Debug)]
pub struct Parking {
    epoll: OwnedFd,
    /// Written when a stop is requested, to end the watcher's wait.
    wake: OwnedFd,
    parked: Mutex<HashMap<u64, Box<Parked>>>,
    /// Whether the watcher runs; until it does (and if it cannot), connections do not park.
    watching: AtomicBool,
}

impl Parking {
    pub(crate) fn new() -> std::io::Result<Parking> {
        Ok(Parking {
            epoll: epoll::create(epoll::CreateFlags::CLOEXEC)?,
            wake: rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)?,
            parked: Mutex::new(HashMap::new()),
            watching: AtomicBool::new(false),
        })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Box<Parked>>> {
        self.parked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a quiet connection may park (the watcher runs).
    pub(crate) fn is_open(&self) -> bool {
        self.watching.load(Ordering::Acquire)
    }

    /// How many connections are parked now.
    pub fn len(&self) -> usize {
        self.table().len()
    }

    /// Whether no connection is parked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Parks a quiet connection: it leaves the event loop until its socket is readable. A
    /// connection that cannot be watched, or arrives after a stop was requested, is closed.
    pub(crate) fn park(
        &self,
        shared: &Shared,
        socket: tokio::net::TcpStream,
        state: ConnectionState,
        slot: Slot,
    ) {
        let Ok(socket) = socket.into_std() else {
            return;
        };
        let id = state.id;
        // Boxed, so that the table's spare capacity costs a pointer a place.
        let parked = Box::new(Parked {
            socket,
            state,
            slot,
        });
        let mut table = self.table();
        let watched = epoll::add(
            &self.epoll,
            &parked.socket,
            epoll::EventData::new_u64(id),
            wake_on(),
        );
        if watched.is_err() || shared.shutdown.is_requested() {
            return;
        }
        table.insert(id, parked);
    }

    /// The connection `id`, out of the table and the watch, if it is parked.
    fn unpark(&self, id: u64) -> Option<Box<Parked>> {
        let parked = self.table().remove(&id)?;
        // A failed removal would leave an armed-once entry that never fires again; the
        // descriptor's closing removes it in any case.
        let _ = epoll::delete(&self.epoll, &parked.socket);
        Some(parked)
    }

    /// Ends the watcher's wait: called once a stop is requested.
    pub(crate) fn stop(&self) {
        let _ = rustix::io::write(&self.wake, &1u64.to_ne_bytes());
    }

    /// Closes every parked connection.
    fn close_all(&self) {
        let parked = std::mem::take(&mut *self.table());
        drop(parked);
    }
}

/// The event data that marks the stop's wake-up rather than a socket.
const WAKE: u64 = u64::MAX;

/// Starts the thread that watches parked sockets until a stop is requested, giving each that
/// wakes a task on `runtime` again; at the stop it closes the connections still parked. One
/// thread for all: its wait is a blocking `epoll_wait`.
pub(super) fn start(
    shared: &Arc<Shared>,
    runtime: tokio::runtime::Handle,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let parking = &shared.parking;
    epoll::add(
        &parking.epoll,
        &parking.wake,
        epoll::EventData::new_u64(WAKE),
        epoll::EventFlags::IN,
    )?;
    let shared = shared.clone();
    let thread = std::thread::Builder::new()
        .name("odm-parking".into())
        .stack_size(WATCHER_STACK_BYTES)
        .spawn(move || watch(&shared, &runtime))?;
    parking.watching.store(true, Ordering::Release);
    Ok(thread)
}

/// The watcher's stack: it only moves connections between the table and the event loop.
const WATCHER_STACK_BYTES: usize = 256 * 1024;

fn watch(shared: &Arc<Shared>, runtime: &tokio::runtime::Handle) {
    let _entered = runtime.enter();
    let mut events = Vec::with_capacity(256);
    loop {
        events.clear();
        match epoll::wait(
            &shared.parking.epoll,
            rustix::buffer::spare_capacity(&mut events),
            None,
        ) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => break,
        }
        if events.iter().any(|event| event.data.u64() == WAKE) {
            break;
        }
        for event in &events {
            resume(shared, event.data.u64());
        }
    }
    shared.parking.watching.store(false, Ordering::Release);
    shared.parking.close_all();
}

/// Gives the parked connection `id` a task again.
fn resume(shared: &Arc<Shared>, id: u64) {
    let Some(parked) = shared.parking.unpark(id) else {
        return;
    };
    let Parked {
        socket,
        state,
        slot,
    } = *parked;
    // A socket the event loop cannot take back is closed (dropped here).
    if let Ok(socket) = tokio::net::TcpStream::from_std(socket) {
        tokio::spawn(super::connection::resume(
            shared.clone(),
            socket,
            state,
            slot,
        ));
    }
}
