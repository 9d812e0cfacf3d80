//! The database profiler, as MongoDB's: the `profile` command's settings and the documents it
//! writes into each database's `system.profile`, a capped collection of 1 MiB.
//!
//! Rules:
//! - The level is a database's (0 off, 1 slow operations, 2 all); `slowms` and `sampleRate`
//!   are the server's, as in MongoDB; a `filter` is a database's, and at level 1 decides alone
//!   which operations are kept (then `slowms` and `sampleRate` are not used).
//! - The level that counts is the one when the command starts, so the `profile` command that
//!   turns profiling on is not itself kept.
//! - The handshake, authentication and `listCollections` are never kept, as MongoDB keeps
//!   none of them; nor is `dropDatabase`, which resets the database's level.
//! - An entry is written after its command answers, in a transaction of its own, so a read
//!   of `system.profile` that follows sees it. A command inside a transaction (which holds the
//!   database's one writer) and one whose write waits for the writer longer than
//!   [`WRITER_WAIT`] leave their entry pending; the next entry of that database writes it
//!   first. At most [`MAX_PENDING`] wait per database; older ones are dropped and counted.
//! - An update or delete command is one entry: its one statement as `command` (as MongoDB
//!   writes one entry per statement), or the whole command when it has several, with the
//!   command's totals.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bson::{Bson, DateTime, Document, RawDocumentBuf, doc};
use odm_engine::capped::Capped;
use odm_engine::interrupt::Interrupt;
use odm_engine::query::Filter;
use odm_engine::{CollectionOptions, ErrorCode};

use super::command::CommandError;
use super::storage::Storage;

/// Where each database's entries go.
pub const PROFILE_COLLECTION: &str = "system.profile";
/// The size MongoDB gives `system.profile`.
pub const PROFILE_BYTES: i64 = 1024 * 1024;
/// MongoDB's default `slowms`.
pub const DEFAULT_SLOW_MS: i64 = 100;
/// How long an entry's write waits for the database's writer before it is left pending.
pub const WRITER_WAIT: Duration = Duration::from_millis(100);
/// The most entries left pending per database.
pub const MAX_PENDING: usize = 1_000;
/// The most open cursors whose originating command is kept for their `getMore` entries.
const MAX_ORIGINS: usize = 10_000;

/// Commands never profiled (`dropDatabase` drops the profile with the database).
const NEVER: [&str; 8] = [
    "dropDatabase",
    "hello",
    "isMaster",
    "ismaster",
    "saslStart",
    "saslContinue",
    "listCollections",
    "endSessions",
];

/// The profiler's settings and what waits to be written.
#[derive(Debug)]
pub struct Profiler {
    /// Whether any database has a level above 0: the one look most commands pay.
    any: AtomicBool,
    /// Entries dropped because too many were pending.
    dropped: AtomicU64,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    databases: HashMap<String, Settings>,
    slow_ms: i64,
    sample_rate: f64,
    pending: HashMap<String, Vec<Document>>,
    /// The command that opened each cursor, by database and cursor id (for `getMore`).
    origins: HashMap<(String, i64), Document>,
}

/// A database's level and filter.
#[derive(Debug, Clone, Default)]
struct Settings {
    level: i32,
    filter: Option<(Document, std::sync::Arc<Filter>)>,
}

/// A database's profiling as a command starts: what decides whether it is kept.
#[derive(Debug, Clone)]
pub struct Watch {
    level: i32,
    filter: Option<std::sync::Arc<Filter>>,
    slow_ms: i64,
    sample_rate: f64,
}

/// What the `profile` command reports: the settings before it changed them.
#[derive(Debug, Clone)]
pub struct Previous {
    pub level: i32,
    pub slow_ms: i64,
    pub sample_rate: f64,
    pub filter: Option<Document>,
}

/// A change the `profile` command asks for.
#[derive(Debug, Default)]
pub struct Change {
    /// 0, 1 or 2; `None` reads only.
    pub level: Option<i32>,
    pub slow_ms: Option<i64>,
    pub sample_rate: Option<f64>,
    /// `Some(None)` unsets the filter.
    pub filter: Option<Option<Document>>,
}

impl Default for Profiler {
    fn default() -> Profiler {
        Profiler {
            any: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            inner: Mutex::new(Inner {
                databases: HashMap::new(),
                slow_ms: DEFAULT_SLOW_MS,
                sample_rate: 1.0,
                pending: HashMap::new(),
                origins: HashMap::new(),
            }),
        }
    }
}

