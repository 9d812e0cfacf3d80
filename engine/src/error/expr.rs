//! Aggregation expressions' error, when parsed and when evaluated on a document.

use crate::code::ErrorCode;

/// Why an expression was refused, or failed on a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid expression, operator `{operator}`: {reason}")]
pub struct ExprError {
    pub operator: String,
    pub reason: String,
    /// MongoDB's code for the condition ([`ErrorCode::BAD_VALUE`] unless another fits).
    pub code: ErrorCode,
}

impl ExprError {
    #[must_use]
    pub(crate) fn with_code(mut self, code: ErrorCode) -> ExprError {
        self.code = code;
        self
    }
}

/// An interruption inside an expression's loop; [`super::Error`] turns it back into
/// [`Interrupted`](super::Interrupted)'s own variant.
impl From<super::Interrupted> for ExprError {
    fn from(e: super::Interrupted) -> Self {
        ExprError {
            operator: String::new(),
            reason: e.to_string(),
            code: e.code(),
        }
    }
}
