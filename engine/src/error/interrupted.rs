//! Why an operation was stopped before its end (see [`crate::interrupt`]).

use crate::code::ErrorCode;

/// An operation stopped by its time limit or by a kill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Interrupted {
    /// The operation ran past its deadline (MongoDB's `maxTimeMS`).
    #[error("operation exceeded time limit")]
    TimeLimit,
    /// The operation was killed (`killOp`, `killSessions`).
    #[error("operation was interrupted")]
    Killed,
}

impl Interrupted {
    /// MongoDB's code: `MaxTimeMSExpired` (50) or `Interrupted` (11601).
    pub fn code(self) -> ErrorCode {
        match self {
            Interrupted::TimeLimit => ErrorCode::MAX_TIME_MS_EXPIRED,
            Interrupted::Killed => ErrorCode::INTERRUPTED,
        }
    }

    /// The interruption an error code stands for, if it stands for one.
    pub(crate) fn from_code(code: ErrorCode) -> Option<Interrupted> {
        if code == ErrorCode::MAX_TIME_MS_EXPIRED {
            Some(Interrupted::TimeLimit)
        } else if code == ErrorCode::INTERRUPTED {
            Some(Interrupted::Killed)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Interrupted;

    #[test]
    fn messages_and_codes_are_mongodbs() {
        assert_eq!(
            Interrupted::TimeLimit.to_string(),
            "operation exceeded time limit"
        );
        assert_eq!(
            Interrupted::TimeLimit.code().to_string(),
            "50 (MaxTimeMSExpired)"
        );
        assert_eq!(Interrupted::Killed.to_string(), "operation was interrupted");
        assert_eq!(
            Interrupted::Killed.code().to_string(),
            "11601 (Interrupted)"
        );
    }
}
