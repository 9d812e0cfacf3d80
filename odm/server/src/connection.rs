//! One client's connection, a task on the event loop (`listener`): a whole message is read
//! (its header's length checked before anything is allocated for the body, and the body
//! buffered only as its bytes arrive), its command runs on a blocking thread (commands block:
//! the engine is synchronous, and some wait), and the reply is written; then the next message
//! is read. A connection's commands therefore run in order, one at a time, as MongoDB runs them;
//! a `moreToCome` request gets no reply. A message whose framing is broken (its length out of
//! range, an unknown opcode) closes the connection; one whose content is malformed gets an
//! error reply. A connection that waits a second for its next message parks (`parking`): its
//! task ends, and a new one takes it up when a byte arrives.
//!
//! With `--auth`, a connection that has not authenticated within `auth_timeout` is closed:
//! every read and write before then (the TLS handshake too) ends at that deadline, so a silent
//! client, one that never authenticates, or one trickling a message a byte at a time, is closed
//! at it. When the server stops (`shutdown`), an idle connection closes at once and one running
//! a command closes after its reply.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bson::{Bson, Document, RawDocumentBuf};
use odm_engine::ErrorCode;
use odm_engine::interrupt::Interrupt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::Instant;

use super::command::{self, Access, CommandError, Ctx};
use super::compression::Compressor;
use super::listener::Slot;
use super::operations::Operation;
use super::wire::{self, HEADER_LEN, Header, Request, RequestKind};
use super::{Shared, Stats};

/// What a connection has negotiated and who it is.
#[derive(Debug)]
pub struct ConnectionState {
    pub id: u64,
    /// The client's address, as `whatsmyuri` tells it.
    pub peer: String,
    /// Compressors agreed in `hello`.
    pub compressors: Vec<Compressor>,
    /// The authenticated user: (database, name).
    pub user: Option<(String, String)>,
    /// A SCRAM conversation in progress (boxed: an idle connection should not keep room
    /// for one).
    pub scram: Option<Box<super::auth::Conversation>>,
    /// The application name the client gave in its handshake (`client.application.name`).
    pub app_name: Option<String>,
    /// Close the connection without replying (a fail point's `closeConnection`, `shutdown`).
    pub close: bool,
    /// The command running applied a retryable write (not answered from its record): the
    /// `onPrimaryTransactionalWrite` fail point drops such a reply (see `failpoint`).
    pub wrote_fresh: std::cell::Cell<bool>,
    /// The `hello` running continues a monitor's stream: its wait was done on the event loop.
    pub streamed: bool,
    /// A streamed `hello` or `getMore`, answered again after each wait (boxed: rare).
    streaming: Option<Box<Streaming>>,
    /// The id the next reply carries.
    next_request_id: i32,
}

/// A streamed command, each reply flagged `moreToCome` and answering the one before: a
/// monitor's `hello`, as the server monitoring specification describes it (a client that
/// allows exhaust and names its topology version and `maxAwaitTimeMS` gets a reply after each
/// wait or topology change, until it closes the connection), or an exhaust cursor's `getMore`
/// (the next batch at once, until the cursor closes).
#[derive(Debug)]
struct Streaming {
    /// The command to answer again, its request id set to the last reply's.
    request: Request,
    wait: std::time::Duration,
}

/// The shortest wait between streamed replies: a `maxAwaitTimeMS` of 0 must not spin.
const MIN_STREAM_WAIT: std::time::Duration = std::time::Duration::from_millis(10);
/// The longest, as a `hello`'s own await is capped.
const MAX_STREAM_WAIT: std::time::Duration = std::time::Duration::from_mins(1);

/// A connection's byte stream: the socket, or a TLS session over it.
enum Transport {
    Plain(tokio::net::TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>),
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_read(cx, buf),
            Transport::Tls(tls) => Pin::new(tls).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_write(cx, buf),
            Transport::Tls(tls) => Pin::new(tls).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_flush(cx),
            Transport::Tls(tls) => Pin::new(tls).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_shutdown(cx),
            Transport::Tls(tls) => Pin::new(tls).poll_shutdown(cx),
        }
    }
}

/// Why a connection ends; nothing is reported to the client.
#[derive(Debug)]
struct Closed;

impl From<std::io::Error> for Closed {
    fn from(_: std::io::Error) -> Closed {
        Closed
    }
}

