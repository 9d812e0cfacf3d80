//! Logical sessions and multi-document transactions.
//!
//! Every command may carry an `lsid`; a command with `autocommit: false` belongs to the
//! session's transaction number `txnNumber`, and `startTransaction: true` opens it. A
//! transaction is one engine write transaction over the database of its first command, kept
//! open by a thread of its own (the engine's write transactions live inside a closure), which
//! runs each of the transaction's commands in turn. It ends with `commitTransaction`,
//! `abortTransaction`, the first command of it that fails (as in MongoDB), a newer transaction
//! number, the end of its session, or its lifetime limit (60 seconds, MongoDB's
//! `transactionLifetimeLimitSeconds`): the engine has one writer at a time, so an idle client
//! must not hold it for long.
//!
//! A command's interrupt (its `maxTimeMS`, its kill; see `operations`) goes with its work to the
//! transaction's thread, so an expiry fails the command and with it the transaction. A command
//! still waiting for that thread (the engine's one writer held by another transaction, say)
//! gives up at its interrupt only while its work has not begun; work that has begun finishes
//! or fails on the thread, so a reply never disagrees with what was written.
//!
//! Rules, as MongoDB's: transactions need replica-set mode; a lower `txnNumber` than the
//! session's is `TransactionTooOld` (225); continuing a transaction that is not open is
//! `NoSuchTransaction` (251), labelled `TransientTransactionError`; committing a committed
//! transaction again succeeds (drivers retry commits).
//!
//! Nothing a client sends can make the session table grow past its bounds: an `lsid.id` must be
//! a UUID (binary subtype 4 of 16 bytes, as MongoDB requires: `TypeMismatch` or `InvalidUUID`
//! otherwise), so a key costs 16 bytes; the table holds at most `max_sessions` sessions
//! (MongoDB's `maxSessions`, `TooManyLogicalSessions` past it), and one connection opens at most
//! `max_sessions_per_connection` of them, so that one client cannot fill it alone.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bson::{Bson, Document, RawDocumentBuf};
use odm_engine::query::FindOptions;
use odm_engine::{Database, ErrorCode, ReadTxn, WriteTxn};

use super::command::{CommandError, CommandResult, Ctx, Reply, Spec};
use super::{Stats, TransactionStats};

/// A session unused this long is forgotten (MongoDB's `logicalSessionTimeoutMinutes`: 30).
const SESSION_TIMEOUT: Duration = Duration::from_mins(30);

/// The commands that may run inside a transaction.
const IN_TRANSACTION: [&str; 16] = [
    "find",
    "aggregate",
    "distinct",
    "getMore",
    "killCursors",
    "insert",
    "update",
    "delete",
    "findAndModify",
    "findandmodify",
    "count",
    "commitTransaction",
    "abortTransaction",
    "create",
    "createIndexes",
    "bulkWrite",
];

type Job = Box<dyn FnOnce(&mut WriteTxn<'_>) + Send>;

enum Message {
    Run(Job),
    Commit(Claim, SyncSender<Result<(), CommandError>>),
    Abort,
}

/// Queues `message` for the transaction's thread, waiting while another command's work fills
/// the queue for as long as the current command's interrupt allows.
fn send(sender: &SyncSender<Message>, message: Message) -> Result<(), CommandError> {
    let mut message = message;
    loop {
        match sender.try_send(message) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Disconnected(_)) => {
                return Err(no_such_transaction("the transaction has ended"));
            }
            Err(TrySendError::Full(back)) => {
                odm_engine::interrupt::check_now()
                    .map_err(|stopped| CommandError::from(odm_engine::Error::from(stopped)))?;
                std::thread::sleep(odm_engine::interrupt::LOOK_EVERY);
                message = back;
            }
        }
    }
}

/// Whether the transaction's thread has begun a command's work, or the command gave up first.
///
/// A command waits for the transaction's thread, which may itself wait for the database's
/// writer; its interrupt (`maxTimeMS`, `killOp`) ends that wait only if the work has not begun:
/// the command then claims it as given up, and the thread skips it (a commit given up aborts
/// the transaction). Work that has begun runs on under the same interrupt, which stops it
/// inside, and the command takes its outcome: so a command reported as failed wrote nothing.
#[derive(Debug, Clone, Default)]
struct Claim(Arc<std::sync::atomic::AtomicU8>);

impl Claim {
    const WAITING: u8 = 0;
    const STARTED: u8 = 1;
    const GIVEN_UP: u8 = 2;

