//! The engine behind MongoDB's wire protocol (`odm-server`), so that mongosh, Compass, and
//! every driver reach a database file; `odm serve` runs it from the command line, and an
//! application can start one in process for its own integration tests:
//!
//! ```
//! use mongodb::bson::doc;
//!
//! // A server over in-memory databases, on a free loopback port; dropping it stops it.
//! let server = odm_server::Server::start_in_memory()?;
//! let client = mongodb::sync::Client::with_uri_str(server.uri())?;
//! let orders = client.database("shop").collection::<mongodb::bson::Document>("orders");
//! orders.insert_one(doc! { "_id": 1, "total": 25 }).run()?;
//! let found = orders.find_one(doc! { "total": { "$gt": 20 } }).run()?;
//! assert_eq!(found, Some(doc! { "_id": 1, "total": 25 }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Depends on the engine and the shard-key advisor (for `analyzeShardKey`); never on the typed
//! layer (`odm`), which serves applications, not clients on the wire.
//!
//! Connections are tasks on an event loop: an idle one costs no thread, and each command runs
//! on a blocking thread while it runs; a connection's commands run in order, as MongoDB runs
//! them. The pieces, one module each:
//!
//! | module | concept |
//! |---|---|
//! | `wire` | message framing: headers, `OP_MSG`, `OP_QUERY`/`OP_REPLY`, `OP_COMPRESSED` |
//! | `compression` | zstd, zlib and snappy, negotiated in `hello` |
//! | `listener` | the event loop: its runtime, the accept loop, the connection cap |
//! | `connection` | one client's connection: read, dispatch, reply; its negotiated state |
//! | `connections` | the open connections, as `currentOp` lists the idle ones |
//! | `parking` | quiet connections kept without a task, their sockets watched by epoll |
//! | `shutdown` | stopping: the request, the grace period, the order of the steps |
//! | `command` | the command table, arguments, replies and errors; one submodule per group |
//! | `storage` | databases by name: a file each under the served folder |
//! | `cursors` | server-side cursors: batches, `getMore`, idle timeout, the bound on their memory |
//! | `session` | logical sessions and multi-document transactions (replica-set mode) |
//! | `operations` | the running commands, their `maxTimeMS` and kill flag (`currentOp`, `killOp`) |
//! | `failpoint` | the `failCommand` fail point, a test command (`--enable-test-commands`) |
//! | `clock` | the cluster time replies carry in replica-set mode (causal consistency) |
//! | `auth` | users (salted, hashed) and SCRAM-SHA-256 |
//! | `tls` | TLS through rustls |

pub mod auth;
pub mod clock;
pub mod command;
pub mod compression;
mod connection;
pub mod connections;
pub mod cursors;
pub mod failpoint;
mod listener;
pub mod log;
pub mod operations;
pub mod parking;
pub mod profiler;
pub mod session;
pub mod shutdown;
pub mod storage;
pub mod tls;
pub mod ttl;
pub mod wire;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use compression::Compressor;
pub use listener::default_max_connections;
pub use storage::Storage;