/// Serves one connection until the client closes it, sends a message that cannot be framed, or
/// the server stops. `slot` is the connection's place under the cap, given back on return.
pub(super) async fn serve(
    shared: Arc<Shared>,
    socket: tokio::net::TcpStream,
    peer: SocketAddr,
    id: u64,
    tls: Option<tokio_rustls::TlsAcceptor>,
    slot: Slot,
) {
    let _ = socket.set_nodelay(true);
    // A timeout past what an instant can hold is no deadline.
    let deadline = shared
        .config
        .auth
        .then(|| Instant::now().checked_add(shared.config.auth_timeout))
        .flatten();
    let mut stop = shared.shutdown.subscribe();
    let Some(stream) = Box::pin(open(socket, tls, deadline, &mut stop)).await else {
        return;
    };
    let state = ConnectionState {
        id,
        peer: peer.to_string(),
        compressors: Vec::new(),
        user: None,
        scram: None,
        app_name: None,
        close: false,
        wrote_fresh: std::cell::Cell::new(false),
        streamed: false,
        streaming: None,
        next_request_id: 1,
    };
    Box::pin(converse(shared, stream, state, slot, deadline)).await;
}

/// Serves a parked connection again, once its socket is readable (see `parking`).
pub(super) async fn resume(
    shared: Arc<Shared>,
    socket: tokio::net::TcpStream,
    state: ConnectionState,
    slot: Slot,
) {
    converse(shared, Transport::Plain(socket), state, slot, None).await;
}

/// Reads, runs and answers the connection's messages until it closes or parks.
///
/// Each step's future is boxed, so that it is allocated only while that step runs: the task
/// itself holds what lives across steps.
async fn converse(
    shared: Arc<Shared>,
    mut stream: Transport,
    mut state: ConnectionState,
    slot: Slot,
    mut deadline: Option<Instant>,
) {
    let mut stop = shared.shutdown.subscribe();
    loop {
        let served = if let Some(streaming) = state.streaming.take() {
            match Box::pin(pause(&stream, &mut stop, streaming.wait)).await {
                Pause::Elapsed => Box::pin(run_streamed(&shared, state, *streaming)).await,
                Pause::Closed => break,
                // A client that speaks ends the stream: its message is read as any other.
                Pause::Spoke => continue,
            }
        } else {
            if deadline.is_none()
                && let Transport::Plain(socket) = &stream
            {
                match Box::pin(quiet(&shared, socket, &mut stop)).await {
                    Quiet::Readable => {}
                    Quiet::Closed => break,
                    Quiet::Long => {
                        if let Transport::Plain(socket) = stream {
                            shared.parking.park(&shared, socket, state, slot);
                        }
                        return;
                    }
                }
            }
            let next = Box::pin(next_message(&mut stream, &mut stop, deadline)).await;
            let Some((header, body)) = next else {
                break;
            };
            Box::pin(run_blocking(&shared, state, header, body)).await
        };
        let Ok(Ok(served)) = served else {
            break;
        };
        let reply;
        (state, reply) = served;
        if state.close {
            break;
        }
        if let Some(bytes) = reply {
            Stats::add(&shared.stats.bytes_out, bytes.len() as u64);
            if !Box::pin(write(&mut stream, &bytes, deadline)).await {
                break;
            }
        }
        if shared.shutdown.is_requested() {
            break;
        }
        if state.user.is_some() {
            deadline = None;
        }
    }
    drop(stream);
    drop(slot);
}

/// How the wait before a streamed reply ended.
enum Pause {
    Elapsed,
    /// The client closed the connection, or the server is stopping.
    Closed,
    /// The client sent bytes.
    Spoke,
}

/// Waits `wait` before the next streamed reply, watching for the client's close.
async fn pause(
    stream: &Transport,
    stop: &mut watch::Receiver<bool>,
    wait: std::time::Duration,
) -> Pause {
    let elapsed = tokio::time::sleep(wait);
    let Transport::Plain(socket) = stream else {
        // A TLS session cannot be peeked: a closed client shows when the reply is written.
        return tokio::select! {
            biased;
            () = super::shutdown::requested(stop) => Pause::Closed,
            () = elapsed => Pause::Elapsed,
        };
    };
    let mut byte = [0u8; 1];
    tokio::select! {
        biased;
        () = super::shutdown::requested(stop) => Pause::Closed,
        peeked = socket.peek(&mut byte) => match peeked {
            Ok(0) | Err(_) => Pause::Closed,
            Ok(_) => Pause::Spoke,
        },
        () = elapsed => Pause::Elapsed,
    }
}