    /// Claims the work for the transaction's thread; `false` when the command gave up.
    fn start(&self) -> bool {
        self.swap_from_waiting(Claim::STARTED)
    }

    fn swap_from_waiting(&self, to: u8) -> bool {
        use std::sync::atomic::Ordering;
        self.0
            .compare_exchange(Claim::WAITING, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The work's outcome, or the command's interrupt's error when it stops the wait before
    /// the work began.
    fn wait<R>(&self, result: &Receiver<Result<R, CommandError>>) -> Result<R, CommandError> {
        let ended = || Err(no_such_transaction("the transaction has ended"));
        let Some(interrupt) = odm_engine::interrupt::Interrupt::current() else {
            return result.recv().unwrap_or_else(|_| ended());
        };
        loop {
            match result.recv_timeout(odm_engine::interrupt::LOOK_EVERY) {
                Ok(outcome) => return outcome,
                Err(RecvTimeoutError::Disconnected) => return ended(),
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(stopped) = interrupt.status()
                        && self.swap_from_waiting(Claim::GIVEN_UP)
                    {
                        return Err(CommandError::from(odm_engine::Error::from(stopped)));
                    }
                }
            }
        }
    }
}

/// An open transaction: the channel to the thread that holds its engine transaction.
#[derive(Debug)]
pub struct Transaction {
    /// The database it writes.
    db: String,
    jobs: Mutex<Option<SyncSender<Message>>>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Message::Run(_) => "Run",
            Message::Commit(..) => "Commit",
            Message::Abort => "Abort",
        })
    }
}

impl Transaction {
    fn start(
        db: Arc<Database>,
        name: String,
        lifetime: Duration,
        change_context: Document,
        stats: Arc<TransactionStats>,
    ) -> Result<Arc<Transaction>, CommandError> {
        let (jobs, incoming) = sync_channel::<Message>(1);
        let deadline = Instant::now() + lifetime;
        std::thread::Builder::new()
            .name("odm-transaction".into())
            .stack_size(odm_engine::QUERY_THREAD_STACK_BYTES)
            .spawn(move || {
                Stats::add(&stats.started, 1);
                Stats::add(&stats.open, 1);
                let committed = transaction_thread(&db, &incoming, deadline, &change_context);
                stats
                    .open
                    .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                Stats::add(
                    if committed {
                        &stats.committed
                    } else {
                        &stats.aborted
                    },
                    1,
                );
            })
            .map_err(|e| {
                CommandError::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("cannot start a transaction: {e}"),
                )
            })?;
        Ok(Arc::new(Transaction {
            db: name,
            jobs: Mutex::new(Some(jobs)),
        }))
    }

    fn sender(&self) -> Option<SyncSender<Message>> {
        self.jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Runs `f` inside the transaction.
    fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut WriteTxn<'_>) -> Result<R, CommandError> + Send + 'static,
    ) -> Result<R, CommandError> {
        let (reply, result) = sync_channel(1);
        let claim = Claim::default();
        // The command's interrupt goes with its work to the transaction's thread.
        let interrupt = odm_engine::interrupt::Interrupt::current();
        let job: Job = {
            let claim = claim.clone();
            Box::new(move |t| {
                if !claim.start() {
                    return;
                }
                let _entered = interrupt
                    .as_ref()
                    .map(odm_engine::interrupt::Interrupt::enter);
                let _ = reply.send(f(t));
            })
        };
        let Some(sender) = self.sender() else {
            return Err(no_such_transaction("the transaction has ended"));
        };
        send(&sender, Message::Run(job))?;
        claim.wait(&result)
    }

    fn commit(&self) -> Result<(), CommandError> {
        let (reply, result) = sync_channel(1);
        let claim = Claim::default();
        let sender = self
            .jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(sender) = sender else {
            return Err(no_such_transaction("the transaction has ended"));
        };
        send(&sender, Message::Commit(claim.clone(), reply))?;
        claim.wait(&result)
    }

    fn abort(&self) {
        let sender = self
            .jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        // Never waits: with a command's work still queued (the thread waiting for the
        // writer), dropping the sender is the abort, seen once the queue is read.
        if let Some(s) = sender {
            let _ = s.try_send(Message::Abort);
        }
    }
}

