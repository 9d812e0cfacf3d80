//! Change streams over one database file: the log's records as MongoDB's change events.
//!
//! A stream has a scope (one collection, or the whole file), a position in the log (it
//! returns the changes after it) and MongoDB's options. Each batch reads the log in a fresh
//! snapshot and keeps nothing else, so a slow reader holds no memory and makes no writer wait;
//! a reader so slow that the log was trimmed past its position gets
//! [`Error::ChangeStreamHistoryLost`].
//!
//! Rules, as MongoDB has them:
//! - a collection stream ends with `invalidate` after its collection is dropped or renamed;
//!   a file stream after `dropDatabase`; a deployment stream (`odm serve` merging files) never;
//! - `create`, `createIndexes`, `dropIndexes`, `modify` and `shardCollection` appear only with
//!   `showExpandedEvents`;
//! - `fullDocument`: inserts and replacements carry the document; an update carries it with
//!   `updateLookup` (the document as it is when the event is read, or `null`), or with
//!   `whenAvailable` / `required` the image after the change, recorded when the collection
//!   has `changeStreamPreAndPostImages` (`required` fails when there is none);
//!   `fullDocumentBeforeChange` likewise gives the image before an update, replace or delete;
//! - the stream's pipeline (`$match`, `$project`, `$addFields`, `$set`, `$unset`,
//!   `$replaceRoot`, `$replaceWith`, `$redact`) runs over the events and must leave each
//!   event's `_id`, its resume token, as it was.

use std::time::{Duration, Instant};

use bson::{Bson, Document, RawDocumentBuf, Timestamp, doc};

use super::clock;
use super::log::{self, Log, Position};
use super::token::ResumeToken;
use crate::code::ErrorCode;
use crate::db::{Database, ReadTxn};
use crate::error::{Error, Result};
use crate::tables::META;

/// What a stream watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One collection, by name; invalidated when it is dropped or renamed.
    Collection(String),
    /// Every collection of the file; invalidated by `dropDatabase`.
    Database,
    /// Every collection of the file, never invalidated: one part of a deployment stream.
    Deployment,
}

/// `fullDocument` of update events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FullDocument {
    #[default]
    Default,
    UpdateLookup,
    WhenAvailable,
    Required,
}

/// `fullDocumentBeforeChange` of update, replace and delete events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FullDocumentBeforeChange {
    #[default]
    Off,
    WhenAvailable,
    Required,
}

/// Where a stream starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Start {
    /// After every change committed before the stream opens.
    #[default]
    Now,
    /// After the change of this token (not an `invalidate`).
    ResumeAfter(ResumeToken),
    /// After the change of this token, an `invalidate` included.
    StartAfter(ResumeToken),
    /// At the first change at or after this cluster time.
    AtOperationTime(Timestamp),
}

/// A stream's options (MongoDB's `$changeStream` arguments and the pipeline after it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChangeStreamOptions {
    pub full_document: FullDocument,
    pub full_document_before_change: FullDocumentBeforeChange,
    pub show_expanded_events: bool,
    pub start: Start,
    /// Stages over the events; see the module documentation.
    pub pipeline: Vec<Document>,
    /// The database name events give in `ns.db`.
    pub db_name: String,
}

/// The stages a change stream's pipeline may hold.
const ALLOWED_STAGES: &[&str] = &[
    "$match",
    "$project",
    "$addFields",
    "$set",
    "$unset",
    "$replaceRoot",
    "$replaceWith",
    "$redact",
];

/// How many records one batch reads at most, matching or not, so that a call on a long log
/// whose records all fail the scope or the pipeline still returns promptly.
const SCAN_LIMIT: usize = 10_000;

/// A batch stops once the events read hold this many bytes (MongoDB's 16 MiB reply), so that a
/// batch of large documents is cut as it grows rather than after reading [`SCAN_LIMIT`] of
/// them; the event that passes the bound is the batch's last.
const BATCH_BYTES: usize = 16 * 1024 * 1024;

/// Change events of one database file; see the module documentation.
#[derive(Debug)]
pub struct ChangeStream {
    db: Database,
    scope: Scope,
    options: ChangeStreamOptions,
    position: Position,
    /// The token a resume should start from: the last event's, or the position's.
    resume_token: ResumeToken,
    /// The `invalidate` event to return next, once its change was returned.
    invalidate_next: Option<ResumeToken>,
    closed: bool,
    /// Whether the last batch read the log to its end (or to its `until`), rather than
    /// stopping at its size.
    caught_up: bool,
}

fn option_error(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::ChangeStreamOption {
        code,
        message: message.into(),
    }
}

