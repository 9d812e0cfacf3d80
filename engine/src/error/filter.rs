//! Query filters' error.

use std::fmt;

use crate::code::ErrorCode;

/// Why a filter was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid filter at `{path}`, operator `{operator}`: {reason}")]
pub struct FilterError {
    pub path: String,
    pub operator: String,
    pub reason: String,
    /// MongoDB's code for the condition ([`ErrorCode::BAD_VALUE`] unless another fits).
    pub code: ErrorCode,
}

impl FilterError {
    pub(crate) fn new(path: &str, operator: &str, reason: impl fmt::Display) -> FilterError {
        FilterError {
            path: path.to_owned(),
            operator: operator.to_owned(),
            reason: reason.to_string(),
            code: ErrorCode::BAD_VALUE,
        }
    }

    #[must_use]
    pub(crate) fn with_code(mut self, code: ErrorCode) -> FilterError {
        self.code = code;
        self
    }
}