/// Holds the engine transaction: runs jobs until told to commit or abort, or until the
/// deadline passes (then it aborts). Whether it committed.
fn transaction_thread(
    db: &Database,
    incoming: &Receiver<Message>,
    deadline: Instant,
    change_context: &Document,
) -> bool {
    let mut commit_reply = None;
    let outcome: Result<(), CommandError> = db.write(|t| {
        t.set_change_context(change_context)?;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match incoming.recv_timeout(wait) {
                Ok(Message::Run(job)) => job(t),
                Ok(Message::Commit(claim, reply)) => {
                    if !claim.start() {
                        return Err(no_such_transaction("its commit was interrupted"));
                    }
                    commit_reply = Some(reply);
                    return Ok(());
                }
                Ok(Message::Abort) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(no_such_transaction("aborted"));
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(CommandError::new(
                        ErrorCode::TRANSACTION_EXCEEDED_LIFETIME_LIMIT,
                        "the transaction passed its lifetime limit and was aborted",
                    ));
                }
            }
        }
    });
    let committed = outcome.is_ok();
    if let Some(reply) = commit_reply {
        let _ = reply.send(outcome);
    }
    committed
}

/// An error of a command inside a transaction (`autocommit: false`) with MongoDB's
/// `TransientTransactionError` label when its code says the whole transaction may be retried
/// ([`ErrorCode::is_transient_transaction`]; `NoSuchTransaction` on a commit or abort only
/// when no write concern error came with it, which none does here).
pub fn with_transient_label(command: &Document, error: CommandError) -> CommandError {
    let in_transaction = command.get("autocommit") == Some(&Bson::Boolean(false));
    let transient = ErrorCode::is_transient_transaction(error.code);
    let labelled = error
        .labels
        .iter()
        .any(|l| l == "TransientTransactionError");
    if in_transaction && transient && !labelled {
        error.with_label("TransientTransactionError")
    } else {
        error
    }
}

fn no_such_transaction(why: &str) -> CommandError {
    CommandError::new(
        ErrorCode::NO_SUCH_TRANSACTION,
        format!("Transaction is not in progress: {why}"),
    )
    .with_label("TransientTransactionError")
}

#[derive(Debug)]
enum State {
    None,
    Active(Arc<Transaction>),
    Committed,
    Aborted,
}

#[derive(Debug)]
struct Session {
    txn_number: i64,
    state: State,
    last_used: Instant,
    /// The connection that opened the session, whose count it is charged to.
    connection: u64,
    /// The user that opened it, (database, name), which `killAllSessions` filters by.
    user: Option<(String, String)>,
}

impl Session {
    fn new(connection: u64) -> Session {
        Session {
            txn_number: -1,
            state: State::None,
            last_used: Instant::now(),
            connection,
            user: None,
        }
    }

    /// Aborts the session's open transaction, as ending or forgetting a session does.
    fn close(self) {
        if let State::Active(txn) = self.state {
            txn.abort();
        }
    }
}

/// A user, (database, name).
type User = (String, String);

/// A logical session's id: an `lsid.id`, which MongoDB requires to be a UUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionId([u8; 16]);

impl SessionId {
    /// The `lsid` document of this id.
    pub fn to_lsid(self) -> Document {
        bson::doc! {"id": bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: self.0.to_vec(),
        }}
    }

    /// The id of an `lsid` document, checked as MongoDB checks it.
    pub fn from_lsid(lsid: &Document) -> Result<SessionId, CommandError> {
        const FIELD: &str = "OperationSessionInfo.lsid.id";
        let binary = match lsid.get("id") {
            Some(Bson::Binary(binary)) => binary,
            Some(other) => {
                return Err(CommandError::new(
                    ErrorCode::TYPE_MISMATCH,
                    format!(
                        "BSON field '{FIELD}' is the wrong type '{}', expected type 'binData'",
                        odm_engine::expr::type_name(other)
                    ),
                ));
            }
            None => {
                return Err(CommandError::new(
                    ErrorCode::IDL_FAILED_TO_PARSE,
                    format!("BSON field '{FIELD}' is missing but a required field"),
                ));
            }
        };
        if binary.subtype != bson::spec::BinarySubtype::Uuid {
            return Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                format!(
                    "BSON field '{FIELD}' is the wrong binData type '{}', expected type 'UUID'",
                    u8::from(binary.subtype)
                ),
            ));
        }
        let bytes = <[u8; 16]>::try_from(binary.bytes.as_slice()).map_err(|_| {
            CommandError::new(
                ErrorCode::INVALID_UUID,
                "uuid must be a 16-byte binary field with UUID (4) subtype",
            )
        })?;
        Ok(SessionId(bytes))
    }

    /// The session a command names in its `lsid`, if any.
    fn of_command(command: &Document) -> Result<Option<SessionId>, CommandError> {
        match command.get("lsid") {
            None => Ok(None),
            Some(Bson::Document(lsid)) => SessionId::from_lsid(lsid).map(Some),
            Some(other) => Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                format!(
                    "BSON field 'OperationSessionInfo.lsid' is the wrong type '{}', expected type 'object'",
                    odm_engine::expr::type_name(other)
                ),
            )),
        }
    }
}

