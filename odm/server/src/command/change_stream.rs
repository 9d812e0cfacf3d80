//! `$changeStream`: MongoDB's change streams over the engine's change logs (see
//! `odm_engine::changes`), on a collection, a database, or the whole deployment
//! (`{aggregate: 1, pipeline: [{$changeStream: {allChangesForCluster: true}}]}` on `admin`).
//!
//! Rules, as MongoDB has them:
//! - change streams need replica-set mode (40573); `$changeStream` must be the first stage
//!   (40602); a collection or database stream cannot watch `admin`, `config` or `local`, and a
//!   deployment stream must be opened on `admin`;
//! - the cursor is tailable and awaits data: `getMore` waits up to its `maxTimeMS` (1 second
//!   by default) for the first new event instead of answering empty at once, and every batch
//!   carries `postBatchResumeToken`;
//! - after an `invalidate` event the cursor is closed (id 0).
//!
//! Each database is its own file with its own log. A stream over several reads each up to the
//! cluster time that every commit still in flight comes after (`stable_time`), merges their
//! events in token order and advances one resume point for all: so a deployment stream's
//! token resumes every file, and no event is returned twice or skipped.

use std::time::Duration;

use bson::{Bson, Document, RawDocumentBuf};
use odm_engine::ErrorCode;
use odm_engine::changes::{
    ChangeStream, ChangeStreamOptions, FullDocument, FullDocumentBeforeChange, ResumeToken, Scope,
    Start, clock, stable_time,
};

use super::{CommandError, CommandResult, Ctx, encode};
use crate::cursors::BatchBytes;
use crate::storage::Storage;

/// MongoDB's wait of a `getMore` on an awaiting cursor without `maxTimeMS`.
pub const DEFAULT_AWAIT: Duration = Duration::from_secs(1);

/// Databases a collection or database stream may not watch.
const INTERNAL_DATABASES: [&str; 3] = ["admin", "config", "local"];

/// An open change stream, kept by its cursor between `getMore`s.
#[derive(Debug)]
pub struct StreamCursor {
    /// `None`: every database (a deployment stream).
    db: Option<String>,
    /// `None`: every collection of the database(s).
    coll: Option<String>,
    options: ChangeStreamOptions,
    /// Where the next read starts: the stream's options at first, then after `position`.
    start: Start,
    position: ResumeToken,
    closed: bool,
    /// Of the last read: how many events it gave, and where the stream stands once all of
    /// them are returned (past filtered events too).
    pending_len: usize,
    batch_end: ResumeToken,
}

/// Events with their tokens; counts them as the read's.
fn with_tokens(
    stream: &mut StreamCursor,
    batch: Vec<Document>,
) -> Result<Vec<(ResumeToken, Document)>, CommandError> {
    stream.pending_len = batch.len();
    batch
        .into_iter()
        .map(|event| {
            let token = ResumeToken::from_bson(event.get("_id").unwrap_or(&Bson::Null))?;
            Ok((token, event))
        })
        .collect()
}

fn error(code: ErrorCode, message: impl Into<String>) -> CommandError {
    CommandError::new(code, message)
}

/// Whether a pipeline is a change stream (its first stage is `$changeStream`); a
/// `$changeStream` anywhere else is refused.
pub fn is_change_stream(pipeline: &[Document]) -> Result<bool, CommandError> {
    let named = |s: &Document| s.contains_key("$changeStream");
    if pipeline.iter().skip(1).any(named) {
        return Err(error(
            ErrorCode::location(40602),
            "$changeStream is only valid as the first stage in a pipeline",
        ));
    }
    Ok(pipeline.first().is_some_and(named))
}