/// Answers a streamed command again, on a blocking thread as every command runs.
async fn run_streamed(
    shared: &Arc<Shared>,
    mut state: ConnectionState,
    streaming: Streaming,
) -> Result<Result<(ConnectionState, Option<Vec<u8>>), Closed>, tokio::task::JoinError> {
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || {
        state.streamed = true;
        let reply = respond(&shared, &mut state, streaming.request);
        state.streamed = false;
        Ok((state, reply))
    })
    .await
}

/// How an idle connection's wait ended.
enum Quiet {
    /// The client sent something (or closed: the read sees which).
    Readable,
    /// The socket failed or the server is stopping.
    Closed,
    /// Nothing came for [`PARK_AFTER`](super::parking::PARK_AFTER): time to park.
    Long,
}

/// Waits for the client's next byte, at most until it is time to park (when parking is open).
async fn quiet(
    shared: &Shared,
    socket: &tokio::net::TcpStream,
    stop: &mut watch::Receiver<bool>,
) -> Quiet {
    let park_at = shared
        .parking
        .is_open()
        .then(|| Instant::now() + super::parking::PARK_AFTER);
    tokio::select! {
        biased;
        () = super::shutdown::requested(stop) => Quiet::Closed,
        ready = within(park_at, arrival(socket)) => match ready {
            Ok(Ok(())) => Quiet::Readable,
            Ok(Err(_)) => Quiet::Closed,
            Err(_) => Quiet::Long,
        },
    }
}

/// Waits until a byte has arrived on `socket` or its client closed it. (A socket's readiness
/// alone may be announced before anything arrived: a peek tells.)
async fn arrival(socket: &tokio::net::TcpStream) -> std::io::Result<()> {
    socket.peek(&mut [0u8; 1]).await.map(drop)
}

/// The connection's stream: the socket, or the TLS session over it once its handshake is done.
async fn open(
    socket: tokio::net::TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
    deadline: Option<Instant>,
    stop: &mut watch::Receiver<bool>,
) -> Option<Transport> {
    let Some(acceptor) = tls else {
        return Some(Transport::Plain(socket));
    };
    let handshake = tokio::select! {
        () = super::shutdown::requested(stop) => return None,
        handshake = within(deadline, acceptor.accept(socket)) => handshake,
    };
    match handshake {
        Ok(Ok(tls)) => Some(Transport::Tls(Box::new(tls))),
        _ => None,
    }
}

/// The next message, once it has arrived whole; `None` when the connection is to close (the
/// client closed it or broke the framing, the deadline passed, the server is stopping).
async fn next_message(
    stream: &mut Transport,
    stop: &mut watch::Receiver<bool>,
    deadline: Option<Instant>,
) -> Option<(Header, Vec<u8>)> {
    // Idle, the wait is for a byte or for the stop; the read's own state is boxed, allocated
    // while a message arrives.
    if let Transport::Plain(socket) = stream {
        tokio::select! {
            biased;
            () = super::shutdown::requested(stop) => return None,
            ready = within(deadline, arrival(socket)) => ready.ok()?.ok()?,
        }
    }
    tokio::select! {
        biased;
        () = super::shutdown::requested(stop) => None,
        message = Box::pin(within(deadline, read_message(stream))) => message.ok()?.ok(),
    }
}

/// Writes a reply; whether it was written before the deadline.
async fn write(stream: &mut Transport, bytes: &[u8], deadline: Option<Instant>) -> bool {
    let written = within(deadline, async {
        stream.write_all(bytes).await?;
        stream.flush().await
    });
    matches!(written.await, Ok(Ok(())))
}

/// Runs `io` until `deadline`, if there is one; `Err` when the deadline passed first.
async fn within<T>(
    deadline: Option<Instant>,
    io: impl Future<Output = T>,
) -> Result<T, tokio::time::error::Elapsed> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, io).await,
        None => Ok(io.await),
    }
}