/// The sessions the server has seen, by id, and how many each connection opened.
#[derive(Debug, Default)]
struct Table {
    by_id: HashMap<SessionId, Session>,
    per_connection: HashMap<u64, usize>,
}

impl Table {
    /// The session `id`, opened for `connection` when it is new and the bounds allow it.
    fn open(
        &mut self,
        id: SessionId,
        connection: u64,
        limits: &Limits,
    ) -> Result<&mut Session, CommandError> {
        if !self.by_id.contains_key(&id) {
            if self.by_id.len() >= limits.max_sessions {
                return Err(CommandError::new(
                    ErrorCode::TOO_MANY_LOGICAL_SESSIONS,
                    format!(
                        "Unable to add session into the cache because the number of active sessions is too high ({} sessions, the server's maxSessions)",
                        limits.max_sessions
                    ),
                ));
            }
            let opened = self.per_connection.entry(connection).or_default();
            if *opened >= limits.per_connection {
                return Err(CommandError::new(
                    ErrorCode::TOO_MANY_LOGICAL_SESSIONS,
                    format!(
                        "Unable to add session: this connection holds {opened} sessions, the most one connection may open; end some (endSessions) or let them expire",
                    ),
                ));
            }
            *opened += 1;
        }
        let session = self
            .by_id
            .entry(id)
            .or_insert_with(|| Session::new(connection));
        session.last_used = Instant::now();
        Ok(session)
    }

    fn remove(&mut self, id: &SessionId) -> Option<Session> {
        let session = self.by_id.remove(id)?;
        self.uncount(session.connection);
        Some(session)
    }

    fn uncount(&mut self, connection: u64) {
        if let Some(opened) = self.per_connection.get_mut(&connection) {
            *opened = opened.saturating_sub(1);
            if *opened == 0 {
                self.per_connection.remove(&connection);
            }
        }
    }
}

/// The bounds of the session table.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_sessions: usize,
    per_connection: usize,
}

/// The sessions the server has seen, by their `lsid.id`, within the configured bounds.
#[derive(Debug)]
pub struct Sessions {
    open: Mutex<Table>,
    limits: Limits,
}