/// Opens a change stream for `aggregate`: `collection` is `None` for `{aggregate: 1}`.
pub fn open(
    ctx: &mut Ctx<'_>,
    collection: Option<&str>,
    pipeline: &[Document],
    first_batch: usize,
) -> CommandResult {
    if !ctx.server.is_replica_set() {
        return Err(error(
            ErrorCode::location(40573),
            "The $changeStream stage is only supported on replica sets (start the server with --replica-set)",
        ));
    }
    if crate::session::in_transaction(ctx) {
        return Err(error(
            ErrorCode::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            "$changeStream cannot run in a transaction",
        ));
    }
    let Some(Bson::Document(spec)) = pipeline.first().and_then(|s| s.get("$changeStream")) else {
        return Err(error(
            ErrorCode::FAILED_TO_PARSE,
            "the $changeStream stage takes a document of options",
        ));
    };
    let (parsed, all_for_cluster) = parse_spec(spec)?;
    let (db, ns) = match (collection, all_for_cluster) {
        (_, true) if ctx.db != "admin" => {
            return Err(error(
                ErrorCode::INVALID_OPTIONS,
                "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database",
            ));
        }
        (Some(_), true) => {
            return Err(error(
                ErrorCode::INVALID_OPTIONS,
                "A $changeStream with 'allChangesForCluster:true' must be run as an aggregate on {aggregate: 1}",
            ));
        }
        (_, true) => (None, "admin.$cmd.aggregate".to_owned()),
        (_, false) if INTERNAL_DATABASES.contains(&ctx.db.as_str()) => {
            return Err(error(
                ErrorCode::INVALID_NAMESPACE,
                format!(
                    "$changeStream may not be opened on the internal {} database",
                    ctx.db
                ),
            ));
        }
        (Some(coll), false) => (Some(ctx.db.clone()), format!("{}.{coll}", ctx.db)),
        (None, false) => (Some(ctx.db.clone()), format!("{}.$cmd.aggregate", ctx.db)),
    };
    let mut options = parsed;
    options.pipeline = pipeline[1..].to_vec();
    odm_engine::changes::check_pipeline(&options.pipeline)?;
    let start = options.start;
    let position = match (start, &db) {
        (Start::ResumeAfter(t) | Start::StartAfter(t), _) => t,
        (Start::AtOperationTime(time), _) => {
            ResumeToken::high_water_mark(clock::from_timestamp(time).saturating_sub(1))
        }
        // One file: after its last change (its commits are ordered by its write lock). A
        // file that does not exist yet has no commit in flight: every one comes later.
        (Start::Now, Some(name)) => match ctx.server.storage.get(name)? {
            Some(file) => {
                ChangeStream::open(&file, Scope::Database, ChangeStreamOptions::default())?
                    .resume_token()
            }
            None => ResumeToken::high_water_mark(clock::from_timestamp(clock::now())),
        },
        // Several files: after every commit that is visible now.
        (Start::Now, None) => ResumeToken::high_water_mark(stable_time()),
    };
    let mut stream = StreamCursor {
        db,
        coll: collection.map(str::to_owned),
        options,
        start: match start {
            Start::Now => Start::ResumeAfter(position),
            other => other,
        },
        position,
        closed: false,
        pending_len: 0,
        batch_end: position,
    };
    // Checks the pipeline and the resume point now, so that an error answers `aggregate`.
    let batch = stream.poll(&ctx.server.storage, first_batch)?;
    let position = stream.position;
    let (batch, id) = if stream.closed {
        (batch, 0)
    } else {
        ctx.server
            .cursors
            .stream(ns.clone(), stream, batch, ctx.session)?
    };
    Ok(reply(id, &ns, true, batch, position))
}

/// A change stream's cursor reply: the batch, `postBatchResumeToken`, the id and namespace.
pub fn reply(
    id: i64,
    ns: &str,
    first: bool,
    docs: Vec<RawDocumentBuf>,
    token: ResumeToken,
) -> super::Reply {
    super::query::cursor_reply_with_token(id, ns, first, docs, Some(token.to_document()))
}

fn parse_spec(spec: &Document) -> Result<(ChangeStreamOptions, bool), CommandError> {
    let mut options = ChangeStreamOptions::default();
    let mut all_for_cluster = false;
    let mut starts = 0;
    let type_error = |field: &str, expected: &str| {
        error(
            ErrorCode::TYPE_MISMATCH,
            format!("$changeStream.{field} must be {expected}"),
        )
    };
    for (field, value) in spec {
        match field.as_str() {
            "allChangesForCluster" => {
                all_for_cluster = value
                    .as_bool()
                    .ok_or_else(|| type_error(field, "a boolean"))?;
            }
            "showExpandedEvents" => {
                options.show_expanded_events = value
                    .as_bool()
                    .ok_or_else(|| type_error(field, "a boolean"))?;
            }
            "fullDocument" => {
                options.full_document = match value.as_str() {
                    Some("default") => FullDocument::Default,
                    Some("updateLookup") => FullDocument::UpdateLookup,
                    Some("whenAvailable") => FullDocument::WhenAvailable,
                    Some("required") => FullDocument::Required,
                    _ => {
                        return Err(error(
                            ErrorCode::BAD_VALUE,
                            format!(
                                "'{value}' is not a valid value for fullDocument: use default, updateLookup, whenAvailable or required"
                            ),
                        ));
                    }
                };
            }
            "fullDocumentBeforeChange" => {
                options.full_document_before_change = match value.as_str() {
                    Some("off") => FullDocumentBeforeChange::Off,
                    Some("whenAvailable") => FullDocumentBeforeChange::WhenAvailable,
                    Some("required") => FullDocumentBeforeChange::Required,
                    _ => {
                        return Err(error(
                            ErrorCode::BAD_VALUE,
                            format!(
                                "'{value}' is not a valid value for fullDocumentBeforeChange: use off, whenAvailable or required"
                            ),
                        ));
                    }
                };
            }
            "resumeAfter" | "startAfter" => {
                let token = ResumeToken::from_bson(value)?;
                starts += 1;
                options.start = if field == "resumeAfter" {
                    Start::ResumeAfter(token)
                } else {
                    Start::StartAfter(token)
                };
            }
            "startAtOperationTime" => {
                let Bson::Timestamp(time) = value else {
                    return Err(type_error(field, "a timestamp"));
                };
                starts += 1;
                options.start = Start::AtOperationTime(*time);
            }
            // Options of sharded and internal streams that change nothing on one node.
            "allowToRunOnConfigDB" | "allowToRunOnSystemNS" => {}
            other => {
                return Err(error(
                    ErrorCode::location(40415),
                    format!("BSON field '$changeStream.{other}' is an unknown field."),
                ));
            }
        }
    }
    if starts > 1 {
        return Err(error(
            ErrorCode::location(40674),
            "Only one type of resume option is allowed, but multiple were found.",
        ));
    }
    Ok((options, all_for_cluster))
}

