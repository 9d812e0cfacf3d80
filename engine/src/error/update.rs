//! Updates' error, when parsed and when applied to a document.

use crate::code::ErrorCode;

/// Why an update was refused; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid update of `{path}` with {operator}: {reason}")]
pub struct UpdateError {
    pub path: String,
    pub operator: String,
    pub reason: String,
    /// MongoDB's code for the condition ([`ErrorCode::FAILED_TO_PARSE`] for a malformed
    /// update, [`ErrorCode::BAD_VALUE`] for one that cannot apply, unless another fits).
    pub code: ErrorCode,
}

impl UpdateError {
    #[must_use]
    pub(crate) fn with_code(mut self, code: ErrorCode) -> UpdateError {
        self.code = code;
        self
    }
}
