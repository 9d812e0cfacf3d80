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
//! Rules, as MongoDB's: transactions need replica-set mode; a lower `txnNumber` than the
//! session's is `TransactionTooOld` (225); continuing a transaction that is not open is
//! `NoSuchTransaction` (251), labelled `TransientTransactionError`; committing a committed
//! transaction again succeeds (drivers retry commits).

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bson::{Bson, Document, RawDocumentBuf};
use odm_engine::query::FindOptions;
use odm_engine::{Database, ErrorCode, ReadTxn, WriteTxn};

use super::command::{CommandError, CommandResult, Ctx, Reply, Spec};

/// A session unused this long is forgotten (MongoDB's `logicalSessionTimeoutMinutes`: 30).
const SESSION_TIMEOUT: Duration = Duration::from_mins(30);

/// The commands that may run inside a transaction.
const IN_TRANSACTION: [&str; 13] = [
    "find",
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
];

type Job = Box<dyn FnOnce(&mut WriteTxn<'_>) + Send>;

enum Message {
    Run(Job),
    Commit(SyncSender<Result<(), CommandError>>),
    Abort,
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
            Message::Commit(_) => "Commit",
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
    ) -> Result<Arc<Transaction>, CommandError> {
        let (jobs, incoming) = sync_channel::<Message>(1);
        let deadline = Instant::now() + lifetime;
        std::thread::Builder::new()
            .name("odm-transaction".into())
            .spawn(move || transaction_thread(&db, &incoming, deadline, &change_context))
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
        let job: Job = Box::new(move |t| {
            let _ = reply.send(f(t));
        });
        let sent = self
            .sender()
            .is_some_and(|s| s.send(Message::Run(job)).is_ok());
        if !sent {
            return Err(no_such_transaction("the transaction has ended"));
        }
        result
            .recv()
            .unwrap_or_else(|_| Err(no_such_transaction("the transaction has ended")))
    }

    fn commit(&self) -> Result<(), CommandError> {
        let (reply, result) = sync_channel(1);
        let sender = self
            .jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let sent = sender.is_some_and(|s| s.send(Message::Commit(reply)).is_ok());
        if !sent {
            return Err(no_such_transaction("the transaction has ended"));
        }
        result
            .recv()
            .unwrap_or_else(|_| Err(no_such_transaction("the transaction has ended")))
    }

    fn abort(&self) {
        let sender = self
            .jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(s) = sender {
            let _ = s.send(Message::Abort);
        }
    }
}

