//! Errors of the typed layer: the engine's, plus the conditions only a typed model has.

use thiserror::Error;

/// What a typed operation can fail with.
///
/// ```
/// use odm::{Database, Document, Error};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Debug, Serialize, Deserialize, Document)]
/// #[odm(collection = "meters")]
/// struct Meter {
///     #[odm(id)]
///     id: i64,
///     reading: i32,
/// }
///
/// let db = Database::in_memory()?;
/// let meters = db.collection::<Meter>()?;
/// // Another program stored a string where the model has a number.
/// db.engine().expect("an embedded database")
///     .collection("meters")
///     .insert_one(bson::doc! { "_id": 7_i64, "reading": "high" })?;
/// let err = meters.get(7_i64).unwrap_err();
/// assert!(matches!(err, Error::Engine(odm::engine::Error::Decode { .. })));
/// let message = err.to_string();
/// assert!(message.contains("meters") && message.contains("reading"), "{message}");
///
/// // A duplicate `_id` is refused and changes nothing.
/// meters.insert_one(&Meter { id: 1, reading: 5 })?;
/// assert!(meters.insert_one(&Meter { id: 1, reading: 6 }).is_err());
/// assert_eq!(meters.get(1_i64)?.unwrap().reading, 5);
/// # Ok::<(), odm::Error>(())
/// ```
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Engine(#[from] odm_engine::Error),
    /// A value could not be turned into BSON (a map with non-string keys, a `u64` too large).
    #[error("cannot store a value of collection `{collection}` as BSON: {source}")]
    Serialize {
        collection: String,
        /// Boxed: bson's error is large, and every `Result` of the typed layer carries this.
        #[source]
        source: Box<BuildError>,
    },
    /// A result of an aggregation does not decode as the type its last stage declared.
    #[error(
        "a result of the aggregation over `{collection}` (_id {id}) does not decode as `{output}`: {reason}"
    )]
    AggregateOutput {
        collection: String,
        output: &'static str,
        id: String,
        reason: String,
    },
    /// An index declared on the model exists in the database with another definition.
    #[error(
        "index `{index}` of collection `{collection}` differs from its declaration: declared {declared}, stored {stored}; drop it or change the model"
    )]
    IndexMismatch {
        collection: String,
        index: String,
        declared: String,
        stored: String,
    },
    /// The MongoDB back end could not reach or talk to its deployment (no server, a bad
    /// connection string, a timeout, a reply that does not read); a server's refusal of an
    /// operation is [`Error::Engine`] with the server's code instead. `transient` when the
    /// driver labels it `TransientTransactionError` (a network error inside a transaction):
    /// the transaction may succeed when run again (see [`Error::is_transient`]).
    #[error("MongoDB driver: {reason}")]
    Driver { reason: String, transient: bool },
    /// A call of the sync API on a thread of a current-thread tokio runtime, on a MongoDB
    /// database the async API connected (`odm::aio::Database::connect`): its client runs
    /// on the caller's runtime, which may be this very thread, so blocking it could wait
    /// forever. Use the async API there, or run the call on a worker
    /// (`odm::aio::Database::run`).
    #[error(
        "the sync API cannot block a current-thread tokio runtime's thread on a MongoDB client of that runtime: use the async API (odm::aio), or run the call on a worker (odm::aio::Database::run)"
    )]
    SyncCallInRuntime,
    /// A multi-document transaction on a deployment without transactions: MongoDB runs them on
    /// replica sets and sharded clusters only.
    #[error(
        "transactions need a replica set or a sharded cluster, and this MongoDB server is a standalone; run it as a one-member replica set (mongod --replSet, odm serve --replica-set)"
    )]
    TransactionsUnsupported,
    /// `analyzeShardKey` cannot answer (no supporting index, too few distinct values, ...).
    #[error("analyzeShardKey: {0}")]
    Analyze(#[from] crate::advisor::AnalyzeError),
    /// A write of a known document of a model with an `#[odm(version)]` field found the
    /// document at another revision than the value was read at, or removed: another writer got
    /// there first. Read the document again and retry.
    #[error(
        "the document {id} of `{collection}` changed or was removed since it was read at version {revision}; read it again and retry"
    )]
    VersionConflict {
        collection: String,
        /// The document's `_id`, as extended JSON.
        id: String,
        /// The revision the value held.
        revision: i64,
    },
    /// A strict populate ([`crate::Aggregate::populate_strict`]) found a reference that names
    /// no document.
    #[error(
        "document {id} of `{collection}` references in `{field}` documents that do not exist: {}",
        missing.join(", ")
    )]
    DanglingReference {
        collection: String,
        /// The referencing document's `_id`, as extended JSON.
        id: String,
        field: String,
        /// The ids referenced and not found.
        missing: Vec<String>,
    },
    /// A model's before-hook (see [`crate::Hooks`]) refused the write, which wrote nothing.
    #[error("`{hook}` of `{collection}` refused the write: {reason}")]
    Refused {
        collection: String,
        hook: &'static str,
        reason: String,
    },
    /// A field's client-side `check` function (`#[odm(schema(check = f))]`) refused a value
    /// about to be written, which wrote nothing.
    #[error("`{collection}`: the check of `{}` refused the value: {}", problem.path, problem.reason)]
    CheckFailed {
        collection: String,
        problem: crate::SchemaProblem,
    },
    /// The model's declarations contradict each other where the compiler cannot see it.
    #[error("the model of collection `{collection}` is inconsistent: {reason}")]
    InconsistentModel { collection: String, reason: String },
    /// An async transaction's handle used after the transaction ended (its closure's future
    /// returned, or was dropped).
    #[error("the transaction has ended: its handle was used after its closure returned")]
    TransactionEnded,
    /// A model without a declared shard key asked for its key's analysis.
    #[error("the model of collection `{0}` declares no shard key")]
    NoShardKey(String),
}

