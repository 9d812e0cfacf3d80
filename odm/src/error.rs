//! Errors of the typed layer: the engine's, plus the conditions only a typed model has.

use thiserror::Error;

/// What a typed operation can fail with.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Engine(#[from] odm_engine::Error),
    /// A value could not be turned into BSON (a map with non-string keys, a `u64` too large).
    #[error("cannot store a value of collection `{collection}` as BSON: {reason}")]
    Serialize { collection: String, reason: String },
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
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
