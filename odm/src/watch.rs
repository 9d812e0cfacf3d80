//! Typed change streams: [`Collection::watch`](crate::Collection::watch) and
//! [`Database::watch`](crate::Database::watch), on either back end.
//!
//! Embedded, a stream reads the engine's change log (see `odm_engine::changes`): it holds a
//! position, never a copy of the changes, so a slow reader makes no writer wait and no memory
//! grow, and its [`ResumeToken`] still resumes after a restart (until the log is trimmed past
//! it: [`odm_engine::Error::ChangeStreamHistoryLost`]). On MongoDB it is the driver's change
//! stream. Events are MongoDB's on both, read into [`ChangeEvent`].
//!
//! `matching` takes a typed filter over the model's fields and applies it to each event's
//! `fullDocument`; since an update carries no document by default, a stream with a filter asks
//! for `updateLookup` unless another `fullDocument` option was chosen. Events without a
//! document (deletes, drops) never match a filter: watch them without one, or with a
//! `pipeline` over the event's own fields.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::time::Duration;
#[cfg(feature = "mongodb")]
use std::time::Instant;

use bson::{Bson, Document, RawDocumentBuf, Timestamp};
use odm_engine::changes::{self as engine, FullDocument, FullDocumentBeforeChange, Start};

use crate::database::Store;
use crate::error::{BuildError, Error, Result};
use crate::field::IntoValue;
use crate::filter::Filter;
use crate::model::Document as Model;
use crate::{Collection, Database};

/// Where a stream stands: store it, and pass it back to [`Watch::resume_after`] (or
/// [`Watch::start_after`] after an `invalidate`) to go on from there. It is MongoDB's token
/// document on both back ends.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct ResumeToken(Document);

impl ResumeToken {
    /// The token as a document (`{_data: "..."}`), to store.
    pub fn as_document(&self) -> &Document {
        &self.0
    }

    /// A token stored before.
    pub fn from_document(token: Document) -> ResumeToken {
        ResumeToken(token)
    }
}

/// What a change was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperationType {
    Insert,
    Update,
    Replace,
    Delete,
    Drop,
    Rename,
    DropDatabase,
    Invalidate,
    /// An expanded event (`create`, `createIndexes`, ...) or one this build does not name.
    Other(String),
}

impl OperationType {
    fn parse(name: &str) -> OperationType {
        match name {
            "insert" => OperationType::Insert,
            "update" => OperationType::Update,
            "replace" => OperationType::Replace,
            "delete" => OperationType::Delete,
            "drop" => OperationType::Drop,
            "rename" => OperationType::Rename,
            "dropDatabase" => OperationType::DropDatabase,
            "invalidate" => OperationType::Invalidate,
            other => OperationType::Other(other.to_owned()),
        }
    }

    /// MongoDB's name of the operation (`insert`, ...).
    fn name(&self) -> &str {
        match self {
            OperationType::Insert => "insert",
            OperationType::Update => "update",
            OperationType::Replace => "replace",
            OperationType::Delete => "delete",
            OperationType::Drop => "drop",
            OperationType::Rename => "rename",
            OperationType::DropDatabase => "dropDatabase",
            OperationType::Invalidate => "invalidate",
            OperationType::Other(name) => name,
        }
    }
}

/// A filter over a model as a filter over the events' `fullDocument`; one holding `$expr`
/// (whose paths the prefix cannot reach) is refused.
fn of_document<T>(filter: Filter<T>) -> std::result::Result<Document, BuildError> {
    fn holds_expr(filter: &Document) -> bool {
        filter.iter().any(|(key, value)| match value {
            _ if key == "$expr" => true,
            Bson::Array(clauses) if key.starts_with('$') => clauses
                .iter()
                .any(|c| matches!(c, Bson::Document(d) if holds_expr(d))),
            _ => false,
        })
    }
    let under = filter.under("fullDocument");
    let filter = filter.into_document()?;
    if holds_expr(&filter) {
        return Err(BuildError::ExprOverEvents);
    }
    Ok(under)
}