/// How a server runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen. A non-loopback address needs `auth` or `insecure_no_auth`.
    pub bind: SocketAddr,
    /// Present the server as this one-member replica set (drivers then run transactions).
    pub replica_set: Option<String>,
    /// Require SCRAM-SHA-256 authentication.
    pub auth: bool,
    /// Allow a non-loopback address without authentication.
    pub insecure_no_auth: bool,
    pub tls: Option<tls::TlsFiles>,
    /// Connections served at once; more are closed on arrival. The default follows MongoDB's
    /// (see [`default_max_connections`]: 80% of the open-file limit).
    pub max_connections: usize,
    /// How long a stop lets running commands finish (MongoDB's quiesce period for a signal,
    /// `shutdownTimeoutMillisForSignaledShutdown`: 15 s). The `shutdown` command gives its own.
    pub shutdown_timeout: Duration,
    /// With `auth`, how long a connection has to authenticate before it is closed.
    pub auth_timeout: Duration,
    /// A cursor unused this long is closed (MongoDB: 10 minutes).
    pub cursor_timeout: Duration,
    /// The most open cursors the server keeps, and the bytes their buffered documents may hold.
    pub max_cursors: usize,
    pub max_cursor_bytes: usize,
    /// The most logical sessions the server keeps (MongoDB's `maxSessions`: 1,000,000), and
    /// the most one connection may open; past either, a command naming a new session is
    /// refused with `TooManyLogicalSessions`.
    pub max_sessions: usize,
    pub max_sessions_per_connection: usize,
    /// A transaction open this long is aborted (MongoDB's
    /// `transactionLifetimeLimitSeconds`: 60).
    pub transaction_lifetime: Duration,
    /// The compressors offered to clients.
    pub compressors: Vec<Compressor>,
    /// The command line, for `getCmdLineOpts`.
    pub argv: Vec<String>,
    /// Offer MongoDB's test commands (`configureFailPoint`), for drivers' test suites.
    pub test_commands: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 27017)),
            replica_set: None,
            auth: false,
            insecure_no_auth: false,
            tls: None,
            max_connections: default_max_connections(),
            shutdown_timeout: Duration::from_secs(15),
            auth_timeout: Duration::from_secs(30),
            cursor_timeout: Duration::from_mins(10),
            max_cursors: 10_000,
            max_cursor_bytes: 1 << 30,
            max_sessions: 1_000_000,
            max_sessions_per_connection: 10_000,
            transaction_lifetime: Duration::from_mins(1),
            compressors: compression::SUPPORTED.to_vec(),
            argv: vec!["odm".to_owned(), "serve".to_owned()],
            test_commands: false,
        }
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to listen on {0} without authentication: pass --auth, or --insecure-no-auth \
         to accept connections from anyone who can reach this address"
    )]
    NoAuthOnPublicAddress(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("TLS: {0}")]
    Tls(#[from] tls::TlsError),
    #[error("cannot start the event loop: {0}")]
    Runtime(std::io::Error),
    #[error("cannot write the admin database: {0}")]
    Admin(String),
}

/// How long a stopping server waits for a database still in use by a command past the grace
/// period before leaving it (its file then recovers from its log on the next open).
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// What every connection shares.
#[derive(Debug)]
pub struct Shared {
    pub config: Config,
    pub storage: Storage,
    pub cursors: cursors::Cursors,
    pub sessions: session::Sessions,
    /// The commands running now (`currentOp`, `killOp`).
    pub operations: operations::Operations,
    /// The open connections (`currentOp` with `$all`).
    pub connections: connections::Connections,
    pub stats: Stats,
    /// The cluster time replies carry in replica-set mode.
    pub clock: clock::ClusterClock,
    /// The `failCommand` fail point (test commands only).
    pub fail_points: failpoint::FailPoints,
    pub started: Instant,
    /// Identifies this process in `topologyVersion`.
    pub process_id: bson::oid::ObjectId,
    /// The address clients dial, as `hello` states it in replica-set mode.
    pub address: String,
    /// The stop request (see `shutdown`).
    pub shutdown: shutdown::Shutdown,
    /// Quiet connections without a task (see `parking`).
    pub parking: parking::Parking,
    /// The TTL monitor's settings and counters (see `ttl`).
    pub ttl: ttl::Ttl,
    /// The database profiler's settings and pending entries (see `profiler`).
    pub profiler: profiler::Profiler,
    /// The lines `getLog` serves (see `log`).
    pub log: log::Log,
}

/// Counters `serverStatus` reports.
#[derive(Debug, Default)]
pub struct Stats {
    pub connections_current: AtomicU64,
    pub connections_total: AtomicU64,
    pub requests: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub op_insert: AtomicU64,
    pub op_query: AtomicU64,
    pub op_update: AtomicU64,
    pub op_delete: AtomicU64,
    pub op_getmore: AtomicU64,
    pub op_command: AtomicU64,
    /// Shared with each transaction's thread, which counts how it ends.
    pub transactions: Arc<TransactionStats>,
}

