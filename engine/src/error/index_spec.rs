//! Index definitions' error: a key pattern or an option the engine refuses.

use thiserror::Error;

use crate::code::ErrorCode;

/// Why an index definition was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum IndexSpecError {
    #[error("an index needs at least one key field")]
    NoKeys,
    #[error("index key path `{path}` is empty or has an empty segment")]
    EmptyPath { path: String },
    #[error("index key path `{path}` appears twice")]
    RepeatedPath { path: String },
    #[error("index key path `{path}` has a component starting with `$`")]
    DollarPath { path: String },
    #[error("a TTL index must have exactly one key field, index `{name}` has {fields}")]
    TtlCompound { name: String, fields: usize },
    /// MongoDB's words, which drivers' and ODMs' tests match.
    #[error("The field '{field}' is not valid for an _id index specification")]
    IdIndexOption { field: String },
    /// MongoDB's words: the `_id` index takes its collection's collation and no other.
    #[error(
        "The _id index must have the same collation as the collection. Index collation: {index}, collection collation: {collection}"
    )]
    IdIndexCollation { index: String, collection: String },
    #[error("invalid partial filter: {reason}")]
    InvalidPartialFilter { reason: String },
    #[error("index name `{name}` is reserved or empty")]
    BadName { name: String },
    /// A key pattern value that is neither a non-zero number nor a known index type.
    #[error("index key `{path}`: {reason}")]
    BadKeyValue { path: String, reason: String },
    /// An index type MongoDB has that this engine does not build (text, geospatial,
    /// wildcard); refused rather than built as an ascending index.
    #[error("index key `{path}` asks for a `{kind}` index, which this engine does not support")]
    UnsupportedKind { path: String, kind: String },
    #[error("a hashed index cannot be unique: hashes of different values may collide")]
    HashedUnique,
    #[error("an index may hash at most one field, this one hashes {fields}")]
    SeveralHashed { fields: usize },
    /// An index document without its key pattern.
    #[error("The 'key' field is a required property of an index specification")]
    MissingKey,
    /// A field of an index document of the wrong type (`name: 1`, `key: "a"`), named as
    /// MongoDB names it.
    #[error("The field '{option}' must be {expected}, but got {found}")]
    WrongType {
        option: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    /// An option of an index document out of range (a negative `expireAfterSeconds`).
    #[error("index option `{option}`: {reason}")]
    BadOption { option: String, reason: String },
    /// An index option MongoDB has that this engine does not build (`collation`, `hidden`, a
    /// text index's `weights`); refused rather than ignored.
    #[error("index option `{option}` is not supported by this server")]
    UnsupportedOption { option: String },
    /// A text index's definition MongoDB refuses: its weights, languages, or the placement of
    /// its text fields in the key pattern.
    #[error("{reason}")]
    BadText { reason: String },
    /// A second text index: a collection has at most one (MongoDB's words).
    #[error("only one text index per collection allowed, found existing text index \"{existing}\"")]
    SecondTextIndex { existing: String },
    /// A field MongoDB does not know in an index document.
    #[error("The field '{option}' is not valid for an index specification")]
    UnknownOption { option: String },
    /// A geo index's key pattern or options MongoDB refuses (its location code, when it has
    /// one, and its words).
    #[error("{reason}")]
    BadGeo { code: Option<i32>, reason: String },
}

impl IndexSpecError {
    /// MongoDB's code for the condition: `CannotCreateIndex` for a malformed key pattern.
    pub fn code(&self) -> ErrorCode {
        match self {
            IndexSpecError::IdIndexOption { .. } | IndexSpecError::UnknownOption { .. } => {
                ErrorCode::INVALID_INDEX_SPECIFICATION_OPTION
            }
            IndexSpecError::HashedUnique => ErrorCode::location(16764),
            IndexSpecError::IdIndexCollation { .. } => ErrorCode::BAD_VALUE,
            IndexSpecError::MissingKey => ErrorCode::FAILED_TO_PARSE,
            IndexSpecError::WrongType { .. } => ErrorCode::TYPE_MISMATCH,
            IndexSpecError::SeveralHashed { .. } => ErrorCode::location(31303),
            IndexSpecError::BadGeo {
                code: Some(code), ..
            } => ErrorCode::location(*code),
            _ => ErrorCode::CANNOT_CREATE_INDEX,
        }
    }
}