/// Which events a stream passes on, in the model's terms ([`Watch::events`]): inserts of the
/// documents a filter matches, changes of the documents with given ids, or any of several.
/// Unlike [`Watch::matching`], it reads an update's `documentKey`, so the stream needs no
/// `updateLookup`.
///
/// ```
/// use std::time::Duration;
/// use odm::{Database, Document, Events};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Debug, Serialize, Deserialize, Document)]
/// #[odm(collection = "tasks")]
/// struct Task {
///     #[odm(id)]
///     id: i64,
///     owner: String,
///     done: bool,
/// }
///
/// let db = Database::in_memory()?;
/// let tasks = db.collection::<Task>()?;
/// tasks.insert_one(&Task { id: 1, owner: "bob".into(), done: false })?;
/// let f = Task::fields();
/// // Ann's new tasks, and any change to task 1.
/// let mut stream = tasks
///     .watch()
///     .events(Events::inserted(f.owner.eq("ann")).or(Events::updated([1])))
///     .open()?;
/// tasks.insert_one(&Task { id: 2, owner: "bob".into(), done: false })?;
/// tasks.insert_one(&Task { id: 3, owner: "ann".into(), done: false })?;
/// tasks.update_one(f.id.eq(1), f.done.set(true))?;
/// let next = |s: &mut odm::ChangeStream<Task>| s.next_timeout(Duration::from_secs(5));
/// assert_eq!(next(&mut stream)?.unwrap().full_document.unwrap().id, 3);
/// assert!(next(&mut stream)?.unwrap().update_description.is_some());
/// # Ok::<(), odm::Error>(())
/// ```
#[must_use]
pub struct Events<T> {
    filter: std::result::Result<Document, BuildError>,
    _model: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Events<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Events").field(&self.filter).finish()
    }
}

impl<T: Model> Events<T> {
    /// Inserts of documents that `filter` matches.
    pub fn inserted(filter: impl Into<Filter<T>>) -> Self {
        Events {
            filter: of_document(filter.into()).map(|under| {
                let mut event = bson::doc! { "operationType": OperationType::Insert.name() };
                event.extend(under);
                event
            }),
            _model: PhantomData,
        }
    }

    /// Operator updates of the documents with these ids.
    pub fn updated(ids: impl IntoIterator<Item = impl IntoValue<T::Id>>) -> Self {
        Events::of_ids(&[OperationType::Update], ids)
    }

    /// Replacements of the documents with these ids. A model with kept fields (timestamps, a
    /// revision) is replaced through a pipeline update that keeps them, which MongoDB reports
    /// as `update`: watch its replacements with [`Events::changed`].
    pub fn replaced(ids: impl IntoIterator<Item = impl IntoValue<T::Id>>) -> Self {
        Events::of_ids(&[OperationType::Replace], ids)
    }

    /// Updates and replacements of the documents with these ids.
    pub fn changed(ids: impl IntoIterator<Item = impl IntoValue<T::Id>>) -> Self {
        Events::of_ids(&[OperationType::Update, OperationType::Replace], ids)
    }

    /// Deletes of the documents with these ids.
    pub fn deleted(ids: impl IntoIterator<Item = impl IntoValue<T::Id>>) -> Self {
        Events::of_ids(&[OperationType::Delete], ids)
    }

    fn of_ids(
        operations: &[OperationType],
        ids: impl IntoIterator<Item = impl IntoValue<T::Id>>,
    ) -> Self {
        let operations: Vec<&str> = operations.iter().map(OperationType::name).collect();
        let ids = ids
            .into_iter()
            .map(IntoValue::into_bson)
            .collect::<std::result::Result<Vec<Bson>, _>>();
        Events {
            filter: ids.map_err(BuildError::from).map(|ids| {
                bson::doc! {
                    "operationType": { "$in": operations },
                    "documentKey._id": { "$in": ids },
                }
            }),
            _model: PhantomData,
        }
    }