impl ChangeStream {
    /// Opens a stream; its pipeline is checked now, and a resume point the log no longer
    /// holds is [`Error::ChangeStreamHistoryLost`].
    pub fn open(db: &Database, scope: Scope, options: ChangeStreamOptions) -> Result<ChangeStream> {
        check_pipeline(&options.pipeline)?;
        let snapshot = db.read()?;
        let trimmed = trim_point(&snapshot)?;
        let log = Log::read(&snapshot.txn)?;
        let last = log.last()?;
        let position = match options.start {
            // After every record of the last commit: a high-water mark, not a record's own
            // key, so that resuming there never repeats what that record caused (an
            // invalidate).
            Start::Now => last.map_or(trimmed, |l| (l.0, u32::MAX).max(trimmed)),
            Start::ResumeAfter(token) if token.is_invalidate() => {
                return Err(Error::InvalidResumeToken(
                    "resumeAfter cannot resume after an invalidate; use startAfter".to_owned(),
                ));
            }
            Start::ResumeAfter(token) | Start::StartAfter(token) => token.position(),
            Start::AtOperationTime(time) => {
                let time = clock::from_timestamp(time);
                (time.saturating_sub(1), u32::MAX)
            }
        };
        check_history(trimmed, position)?;
        let resume_token = options_start_token(&options.start).unwrap_or(ResumeToken::at(position));
        let mut stream = ChangeStream {
            db: db.clone(),
            scope,
            options,
            position,
            resume_token,
            invalidate_next: None,
            closed: false,
            caught_up: false,
        };
        // Resuming right after the change that invalidates this stream: the `invalidate`
        // comes next, as it would have.
        if let Start::ResumeAfter(token) | Start::StartAfter(token) = stream.options.start
            && !token.is_invalidate()
            && let Some(record) = log.get(token.position())?
        {
            let record = decode_record(record.value())?;
            if stream.invalidates(&record) {
                stream.invalidate_next = Some(ResumeToken {
                    invalidate: true,
                    ..token
                });
            }
        }
        Ok(stream)
    }

    /// The token to resume after what this stream returned so far (MongoDB's
    /// `postBatchResumeToken`).
    pub fn resume_token(&self) -> ResumeToken {
        self.resume_token
    }

    /// Whether the stream was invalidated and returned its `invalidate` event.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Whether the next batch starts with the `invalidate` event.
    pub fn invalidate_pending(&self) -> bool {
        self.invalidate_next.is_some()
    }

    /// Whether the last batch read every change up to its `until` (or the log's end): the
    /// stream has then seen everything up to that time.
    pub fn caught_up(&self) -> bool {
        self.caught_up
    }

    /// Up to `max` events committed after the stream's position, without waiting.
    pub fn try_next_batch(&mut self, max: usize) -> Result<Vec<Document>> {
        self.try_next_batch_until(max, None)
    }

    /// Up to `max` events, waiting up to `timeout` for the first one.
    pub fn next_batch(&mut self, max: usize, timeout: Duration) -> Result<Vec<Document>> {
        let deadline = Instant::now() + timeout;
        loop {
            let seen = clock::commits();
            let batch = self.try_next_batch(max)?;
            if !batch.is_empty() || self.closed {
                return Ok(batch);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(batch);
            }
            clock::wait_for_commit(seen, left);
        }
    }

    /// [`ChangeStream::try_next_batch`], reading no change later than cluster time `until`
    /// (a deployment stream merges files up to a time every file has reached).
    pub fn try_next_batch_until(
        &mut self,
        max: usize,
        until: Option<u64>,
    ) -> Result<Vec<Document>> {
        if self.closed {
            return Ok(Vec::new());
        }
        if let Some(token) = self.invalidate_next.take() {
            self.caught_up = false;
            self.closed = true;
            self.resume_token = token;
            return Ok(vec![invalidate_event(token)]);
        }
        let snapshot = self.db.read()?;
        check_history(trim_point(&snapshot)?, self.position)?;
        let log = Log::read(&snapshot.txn)?;
        let mut events = Vec::new();
        let mut scanned = 0;
        let mut bytes = 0usize;
        let mut scan_end = self.position;
        let mut invalidated = None;
        self.caught_up = true;
        for row in log.after(self.position)? {
            let (key, value) = row?;
            let key = key.value();
            if until.is_some_and(|u| key.0 > u) {
                break;
            }
            if events.len() >= max || scanned >= SCAN_LIMIT || bytes >= BATCH_BYTES {
                self.caught_up = false;
                break;
            }
            scan_end = key;
            scanned += 1;
            let record = decode_record(value.value())?;
            if let Some(event) = self.event(&snapshot, key, &record)? {
                bytes += RawDocumentBuf::try_from(&event).map_or(0, |r| r.as_bytes().len());
                events.push(event);
            }
            if self.invalidates(&record) {
                invalidated = Some(ResumeToken {
                    invalidate: true,
                    ..ResumeToken::at(key)
                });
                self.caught_up = false;
                break;
            }
        }
        let out = self.through_pipeline(&snapshot, events)?;
        // Past the last record read, returned or not: resuming there skips only what this
        // stream has seen (MongoDB's `postBatchResumeToken`).
        if scanned > 0 {
            self.position = scan_end;
            self.resume_token = ResumeToken::at(scan_end);
        }
        self.invalidate_next = invalidated;
        if out.is_empty() && self.invalidate_next.is_some() {
            return self.try_next_batch_until(max, until);
        }
        Ok(out)
    }

