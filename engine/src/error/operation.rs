//! What a database operation returns: [`Error`], wrapping the narrow errors of the stages it
//! ran and keeping redb's error as the source of a storage failure.

use bson::Document;
use thiserror::Error;

use super::{
    CappedError, CollationError, DocumentError, ExprError, FilterError, IndexSpecError,
    Interrupted, UpdateError,
};
use crate::code::ErrorCode;

/// What a database operation can fail with.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A unique index (the `_id_` index included) already holds this key for another document.
    #[error("duplicate key in collection `{collection}`, index `{index}`: {key}")]
    DuplicateKey {
        collection: String,
        index: String,
        /// The key as MongoDB's message writes it: `{ email: "a@b" }`.
        key: String,
        /// MongoDB's `keyPattern` and `keyValue`: the index's fields, and the values that
        /// collided.
        key_pattern: Box<Document>,
        key_value: Box<Document>,
    },
    #[error("invalid document for collection `{collection}`: {source}")]
    InvalidDocument {
        collection: String,
        #[source]
        source: DocumentError,
    },
    /// A hashed index holds no arrays, on any of its fields.
    #[error(
        "hashed index `{index}` of collection `{collection}` cannot hold the array at `{path}`"
    )]
    HashedIndexArray {
        collection: String,
        index: String,
        path: String,
    },
    /// A document a text index cannot hold: a language-override field that is no string or
    /// names no language of text search, or an array in a prefix or suffix field.
    #[error("text index `{index}` of collection `{collection}` cannot hold the document: {reason}")]
    TextIndexDocument {
        collection: String,
        index: String,
        reason: crate::text::TextError,
    },
    /// A document whose geo field a geo index cannot key: no geometry, an invalid one, a point
    /// off a `2d` index's range (MongoDB's words and code: 16755 for `2dsphere`).
    #[error(
        "Can't extract geo keys: {document}  {reason} (collection `{collection}`, index `{index}`)"
    )]
    GeoIndexDocument {
        collection: String,
        index: String,
        code: i32,
        document: String,
        reason: String,
    },
    /// `$text` on a collection without a text index, or with more than one.
    #[error("{reason}")]
    TextIndexRequired { reason: &'static str },
    /// A compound index may hold at most one array per document ("parallel arrays").
    #[error(
        "cannot index parallel arrays in collection `{collection}`, index `{index}`: \
         `{first}` and `{second}` are both arrays"
    )]
    ParallelArrays {
        collection: String,
        index: String,
        first: String,
        second: String,
    },
    /// A document would give one index more keys than allowed (a guard against huge arrays in
    /// compound multikey indexes).
    #[error("document gives index `{index}` of collection `{collection}` more than {limit} keys")]
    TooManyIndexKeys {
        collection: String,
        index: String,
        limit: usize,
    },
    /// A filter, update, pipeline or option nests deeper than MongoDB accepts in a command
    /// ([`crate::MAX_INPUT_DEPTH`] levels); refused before it is parsed.
    #[error("{what} exceeds the maximum nesting depth of {max} levels")]
    InputTooDeep { what: &'static str, max: usize },
    #[error("{0}")]
    InvalidFilter(#[from] FilterError),
    /// An aggregation expression (`$expr`, a pipeline update) failed on a document: an
    /// operator applied to a value of the wrong type; nothing was changed. (An expression
    /// stopped by an [`Interrupted`] converts to [`Error::TimeLimitExceeded`] or
    /// [`Error::Interrupted`] instead.)
    #[error("{0}")]
    InvalidExpression(ExprError),
    /// The operation ran past its time limit (MongoDB's `maxTimeMS`; see
    /// [`crate::interrupt`]); a write was rolled back.
    #[error("operation exceeded time limit")]
    TimeLimitExceeded,
    /// The operation was killed (`killOp`, `killSessions`); a write was rolled back.
    #[error("operation was interrupted")]
    Interrupted,
    /// A malformed `collation` option.
    #[error("{0}")]
    InvalidCollation(#[from] CollationError),
    /// A malformed update, or one that cannot apply to a matched document (`$inc` on a
    /// string, `$push` on a non-array, a change of `_id`); nothing was changed. (An update
    /// stopped by an [`Interrupted`] converts to its own variant, as for expressions.)
    #[error("{0}")]
    InvalidUpdate(UpdateError),
    /// `update_many` with MongoDB's stop-at-first-error behaviour failed part way: the
    /// documents listed were updated (and stay so), the rest were not.
    #[error("update of collection `{collection}` stopped after updating {} document(s): {source}", updated.len())]
    UpdateStopped {
        collection: String,
        updated: Vec<bson::Bson>,
        source: Box<Error>,
    },
    /// A sort the executor must do in memory holds more than the limit of documents, and the
    /// find does not allow disk use. MongoDB's text, with the collection.
    #[error(
        "Sort exceeded memory limit of {limit} bytes, but did not opt in to external sorting (collection `{collection}`; pass allowDiskUse: true, add a limit or an index)"
    )]
    SortMemoryExceeded { collection: String, limit: usize },
    /// An aggregation stage that holds every document (`$sort`, `$group`) would hold more than
    /// the limit, and may not (or cannot) spill to disk. MongoDB's text.
    #[error(
        "Exceeded memory limit of {limit} bytes for {stage}, but didn't allow external sort. Pass allowDiskUse:true to opt in."
    )]
    AggregateMemoryExceeded { stage: String, limit: usize },
    /// A document a pipeline hands out is over MongoDB's limit on a result document
    /// (`BSONObjMaxInternalSize`, 16 MiB and 16 KiB), though each value in it was within the
    /// bounds on computed values. MongoDB's text.
    #[error("BSONObj size: {size} ({size:#X}) is invalid. Size must be between 0 and {max}(16MB)")]
    ResultTooLarge { size: usize, max: usize },
    #[error("invalid index specification: {0}")]
    InvalidIndexSpec(#[from] IndexSpecError),
    /// A write the collection's validator refuses (see [`crate::validation`]); `details` are
    /// MongoDB's `errInfo.details`.
    #[error("Document failed validation")]
    DocumentValidation {
        collection: String,
        id: Box<bson::Bson>,
        details: Box<Document>,
    },
    /// A capped collection's limits, or an operation they refuse.
    #[error("{0}")]
    Capped(#[from] CappedError),
    /// An index with this name or these keys exists with other options.
    #[error("index `{existing}` conflicts with the requested index `{requested}`: {reason}")]
    IndexConflict {
        existing: String,
        requested: String,
        reason: String,
        /// The name is taken by another definition (MongoDB's `IndexKeySpecsConflict`), rather
        /// than the keys being indexed under another name or options (`IndexOptionsConflict`).
        same_name: bool,
    },
    #[error("collection `{collection}` has no index named `{index}`")]
    IndexNotFound { collection: String, index: String },
    /// A write transaction was started inside another on the same thread; use the outer
    /// transaction instead.
    #[error(
        "a write transaction is already open on this thread; use it instead of starting another"
    )]
    NestedWrite,
    #[error("the `_id_` index cannot be dropped")]
    IdIndexRequired,
    /// A collection sharded on one key asked to shard on another (MongoDB's
    /// `AlreadyInitialized`: a shard key is chosen once; `refineCollectionShardKey` aside).
    #[error("collection `{collection}` is already sharded on {existing}, not {requested}")]
    ShardKeyChanged {
        collection: String,
        existing: String,
        requested: String,
    },
    /// `configureQueryAnalyzer`'s arguments break one of its rules.
    #[error("invalid query analyzer configuration: {0}")]
    InvalidQueryAnalyzer(String),
    #[error("collection `{0}` already exists")]
    CollectionExists(String),
    #[error("collection `{0}` does not exist")]
    CollectionNotFound(String),
    #[error("invalid collection name `{name}`: {reason}")]
    InvalidCollectionName { name: String, reason: &'static str },
    /// The file was written by another storage format version of this engine.
    #[error(
        "the file uses storage format version {found}; this build reads version {supported} only"
    )]
    FormatVersion { found: u32, supported: u32 },
    /// A stored document does not decode as the requested type.
    #[error("document {id} in collection `{collection}` does not decode: {reason}")]
    Decode {
        collection: String,
        id: String,
        reason: crate::decode::DecodeFailure,
    },
    /// Bytes read from the file do not decode; the file was damaged or written by other software.
    #[error("corrupt data in {location}: {reason}")]
    Corrupt { location: String, reason: String },
    /// Another process (or another handle in this one) has the file open; redb allows one.
    #[error("`{path}` is open in another process (a database file is opened by one at a time)")]
    Locked { path: String },
    /// `Database::compact` needs the only handle to the database, and no open transaction.
    #[error("cannot compact: {0}")]
    Compaction(String),
    /// A condition a MongoDB server reported to the typed layer's MongoDB back end, with the
    /// server's code, code name and message (a duplicate key arrives as
    /// [`Error::DuplicateKey`] instead, as the engine reports it).
    #[error("the server refused the operation: {message} ({code_name}, code {code})")]
    Reported {
        code: i32,
        code_name: String,
        message: String,
    },
    /// A change stream's resume point is older than the oldest change the log still holds
    /// (see [`crate::changes`]).
    #[error(
        "the change log no longer holds the resume point {resume_point}: resume from a later token or start again"
    )]
    ChangeStreamHistoryLost { resume_point: String },
    /// A resume token that is malformed, or that cannot resume this stream.
    #[error("invalid resume token: {0}")]
    InvalidResumeToken(String),
    /// A change stream cannot go on (its pipeline changed the resume token).
    #[error("change stream fatal error: {0}")]
    ChangeStreamFatal(String),
    /// A change stream asked for an image (`fullDocument: "required"`, or a pre-image) that
    /// was not recorded.
    #[error("no matching document: {0}")]
    NoMatchingDocument(String),
    /// A change stream's options or pipeline, refused with MongoDB's code.
    #[error("{message}")]
    ChangeStreamOption { code: ErrorCode, message: String },
    #[error("storage error: {0}")]
    Storage(#[from] redb::Error),
    /// A file operation of the engine's own (creating a database file) failed.
    #[error("file error at `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A thread an operation needs could not be started (the system's limit on threads or
    /// memory).
    #[error("cannot start a {what} thread: {source}")]
    ThreadUnavailable {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl From<Interrupted> for Error {
    fn from(e: Interrupted) -> Self {
        match e {
            Interrupted::TimeLimit => Error::TimeLimitExceeded,
            Interrupted::Killed => Error::Interrupted,
        }
    }
}

impl From<ExprError> for Error {
    fn from(e: ExprError) -> Self {
        match Interrupted::from_code(e.code) {
            Some(interrupted) => interrupted.into(),
            None => Error::InvalidExpression(e),
        }
    }
}

impl From<UpdateError> for Error {
    fn from(e: UpdateError) -> Self {
        match Interrupted::from_code(e.code) {
            Some(interrupted) => interrupted.into(),
            None => Error::InvalidUpdate(e),
        }
    }
}

/// Every redb error type converts through [`redb::Error`], keeping its message.
macro_rules! storage_errors {
    ($($ty:ty),*) => {$(
        impl From<$ty> for Error {
            fn from(e: $ty) -> Self {
                Error::Storage(e.into())
            }
        }
    )*};
}
storage_errors!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

impl Error {
    /// MongoDB's error code for the condition: `11000` for a duplicate key, `2` (`BadValue`)
    /// for a malformed argument, and so on (see [`ErrorCode`]).
    pub fn code(&self) -> i32 {
        self.error_code().code
    }

    /// MongoDB's code name for the condition: `DuplicateKey`, `BadValue`, `Location16766`.
    pub fn code_name(&self) -> String {
        match self {
            Error::Reported { code_name, .. } if !code_name.is_empty() => code_name.clone(),
            _ => self.error_code().name(),
        }
    }

    /// The code and its name together.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Error::DuplicateKey { .. } => ErrorCode::DUPLICATE_KEY,
            Error::InvalidDocument { source, .. } => source.code(),
            Error::ParallelArrays { .. } => ErrorCode::CANNOT_INDEX_PARALLEL_ARRAYS,
            Error::HashedIndexArray { .. } => ErrorCode::location(16766),
            Error::TextIndexDocument { reason, .. } => reason.code(),
            Error::TooManyIndexKeys { .. } | Error::Decode { .. } => ErrorCode::BAD_VALUE,
            Error::InvalidCollation(e) => e.code,
            Error::InputTooDeep { .. } => ErrorCode::OVERFLOW,
            Error::InvalidFilter(e) => e.code,
            Error::InvalidExpression(e) => e.code,
            Error::InvalidUpdate(e) => e.code,
            Error::UpdateStopped { source, .. } => source.error_code(),
            Error::ResultTooLarge { .. } => ErrorCode::BSON_OBJECT_TOO_LARGE,
            Error::SortMemoryExceeded { .. } | Error::AggregateMemoryExceeded { .. } => {
                ErrorCode::QUERY_EXCEEDED_MEMORY_LIMIT
            }
            Error::InvalidIndexSpec(e) => e.code(),
            Error::Capped(e) => e.code(),
            Error::DocumentValidation { .. } => ErrorCode::DOCUMENT_VALIDATION_FAILURE,
            Error::IndexConflict {
                same_name: true, ..
            } => ErrorCode::INDEX_KEY_SPECS_CONFLICT,
            Error::IndexConflict { .. } => ErrorCode::INDEX_OPTIONS_CONFLICT,
            Error::IndexNotFound { .. } | Error::TextIndexRequired { .. } => {
                ErrorCode::INDEX_NOT_FOUND
            }
            Error::IdIndexRequired | Error::InvalidQueryAnalyzer(_) => ErrorCode::INVALID_OPTIONS,
            Error::CollectionExists(_) => ErrorCode::NAMESPACE_EXISTS,
            Error::ShardKeyChanged { .. } => ErrorCode::ALREADY_INITIALIZED,
            Error::CollectionNotFound(_) => ErrorCode::NAMESPACE_NOT_FOUND,
            Error::InvalidCollectionName { .. } => ErrorCode::INVALID_NAMESPACE,
            Error::NestedWrite | Error::Locked { .. } | Error::Compaction(_) => {
                ErrorCode::ILLEGAL_OPERATION
            }
            Error::Reported { code, .. } | Error::GeoIndexDocument { code, .. } => {
                ErrorCode::location(*code)
            }
            Error::ChangeStreamHistoryLost { .. } => ErrorCode::CHANGE_STREAM_HISTORY_LOST,
            Error::InvalidResumeToken(_) => ErrorCode::INVALID_RESUME_TOKEN,
            Error::ChangeStreamFatal(_) => ErrorCode::CHANGE_STREAM_FATAL_ERROR,
            Error::NoMatchingDocument(_) => ErrorCode::NO_MATCHING_DOCUMENT,
            Error::ChangeStreamOption { code, .. } => *code,
            Error::TimeLimitExceeded => ErrorCode::MAX_TIME_MS_EXPIRED,
            Error::Interrupted => ErrorCode::INTERRUPTED,
            Error::FormatVersion { .. }
            | Error::Corrupt { .. }
            | Error::Storage(_)
            | Error::Io { .. }
            | Error::ThreadUnavailable { .. } => ErrorCode::INTERNAL_ERROR,
        }
    }

    /// Whether the error concerns one operation's document (a duplicate key, an invalid
    /// update), so that a batch may go on past it; storage failures and damaged data end the
    /// batch.
    pub fn is_per_document(&self) -> bool {
        !matches!(
            self,
            Error::Storage(_)
                | Error::Corrupt { .. }
                | Error::Io { .. }
                | Error::Locked { .. }
                | Error::ThreadUnavailable { .. }
                | Error::TimeLimitExceeded
                | Error::Interrupted
        )
    }

    /// Whether the operation was stopped by its time limit or a kill (see
    /// [`crate::interrupt`]).
    pub fn is_interruption(&self) -> bool {
        matches!(self, Error::TimeLimitExceeded | Error::Interrupted)
    }

    pub(crate) fn corrupt(location: impl Into<String>, reason: impl ToString) -> Self {
        Error::Corrupt {
            location: location.into(),
            reason: reason.to_string(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