/// One finished command, as the connection saw it.
#[derive(Debug)]
pub struct Finished<'a> {
    pub db: &'a str,
    pub name: &'a str,
    pub command: &'a Document,
    pub reply: &'a RawDocumentBuf,
    pub error: Option<&'a CommandError>,
    pub elapsed: Duration,
    pub interrupt: &'a Interrupt,
    pub client: &'a str,
    pub app_name: Option<&'a str>,
    /// (database, name) of the authenticated user.
    pub user: Option<&'a (String, String)>,
}

impl Profiler {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The threshold of a slow operation, in milliseconds (`slowms`): slower ones are logged
    /// whatever the profiling level (see [`crate::log`]).
    pub fn slow_ms(&self) -> i64 {
        self.lock().slow_ms
    }

    /// Whether a command named `name` is one the profiler never keeps (nor the log as slow):
    /// handshakes, whose awaitable form waits on purpose, authentication, and the like.
    pub fn never_watched(name: &str) -> bool {
        NEVER.contains(&name)
    }

    /// The profiling of `db` as a command named `name` starts; `None` when it is not kept.
    pub fn watch(&self, db: &str, name: &str) -> Option<Watch> {
        if !self.any.load(Ordering::Relaxed) || NEVER.contains(&name) {
            return None;
        }
        let inner = self.lock();
        let settings = inner.databases.get(db).filter(|s| s.level > 0)?;
        Some(Watch {
            level: settings.level,
            filter: settings.filter.as_ref().map(|(_, f)| f.clone()),
            slow_ms: inner.slow_ms,
            sample_rate: inner.sample_rate,
        })
    }

    /// Applies a `profile` command's change to `db`; the settings before it.
    pub fn change(&self, db: &str, change: Change) -> Result<Previous, CommandError> {
        let filter = match &change.filter {
            Some(Some(doc)) => {
                let parsed = Filter::parse(doc).map_err(odm_engine::Error::from)?;
                Some(Some((doc.clone(), std::sync::Arc::new(parsed))))
            }
            Some(None) => Some(None),
            None => None,
        };
        let mut inner = self.lock();
        let previous = {
            let settings = inner.databases.get(db).cloned().unwrap_or_default();
            Previous {
                level: settings.level,
                slow_ms: inner.slow_ms,
                sample_rate: inner.sample_rate,
                filter: settings.filter.map(|(d, _)| d),
            }
        };
        if let Some(ms) = change.slow_ms {
            inner.slow_ms = ms;
        }
        if let Some(rate) = change.sample_rate {
            inner.sample_rate = rate;
        }
        let settings = inner.databases.entry(db.to_owned()).or_default();
        if let Some(level) = change.level {
            settings.level = level;
        }
        if let Some(filter) = filter {
            settings.filter = filter;
        }
        let any = inner.databases.values().any(|s| s.level > 0);
        self.any.store(any, Ordering::Relaxed);
        Ok(previous)
    }

    /// Whether `db` profiles at a level above 0.
    pub fn is_on(&self, db: &str) -> bool {
        self.any.load(Ordering::Relaxed)
            && self.lock().databases.get(db).is_some_and(|s| s.level > 0)
    }

    /// Forgets a dropped database's settings and entries, as MongoDB resets its level.
    pub fn forget(&self, db: &str) {
        let mut inner = self.lock();
        inner.databases.remove(db);
        inner.pending.remove(db);
        inner.origins.retain(|(d, _), _| d != db);
        let any = inner.databases.values().any(|s| s.level > 0);
        self.any.store(any, Ordering::Relaxed);
    }

