//! Document validation's error: what a stored document may not be.

use thiserror::Error;

use crate::code::ErrorCode;

/// Why a document was refused before anything was written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// MongoDB's limit on a stored document: 16 MiB of BSON.
    #[error("document is {size} bytes, over the {max}-byte limit")]
    TooLarge { size: usize, max: usize },
    /// MongoDB's limit on nesting in a stored document: 100 levels, the top-level document
    /// being the first and empty documents and arrays adding none.
    #[error("document exceeds the maximum nesting depth of {max} levels")]
    TooDeep { max: usize },
    /// Field names inside `_id` may not start with `$` (elsewhere they may, since
    /// MongoDB 5.0).
    #[error("field name `{field}` starts with `$`, which `_id` may not hold")]
    DollarField { field: String },
    /// `_id` may be any BSON value except an array, a regular expression or undefined.
    #[error("`_id` cannot be of type {kind}")]
    InvalidId { kind: &'static str },
    /// A replacement document may not change `_id`.
    #[error("the replacement changes the immutable field `_id` from {from} to {to}")]
    IdChanged { from: String, to: String },
    /// The bytes are not a well-formed BSON document.
    #[error("malformed BSON document: {reason}")]
    Malformed { reason: String },
}

impl DocumentError {
    /// MongoDB's code for the condition.
    pub fn code(&self) -> ErrorCode {
        match self {
            DocumentError::TooLarge { .. } => ErrorCode::BSON_OBJECT_TOO_LARGE,
            DocumentError::TooDeep { .. } => ErrorCode::OVERFLOW,
            DocumentError::DollarField { .. } => ErrorCode::DOLLAR_PREFIXED_FIELD_NAME,
            DocumentError::InvalidId { .. } => ErrorCode::INVALID_ID_FIELD,
            DocumentError::IdChanged { .. } => ErrorCode::IMMUTABLE_FIELD,
            DocumentError::Malformed { .. } => ErrorCode::BAD_VALUE,
        }
    }
}
