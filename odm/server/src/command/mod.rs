//! Commands: the table of every command the server answers, the context a command runs in, and
//! the shape of replies and errors (`{ok: 1, ...}`, or `{ok: 0, errmsg, code, codeName}`).
//!
//! Rules: the command's name is the first field of its document; a name not in the table is
//! `CommandNotFound` (59), never `ok: 1`; every error carries MongoDB's code and code name;
//! write errors go in `writeErrors` with their index (see `crud`).

// Every command has the table's signature, so some return `Ok` always.
#[allow(clippy::unnecessary_wraps)]
mod admin;
mod analyze;
#[allow(clippy::unnecessary_wraps)]
pub(crate) mod api;
mod args;
pub(crate) mod change_stream;
#[allow(clippy::unnecessary_wraps)]
mod crud;
pub mod fields;
#[allow(clippy::unnecessary_wraps)]
pub(crate) mod handshake;
#[allow(clippy::unnecessary_wraps)]
mod indexes;
#[allow(clippy::unnecessary_wraps)]
mod operations;
mod output;
mod profile;
#[allow(clippy::unnecessary_wraps)]
mod query;
pub(crate) mod read_concern;
pub(crate) mod tailable;
mod views;

use bson::{Bson, Document, RawDocumentBuf};
use odm_engine::ErrorCode;

pub(crate) use args::Args;
/// How an index is written in commands and in `mongodump`'s metadata, both ways.
pub use indexes::spec_from_document;

use super::Shared;
use super::connection::ConnectionState;

/// What a command answers: a document built here, or one built from raw bytes (batches of
/// stored documents, copied as they are).
#[derive(Debug)]
pub enum Reply {
    Doc(Document),
    Raw(RawDocumentBuf),
}

impl From<Document> for Reply {
    fn from(doc: Document) -> Reply {
        Reply::Doc(doc)
    }
}

impl Reply {
    /// The reply's fields as bytes, before `ok`.
    pub fn finish_without_ok(self) -> RawDocumentBuf {
        match self {
            Reply::Doc(doc) => super::wire::to_raw(&doc),
            Reply::Raw(raw) => raw,
        }
    }

    /// The reply as sent: the command's fields, then `ok: 1`.
    pub fn finish(self) -> RawDocumentBuf {
        let mut raw = match self {
            Reply::Doc(doc) => super::wire::to_raw(&doc),
            Reply::Raw(raw) => raw,
        };
        raw.append(bson::raw::cstr!("ok"), 1.0);
        raw
    }
}

/// A command's failure, as MongoDB reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandError {
    pub code: i32,
    pub code_name: String,
    pub message: String,
    /// `errorLabels` (`TransientTransactionError`, ...).
    pub labels: Vec<String>,
    /// Further fields of the error (`keyPattern`, `keyValue`, ...).
    pub extra: Option<Box<Document>>,
}

impl CommandError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> CommandError {
        CommandError {
            code: code.code,
            code_name: code.name(),
            message: message.into(),
            labels: Vec::new(),
            extra: None,
        }
    }

    pub fn bad_value(message: impl Into<String>) -> CommandError {
        CommandError::new(ErrorCode::BAD_VALUE, message)
    }

    #[must_use]
    pub fn with_label(mut self, label: &str) -> CommandError {
        self.labels.push(label.to_owned());
        self
    }

    /// The error reply.
    pub fn to_document(&self) -> Document {
        let mut doc = bson::doc! {
            "ok": 0.0,
            "errmsg": &self.message,
            "code": self.code,
            "codeName": &self.code_name,
        };
        if !self.labels.is_empty() {
            doc.insert("errorLabels", self.labels.clone());
        }
        if let Some(extra) = &self.extra {
            doc.extend((**extra).clone());
        }
        doc
    }

    /// The entry of a `writeErrors` array.
    pub fn to_write_error(&self, index: usize) -> Document {
        // As MongoDB writes them: no code name.
        let mut doc = bson::doc! {
            "index": index as i32,
            "code": self.code,
            "errmsg": &self.message,
        };
        if let Some(extra) = &self.extra {
            doc.extend((**extra).clone());
        }
        doc
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code_name, self.code, self.message)
    }
}