/// `serverStatus.transactions`: multi-document transactions begun, open, committed and
/// aborted (a lifetime expiry included), and retryable writes answered from their record.
#[derive(Debug, Default)]
pub struct TransactionStats {
    pub started: AtomicU64,
    pub open: AtomicU64,
    pub committed: AtomicU64,
    pub aborted: AtomicU64,
    pub retried_commands: AtomicU64,
}

impl TransactionStats {
    /// The section as MongoDB reports it. Nothing is prepared on one node, and each
    /// transaction open here is active (it holds its database's writer).
    pub fn to_document(&self) -> bson::Document {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed) as i64;
        let open = n(&self.open);
        bson::doc! {
            "retriedCommandsCount": n(&self.retried_commands),
            "retriedStatementsCount": n(&self.retried_commands),
            "transactionsCollectionWriteCount": 0_i64,
            "currentActive": open,
            "currentInactive": 0_i64,
            "currentOpen": open,
            "totalAborted": n(&self.aborted),
            "totalCommitted": n(&self.committed),
            "totalStarted": n(&self.started),
            "totalPrepared": 0_i64,
            "totalPreparedThenCommitted": 0_i64,
            "totalPreparedThenAborted": 0_i64,
            "currentPrepared": 0_i64,
        }
    }
}

impl Stats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// The log as a server starts: its startup warnings, as MongoDB's `CONTROL` component gives
/// them.
fn startup_log(storage: &Storage, config: &Config) -> log::Log {
    let log = log::Log::default();
    let warn = |id, message| log::Event {
        component: "CONTROL",
        id,
        context: "initandlisten",
        message,
    };
    if !config.auth {
        log.startup_warning(
            warn(22120, "Access control is not enabled for the database. Read and write access to data and configuration is unrestricted"),
            bson::Document::new(),
        );
    }
    if storage.is_in_memory() {
        log.startup_warning(
            warn(
                22123,
                "This server holds its databases in memory only: they are gone when it stops",
            ),
            bson::Document::new(),
        );
    }
    log
}

/// A server bound to its address, not yet accepting.
#[derive(Debug)]
pub struct Server {
    shared: Arc<Shared>,
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    runtime: tokio::runtime::Runtime,
}

impl Server {
    /// Binds the configured address (port 0 picks a free one).
    pub fn bind(storage: Storage, config: Config) -> Result<Server, ServeError> {
        if !config.bind.ip().is_loopback() && !config.auth && !config.insecure_no_auth {
            return Err(ServeError::NoAuthOnPublicAddress(config.bind));
        }
        let tls = match &config.tls {
            Some(files) => Some(tls::server_config(files)?),
            None => None,
        };
        let listener = TcpListener::bind(config.bind).map_err(|source| ServeError::Bind {
            addr: config.bind,
            source,
        })?;
        let local = listener.local_addr().map_err(|source| ServeError::Bind {
            addr: config.bind,
            source,
        })?;
        let address = format!("{}:{}", local.ip(), local.port());
        storage
            .record_feature_compatibility_version()
            .map_err(|e| ServeError::Admin(e.to_string()))?;
        let runtime = listener::runtime(config.max_connections).map_err(ServeError::Runtime)?;
        let shared = Arc::new(Shared {
            cursors: cursors::Cursors::new(&config),
            operations: operations::Operations::default(),
            connections: connections::Connections::default(),
            sessions: session::Sessions::new(
                config.max_sessions,
                config.max_sessions_per_connection,
            ),
            stats: Stats::default(),
            clock: clock::ClusterClock,
            fail_points: failpoint::FailPoints::default(),
            started: Instant::now(),
            process_id: bson::oid::ObjectId::new(),
            address,
            shutdown: shutdown::Shutdown::default(),
            parking: parking::Parking::new().map_err(ServeError::Runtime)?,
            ttl: ttl::Ttl::default(),
            profiler: profiler::Profiler::default(),
            log: startup_log(&storage, &config),
            storage,
            config,
        });
        Ok(Server {
            shared,
            listener,
            tls,
            runtime,
        })
    }