impl Error {
    /// A value of `collection` that could not be written as BSON.
    pub(crate) fn serialize(collection: &str, source: impl Into<BuildError>) -> Error {
        Error::Serialize {
            collection: collection.to_owned(),
            source: Box::new(source.into()),
        }
    }

    /// MongoDB's error code for the condition, the same on both back ends (`11000` for a
    /// duplicate key); `None` for the typed layer's own conditions.
    pub fn code(&self) -> Option<i32> {
        match self {
            Error::Engine(e) => Some(e.code()),
            Error::TransactionsUnsupported => Some(odm_engine::ErrorCode::ILLEGAL_OPERATION.code),
            Error::Analyze(e) => Some(e.code().code),
            _ => None,
        }
    }
}

impl Error {
    /// Whether MongoDB labels the error `TransientTransactionError`: the transaction lost a
    /// conflict or a lock wait (see [`odm_engine::ErrorCode::is_transient_transaction`]), or
    /// the driver lost its connection inside it, and running it again from the start may
    /// succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::Driver {
                transient: true,
                ..
            }
        ) || self
            .code()
            .is_some_and(odm_engine::ErrorCode::is_transient_transaction)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a typed filter, update or value could not be written as the document MongoDB would
/// receive. Builders keep the first such error; the operation that runs them reports it as
/// [`Error::Serialize`].
#[derive(Debug, Clone, Error)]
#[non_exhaustive]
pub enum BuildError {
    /// serde cannot write the value as BSON (a `u64` above `i64::MAX`, a map with non-string
    /// keys).
    #[error(transparent)]
    Unwritable(#[from] bson::error::Error),
    /// The same, for the value given for a field path.
    #[error("`{path}`: {source}")]
    UnwritableAt {
        path: String,
        #[source]
        source: bson::error::Error,
    },
    /// A pipeline update combined with another update by `and`: MongoDB takes either a
    /// pipeline or operators, never both.
    #[error("a pipeline update cannot be combined with another update")]
    PipelineCombined,
    /// An `$expr` in a change stream's typed filter: its field paths would name the event's
    /// fields, not the document's.
    #[error(
        "a change stream's document filter cannot hold `$expr`, whose paths would name the event's fields: filter the events with `pipeline`"
    )]
    ExprOverEvents,
}

#[cfg(test)]
mod tests {
    use super::Error;

    fn reported(code: i32) -> Error {
        Error::Engine(odm_engine::Error::Reported {
            code,
            code_name: String::new(),
            message: String::new(),
        })
    }

    /// MongoDB's `TransientTransactionError` codes, and only they, run a transaction again.
    #[test]
    fn transient_errors_are_those_mongodb_labels() {
        for code in [112, 24, 267, 239, 246, 251] {
            assert!(reported(code).is_transient(), "{code}");
        }
        for code in [11000, 50, 2, 8, 225] {
            assert!(!reported(code).is_transient(), "{code}");
        }
        assert!(!Error::TransactionEnded.is_transient());
        // The driver's label on a lost connection inside a transaction.
        let driver = |transient| Error::Driver {
            reason: "connection reset".into(),
            transient,
        };
        assert!(driver(true).is_transient());
        assert!(!driver(false).is_transient());
    }
}