    fn through_pipeline(&self, snapshot: &ReadTxn, events: Vec<Document>) -> Result<Vec<Document>> {
        if self.options.pipeline.is_empty() || events.is_empty() {
            return Ok(events);
        }
        let tokens: Vec<Bson> = events
            .iter()
            .filter_map(|e| e.get("_id").cloned())
            .collect();
        let out = crate::aggregate::over_documents(snapshot, &self.options.pipeline, events)?;
        for event in &out {
            if !event.get("_id").is_some_and(|id| tokens.contains(id)) {
                return Err(Error::ChangeStreamFatal(
                    "an event's _id, its resume token, was changed or removed by the pipeline"
                        .to_owned(),
                ));
            }
        }
        Ok(out)
    }

    /// Whether `record` ends this stream with an `invalidate`.
    fn invalidates(&self, record: &Document) -> bool {
        let op = record.get_str("op").unwrap_or_default();
        match &self.scope {
            Scope::Collection(name) => {
                matches!(op, "drop" | "rename")
                    && record.get_str("coll").ok() == Some(name.as_str())
            }
            Scope::Database => op == "dropDatabase",
            Scope::Deployment => false,
        }
    }

    /// The event of one record, or `None` when the stream does not show it.
    fn event(
        &self,
        snapshot: &ReadTxn,
        key: Position,
        record: &Document,
    ) -> Result<Option<Document>> {
        let op = record.get_str("op").unwrap_or_default();
        let coll = record.get_str("coll").unwrap_or_default();
        if let Scope::Collection(name) = &self.scope
            && (coll != name || op == "dropDatabase")
        {
            return Ok(None);
        }
        let expanded = matches!(
            op,
            "create" | "createIndexes" | "dropIndexes" | "modify" | "shardCollection"
        );
        if expanded && !self.options.show_expanded_events {
            return Ok(None);
        }
        let db = self.options.db_name.as_str();
        let mut event = doc! {
            "_id": ResumeToken::at(key).to_document(),
            "operationType": op,
            "clusterTime": clock::to_timestamp(key.0),
        };
        if let Some(wall) = record.get("wall") {
            event.insert("wallTime", wall.clone());
        }
        let full = match op {
            "insert" | "replace" => record.get("fullDocument").cloned(),
            "update" => self.post_image(snapshot, coll, record)?,
            _ => None,
        };
        if let Some(full) = full {
            event.insert("fullDocument", full);
        }
        event.insert(
            "ns",
            if op == "dropDatabase" {
                doc! { "db": db }
            } else {
                doc! { "db": db, "coll": coll }
            },
        );
        if let Some(value) = record.get("documentKey") {
            event.insert("documentKey", value.clone());
        }
        if let Ok(description) = record.get_document("updateDescription") {
            let mut description = description.clone();
            if self.options.show_expanded_events
                && let Ok(ambiguous) = record.get_document("disambiguatedPaths")
            {
                description.insert("disambiguatedPaths", ambiguous.clone());
            }
            event.insert("updateDescription", description);
        }
        if matches!(op, "update" | "replace" | "delete") {
            match (
                self.options.full_document_before_change,
                record.get("preImage"),
            ) {
                (FullDocumentBeforeChange::Off, _) => {}
                (_, Some(image)) => {
                    event.insert("fullDocumentBeforeChange", image.clone());
                }
                (FullDocumentBeforeChange::WhenAvailable, None) => {
                    event.insert("fullDocumentBeforeChange", Bson::Null);
                }
                (FullDocumentBeforeChange::Required, None) => {
                    return Err(Error::NoMatchingDocument(format!(
                        "change stream was configured to require a pre-image, and the {op} of {} in `{coll}` has none: enable changeStreamPreAndPostImages on the collection",
                        record
                            .get("documentKey")
                            .map(ToString::to_string)
                            .unwrap_or_default()
                    )));
                }
            }
        }
        for field in ["lsid", "txnNumber"] {
            if let Some(value) = record.get(field) {
                event.insert(field, value.clone());
            }
        }
        if let Ok(to) = record.get_str("to") {
            event.insert("to", doc! { "db": db, "coll": to });
        }
        if self.options.show_expanded_events {
            for field in ["operationDescription", "stateBeforeChange"] {
                if let Some(value) = record.get(field) {
                    event.insert(field, value.clone());
                }
            }
        }
        Ok(Some(event))
    }