impl Sessions {
    /// An empty table with at most `max_sessions` sessions, `per_connection` of them opened by
    /// any one connection.
    pub fn new(max_sessions: usize, per_connection: usize) -> Sessions {
        Sessions {
            open: Mutex::default(),
            limits: Limits {
                max_sessions,
                per_connection,
            },
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `$listLocalSessions`' documents: each session's id (its `lsid` and its user's digest)
    /// and last use, those of `users` only when given ((database, name) pairs; `None`: all).
    pub fn local_sessions(&self, users: Option<&[(String, String)]>) -> Vec<Document> {
        let now = Instant::now();
        let table = self.lock();
        let mut out: Vec<Document> = table
            .by_id
            .iter()
            .filter(|(_, s)| {
                users.is_none_or(|users| s.user.as_ref().is_some_and(|u| users.contains(u)))
            })
            .map(|(id, s)| {
                let mut lsid = id.to_lsid();
                let digest = crate::auth::user_digest(s.user.as_ref());
                lsid.insert(
                    "uid",
                    bson::Binary {
                        subtype: bson::spec::BinarySubtype::Generic,
                        bytes: digest.to_vec(),
                    },
                );
                let idle = now.duration_since(s.last_used);
                let last_use = bson::DateTime::from_millis(
                    bson::DateTime::now().timestamp_millis()
                        - i64::try_from(idle.as_millis()).unwrap_or(i64::MAX),
                );
                bson::doc! {"_id": lsid, "lastUse": last_use}
            })
            .collect();
        out.sort_by(|a, b| {
            a.get_datetime("lastUse")
                .ok()
                .cmp(&b.get_datetime("lastUse").ok())
        });
        out
    }

    /// How many sessions the table holds.
    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Whether the table holds no session.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ends a session: its open transaction is aborted.
    pub fn end(&self, id: SessionId) {
        if let Some(session) = self.lock().remove(&id) {
            session.close();
        }
    }

    pub fn end_all(&self) {
        let mut table = self.lock();
        table.per_connection.clear();
        for (_, session) in table.by_id.drain() {
            session.close();
        }
    }

    /// Ends the sessions `chosen` selects by id and by the user that opened them (their open
    /// transactions are aborted); their ids.
    pub fn end_matching(
        &self,
        chosen: impl Fn(SessionId, Option<&(String, String)>) -> bool,
    ) -> Vec<SessionId> {
        let mut table = self.lock();
        let ids: Vec<SessionId> = table
            .by_id
            .iter()
            .filter(|(id, s)| chosen(**id, s.user.as_ref()))
            .map(|(id, _)| *id)
            .collect();
        for id in &ids {
            if let Some(session) = table.remove(id) {
                session.close();
            }
        }
        ids
    }

    /// The sessions holding an open transaction: id, transaction number, the user that
    /// opened the session (what `$currentOp` lists as idle sessions).
    pub fn in_transaction(&self) -> Vec<(SessionId, i64, Option<User>)> {
        self.lock()
            .by_id
            .iter()
            .filter(|(_, s)| matches!(s.state, State::Active(_)))
            .map(|(id, s)| (*id, s.txn_number, s.user.clone()))
            .collect()
    }

    /// Forgets sessions unused past the session timeout.
    pub fn expire(&self) {
        let now = Instant::now();
        let mut table = self.lock();
        let expired: Vec<SessionId> = table
            .by_id
            .iter()
            .filter(|(_, s)| now.duration_since(s.last_used) >= SESSION_TIMEOUT)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            if let Some(session) = table.remove(&id) {
                session.close();
            }
        }
    }
}

/// What a command says of its transaction.
struct TxnFields {
    key: SessionId,
    number: i64,
    start: bool,
    /// `lsid` and `txnNumber`, which the transaction's change events carry.
    change_context: Document,
}

fn txn_fields(
    command: &Document,
    session: Option<SessionId>,
) -> Result<Option<TxnFields>, CommandError> {
    let autocommit = command.get("autocommit");
    let Some(autocommit) = autocommit else {
        return Ok(None);
    };
    if autocommit != &Bson::Boolean(false) {
        return Err(CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "autocommit may only be false (and then names a transaction)",
        ));
    }
    let key = session.ok_or_else(|| {
        CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "a transaction needs a session (lsid)",
        )
    })?;
    let number = txn_number(command)?.ok_or_else(|| {
        CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "a transaction needs a txnNumber",
        )
    })?;
    let start = command.get("startTransaction") == Some(&Bson::Boolean(true));
    let change_context = bson::doc! {
        "lsid": command.get("lsid").cloned().unwrap_or(Bson::Null),
        "txnNumber": number,
    };
    Ok(Some(TxnFields {
        key,
        number,
        start,
        change_context,
    }))
}

