//! The `collation` option's error.

use crate::code::ErrorCode;

/// Why a collation document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid collation, field `{field}`: {reason}")]
pub struct CollationError {
    pub field: String,
    pub reason: String,
    /// MongoDB's code for the condition ([`ErrorCode::BAD_VALUE`] unless another fits).
    pub code: ErrorCode,
}

impl CollationError {
    #[must_use]
    pub(crate) fn with_code(mut self, code: ErrorCode) -> CollationError {
        self.code = code;
        self
    }
}