    /// An update's `fullDocument`, by the stream's option.
    fn post_image(
        &self,
        snapshot: &ReadTxn,
        coll: &str,
        record: &Document,
    ) -> Result<Option<Bson>> {
        let image = record.get("postImage").cloned();
        Ok(match self.options.full_document {
            FullDocument::Default => None,
            FullDocument::UpdateLookup => {
                let id = record
                    .get_document("documentKey")
                    .ok()
                    .and_then(|k| k.get("_id"))
                    .cloned()
                    .unwrap_or(Bson::Null);
                let found = match snapshot.collection(coll)? {
                    Some(c) => c.get(&id)?,
                    None => None,
                };
                Some(match found {
                    Some(doc) => Bson::Document(
                        Document::try_from(doc.as_raw()?)
                            .map_err(|e| Error::corrupt(format!("collection `{coll}`"), e))?,
                    ),
                    None => Bson::Null,
                })
            }
            FullDocument::WhenAvailable => Some(image.unwrap_or(Bson::Null)),
            FullDocument::Required => Some(image.ok_or_else(|| {
                Error::NoMatchingDocument(format!(
                    "change stream was configured to require a post-image, and an update in `{coll}` has none: enable changeStreamPreAndPostImages on the collection"
                ))
            })?),
        })
    }
}

/// Checks a change stream's pipeline: only the allowed stages, each well formed.
pub fn check_pipeline(pipeline: &[Document]) -> Result<()> {
    for stage in pipeline {
        let name = stage.keys().next().map(String::as_str).unwrap_or_default();
        if stage.len() != 1 || !ALLOWED_STAGES.contains(&name) {
            if !crate::aggregate::is_stage_name(name) {
                return Err(option_error(
                    ErrorCode::location(40324),
                    format!("Unrecognized pipeline stage name: '{name}'"),
                ));
            }
            return Err(option_error(
                ErrorCode::ILLEGAL_OPERATION,
                format!("{name} is not permitted in a $changeStream pipeline"),
            ));
        }
    }
    if crate::nesting::any_exceeds(pipeline, crate::MAX_INPUT_DEPTH) {
        return Err(Error::InputTooDeep {
            what: "pipeline",
            max: crate::MAX_INPUT_DEPTH,
        });
    }
    crate::aggregate::check_stages(pipeline)
}

fn options_start_token(start: &Start) -> Option<ResumeToken> {
    match start {
        Start::ResumeAfter(token) | Start::StartAfter(token) => Some(*token),
        Start::Now | Start::AtOperationTime(_) => None,
    }
}

fn invalidate_event(token: ResumeToken) -> Document {
    doc! {
        "_id": token.to_document(),
        "operationType": "invalidate",
        "clusterTime": token.cluster_time(),
        "wallTime": bson::DateTime::now(),
    }
}

fn check_history(trimmed: Position, position: Position) -> Result<()> {
    if trimmed > position {
        return Err(Error::ChangeStreamHistoryLost {
            resume_point: format!(
                "{} (the log starts after {})",
                ResumeToken::at(position).to_document(),
                ResumeToken::at(trimmed).to_document()
            ),
        });
    }
    Ok(())
}

/// The log's trim point in a snapshot: resuming before it has lost history.
fn trim_point(snapshot: &ReadTxn) -> Result<Position> {
    log::trimmed(&snapshot.txn.open_table(META)?)
}

fn decode_record(bytes: &[u8]) -> Result<Document> {
    let raw = RawDocumentBuf::from_bytes(bytes.to_vec())
        .map_err(|e| Error::corrupt("a change record", e))?;
    Document::try_from(raw.as_ref()).map_err(|e| Error::corrupt("a change record", e))
}

/// The cluster time every commit in flight comes after; see `clock::stable`.
pub fn stable_time() -> u64 {
    clock::stable()
}