/// Reads one message: its header, checked, then exactly the body it announces. The body's
/// buffer grows with the bytes that arrive, so a header announcing 48 MB that is followed by
/// nothing holds nothing.
async fn read_message(stream: &mut Transport) -> Result<(Header, Vec<u8>), Closed> {
    let mut head = [0u8; HEADER_LEN];
    stream.read_exact(&mut head).await?;
    let header = Header::parse(&head).map_err(|_| Closed)?;
    let want = header.body_len();
    let mut body = Vec::with_capacity(want.min(64 * 1024));
    let read = (&mut *stream)
        .take(want as u64)
        .read_to_end(&mut body)
        .await?;
    if read != want {
        return Err(Closed);
    }
    Ok((header, body))
}

/// Runs a message's command on a blocking thread; the connection's state back, and the reply
/// to send (`None` when the client asked for none).
async fn run_blocking(
    shared: &Arc<Shared>,
    mut state: ConnectionState,
    header: Header,
    body: Vec<u8>,
) -> Result<Result<(ConnectionState, Option<Vec<u8>>), Closed>, tokio::task::JoinError> {
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || {
        let reply = handle(&shared, &mut state, &header, &body)?;
        Ok((state, reply))
    })
    .await
}

/// One message: parsed, run, and its reply encoded.
fn handle(
    shared: &Shared,
    state: &mut ConnectionState,
    header: &Header,
    body: &[u8],
) -> Result<Option<Vec<u8>>, Closed> {
    Stats::add(&shared.stats.requests, 1);
    Stats::add(&shared.stats.bytes_in, header.length as u64);
    match wire::parse(header, body) {
        Ok(request) => Ok(respond(shared, state, request)),
        Err(wire::WireError::UnknownOpCode(_)) => Err(Closed),
        Err(e) => {
            let error = CommandError::new(e.code(), e.to_string());
            let body = wire::to_raw(&error.to_document());
            let legacy = header.op_code == wire::OP_QUERY;
            Ok(Some(encode(
                &body,
                header.request_id,
                legacy,
                None,
                &mut state.next_request_id,
            )))
        }
    }
}

fn encode(
    body: &RawDocumentBuf,
    response_to: i32,
    legacy: bool,
    compressor: Option<Compressor>,
    next_request_id: &mut i32,
) -> Vec<u8> {
    encode_flagged(body, response_to, legacy, 0, compressor, next_request_id)
}

/// [`encode`] with `OP_MSG` flags (a streamed reply's `moreToCome`).
fn encode_flagged(
    body: &RawDocumentBuf,
    response_to: i32,
    legacy: bool,
    flags: u32,
    compressor: Option<Compressor>,
    next_request_id: &mut i32,
) -> Vec<u8> {
    let request_id = *next_request_id;
    *next_request_id = next_request_id.wrapping_add(1);
    if legacy {
        wire::encode_reply(request_id, response_to, body, compressor)
    } else {
        wire::encode_msg(request_id, response_to, body, flags, compressor)
    }
}

/// The stream a command opens, if it opens one, when the client allows exhaust (`request`,
/// kept only then) and the reply is a success: a `hello` that names its topology version and
/// how long it may wait is answered again after that wait; a `getMore` whose cursor stays open
/// after a batch of documents is run again at once (an exhaust cursor).
fn streaming_of(
    request: Option<Request>,
    name: &str,
    command: &Document,
    body: &RawDocumentBuf,
) -> Option<Box<Streaming>> {
    let request = request?;
    let ok = body
        .get("ok")
        .ok()
        .flatten()
        .and_then(bson::RawBsonRef::as_f64)
        == Some(1.0);
    if !ok {
        return None;
    }
    if name == "getMore" {
        // A batch that came back empty ends the stream, so that a tailable cursor with nothing
        // new does not spin: the driver's next `getMore` waits as it chooses.
        let cursor = body.get_document("cursor").ok();
        let open = cursor
            .and_then(|c| c.get_i64("id").ok())
            .is_some_and(|id| id != 0);
        let filled = cursor
            .and_then(|c| c.get_array("nextBatch").ok())
            .is_some_and(|batch| batch.into_iter().next().is_some());
        return (open && filled).then(|| {
            Box::new(Streaming {
                request,
                wait: std::time::Duration::ZERO,
            })
        });
    }
    let hello = matches!(name, "hello" | "isMaster" | "ismaster");
    let wait = match command.get("maxAwaitTimeMS") {
        Some(Bson::Int32(ms)) => i64::from(*ms),
        Some(Bson::Int64(ms)) => *ms,
        _ => return None,
    };
    if !hello || !command.contains_key("topologyVersion") {
        return None;
    }
    let wait = std::time::Duration::from_millis(u64::try_from(wait).unwrap_or(0))
        .clamp(MIN_STREAM_WAIT, MAX_STREAM_WAIT);
    Some(Box::new(Streaming { request, wait }))
}