/// Runs a command, inside its transaction when it names one.
pub fn run_command(ctx: &mut Ctx<'_>, spec: &Spec, command: &Document) -> CommandResult {
    super::command::fields::check(spec.name, command)?;
    ctx.read_concern = super::command::read_concern::parse(ctx, command, spec.name)?;
    if let Some(at) = ctx.read_concern.and_then(|c| c.at_cluster_time)
        && command.get("startTransaction") == Some(&Bson::Boolean(true))
    {
        // A snapshot transaction at a past time reads the state of now: only if nothing
        // has been committed since.
        super::command::read_concern::unchanged_since(ctx, at)?;
    }
    let session = SessionId::of_command(command)?;
    if let Some(id) = session {
        let sessions = &ctx.server.sessions;
        let mut table = sessions.lock();
        let opened = table.open(id, ctx.conn.id, &sessions.limits)?;
        if opened.user.is_none() {
            opened.user.clone_from(&ctx.conn.user);
        }
    }
    ctx.session = session;
    let Some(fields) = txn_fields(command, session)? else {
        if matches!(spec.name, "commitTransaction" | "abortTransaction") {
            return Err(CommandError::new(
                ErrorCode::INVALID_OPTIONS,
                format!(
                    "{} must be run within a transaction (autocommit: false)",
                    spec.name
                ),
            ));
        }
        ctx.retry = retry_key(ctx, spec.name, command, session)?;
        return (spec.run)(ctx, command);
    };
    if !ctx.server.is_replica_set() {
        return Err(CommandError::new(
            ErrorCode::ILLEGAL_OPERATION,
            "Transaction numbers are only allowed on a replica set member or mongos (start the server with --replica-set)",
        ));
    }
    if !IN_TRANSACTION.contains(&spec.name) {
        return Err(CommandError::new(
            ErrorCode::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            format!(
                "Cannot run '{}' in a multi-document transaction.",
                spec.name
            ),
        ));
    }
    let ends = matches!(spec.name, "commitTransaction" | "abortTransaction");
    if !ends && command.contains_key("writeConcern") {
        // A transaction's write concern is its commit's.
        return Err(CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "Cannot set write concern after starting a transaction.",
        ));
    }
    let db = database_written(ctx, spec.name, command)?;
    let txn = enter(ctx, &fields, spec.name, &db)?;
    let Some(txn) = txn else {
        // A commit repeated after it succeeded.
        return Ok(Document::new().into());
    };
    // A cursor's commands read only their cursor, which may be a client bulkWrite's on `admin`.
    let of_cursor = matches!(spec.name, "getMore" | "killCursors");
    if txn.db != db && !ends && !of_cursor {
        return Err(spans_databases(&txn.db, &db));
    }
    ctx.txn = Some(txn.clone());
    let result = (spec.run)(ctx, command);
    ctx.txn = None;
    let failed = match &result {
        Err(_) => true,
        Ok(Reply::Doc(d)) => d.contains_key("writeErrors"),
        Ok(Reply::Raw(r)) => {
            r.get("writeErrors").ok().flatten().is_some()
                || r.get_i32("nErrors").is_ok_and(|n| n > 0)
        }
    };
    if failed && !ends {
        // Any failure inside a transaction aborts it, as in MongoDB.
        txn.abort();
        set_state(ctx, fields.key, State::Aborted);
    }
    result
}

/// The database a command in a transaction works on: its own, or for a client `bulkWrite`
/// (run on `admin`) the one database its namespaces name.
fn database_written(ctx: &Ctx<'_>, name: &str, command: &Document) -> Result<String, CommandError> {
    if name != "bulkWrite" {
        return Ok(ctx.db.clone());
    }
    let mut named: Option<&str> = None;
    let namespaces = command
        .get_array("nsInfo")
        .map(Vec::as_slice)
        .unwrap_or_default();
    for info in namespaces.iter().filter_map(Bson::as_document) {
        let Ok(ns) = info.get_str("ns") else { continue };
        let (db, _) = super::command::split_namespace(ns)?;
        match named {
            Some(first) if first != db => return Err(spans_databases(first, db)),
            _ => named = Some(db),
        }
    }
    Ok(named.map_or_else(|| ctx.db.clone(), str::to_owned))
}

/// A transaction here holds one database's writer: a second database is refused.
fn spans_databases(held: &str, other: &str) -> CommandError {
    CommandError::new(
        ErrorCode::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
        format!(
            "this transaction writes database '{held}', not '{other}': a transaction spans one database here"
        ),
    )
}

fn set_state(ctx: &Ctx<'_>, key: SessionId, state: State) {
    if let Some(session) = ctx.server.sessions.lock().by_id.get_mut(&key) {
        session.state = state;
    }
}

/// Finds or opens the transaction a command names; `None` for a commit of a committed one.
fn enter(
    ctx: &Ctx<'_>,
    fields: &TxnFields,
    command: &str,
    db_name: &str,
) -> Result<Option<Arc<Transaction>>, CommandError> {
    let sessions = &ctx.server.sessions;
    let mut table = sessions.lock();
    let session = table.open(fields.key, ctx.conn.id, &sessions.limits)?;
    if fields.number < session.txn_number {
        return Err(CommandError::new(
            ErrorCode::TRANSACTION_TOO_OLD,
            format!(
                "Cannot start transaction {} on session because a newer transaction {} has already started",
                fields.number, session.txn_number
            ),
        ));
    }
    if fields.start {
        if fields.number == session.txn_number {
            return Err(CommandError::new(
                ErrorCode::location(117),
                format!(
                    "Transaction {} has already started on this session",
                    fields.number
                ),
            ));
        }
        if let State::Active(old) = &session.state {
            old.abort();
        }
        let db = ctx.server.storage.get_or_create(db_name)?;
        let txn = Transaction::start(
            db,
            db_name.to_owned(),
            ctx.server.config.transaction_lifetime,
            fields.change_context.clone(),
            ctx.server.stats.transactions.clone(),
        )?;
        session.txn_number = fields.number;
        session.state = State::Active(txn.clone());
        return Ok(Some(txn));
    }
    if fields.number > session.txn_number {
        return Err(no_such_transaction("none was started with this number"));
    }
    match &session.state {
        State::Active(txn) => Ok(Some(txn.clone())),
        State::Committed if command == "commitTransaction" => Ok(None),
        State::Committed if command == "abortTransaction" => Err(CommandError::new(
            ErrorCode::location(256),
            "Cannot abort a transaction that has been committed",
        )),
        _ => Err(no_such_transaction("it was aborted or has expired")),
    }
}

