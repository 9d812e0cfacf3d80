//! Capped collections' error (see [`crate::capped`]).

use crate::code::ErrorCode;

/// Why a capped collection's limits or one of its operations were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CappedError {
    /// MongoDB's words.
    #[error("BSON field 'size' value must be >= 1 and <= 1125899906842624, actual value '{0}'")]
    InvalidSize(i64),
    #[error(
        "object to insert exceeds cappedMaxSize: a document of {size} bytes is larger than the capped collection `{collection}`'s size of {capped} bytes"
    )]
    DocumentTooLarge {
        collection: String,
        size: u64,
        capped: u64,
    },
    #[error(
        "CollectionScan died due to position in capped collection `{collection}` being deleted. Last seen record id: RecordId({position})"
    )]
    PositionLost { collection: String, position: u64 },
    #[error("tailable cursor requested on non capped collection `{0}`")]
    NotCapped(String),
}

impl CappedError {
    pub fn code(&self) -> ErrorCode {
        match self {
            CappedError::InvalidSize(_) => ErrorCode::location(51_024),
            CappedError::NotCapped(_) | CappedError::DocumentTooLarge { .. } => {
                ErrorCode::BAD_VALUE
            }
            CappedError::PositionLost { .. } => ErrorCode::CAPPED_POSITION_LOST,
        }
    }
}