/// Runs a request's command; the encoded reply, or `None` when the client asked for none.
fn respond(shared: &Shared, state: &mut ConnectionState, request: Request) -> Option<Vec<u8>> {
    let more_to_come = request.more_to_come();
    let exhaust = matches!(request.kind, RequestKind::Msg { flags, .. } if flags & wire::EXHAUST_ALLOWED != 0);
    let kept = exhaust.then(|| request.clone());
    let (command, db, legacy) = match request.kind {
        RequestKind::Msg { command, .. } => {
            let db = match command.get("$db") {
                Some(Bson::String(db)) => Ok(db.clone()),
                Some(_) => Err(CommandError::new(
                    ErrorCode::TYPE_MISMATCH,
                    "the `$db` field must be a string",
                )),
                None => Err(CommandError::new(
                    ErrorCode::IDL_FAILED_TO_PARSE,
                    "OP_MSG requests require a $db argument",
                )),
            };
            (command, db, false)
        }
        RequestKind::Query {
            collection,
            command,
        } => {
            let db = match collection.strip_suffix(".$cmd") {
                Some(db) => Ok(db.to_owned()),
                None => Err(CommandError::new(
                    ErrorCode::location(5_739_101),
                    "OP_QUERY is no longer supported except for commands on `<db>.$cmd`",
                )),
            };
            (command, db, true)
        }
    };
    let name = command.keys().next().cloned().unwrap_or_default();
    let spec = command::lookup(&name, shared.config.test_commands);
    let body = match db {
        Ok(db) => run(shared, state, &name, spec, db, &command),
        Err(e) => wire::to_raw(&e.to_document()),
    };
    if more_to_come {
        return None;
    }
    let compressor = request
        .compressor
        .filter(|c| state.compressors.contains(c) && !spec.is_some_and(|s| s.uncompressed));
    let mut streaming = streaming_of(kept, &name, &command, &body);
    let flags = if streaming.is_some() {
        wire::MORE_TO_COME
    } else {
        0
    };
    if let Some(s) = &mut streaming {
        // The next streamed reply answers this one.
        s.request.request_id = state.next_request_id;
    }
    state.streaming = streaming;
    Some(encode_flagged(
        &body,
        request.request_id,
        legacy,
        flags,
        compressor,
        &mut state.next_request_id,
    ))
}

/// Runs one command; its reply, an error reply when it fails.
fn run(
    shared: &Shared,
    state: &mut ConnectionState,
    name: &str,
    spec: Option<&'static command::Spec>,
    db: String,
    command: &Document,
) -> RawDocumentBuf {
    Stats::add(&shared.stats.op_command, 1);
    // The profiler's level as the command starts decides whether it is kept.
    let watch = spec.and_then(|s| shared.profiler.watch(&db, s.name));
    let started = std::time::Instant::now();
    let profiled_db = watch.as_ref().map(|_| db.clone());
    let db_name = db.clone();
    let mut ran_under = None;
    let firing = fire_fail_points(shared, state, name, command);
    if let Some(pause) = firing.block {
        std::thread::sleep(pause);
    }
    if firing.close_connection {
        state.close = true;
        return RawDocumentBuf::new();
    }
    let result = (|| {
        if let Some(error) = firing.error {
            return Err(error);
        }
        let spec = spec.ok_or_else(|| command::not_found(name))?;
        command::api::check(spec.name, command)?;
        if shared.config.auth
            && spec.access == Access::Authenticated
            && state.user.is_none()
            && !super::auth::localhost_exception(shared, state, spec.name)
        {
            return Err(CommandError::new(
                ErrorCode::UNAUTHORIZED,
                format!("Command {name} requires authentication"),
            ));
        }
        super::storage::check_name(&db)?;
        let (interrupt, operation) = operation(state, spec.name, &db, command)?;
        ran_under = Some(interrupt.clone());
        let _registered = shared.operations.register(operation);
        let _entered = interrupt.enter();
        let mut ctx = Ctx {
            server: shared,
            conn: state,
            db,
            txn: None,
            session: None,
            retry: None,
            read_concern: None,
        };
        // A panic in a command is a bug; it fails that command, not the server.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            super::session::run_command(&mut ctx, spec, command)
                .map_err(|e| super::session::with_transient_label(command, e))
        }));
        ran.unwrap_or_else(|_| {
            Err(CommandError::new(
                ErrorCode::INTERNAL_ERROR,
                format!("command {name} failed with an internal error"),
            ))
        })
    })();
    let failure = match &result {
        Err(e) if watch.is_some() => Some(e.clone()),
        _ => None,
    };
    if firing.close_after && state.wrote_fresh.replace(false) {
        // The fail point drops the reply of a write that was applied (a retry answered from
        // its record is not).
        state.close = true;
        return RawDocumentBuf::new();
    }
    let reply = encode_reply(shared, command, result, firing.write_concern_error);
    log_if_slow(shared, spec, &db_name, started.elapsed());
    if let (Some(watch), Some(db), Some(spec)) = (watch, profiled_db, spec) {
        let interrupt = ran_under.unwrap_or_default();
        let finished = super::profiler::Finished {
            db: &db,
            name: spec.name,
            command,
            reply: &reply,
            error: failure.as_ref(),
            elapsed: started.elapsed(),
            interrupt: &interrupt,
            client: &state.peer,
            app_name: state.app_name.as_deref(),
            user: state.user.as_ref(),
        };
        shared.profiler.record(&shared.storage, &watch, &finished);
    }
    reply
}