pub fn commit_transaction(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let txn = ctx
        .txn
        .clone()
        .ok_or_else(|| no_such_transaction("none is open"))?;
    let key = SessionId::of_command(command)?;
    let outcome = txn.commit();
    if let Some(key) = key {
        set_state(
            ctx,
            key,
            if outcome.is_ok() {
                State::Committed
            } else {
                State::Aborted
            },
        );
    }
    outcome.map(|()| Document::new().into())
}

pub fn abort_transaction(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let txn = ctx
        .txn
        .clone()
        .ok_or_else(|| no_such_transaction("none is open"))?;
    txn.abort();
    if let Some(key) = SessionId::of_command(command)? {
        set_state(ctx, key, State::Aborted);
    }
    Ok(Document::new().into())
}

/// Whether the command runs inside a transaction.
pub fn in_transaction(ctx: &Ctx<'_>) -> bool {
    ctx.txn.is_some()
}

/// A command's `txnNumber`, a whole number, when it has one.
fn txn_number(command: &Document) -> Result<Option<i64>, CommandError> {
    match command.get("txnNumber") {
        None => Ok(None),
        Some(Bson::Int64(n)) => Ok(Some(*n)),
        Some(Bson::Int32(n)) => Ok(Some(i64::from(*n))),
        Some(other) => Err(CommandError::new(
            ErrorCode::TYPE_MISMATCH,
            format!(
                "txnNumber must be a long, not {}",
                odm_engine::expr::type_name(other)
            ),
        )),
    }
}

/// A retryable write's session and transaction number (outside a transaction).
#[derive(Debug, Clone, Copy)]
pub struct RetryKey {
    session: SessionId,
    number: i64,
}

/// The commands whose writes are retryable (the retryable writes specification's list).
pub(crate) const RETRYABLE: [&str; 6] = [
    "insert",
    "update",
    "delete",
    "findAndModify",
    "findandmodify",
    "bulkWrite",
];

/// The retry key of a command that carries `txnNumber` outside a transaction. As MongoDB: a
/// transaction number needs a session and a replica set, and only writes take one.
fn retry_key(
    ctx: &Ctx<'_>,
    name: &str,
    command: &Document,
    session: Option<SessionId>,
) -> Result<Option<RetryKey>, CommandError> {
    let Some(number) = txn_number(command)? else {
        return Ok(None);
    };
    if !ctx.server.is_replica_set() {
        return Err(CommandError::new(
            ErrorCode::ILLEGAL_OPERATION,
            "Transaction numbers are only allowed on a replica set member or mongos (start the server with --replica-set)",
        ));
    }
    let session = session.ok_or_else(|| {
        CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "Transaction number requires a session ID to also be specified",
        )
    })?;
    if !RETRYABLE.contains(&name) {
        return Err(CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            format!(
                "txnNumber may only be provided for multi-document transactions and retryable write commands. autocommit:false was not provided, and {name} is not a retryable write command."
            ),
        ));
    }
    Ok(Some(RetryKey { session, number }))
}

/// What a write command did and its reply; for a retry of a recorded write, the recorded reply
/// alone (nothing was applied).
#[derive(Debug)]
pub enum Recorded<R> {
    Fresh(R, Document),
    Retried(Document),
}

