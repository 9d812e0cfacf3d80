//! One client's connection: messages read in turn, each command run and answered before the
//! next is read. A message whose framing is broken (its length out of range, an unknown
//! opcode) closes the connection; one whose content is malformed gets an error reply.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bson::{Bson, Document, RawDocumentBuf};
use odm_engine::ErrorCode;
use odm_engine::interrupt::Interrupt;

use super::command::{self, Access, CommandError, Ctx};
use super::compression::Compressor;
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
    /// A SCRAM conversation in progress.
    pub scram: Option<super::auth::Conversation>,
    /// The application name the client gave in its handshake (`client.application.name`).
    pub app_name: Option<String>,
    /// Close the connection without replying (a fail point's `closeConnection`).
    pub close: bool,
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// Serves one connection until the client closes it or sends a message that cannot be framed.
pub(super) fn serve(
    shared: &Arc<Shared>,
    stream: TcpStream,
    id: u64,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "unknown".to_owned(), |a| a.to_string());
    let _ = stream.set_nodelay(true);
    // Read timeouts are set on the socket itself, under TLS too.
    let socket = stream.try_clone().ok();
    let mut stream: Box<dyn Stream> = match tls {
        Some(config) => match rustls::ServerConnection::new(config) {
            Ok(conn) => Box::new(rustls::StreamOwned::new(conn, stream)),
            Err(_) => return,
        },
        None => Box::new(stream),
    };
    Stats::add(&shared.stats.connections_current, 1);
    Stats::add(&shared.stats.connections_total, 1);
    let mut state = ConnectionState {
        id,
        peer,
        compressors: Vec::new(),
        user: None,
        scram: None,
        app_name: None,
        close: false,
    };
    let mut next_request_id = 1i32;
    let mut unauthenticated = AuthDeadline::new(shared, socket);
    loop {
        let mut head = [0u8; HEADER_LEN];
        if unauthenticated.read_exact(&mut stream, &mut head).is_err() {
            break;
        }
        let Ok(header) = Header::parse(&head) else {
            break;
        };
        let mut body = vec![0u8; header.body_len()];
        if unauthenticated.read_exact(&mut stream, &mut body).is_err() {
            break;
        }
        Stats::add(&shared.stats.requests, 1);
        Stats::add(&shared.stats.bytes_in, header.length as u64);
        let reply = match wire::parse(&header, &body) {
            Ok(request) => respond(shared, &mut state, request, &mut next_request_id),
            Err(wire::WireError::UnknownOpCode(_)) => break,
            Err(e) => {
                let error = CommandError::new(e.code(), e.to_string());
                let body = wire::to_raw(&error.to_document());
                let legacy = header.op_code == wire::OP_QUERY;
                Some(encode(
                    &body,
                    header.request_id,
                    legacy,
                    None,
                    &mut next_request_id,
                ))
            }
        };
        if state.close {
            break;
        }
        if let Some(bytes) = reply {
            Stats::add(&shared.stats.bytes_out, bytes.len() as u64);
            if stream
                .write_all(&bytes)
                .and_then(|()| stream.flush())
                .is_err()
            {
                break;
            }
        }
        if shared.stopping.load(Ordering::Acquire) {
            break;
        }
        if state.user.is_some() {
            unauthenticated.lift();
        }
    }
    shared
        .stats
        .connections_current
        .fetch_sub(1, Ordering::Relaxed);
}

/// When the server requires authentication, the time a connection has to authenticate: every
/// read before then waits at most until the deadline, so that a client that sends nothing, or
/// sends without authenticating, or trickles a message a byte at a time, is closed at it.
struct AuthDeadline {
    /// The deadline, and the socket whose read timeout enforces it; `None` once lifted.
    until: Option<(Instant, TcpStream)>,
}

impl AuthDeadline {
    fn new(shared: &Shared, socket: Option<TcpStream>) -> AuthDeadline {
        let until = match socket {
            Some(socket) if shared.config.auth => {
                Some((Instant::now() + shared.config.auth_timeout, socket))
            }
            _ => None,
        };
        AuthDeadline { until }
    }

    /// Fills `buf` from `stream`, each read waiting no later than the deadline.
    fn read_exact(&self, stream: &mut Box<dyn Stream>, buf: &mut [u8]) -> std::io::Result<()> {
        let Some((deadline, socket)) = &self.until else {
            return stream.read_exact(buf);
        };
        let mut filled = 0;
        while filled < buf.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            socket.set_read_timeout(Some(left))?;
            match stream.read(&mut buf[filled..]) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The connection authenticated: reads wait as long as they take again.
    fn lift(&mut self) {
        if let Some((_, socket)) = self.until.take() {
            let _ = socket.set_read_timeout(None);
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
    let request_id = *next_request_id;
    *next_request_id = next_request_id.wrapping_add(1);
    if legacy {
        wire::encode_reply(request_id, response_to, body, compressor)
    } else {
        wire::encode_msg(request_id, response_to, body, 0, compressor)
    }
}

/// Runs a request's command; the encoded reply, or `None` when the client asked for none.
fn respond(
    shared: &Shared,
    state: &mut ConnectionState,
    request: Request,
    next_request_id: &mut i32,
) -> Option<Vec<u8>> {
    let more_to_come = request.more_to_come();
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
    let spec = command::lookup(&name);
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
    Some(encode(
        &body,
        request.request_id,
        legacy,
        compressor,
        next_request_id,
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
    // The fail point exists only with test commands: without them no command takes its lock.
    let firing = shared
        .config
        .test_commands
        .then(|| {
            shared
                .fail_points
                .fire(name, command, state.app_name.as_deref())
        })
        .flatten()
        .unwrap_or_default();
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
        let _registered = shared.operations.register(operation);
        let _entered = interrupt.enter();
        let mut ctx = Ctx {
            server: shared,
            conn: state,
            db,
            txn: None,
            session: None,
        };
        // A panic in a command is a bug; it fails that command, not the server.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            super::session::run_command(&mut ctx, spec, command)
        }));
        ran.unwrap_or_else(|_| {
            Err(CommandError::new(
                ErrorCode::INTERNAL_ERROR,
                format!("command {name} failed with an internal error"),
            ))
        })
    })();
    let mut reply = match result {
        Ok(reply) => {
            let mut raw = reply.finish();
            if let Some((error, labels)) = firing.write_concern_error {
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
            wire::to_raw(&reply)
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
        started: Instant::now(),
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