/// What the fail points do to this command. They exist only with test commands: without them
/// no command takes their lock.
fn fire_fail_points(
    shared: &Shared,
    state: &ConnectionState,
    name: &str,
    command: &Document,
) -> super::failpoint::Firing {
    if !shared.config.test_commands {
        return super::failpoint::Firing::default();
    }
    // A connection's first `hello` names its application before the connection knows it.
    let app_name = state
        .app_name
        .as_deref()
        .or_else(|| command::handshake::app_name(command));
    let mut firing = shared
        .fail_points
        .fire(name, command, app_name)
        .unwrap_or_default();
    if firing.error.is_none()
        && time_limited(shared, name, command)
        && shared.fail_points.max_time_fires()
    {
        firing.error = Some(CommandError::new(
            ErrorCode::MAX_TIME_MS_EXPIRED,
            "operation exceeded time limit",
        ));
    }
    firing
}

/// Whether a command runs under a time limit: it carries a positive `maxTimeMS`, or it is a
/// `getMore` of a cursor opened with one (see `maxTimeAlwaysTimeOut` in `failpoint`).
fn time_limited(shared: &Shared, name: &str, command: &Document) -> bool {
    let positive = command
        .get("maxTimeMS")
        .and_then(odm_engine::expr::whole_number)
        .is_some_and(|ms| ms > 0);
    positive
        || (name == "getMore"
            && matches!(command.get("getMore"), Some(Bson::Int64(id)) if shared.cursors.time_limited(*id)))
}

/// Logs a command slower than the profiler's `slowms` (MongoDB's "Slow query", whatever the
/// profiling level). A `getMore` waits for data on purpose (tailable and change stream
/// cursors), so it is not logged as slow.
fn log_if_slow(
    shared: &Shared,
    spec: Option<&'static command::Spec>,
    db: &str,
    elapsed: std::time::Duration,
) {
    let Some(spec) = spec else { return };
    if spec.name == "getMore" || super::profiler::Profiler::never_watched(spec.name) {
        return;
    }
    let millis = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
    if millis <= shared.profiler.slow_ms() {
        return;
    }
    shared.log.info(
        super::log::Event {
            component: "COMMAND",
            id: 51803,
            context: "conn",
            message: "Slow query",
        },
        bson::doc! {
            "type": "command",
            "ns": format!("{db}.$cmd"),
            "command": spec.name,
            "durationMillis": millis,
        },
    );
}