/// [`write()`] for a write command that may be retried: `work` and, from what it did, `reply`
/// (`None`: nothing to record, the command fails after its commit) run in one engine
/// transaction with the record of a retryable write, so that the record and the write commit
/// together. A retry of the session's latest write returns that write's reply unapplied; an
/// older number is `TransactionTooOld` (225).
pub fn write_recorded<R: Send + 'static>(
    ctx: &Ctx<'_>,
    work: impl FnOnce(&mut WriteTxn<'_>) -> Result<R, CommandError> + Send + 'static,
    reply: impl FnOnce(&R) -> Option<Document> + Send + 'static,
) -> Result<Recorded<R>, CommandError> {
    let key = ctx.retry;
    let recorded = write(ctx, move |t| {
        if let Some(key) = key
            && let Some(record) = t.retryable_write(&key.session.0)?
        {
            if record.txn_number == key.number {
                return Ok(Recorded::Retried(record.reply));
            }
            if record.txn_number > key.number {
                return Err(CommandError::new(
                    ErrorCode::TRANSACTION_TOO_OLD,
                    format!(
                        "Retryable write with txnNumber {} is prohibited on session because a newer retryable write with txnNumber {} has already started on this session.",
                        key.number, record.txn_number
                    ),
                ));
            }
        }
        let done = work(t)?;
        let Some(doc) = reply(&done) else {
            return Ok(Recorded::Fresh(done, Document::new()));
        };
        if let Some(key) = key {
            t.record_retryable_write(&key.session.0, key.number, &doc)?;
        }
        Ok(Recorded::Fresh(done, doc))
    })?;
    match recorded {
        Recorded::Fresh(..) if key.is_some() => ctx.conn.wrote_fresh.set(true),
        Recorded::Retried(_) => Stats::add(&ctx.server.stats.transactions.retried_commands, 1),
        Recorded::Fresh(..) => {}
    }
    Ok(recorded)
}

/// Runs `f` in a write transaction of the command's database: the command's transaction, or
/// one of its own (created with the database if needed), committed when `f` succeeds.
pub fn write<R: Send + 'static>(
    ctx: &Ctx<'_>,
    f: impl FnOnce(&mut WriteTxn<'_>) -> Result<R, CommandError> + Send + 'static,
) -> Result<R, CommandError> {
    if let Some(txn) = &ctx.txn {
        return txn.run(f);
    }
    let db = ctx.server.storage.get_or_create(&ctx.db)?;
    db.write(f)
}

/// Runs `f` on a snapshot of the command's database; `None` when the database does not exist.
pub fn read<R>(
    ctx: &Ctx<'_>,
    f: impl FnOnce(&ReadTxn) -> Result<R, CommandError>,
) -> Result<Option<R>, CommandError> {
    match ctx.server.storage.get(&ctx.db)? {
        Some(db) => f(&db.read()?).map(Some),
        None => Ok(None),
    }
}

/// Inside a transaction, how many documents a count finds in the transaction's own writes
/// (counted as found, none held); `None` outside one.
pub fn count_in_transaction(
    ctx: &Ctx<'_>,
    collection: &str,
    filter: &Document,
    options: &FindOptions,
) -> Result<Option<u64>, CommandError> {
    let Some(txn) = &ctx.txn else {
        return Ok(None);
    };
    let (collection, filter, options) = (collection.to_owned(), filter.clone(), options.clone());
    txn.run(move |t| Ok(t.count_with(&collection, &filter, &options)?))
        .map(Some)
}

/// Inside a transaction, `distinct` over the transaction's own writes; `None` outside one.
pub fn distinct_in_transaction(
    ctx: &Ctx<'_>,
    collection: &str,
    key: &str,
    filter: &Document,
    options: &FindOptions,
) -> Result<Option<Vec<Bson>>, CommandError> {
    let Some(txn) = &ctx.txn else {
        return Ok(None);
    };
    let (collection, key) = (collection.to_owned(), key.to_owned());
    let (filter, options) = (filter.clone(), options.clone());
    txn.run(move |t| Ok(t.distinct_within(&collection, &key, &filter, &options)?))
        .map(Some)
}

/// Inside a transaction, a find's results read from the transaction's own writes, gathered
/// within the room open cursors have left (MongoDB's 146 past it); `None` outside one.
pub fn find_in_transaction(
    ctx: &Ctx<'_>,
    collection: &str,
    filter: &Document,
    options: &FindOptions,
) -> Result<Option<Vec<RawDocumentBuf>>, CommandError> {
    let Some(txn) = &ctx.txn else {
        return Ok(None);
    };
    let (collection, filter, options) = (collection.to_owned(), filter.clone(), options.clone());
    // Gathered within what open cursors may still hold: past it the results could not be
    // kept anyway.
    let room = ctx.server.cursors.room();
    txn.run(move |t| Ok(t.find_within(&collection, &filter, &options, room)?))
        .map(Some)
}