impl CommandError {
    /// The engine's error as MongoDB reports the condition (its code, and for a duplicate key
    /// MongoDB's `E11000` message).
    pub fn from_engine(e: &odm_engine::Error) -> CommandError {
        let (message, extra) = match e {
            odm_engine::Error::DuplicateKey {
                collection,
                index,
                key,
                key_pattern,
                key_value,
            } => (
                format!(
                    "E11000 duplicate key error collection: {collection} index: {index} dup key: {key}"
                ),
                Some(Box::new(bson::doc! {
                    "keyPattern": (**key_pattern).clone(),
                    "keyValue": (**key_value).clone(),
                })),
            ),
            odm_engine::Error::DocumentValidation { id, details, .. } => (
                e.to_string(),
                Some(Box::new(bson::doc! {
                    "errInfo": {"failingDocumentId": (**id).clone(), "details": (**details).clone()},
                })),
            ),
            other => (other.to_string(), None),
        };
        // A change stream cannot resume after these, and MongoDB says so to drivers.
        let labels = match e {
            odm_engine::Error::ChangeStreamFatal(_)
            | odm_engine::Error::ChangeStreamHistoryLost { .. } => {
                vec!["NonResumableChangeStreamError".to_owned()]
            }
            _ => Vec::new(),
        };
        CommandError {
            code: e.code(),
            code_name: e.code_name(),
            message,
            labels,
            extra,
        }
    }
}

impl From<odm_engine::Error> for CommandError {
    fn from(e: odm_engine::Error) -> CommandError {
        CommandError::from_engine(&e)
    }
}

pub type CommandResult = Result<Reply, CommandError>;

/// A document as the bytes a reply carries.
pub fn encode(doc: &Document) -> Result<RawDocumentBuf, CommandError> {
    RawDocumentBuf::try_from(doc).map_err(|e| {
        CommandError::new(
            ErrorCode::INTERNAL_ERROR,
            format!("cannot encode a result: {e}"),
        )
    })
}

/// What a command may use: the server, its connection, and the database it names (`$db`).
#[derive(Debug)]
pub struct Ctx<'a> {
    pub server: &'a Shared,
    pub conn: &'a mut ConnectionState,
    pub db: String,
    /// The transaction the command runs in, if any (see `session`).
    pub txn: Option<std::sync::Arc<super::session::Transaction>>,
    /// The session the command names in its `lsid` (set by `session`), which owns the cursors
    /// it opens.
    pub session: Option<super::session::SessionId>,
    /// A retryable write's session and number (set by `session`): its result is recorded
    /// with it, and a retry answered from the record.
    pub retry: Option<super::session::RetryKey>,
    /// The command's `readConcern`, checked (set by `session`).
    pub read_concern: Option<read_concern::ReadConcern>,
}

/// Who may run a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Before authentication too: the handshake and authentication itself.
    Anyone,
    /// Only an authenticated connection (when the server requires authentication).
    Authenticated,
}

/// One command of the table.
#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    pub run: Run,
    pub access: Access,
    /// Commands whose requests and replies are never compressed (the handshake and
    /// authentication, as the compression specification lists them).
    pub uncompressed: bool,
}