    /// Entries dropped because too many waited for a busy writer.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Keeps a finished command's entry when `watch` says so, and writes it (with the
    /// database's pending ones) unless the writer is busy.
    pub fn record(&self, storage: &Storage, watch: &Watch, done: &Finished<'_>) {
        let millis = i64::try_from(done.elapsed.as_millis()).unwrap_or(i64::MAX);
        let origin = self.origin(done);
        let entry = entry(done, millis, origin);
        if !watch.keeps(&entry, millis) {
            return;
        }
        let in_transaction = done.command.get("autocommit") == Some(&Bson::Boolean(false));
        let mut entries = {
            let mut inner = self.lock();
            let pending = inner.pending.entry(done.db.to_owned()).or_default();
            pending.push(entry);
            if pending.len() > MAX_PENDING {
                pending.remove(0);
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            if in_transaction {
                return;
            }
            std::mem::take(pending)
        };
        if let Err(kept) = write(storage, done.db, &entries) {
            // The writer was busy: the entries wait for the next one.
            let mut inner = self.lock();
            let pending = inner.pending.entry(done.db.to_owned()).or_default();
            entries.truncate(kept);
            entries.append(pending);
            *pending = entries;
        }
    }

    /// The command that opened a `getMore`'s cursor; remembers a find's or aggregate's own
    /// when it leaves a cursor open, and forgets it once the cursor is done.
    fn origin(&self, done: &Finished<'_>) -> Option<Document> {
        let cursor = cursor_of(done.reply).map(|(id, _)| id);
        let mut inner = self.lock();
        match done.name {
            "getMore" => {
                let id = done.command.get_i64("getMore").ok()?;
                let key = (done.db.to_owned(), id);
                if cursor == Some(id) {
                    inner.origins.get(&key).cloned()
                } else {
                    inner.origins.remove(&key)
                }
            }
            "find" | "aggregate" => {
                if let Some(id) = cursor.filter(|&id| id != 0)
                    && inner.origins.len() < MAX_ORIGINS
                {
                    inner
                        .origins
                        .insert((done.db.to_owned(), id), done.command.clone());
                }
                None
            }
            _ => None,
        }
    }
}

impl Watch {
    /// Whether an entry is kept at this level: level 2 keeps all; level 1 what the filter
    /// matches, or without one what took `slowms` or more, sampled at `sampleRate`.
    fn keeps(&self, entry: &Document, millis: i64) -> bool {
        if self.level >= 2 {
            return true;
        }
        if let Some(filter) = &self.filter {
            return RawDocumentBuf::try_from(entry).is_ok_and(|raw| filter.matches(&raw));
        }
        millis >= self.slow_ms && sampled(self.sample_rate)
    }
}

/// Whether an operation is sampled at `rate` (0 to 1).
fn sampled(rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    let draw = getrandom::u64().unwrap_or(0) >> 11;
    #[allow(clippy::cast_precision_loss)]
    let unit = draw as f64 / (1u64 << 53) as f64;
    unit < rate
}

/// Writes entries into `db`'s `system.profile` (made capped, 1 MiB, when missing); on a busy
/// writer, `Err` with how many entries to keep.
fn write(storage: &Storage, db: &str, entries: &[Document]) -> Result<(), usize> {
    let Ok(Some(database)) = storage.get(db) else {
        return Ok(());
    };
    let _wait = Interrupt::within(Some(WRITER_WAIT)).enter();
    let written = database.write(|t| {
        ensure_collection(t)?;
        for entry in entries {
            // An entry too large for the collection is dropped, as MongoDB's capped insert
            // would refuse it.
            match t.insert_one(PROFILE_COLLECTION, entry) {
                Ok(_) | Err(odm_engine::Error::Capped(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok::<_, odm_engine::Error>(())
    });
    match written {
        Err(odm_engine::Error::TimeLimitExceeded | odm_engine::Error::Interrupted) => {
            Err(entries.len())
        }
        // Storage failures lose the entries, never the command's answer.
        _ => Ok(()),
    }
}

/// Creates `system.profile`, capped at 1 MiB, when it does not exist.
pub fn ensure_collection(t: &mut odm_engine::WriteTxn<'_>) -> Result<(), odm_engine::Error> {
    match t.collection_options(PROFILE_COLLECTION) {
        Some(options) if options.capped.is_none() => Err(odm_engine::Error::Reported {
            code: ErrorCode::NAMESPACE_EXISTS.code,
            code_name: ErrorCode::NAMESPACE_EXISTS.name(),
            message: format!("{PROFILE_COLLECTION} exists but isn't capped"),
        }),
        Some(_) => Ok(()),
        None => {
            let limits = Capped::new(PROFILE_BYTES, None)?;
            t.create_collection_with(
                PROFILE_COLLECTION,
                CollectionOptions::default().with_capped(limits),
            )
        }
    }
}

/// MongoDB's `op` for a command.
fn op(name: &str) -> &'static str {
    match name {
        "find" => "query",
        "getMore" => "getmore",
        "insert" => "insert",
        "update" => "update",
        "delete" => "remove",
        _ => "command",
    }
}

/// The namespace an entry names: the command's collection, or `db.$cmd`.
fn namespace(done: &Finished<'_>) -> String {
    let collection = match done.name {
        "getMore" => done.command.get_str("collection").ok(),
        _ => match done.command.iter().next() {
            Some((_, Bson::String(c))) => Some(c.as_str()),
            _ => None,
        },
    };
    format!("{}.{}", done.db, collection.unwrap_or("$cmd"))
}

/// The command as an entry shows it: an insert without its documents, an update or delete
/// of one statement as that statement.
fn shown_command(done: &Finished<'_>) -> Document {
    let mut command = done.command.clone();
    let statements = match done.name {
        "insert" => {
            command.remove("documents");
            return command;
        }
        "update" => "updates",
        "delete" => "deletes",
        _ => return command,
    };
    match command.get_array(statements) {
        Ok(list) if list.len() == 1 => match &list[0] {
            Bson::Document(one) => one.clone(),
            _ => command,
        },
        _ => command,
    }
}

/// A `system.profile` document, its fields in MongoDB's order.
fn entry(done: &Finished<'_>, millis: i64, origin: Option<Document>) -> Document {
    let reply = done.reply;
    let cursor = cursor_of(reply);
    let mut out = doc! {
        "op": op(done.name),
        "ns": namespace(done),
        "command": shown_command(done),
    };
    if let Some(origin) = origin {
        out.insert("originatingCommand", origin);
    }
    if let Some((id, _)) = cursor.filter(|(id, _)| *id != 0) {
        out.insert("cursorid", id);
    }
    let (keys, docs) = done.interrupt.examined();
    out.insert("keysExamined", long(keys));
    out.insert("docsExamined", long(docs));
    if cursor.is_some_and(|(id, _)| id == 0) {
        out.insert("cursorExhausted", true);
    }
    let n = reply.get_i32("n").ok().map(i64::from);
    match done.name {
        "update" => {
            let upserted = reply
                .get_array("upserted")
                .map_or(0, |a| a.into_iter().count());
            let upserted = i64::try_from(upserted).unwrap_or(i64::MAX);
            out.insert("nMatched", n.unwrap_or(0) - upserted);
            out.insert("nModified", reply.get_i32("nModified").map_or(0, i64::from));
            out.insert("nUpserted", upserted);
        }
        "insert" => {
            out.insert("ninserted", n.unwrap_or(0));
        }
        "delete" => {
            out.insert("ndeleted", n.unwrap_or(0));
        }
        _ => {}
    }
    out.insert("numYield", 0_i64);
    if let Some((_, returned)) = cursor {
        out.insert("nreturned", returned);
    }
    if let Some(error) = done.error {
        out.insert("ok", 0.0);
        out.insert("errMsg", error.message.clone());
        out.insert("errName", error.code_name.clone());
        out.insert("errCode", error.code);
    }
    out.insert(
        "responseLength",
        i64::try_from(reply.as_bytes().len()).unwrap_or(i64::MAX),
    );
    out.insert("protocol", "op_msg");
    out.insert("millis", millis);
    if let Some(plan) = done.interrupt.plan_summary() {
        out.insert("planSummary", plan);
    }
    out.insert("ts", DateTime::now());
    out.insert("client", done.client);
    if let Some(app) = done.app_name {
        out.insert("appName", app);
    }
    let users: Vec<Bson> = done
        .user
        .map(|(db, name)| Bson::Document(doc! {"user": name, "db": db}))
        .into_iter()
        .collect();
    out.insert("allUsers", users);
    out.insert(
        "user",
        done.user
            .map_or_else(String::new, |(db, name)| format!("{name}@{db}")),
    );
    out
}

fn long(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A reply's cursor: its id and how many documents its batch returned.
fn cursor_of(reply: &bson::RawDocument) -> Option<(i64, i64)> {
    let cursor = reply.get_document("cursor").ok()?;
    let id = cursor.get_i64("id").ok()?;
    let batch = cursor
        .get_array("firstBatch")
        .or_else(|_| cursor.get_array("nextBatch"))
        .ok()?;
    Some((
        id,
        i64::try_from(batch.into_iter().count()).unwrap_or(i64::MAX),
    ))
}