/// Holds the engine transaction: runs jobs until told to commit or abort, or until the
/// deadline passes (then it aborts).
fn transaction_thread(
    db: &Database,
    incoming: &Receiver<Message>,
    deadline: Instant,
    change_context: &Document,
) {
    let mut commit_reply = None;
    let outcome: Result<(), CommandError> = db.write(|t| {
        t.set_change_context(change_context)?;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match incoming.recv_timeout(wait) {
                Ok(Message::Run(job)) => job(t),
                Ok(Message::Commit(reply)) => {
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
    if let Some(reply) = commit_reply {
        let _ = reply.send(outcome);
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
}

impl Session {
    fn new() -> Session {
        Session {
            txn_number: -1,
            state: State::None,
            last_used: Instant::now(),
        }
    }
}

/// The sessions the server has seen, by their `lsid.id`.
#[derive(Debug, Default)]
pub struct Sessions {
    open: Mutex<HashMap<Vec<u8>, Session>>,
}

fn session_key(lsid: &Document) -> Option<Vec<u8>> {
    match lsid.get("id") {
        Some(Bson::Binary(b)) => Some(b.bytes.clone()),
        _ => None,
    }
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Session>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Ends a session: its open transaction is aborted.
    pub fn end(&self, lsid: &Document) {
        let Some(key) = session_key(lsid) else { return };
        if let Some(session) = self.lock().remove(&key)
            && let State::Active(txn) = session.state
        {
            txn.abort();
        }
    }

    pub fn end_all(&self) {
        for (_, session) in self.lock().drain() {
            if let State::Active(txn) = session.state {
                txn.abort();
            }
        }
    }

    /// Forgets sessions unused past the session timeout.
    pub fn expire(&self) {
        let now = Instant::now();
        self.lock().retain(|_, s| {
            let keep = now.duration_since(s.last_used) < SESSION_TIMEOUT;
            if !keep && let State::Active(txn) = &s.state {
                txn.abort();
            }
            keep
        });
    }
}

/// What a command says of its transaction.
struct TxnFields {
    key: Vec<u8>,
    number: i64,
    start: bool,
    /// `lsid` and `txnNumber`, which the transaction's change events carry.
    change_context: Document,
}

fn txn_fields(command: &Document) -> Result<Option<TxnFields>, CommandError> {
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
    let key = lsid_key(command).ok_or_else(|| {
        CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "a transaction needs a session (lsid)",
        )
    })?;
    let number = match command.get("txnNumber") {
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Int32(n)) => i64::from(*n),
        _ => {
            return Err(CommandError::new(
                ErrorCode::INVALID_OPTIONS,
                "a transaction needs a txnNumber",
            ));
        }
    };
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
    if let Some(key) = lsid_key(command) {
        ctx.server
            .sessions
            .lock()
            .entry(key)
            .or_insert_with(Session::new)
            .last_used = Instant::now();
    }
    let Some(fields) = txn_fields(command)? else {
        if matches!(spec.name, "commitTransaction" | "abortTransaction") {
            return Err(CommandError::new(
                ErrorCode::INVALID_OPTIONS,
                format!(
                    "{} must be run within a transaction (autocommit: false)",
                    spec.name
                ),
            ));
        }
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
    let txn = enter(ctx, &fields, spec.name)?;
    let Some(txn) = txn else {
        // A commit repeated after it succeeded.
        return Ok(Document::new().into());
    };
    if txn.db != ctx.db && !matches!(spec.name, "commitTransaction" | "abortTransaction") {
        return Err(CommandError::new(
            ErrorCode::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            format!(
                "this transaction writes database '{}': a transaction spans one database here",
                txn.db
            ),
        ));
    }
    ctx.txn = Some(txn.clone());
    let result = (spec.run)(ctx, command);
    ctx.txn = None;
    let failed = match &result {
        Err(_) => true,
        Ok(Reply::Doc(d)) => d.contains_key("writeErrors"),
        Ok(Reply::Raw(r)) => r.get("writeErrors").ok().flatten().is_some(),
    };
    if failed && !matches!(spec.name, "commitTransaction" | "abortTransaction") {
        // Any failure inside a transaction aborts it, as in MongoDB.
        txn.abort();
        set_state(ctx, &fields.key, State::Aborted);
    }
    result
}

fn set_state(ctx: &Ctx<'_>, key: &[u8], state: State) {
    if let Some(session) = ctx.server.sessions.lock().get_mut(key) {
        session.state = state;
    }
}

/// Finds or opens the transaction a command names; `None` for a commit of a committed one.
fn enter(
    ctx: &Ctx<'_>,
    fields: &TxnFields,
    command: &str,
) -> Result<Option<Arc<Transaction>>, CommandError> {
    let mut sessions = ctx.server.sessions.lock();
    let session = sessions
        .entry(fields.key.clone())
        .or_insert_with(Session::new);
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
        let db = ctx.server.storage.get_or_create(&ctx.db)?;
        let txn = Transaction::start(
            db,
            ctx.db.clone(),
            ctx.server.config.transaction_lifetime,
            fields.change_context.clone(),
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
    let key = lsid_key(command);
    let outcome = txn.commit();
    if let Some(key) = key {
        set_state(
            ctx,
            &key,
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
    if let Some(key) = lsid_key(command) {
        set_state(ctx, &key, State::Aborted);
    }
    Ok(Document::new().into())
}

fn lsid_key(command: &Document) -> Option<Vec<u8>> {
    match command.get("lsid") {
        Some(Bson::Document(lsid)) => session_key(lsid),
        _ => None,
    }
}

/// Whether the command runs inside a transaction.
pub fn in_transaction(ctx: &Ctx<'_>) -> bool {
    ctx.txn.is_some()
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

/// Inside a transaction, a find's results read from the transaction's own writes; `None`
/// outside one.
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
    txn.run(move |t| Ok(t.find_with(&collection, &filter, &options)?))
        .map(Some)
}