impl StreamCursor {
    /// The token a batch answered now would carry.
    pub fn position(&self) -> ResumeToken {
        self.position
    }

    /// Whether the stream returned its `invalidate` event.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Up to `max` events, waiting up to `wait` for the first, or until `killed` is set; a
    /// `killOp` of the `getMore` ends the wait with `Interrupted`.
    pub fn poll_wait(
        &mut self,
        storage: &Storage,
        max: usize,
        wait: Duration,
        killed: &std::sync::atomic::AtomicBool,
    ) -> Result<Vec<RawDocumentBuf>, CommandError> {
        let closed = std::cell::Cell::new(self.closed);
        crate::cursors::await_results(
            wait,
            killed,
            || {
                let batch = self.poll(storage, max);
                closed.set(self.closed);
                batch
            },
            || closed.get() || max == 0,
        )
    }

    /// Up to `max` events committed after the stream's position, without waiting; see the
    /// module documentation for how files merge.
    fn poll(&mut self, storage: &Storage, max: usize) -> Result<Vec<RawDocumentBuf>, CommandError> {
        if self.closed || max == 0 {
            return Ok(Vec::new());
        }
        let events = match self.db.clone() {
            Some(name) => self.poll_file(storage, &name, max)?,
            None => self.poll_deployment(storage, max)?,
        };
        let mut out = Vec::with_capacity(events.len());
        let mut bytes = BatchBytes::default();
        let mut last = None;
        for (token, event) in events {
            let raw = encode(&event)?;
            if !bytes.admit(raw.as_bytes().len()) {
                break;
            }
            out.push(raw);
            last = Some((
                token,
                event.get_str("operationType").ok() == Some("invalidate"),
            ));
        }
        let (next, closed) = match last {
            Some((token, invalidate)) if out.len() < self.pending_len => (token, invalidate),
            Some((token, invalidate)) => (self.batch_end.max(token), invalidate),
            None => (self.batch_end, false),
        };
        self.closed = closed;
        self.position = self.position.max(next);
        // An invalidate's token resumes with startAfter only.
        self.start = if self.position.is_invalidate() {
            Start::StartAfter(self.position)
        } else {
            Start::ResumeAfter(self.position)
        };
        Ok(out)
    }

    /// One file's events: its own stream, read to its end (its commits are ordered).
    fn poll_file(
        &mut self,
        storage: &Storage,
        name: &str,
        max: usize,
    ) -> Result<Vec<(ResumeToken, Document)>, CommandError> {
        let Some(db) = storage.get(name)? else {
            self.pending_len = 0;
            self.batch_end = self.position;
            return Ok(Vec::new());
        };
        let scope = match &self.coll {
            Some(coll) => Scope::Collection(coll.clone()),
            None => Scope::Database,
        };
        let options = ChangeStreamOptions {
            start: self.start,
            db_name: name.to_owned(),
            ..self.options.clone()
        };
        let mut stream = ChangeStream::open(&db, scope, options)?;
        let mut batch = stream.try_next_batch(max)?;
        if stream.invalidate_pending() && batch.len() < max {
            batch.extend(stream.try_next_batch(1)?);
        }
        self.batch_end = stream.resume_token();
        with_tokens(self, batch)
    }

    /// Every file's events up to the stable time, merged in token order.
    fn poll_deployment(
        &mut self,
        storage: &Storage,
        max: usize,
    ) -> Result<Vec<(ResumeToken, Document)>, CommandError> {
        let until = stable_time();
        let names: Vec<String> = storage
            .names()?
            .into_iter()
            .filter(|n| !INTERNAL_DATABASES.contains(&n.as_str()))
            .collect();
        let mut events: Vec<(ResumeToken, Document)> = Vec::new();
        let mut reach = ResumeToken::high_water_mark(until);
        for name in names {
            let Some(db) = storage.get(&name)? else {
                continue;
            };
            let options = ChangeStreamOptions {
                start: self.start,
                db_name: name,
                ..self.options.clone()
            };
            let mut stream = ChangeStream::open(&db, Scope::Deployment, options)?;
            let batch = stream.try_next_batch_until(max, Some(until))?;
            if !stream.caught_up() {
                reach = reach.min(stream.resume_token());
            }
            for event in batch {
                let token = ResumeToken::from_bson(event.get("_id").unwrap_or(&Bson::Null))?;
                events.push((token, event));
            }
        }
        events.sort_by_key(|(token, _)| *token);
        // Only what every file has reached is certain; the rest is read again next time.
        events.retain(|(token, _)| *token <= reach);
        events.truncate(max);
        self.batch_end = reach;
        self.pending_len = events.len();
        Ok(events)
    }
}