/// A command's outcome as the bytes sent back: the reply with a fail point's write concern
/// error, or the error reply; in replica-set mode, with the cluster time.
fn encode_reply(
    shared: &Shared,
    command: &Document,
    result: command::CommandResult,
    write_concern_error: Option<(Document, Vec<String>)>,
) -> RawDocumentBuf {
    let mut reply = match result {
        Ok(reply) => {
            let mut raw = reply.finish();
            if let Some((error, labels)) = write_concern_error {
                if let Ok(error) = RawDocumentBuf::try_from(&error) {
                    raw.append(bson::raw::cstr!("writeConcernError"), error);
                }
                if !labels.is_empty() {
                    let mut array = bson::RawArrayBuf::new();
                    for label in labels {
                        array.push(label);
                    }
                    raw.append(bson::raw::cstr!("errorLabels"), array);
                }
            } else if let Some(error) = unsatisfiable_write_concern(command) {
                raw.append(bson::raw::cstr!("writeConcernError"), error);
            }
            raw
        }
        Err(error) => {
            let mut reply = error.to_document();
            // As MongoDB does: a "not primary" or "shutting down" error states the topology
            // version it was raised under, so that drivers see it is not news about this
            // server (its `hello` reports the same version) and keep the server selectable.
            if STATE_CHANGE_CODES.contains(&error.code) {
                reply.insert("topologyVersion", shared.topology_version());
            }
            let mut raw = wire::to_raw(&reply);
            // MongoDB waits for the write concern after a failure too (for the client's
            // earlier writes), and reports it beside the error.
            if let Some(error) = unsatisfiable_write_concern(command) {
                raw.append(bson::raw::cstr!("writeConcernError"), error);
            }
            raw
        }
    };
    if shared.config.replica_set.is_some() {
        let time = shared.clock.tick();
        reply.append(bson::raw::cstr!("operationTime"), time);
        reply.append(
            bson::raw::cstr!("$clusterTime"),
            super::clock::ClusterClock::gossip(time),
        );
    }
    reply
}

/// The interrupt a command runs under (the deadline of its `maxTimeMS`) and its entry in the
/// registry of running operations. A `getMore`'s `maxTimeMS` is an awaiting cursor's wait,
/// not a deadline: a cursor runs on what its command's limit left (see `cursors`).
fn operation(
    state: &ConnectionState,
    name: &'static str,
    db: &str,
    command: &Document,
) -> Result<(Interrupt, Operation), CommandError> {
    let limit = super::operations::max_time(command)?;
    let interrupt = if name == "getMore" {
        Interrupt::new()
    } else {
        Interrupt::within(limit)
    };
    let ns = match command.get(name) {
        Some(Bson::String(collection)) => format!("{db}.{collection}"),
        _ => format!("{db}.$cmd"),
    };
    let lsid = match command.get("lsid") {
        Some(Bson::Document(lsid)) => Some(lsid.clone()),
        _ => None,
    };
    let session = lsid
        .as_ref()
        .and_then(|l| super::session::SessionId::from_lsid(l).ok());
    let operation = Operation {
        opid: 0,
        interrupt: interrupt.clone(),
        op: super::operations::op_kind(name),
        ns,
        command: super::operations::summary(command),
        client: state.peer.clone(),
        app_name: state.app_name.clone(),
        connection_id: state.id,
        user: state.user.clone(),
        lsid,
        session,
        started: std::time::Instant::now(),
    };
    Ok((interrupt, operation))
}

/// MongoDB's "not primary" and "shutting down" codes, whose errors drivers read as news about
/// the server's state.
const STATE_CHANGE_CODES: [i32; 7] = [91, 189, 10107, 11600, 11602, 13435, 13436];

/// A write concern one member cannot satisfy, as MongoDB reports it after applying the write:
/// `w` above one (`UnsatisfiableWriteConcern`) or a tag set that no configuration names
/// (`UnknownReplWriteConcern`). The write itself has happened, as on MongoDB.
fn unsatisfiable_write_concern(command: &Document) -> Option<RawDocumentBuf> {
    let concern = command.get_document("writeConcern").ok()?;
    let (code, message) = match concern.get("w")? {
        Bson::String(mode) if mode != "majority" => (
            ErrorCode::UNKNOWN_REPL_WRITE_CONCERN,
            format!("No write concern mode named '{mode}' found in replica set configuration"),
        ),
        w => match odm_engine::expr::whole_number(w) {
            Some(n) if n > 1 => (
                ErrorCode::UNSATISFIABLE_WRITE_CONCERN,
                "Not enough data-bearing nodes".to_owned(),
            ),
            _ => return None,
        },
    };
    let mut error = RawDocumentBuf::new();
    error.append(bson::raw::cstr!("code"), code.code);
    error.append(bson::raw::cstr!("codeName"), code.name());
    error.append(bson::raw::cstr!("errmsg"), message);
    Some(error)
}