    /// The events of either.
    pub fn or(self, other: Events<T>) -> Self {
        Events {
            filter: self.filter.and_then(|mine| {
                other
                    .filter
                    .map(|theirs| bson::doc! { "$or": [mine, theirs] })
            }),
            _model: PhantomData,
        }
    }
}

/// A database and, except for `dropDatabase`, a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    pub db: String,
    pub coll: Option<String>,
}

impl Namespace {
    fn from_document(d: &Document) -> Namespace {
        Namespace {
            db: d.get_str("db").unwrap_or_default().to_owned(),
            coll: d.get_str("coll").ok().map(str::to_owned),
        }
    }
}

/// An array an update made shorter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncatedArray {
    pub field: String,
    pub new_size: u32,
}

/// What an update changed: MongoDB's `updateDescription` (see
/// [`odm_engine::changes::diff::apply`] to replay it on the document before).
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateDescription {
    /// Dotted paths and their new values.
    pub updated_fields: Document,
    pub removed_fields: Vec<String>,
    pub truncated_arrays: Vec<TruncatedArray>,
}

impl UpdateDescription {
    fn from_document(d: &Document) -> UpdateDescription {
        UpdateDescription {
            updated_fields: d.get_document("updatedFields").cloned().unwrap_or_default(),
            removed_fields: d
                .get_array("removedFields")
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            truncated_arrays: d
                .get_array("truncatedArrays")
                .map(|a| {
                    a.iter()
                        .filter_map(Bson::as_document)
                        .map(|t| TruncatedArray {
                            field: t.get_str("field").unwrap_or_default().to_owned(),
                            new_size: t
                                .get("newSize")
                                .and_then(|n| match n {
                                    Bson::Int32(n) => u32::try_from(*n).ok(),
                                    Bson::Int64(n) => u32::try_from(*n).ok(),
                                    _ => None,
                                })
                                .unwrap_or(0),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// One change, with the documents decoded as the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeEvent<T> {
    /// Resumes after this event.
    pub token: ResumeToken,
    pub operation_type: OperationType,
    /// The commit's cluster time (shared by a transaction's events).
    pub cluster_time: Option<Timestamp>,
    pub wall_time: Option<bson::DateTime>,
    pub ns: Option<Namespace>,
    /// `_id`, and the shard key's fields on a sharded collection.
    pub document_key: Option<Document>,
    /// Inserts and replacements: the document; updates: by the stream's `fullDocument` option.
    pub full_document: Option<T>,
    /// By the stream's `fullDocumentBeforeChange` option.
    pub full_document_before_change: Option<T>,
    pub update_description: Option<UpdateDescription>,
    /// A rename's new namespace.
    pub to: Option<Namespace>,
    /// A transaction's session and number, when it came from a driver's transaction.
    pub lsid: Option<Document>,
    pub txn_number: Option<i64>,
}

/// What an event's documents decode as: a model (migrated when older, as reads do), or plain
/// BSON for database streams.
pub trait EventDocument: Sized {
    /// The value of a stored document; `collection` names it in errors.
    fn from_event(doc: &Document, collection: &str) -> Result<Self>;
}

impl<T: Model> EventDocument for T {
    fn from_event(doc: &Document, collection: &str) -> Result<T> {
        let raw = RawDocumentBuf::try_from(doc).map_err(|e| Error::serialize(collection, e))?;
        crate::codec::from_raw::<T>(&raw, collection)
    }
}

impl EventDocument for Document {
    fn from_event(doc: &Document, _: &str) -> Result<Document> {
        Ok(doc.clone())
    }
}

impl<T: EventDocument> ChangeEvent<T> {
    /// Reads MongoDB's event document; `collection` names the collection in decoding errors.
    pub fn from_document(event: &Document, collection: &str) -> Result<ChangeEvent<T>> {
        let token = match event.get("_id") {
            Some(Bson::Document(t)) => ResumeToken(t.clone()),
            _ => {
                return Err(odm_engine::Error::ChangeStreamFatal(
                    "an event has no resume token (_id)".to_owned(),
                )
                .into());
            }
        };
        let decode = |field: &str| -> Result<Option<T>> {
            match event.get(field) {
                Some(Bson::Document(d)) => T::from_event(d, collection).map(Some),
                _ => Ok(None),
            }
        };
        Ok(ChangeEvent {
            token,
            operation_type: OperationType::parse(
                event.get_str("operationType").unwrap_or_default(),
            ),
            cluster_time: event.get_timestamp("clusterTime").ok(),
            wall_time: event.get_datetime("wallTime").ok().copied(),
            ns: event.get_document("ns").ok().map(Namespace::from_document),
            document_key: event.get_document("documentKey").ok().cloned(),
            full_document: decode("fullDocument")?,
            full_document_before_change: decode("fullDocumentBeforeChange")?,
            update_description: event
                .get_document("updateDescription")
                .ok()
                .map(UpdateDescription::from_document),
            to: event.get_document("to").ok().map(Namespace::from_document),
            lsid: event.get_document("lsid").ok().cloned(),
            txn_number: event.get_i64("txnNumber").ok(),
        })
    }
}

/// Where a stream starts.
#[derive(Debug, Clone, PartialEq)]
enum StartPoint {
    Now,
    ResumeAfter(ResumeToken),
    StartAfter(ResumeToken),
    At(Timestamp),
}

/// A change stream being set up; [`Watch::open`] opens it.
#[must_use]
pub struct Watch<T> {
    db: Database,
    /// `None`: every collection of the database.
    collection: Option<String>,
    filter: Option<Document>,
    /// The [`Events`] filter over the events' own fields.
    events: Option<Document>,
    pipeline: Vec<Document>,
    full_document: Option<FullDocument>,
    before_change: FullDocumentBeforeChange,
    show_expanded_events: bool,
    start: StartPoint,
    /// A filter value that could not be written as BSON.
    invalid: Option<BuildError>,
    _model: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Watch<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("collection", &self.collection)
            .field("filter", &self.filter)
            .field("pipeline", &self.pipeline)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

impl<T: Model> Collection<T> {
    /// A change stream over this collection; see the module documentation of `watch`.
    pub fn watch(&self) -> Watch<T> {
        Watch::new(self.database().clone(), Some(self.name().to_owned()))
    }
}

impl Database {
    /// A change stream over every collection of this database (the whole file, embedded),
    /// with the documents as plain BSON.
    pub fn watch(&self) -> Watch<Document> {
        Watch::new(self.clone(), None)
    }
}

impl<T> Watch<T> {
    fn new(db: Database, collection: Option<String>) -> Watch<T> {
        Watch {
            db,
            collection,
            filter: None,
            events: None,
            pipeline: Vec::new(),
            full_document: None,
            before_change: FullDocumentBeforeChange::Off,
            show_expanded_events: false,
            start: StartPoint::Now,
            invalid: None,
            _model: PhantomData,
        }
    }

    /// Only events whose `fullDocument` matches this filter (see the module documentation).
    pub fn matching(mut self, filter: impl Into<Filter<T>>) -> Self {
        match of_document(filter.into()) {
            Ok(under) => self.filter = Some(under),
            Err(e) => self.invalid = Some(e),
        }
        self
    }

    /// Only the events `events` names (see [`Events`]).
    pub fn events(mut self, events: Events<T>) -> Self {
        match events.filter {
            Ok(events) => self.events = Some(events),
            Err(e) => self.invalid = Some(e),
        }
        self
    }

    /// Stages over the events (`$match`, `$project`, `$addFields`, `$set`, `$unset`,
    /// `$replaceRoot`, `$replaceWith`, `$redact`), after the filter.
    pub fn pipeline(mut self, stages: impl IntoIterator<Item = Document>) -> Self {
        self.pipeline = stages.into_iter().collect();
        self
    }

    /// What an update event's `fullDocument` holds (none by default).
    pub fn full_document(mut self, option: FullDocument) -> Self {
        self.full_document = Some(option);
        self
    }

    /// Whether update, replace and delete events hold the document before the change.
    pub fn full_document_before_change(mut self, option: FullDocumentBeforeChange) -> Self {
        self.before_change = option;
        self
    }

    /// DDL events besides drop, rename and dropDatabase (create, createIndexes, ...).
    pub fn show_expanded_events(mut self, show: bool) -> Self {
        self.show_expanded_events = show;
        self
    }

    /// After the event of this token.
    pub fn resume_after(mut self, token: ResumeToken) -> Self {
        self.start = StartPoint::ResumeAfter(token);
        self
    }

    /// After the event of this token, an `invalidate` included.
    pub fn start_after(mut self, token: ResumeToken) -> Self {
        self.start = StartPoint::StartAfter(token);
        self
    }

    /// The changes from this cluster time on.
    pub fn start_at_operation_time(mut self, time: Timestamp) -> Self {
        self.start = StartPoint::At(time);
        self
    }

    /// The pipeline sent: the filter's `$match`, then the caller's stages.
    fn stages(&self) -> Vec<Document> {
        let mut stages = Vec::new();
        if let Some(filter) = &self.filter {
            stages.push(bson::doc! { "$match": filter.clone() });
        }
        if let Some(events) = &self.events {
            stages.push(bson::doc! { "$match": events.clone() });
        }
        stages.extend(self.pipeline.iter().cloned());
        stages
    }

    fn full_document_option(&self) -> FullDocument {
        match (self.full_document, &self.filter) {
            (Some(option), _) => option,
            (None, Some(_)) => FullDocument::UpdateLookup,
            (None, None) => FullDocument::Default,
        }
    }
}

impl<T: EventDocument> Watch<T> {
    /// Opens the stream: a bad pipeline, a malformed token or a resume point the log no longer
    /// holds fails now.
    pub fn open(self) -> Result<ChangeStream<T>> {
        if let Some(reason) = &self.invalid {
            return Err(Error::serialize(
                self.collection.as_deref().unwrap_or_default(),
                reason.clone(),
            ));
        }
        let name = self.collection.clone().unwrap_or_default();
        let inner = match self.db.store() {
            Store::Embedded(engine_db) => {
                let start = match &self.start {
                    StartPoint::Now => Start::Now,
                    StartPoint::ResumeAfter(t) => {
                        Start::ResumeAfter(engine::ResumeToken::from_document(&t.0)?)
                    }
                    StartPoint::StartAfter(t) => {
                        Start::StartAfter(engine::ResumeToken::from_document(&t.0)?)
                    }
                    StartPoint::At(time) => Start::AtOperationTime(*time),
                };
                let options = engine::ChangeStreamOptions {
                    full_document: self.full_document_option(),
                    full_document_before_change: self.before_change,
                    show_expanded_events: self.show_expanded_events,
                    start,
                    pipeline: self.stages(),
                    db_name: engine_db.name(),
                };
                let scope = match &self.collection {
                    Some(c) => engine::Scope::Collection(c.clone()),
                    None => engine::Scope::Database,
                };
                Inner::Embedded(engine::ChangeStream::open(engine_db, scope, options)?)
            }
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => Inner::Remote(Box::new(remote.wait(remote.watch(
                self.collection.as_deref(),
                self.stages(),
                &crate::remote::WatchOptions {
                    full_document: self.full_document_option(),
                    before_change: self.before_change,
                    show_expanded_events: self.show_expanded_events,
                    resume_after: match &self.start {
                        StartPoint::ResumeAfter(t) => Some(t.0.clone()),
                        _ => None,
                    },
                    start_after: match &self.start {
                        StartPoint::StartAfter(t) => Some(t.0.clone()),
                        _ => None,
                    },
                    start_at: match &self.start {
                        StartPoint::At(time) => Some(*time),
                        _ => None,
                    },
                },
            ))?)),
        };
        let token = match &inner {
            Inner::Embedded(s) => Some(ResumeToken(s.resume_token().to_document())),
            #[cfg(feature = "mongodb")]
            Inner::Remote(_) => None,
        };
        Ok(ChangeStream {
            inner,
            collection: name,
            buffered: VecDeque::new(),
            token,
            closed: false,
            _model: PhantomData,
        })
    }
}

/// How many events an embedded stream reads from the log at a time.
const BATCH: usize = 100;

enum Inner {
    Embedded(engine::ChangeStream),
    #[cfg(feature = "mongodb")]
    Remote(Box<crate::remote::RemoteStream>),
}

/// An open change stream: [`ChangeStream::try_next`] polls without waiting,
/// [`ChangeStream::next_timeout`] waits up to a time, and as an [`Iterator`] it waits as long
/// as it takes, ending after an `invalidate`.
pub struct ChangeStream<T> {
    inner: Inner,
    collection: String,
    /// Events read from the log, not yet handed out (at most one batch).
    buffered: VecDeque<Document>,
    /// The token after the last event handed out, or after the last batch read.
    token: Option<ResumeToken>,
    closed: bool,
    _model: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for ChangeStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeStream")
            .field("collection", &self.collection)
            .field("buffered", &self.buffered.len())
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl<T: EventDocument> ChangeStream<T> {
    /// The next event if one was committed, without waiting (on MongoDB, one `getMore`,
    /// which the driver bounds by a short await).
    pub fn try_next(&mut self) -> Result<Option<ChangeEvent<T>>> {
        self.next_within(Duration::ZERO)
    }

    /// The next event, waiting up to `timeout` for one; `None` when none came (or the stream
    /// is closed).
    pub fn next_timeout(&mut self, timeout: Duration) -> Result<Option<ChangeEvent<T>>> {
        self.next_within(timeout)
    }

    /// Where the stream stands: resumes after the last event handed out.
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.token.clone()
    }

    /// Whether the stream ended with an `invalidate` (its collection dropped or renamed).
    pub fn is_closed(&self) -> bool {
        self.closed && self.buffered.is_empty()
    }

    fn next_within(&mut self, timeout: Duration) -> Result<Option<ChangeEvent<T>>> {
        if self.buffered.is_empty() && !self.closed {
            self.fill(timeout)?;
        }
        // Decoded before it leaves the buffer: an event that fails stays, and so does the
        // stream's position.
        let Some(event) = self.buffered.front() else {
            return Ok(None);
        };
        let event = ChangeEvent::from_document(event, &self.collection)?;
        self.buffered.pop_front();
        // After the batch: the stream's own token, which may be past filtered events.
        let after_batch = match &self.inner {
            Inner::Embedded(s) => Some(ResumeToken(s.resume_token().to_document())),
            #[cfg(feature = "mongodb")]
            Inner::Remote(_) => None,
        };
        self.token = Some(match after_batch {
            Some(token) if self.buffered.is_empty() => token,
            _ => event.token.clone(),
        });
        if event.operation_type == OperationType::Invalidate {
            self.closed = true;
        }
        Ok(Some(event))
    }

    fn fill(&mut self, timeout: Duration) -> Result<()> {
        match &mut self.inner {
            Inner::Embedded(s) => {
                let batch = if timeout.is_zero() {
                    s.try_next_batch(BATCH)?
                } else {
                    s.next_batch(BATCH, timeout)?
                };
                if batch.is_empty() {
                    self.token = Some(ResumeToken(s.resume_token().to_document()));
                }
                self.buffered.extend(batch);
            }
            #[cfg(feature = "mongodb")]
            Inner::Remote(s) => {
                let deadline = Instant::now() + timeout;
                loop {
                    if let Some(event) = s.wait_next_if_any()? {
                        self.buffered.push_back(event);
                        break;
                    }
                    if let Some(token) = s.resume_token() {
                        self.token = Some(ResumeToken(token));
                    }
                    if Instant::now() >= deadline {
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

impl<T: EventDocument> Iterator for ChangeStream<T> {
    type Item = Result<ChangeEvent<T>>;

    /// Waits for the next event, as long as it takes; `None` after the `invalidate`.
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.is_closed() {
                return None;
            }
            match self.next_within(Duration::from_mins(1)) {
                Ok(Some(event)) => return Some(Ok(event)),
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