    /// Starts a server over in-memory databases on a free loopback port, on a thread of its own,
    /// with every other setting at its default: what an application's integration tests need
    /// to run the official driver against a real server without installing one. Dropping the
    /// handle stops it.
    pub fn start_in_memory() -> Result<ServerHandle, ServeError> {
        let config = Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..Config::default()
        };
        Ok(Server::bind(Storage::in_memory(), config)?.spawn())
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The state every connection shares (for commands run from the command line, such as
    /// creating a user before serving).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Serves connections until a stop is requested (a signal `odm serve` caught, the
    /// `shutdown` command, [`ServerHandle::stop`]), then stops as `shutdown` describes:
    /// running commands finish within the grace period, and every database file is closed.
    pub fn run(self) {
        let Server {
            shared,
            listener,
            tls,
            runtime,
        } = self;
        let reaper = cursors::start_reaper(&shared);
        // Without the watcher, quiet connections keep their tasks: slower to scale, not wrong.
        let parking = parking::start(&shared, runtime.handle().clone()).ok();
        let stopping = shared.clone();
        runtime.spawn(async move {
            let mut stop = stopping.shutdown.subscribe();
            shutdown::requested(&mut stop).await;
            stopping.parking.stop();
        });
        let sample_writer = cursors::start_sample_writer(&shared);
        let ttl_monitor = ttl::start(&shared);
        let tls = tls.map(tokio_rustls::TlsAcceptor::from);
        runtime.block_on(async {
            let accepting = listener
                .set_nonblocking(true)
                .and_then(|()| tokio::net::TcpListener::from_std(listener));
            if let Ok(listener) = accepting {
                listener::accept(shared.clone(), listener, tls).await;
            } else {
                // Without a listener there is nothing to serve: stop at once.
                shared.shutdown.request(Duration::ZERO);
            }
            listener::drain(&shared).await;
        });
        // What still runs past the grace period is abandoned: its connection closes, and a
        // command still on a blocking thread finishes there, unanswered.
        shared.parking.stop();
        runtime.shutdown_timeout(Duration::ZERO);
        if let Some(parking) = parking {
            let _ = parking.join();
        }
        drop(reaper);
        drop(sample_writer);
        if let Some(monitor) = ttl_monitor {
            let _ = monitor.join();
        }
        shared.cursors.close_all();
        shared.sessions.end_all();
        shared.storage.close(CLOSE_WAIT);
    }

    /// Runs the server on a thread of its own.
    pub fn spawn(self) -> ServerHandle {
        let addr = self.local_addr();
        let shared = self.shared.clone();
        let thread = std::thread::Builder::new()
            .name("odm-serve".into())
            .spawn(move || self.run())
            .expect("spawning the accept thread");
        ServerHandle {
            addr,
            shared,
            thread: Some(thread),
        }
    }
}

impl Shared {
    /// The `topologyVersion` of `hello` and of state-change errors: this process, and a
    /// counter that never moves (a one-member set's topology does not change).
    pub fn topology_version(&self) -> bson::Document {
        bson::doc! {"processId": self.process_id, "counter": 0_i64}
    }

    /// Whether the server is shutting down.
    pub fn is_stopping(&self) -> bool {
        self.shutdown.is_requested()
    }

    pub fn is_replica_set(&self) -> bool {
        self.config.replica_set.is_some()
    }
}

/// A server running on its own thread; stops it when dropped.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A `mongodb://` URI for this server.
    pub fn uri(&self) -> String {
        match &self.shared.config.replica_set {
            Some(name) => format!("mongodb://{}/?replicaSet={name}", self.addr),
            None => format!("mongodb://{}/?directConnection=true", self.addr),
        }
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops the server as a signal stops `odm serve` (see `shutdown`): running commands
    /// finish within `Config::shutdown_timeout`, every database file is closed; returns when
    /// it has stopped.
    pub fn stop(&mut self) {
        self.shared
            .shutdown
            .request(self.shared.config.shutdown_timeout);
        self.wait();
    }

    /// Waits until the server has stopped (after a stop was requested, by
    /// [`ServerHandle::stop`] or the `shutdown` command).
    pub fn wait(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}