type Run = fn(&mut Ctx<'_>, &Document) -> CommandResult;

/// The handshake and authentication: open to anyone, never compressed.
const fn opening(name: &'static str, run: Run) -> Spec {
    Spec {
        name,
        run,
        access: Access::Anyone,
        uncompressed: true,
    }
}

/// Open to anyone before authentication, compressed like any command.
const fn public(name: &'static str, run: Run) -> Spec {
    Spec {
        name,
        run,
        access: Access::Anyone,
        uncompressed: false,
    }
}

const fn cmd(name: &'static str, run: Run) -> Spec {
    Spec {
        name,
        run,
        access: Access::Authenticated,
        uncompressed: false,
    }
}

/// Every command, by the name its document starts with.
pub static COMMANDS: &[Spec] = &[
    opening("hello", handshake::hello),
    opening("isMaster", handshake::hello),
    opening("ismaster", handshake::hello),
    opening("saslStart", super::auth::sasl_start),
    opening("saslContinue", super::auth::sasl_continue),
    public("ping", handshake::ping),
    public("buildInfo", handshake::build_info),
    public("buildinfo", handshake::build_info),
    public("endSessions", handshake::end_sessions),
    public("logout", super::auth::logout),
    cmd("connectionStatus", handshake::connection_status),
    cmd("getCmdLineOpts", handshake::get_cmd_line_opts),
    cmd("getParameter", handshake::get_parameter),
    cmd("setParameter", handshake::set_parameter),
    cmd("serverStatus", handshake::server_status),
    cmd("hostInfo", handshake::host_info),
    cmd("whatsmyuri", handshake::whatsmyuri),
    cmd("getLog", handshake::get_log),
    cmd("killSessions", operations::kill_sessions),
    cmd("killAllSessions", operations::kill_all_sessions),
    cmd(
        "killAllSessionsByPattern",
        operations::kill_all_sessions_by_pattern,
    ),
    cmd("currentOp", operations::current_op),
    cmd("killOp", operations::kill_op),
    cmd("refreshSessions", handshake::refresh_sessions),
    cmd("listCommands", handshake::list_commands),
    cmd("getFreeMonitoringStatus", handshake::not_enabled),
    cmd("listDatabases", admin::list_databases),
    cmd("listCollections", admin::list_collections),
    cmd("create", admin::create),
    cmd("drop", admin::drop),
    cmd("dropDatabase", admin::drop_database),
    cmd("collMod", admin::coll_mod),
    cmd("renameCollection", admin::rename_collection),
    cmd("shardCollection", admin::shard_collection),
    cmd("configureQueryAnalyzer", analyze::configure_query_analyzer),
    cmd("analyzeShardKey", analyze::analyze_shard_key_command),
    cmd("collStats", admin::coll_stats),
    cmd("convertToCapped", admin::convert_to_capped),
    cmd("profile", profile::profile),
    cmd("dbStats", admin::db_stats),
    cmd("validate", admin::validate),
    cmd("createUser", super::auth::create_user),
    cmd("dropUser", super::auth::drop_user),
    cmd("usersInfo", super::auth::users_info),
    cmd("insert", crud::insert),
    cmd("update", crud::update),
    cmd("delete", crud::delete),
    cmd("findAndModify", crud::find_and_modify),
    cmd("findandmodify", crud::find_and_modify),
    cmd("bulkWrite", crud::bulk_write),
    cmd("find", query::find),
    cmd("getMore", query::get_more),
    cmd("killCursors", query::kill_cursors),
    cmd("aggregate", query::aggregate),
    cmd("count", query::count),
    cmd("distinct", query::distinct),
    cmd("explain", query::explain),
    cmd("createIndexes", indexes::create_indexes),
    cmd("listIndexes", indexes::list_indexes),
    cmd("dropIndexes", indexes::drop_indexes),
    cmd("deleteIndexes", indexes::drop_indexes),
    cmd("commitTransaction", super::session::commit_transaction),
    cmd("abortTransaction", super::session::abort_transaction),
    cmd("configureFailPoint", super::failpoint::configure_fail_point),
    cmd("testVersion2", api::test_command),
    cmd("testVersions1And2", api::test_command),
    cmd("testDeprecation", api::test_command),
    cmd("shutdown", admin::shutdown),
    cmd("fsync", admin::fsync),
];

/// The commands that exist only when the server runs with test commands on.
const TEST_COMMANDS: [&str; 4] = [
    "configureFailPoint",
    "testVersion2",
    "testVersions1And2",
    "testDeprecation",
];

/// The table entry for a command name; `test_commands`: whether test commands exist.
pub fn lookup(name: &str, test_commands: bool) -> Option<&'static Spec> {
    COMMANDS
        .iter()
        .find(|spec| spec.name == name)
        .filter(|spec| test_commands || !TEST_COMMANDS.contains(&spec.name))
}

/// The error for a name not in the table.
pub fn not_found(name: &str) -> CommandError {
    CommandError::new(
        ErrorCode::COMMAND_NOT_FOUND,
        format!("no such command: '{name}'"),
    )
}

/// The collection a command names in its first field (`{find: "c"}`), checked.
pub fn collection_name<'d>(command: &'d Document, name: &str) -> Result<&'d str, CommandError> {
    match command.get(name) {
        Some(Bson::String(s)) => {
            check_collection_name(s)?;
            Ok(s)
        }
        Some(other) => Err(CommandError::new(
            ErrorCode::INVALID_NAMESPACE,
            format!(
                "collection name has invalid type {}",
                args::type_name(other)
            ),
        )),
        None => Err(CommandError::bad_value(format!("missing `{name}`"))),
    }
}

/// Splits and checks a namespace, `db.collection`.
pub fn split_namespace(ns: &str) -> Result<(&str, &str), CommandError> {
    let (db, coll) = ns.split_once('.').ok_or_else(|| {
        CommandError::new(
            ErrorCode::INVALID_NAMESPACE,
            format!("Invalid namespace specified '{ns}'"),
        )
    })?;
    super::storage::check_name(db)?;
    check_collection_name(coll)?;
    Ok((db, coll))
}

/// MongoDB's rules for a collection name: not empty, no `$` (outside the system's own names)
/// and no NUL.
pub fn check_collection_name(name: &str) -> Result<(), CommandError> {
    if name.is_empty() || name.contains('\0') || name.contains('$') {
        return Err(CommandError::new(
            ErrorCode::INVALID_NAMESPACE,
            format!("Invalid collection name: '{name}'"),
        ));
    }
    Ok(())
}
