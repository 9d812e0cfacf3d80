//! MongoDB's error codes (the server's `error_codes.yml`): every engine error answers the code
//! and code name a MongoDB server gives for the same condition, so that conformance checks and
//! wire-protocol clients see what they would see from MongoDB. Conditions MongoDB reports with a
//! bare assertion number have no name of their own; theirs is `Location<number>`, as the server
//! spells it.

use std::fmt;

/// A MongoDB error code with its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode {
    pub code: i32,
    /// The code name; empty for a location code (see [`ErrorCode::name`]).
    name: &'static str,
}

impl ErrorCode {
    const fn named(code: i32, name: &'static str) -> ErrorCode {
        ErrorCode { code, name }
    }

    /// Whether a transaction that failed with `code` may succeed when run again from the
    /// start, MongoDB's `TransientTransactionError`: a write conflict (112), a lock timeout
    /// (24), a prepared transaction in the way (267), a snapshot error (239, 246), and a
    /// transaction the server no longer has (251).
    pub const fn is_transient_transaction(code: i32) -> bool {
        matches!(code, 112 | 24 | 267 | 239 | 246 | 251)
    }

    /// A code MongoDB raises with a bare assertion number.
    pub const fn location(code: i32) -> ErrorCode {
        ErrorCode { code, name: "" }
    }

    /// The code name: `DuplicateKey`, or `Location16766` for a location code.
    pub fn name(&self) -> String {
        if self.name.is_empty() {
            format!("Location{}", self.code)
        } else {
            self.name.to_owned()
        }
    }

    pub const INTERNAL_ERROR: ErrorCode = ErrorCode::named(1, "InternalError");
    pub const BAD_VALUE: ErrorCode = ErrorCode::named(2, "BadValue");
    pub const NO_QUERY_EXECUTION_PLANS: ErrorCode = ErrorCode::named(291, "NoQueryExecutionPlans");
    pub const NO_SUCH_KEY: ErrorCode = ErrorCode::named(4, "NoSuchKey");
    pub const FAILED_TO_PARSE: ErrorCode = ErrorCode::named(9, "FailedToParse");
    pub const TYPE_MISMATCH: ErrorCode = ErrorCode::named(14, "TypeMismatch");
    pub const OVERFLOW: ErrorCode = ErrorCode::named(15, "Overflow");
    pub const CANNOT_BACKFILL_ARRAY: ErrorCode = ErrorCode::named(34, "CannotBackfillArray");
    pub const ILLEGAL_OPERATION: ErrorCode = ErrorCode::named(20, "IllegalOperation");
    pub const NAMESPACE_NOT_FOUND: ErrorCode = ErrorCode::named(26, "NamespaceNotFound");
    pub const INDEX_NOT_FOUND: ErrorCode = ErrorCode::named(27, "IndexNotFound");
    pub const AMBIGUOUS_INDEX_KEY_PATTERN: ErrorCode =
        ErrorCode::named(386, "AmbiguousIndexKeyPattern");
    pub const PATH_NOT_VIABLE: ErrorCode = ErrorCode::named(28, "PathNotViable");
    pub const CANNOT_INDEX_PARALLEL_ARRAYS: ErrorCode =
        ErrorCode::named(171, "CannotIndexParallelArrays");
    pub const CONFLICTING_UPDATE_OPERATORS: ErrorCode =
        ErrorCode::named(40, "ConflictingUpdateOperators");
    pub const NAMESPACE_EXISTS: ErrorCode = ErrorCode::named(48, "NamespaceExists");
    pub const DOLLAR_PREFIXED_FIELD_NAME: ErrorCode =
        ErrorCode::named(52, "DollarPrefixedFieldName");
    pub const INVALID_ID_FIELD: ErrorCode = ErrorCode::named(53, "InvalidIdField");
    pub const NOT_SINGLE_VALUE_FIELD: ErrorCode = ErrorCode::named(54, "NotSingleValueField");
    pub const EMPTY_FIELD_NAME: ErrorCode = ErrorCode::named(56, "EmptyFieldName");
    pub const IMMUTABLE_FIELD: ErrorCode = ErrorCode::named(66, "ImmutableField");
    pub const CANNOT_CREATE_INDEX: ErrorCode = ErrorCode::named(67, "CannotCreateIndex");
    pub const INVALID_OPTIONS: ErrorCode = ErrorCode::named(72, "InvalidOptions");
    pub const INVALID_NAMESPACE: ErrorCode = ErrorCode::named(73, "InvalidNamespace");
    pub const NOT_EXACT_VALUE_FIELD: ErrorCode = ErrorCode::named(111, "NotExactValueField");
    pub const INDEX_OPTIONS_CONFLICT: ErrorCode = ErrorCode::named(85, "IndexOptionsConflict");
    pub const INDEX_KEY_SPECS_CONFLICT: ErrorCode = ErrorCode::named(86, "IndexKeySpecsConflict");
    pub const OPERATION_FAILED: ErrorCode = ErrorCode::named(96, "OperationFailed");
    pub const INVALID_INDEX_SPECIFICATION_OPTION: ErrorCode =
        ErrorCode::named(197, "InvalidIndexSpecificationOption");
    pub const DOCUMENT_VALIDATION_FAILURE: ErrorCode =
        ErrorCode::named(121, "DocumentValidationFailure");
    pub const QUERY_FEATURE_NOT_ALLOWED: ErrorCode =
        ErrorCode::named(224, "QueryFeatureNotAllowed");
    pub const GRAPH_CONTAINS_CYCLE: ErrorCode = ErrorCode::named(145, "GraphContainsCycle");
    pub const VIEW_DEPTH_LIMIT_EXCEEDED: ErrorCode =
        ErrorCode::named(150, "ViewDepthLimitExceeded");
    pub const COMMAND_NOT_SUPPORTED_ON_VIEW: ErrorCode =
        ErrorCode::named(166, "CommandNotSupportedOnView");
    pub const OPTION_NOT_SUPPORTED_ON_VIEW: ErrorCode =
        ErrorCode::named(167, "OptionNotSupportedOnView");
    pub const INVALID_VIEW_DEFINITION: ErrorCode = ErrorCode::named(182, "InvalidViewDefinition");
    pub const SNAPSHOT_TOO_OLD: ErrorCode = ErrorCode::named(239, "SnapshotTooOld");
    pub const CAPPED_POSITION_LOST: ErrorCode = ErrorCode::named(136, "CappedPositionLost");
    pub const EXCEEDED_MEMORY_LIMIT: ErrorCode = ErrorCode::named(146, "ExceededMemoryLimit");
    pub const INVALID_PIPELINE_OPERATOR: ErrorCode =
        ErrorCode::named(168, "InvalidPipelineOperator");
    pub const QUERY_EXCEEDED_MEMORY_LIMIT: ErrorCode =
        ErrorCode::named(292, "QueryExceededMemoryLimitNoDiskUseAllowed");
    pub const CONVERSION_FAILURE: ErrorCode = ErrorCode::named(241, "ConversionFailure");
    /// A required field missing from a document the server parses with its IDL
    /// (`Location40414` before MongoDB 8.0 named it).
    pub const IDL_FAILED_TO_PARSE: ErrorCode = ErrorCode::named(40414, "IDLFailedToParse");
    pub const INVALID_BSON: ErrorCode = ErrorCode::named(22, "InvalidBSON");
    pub const INVALID_LENGTH: ErrorCode = ErrorCode::named(16, "InvalidLength");
    pub const USER_NOT_FOUND: ErrorCode = ErrorCode::named(11, "UserNotFound");
    pub const UNAUTHORIZED: ErrorCode = ErrorCode::named(13, "Unauthorized");
    pub const AUTHENTICATION_FAILED: ErrorCode = ErrorCode::named(18, "AuthenticationFailed");
    pub const CURSOR_NOT_FOUND: ErrorCode = ErrorCode::named(43, "CursorNotFound");
    pub const COMMAND_NOT_FOUND: ErrorCode = ErrorCode::named(59, "CommandNotFound");
    pub const ALREADY_INITIALIZED: ErrorCode = ErrorCode::named(23, "AlreadyInitialized");
    pub const NOT_IMPLEMENTED: ErrorCode = ErrorCode::named(238, "NotImplemented");
    pub const TRANSACTION_TOO_OLD: ErrorCode = ErrorCode::named(225, "TransactionTooOld");
    pub const NO_SUCH_TRANSACTION: ErrorCode = ErrorCode::named(251, "NoSuchTransaction");
    pub const OPERATION_NOT_SUPPORTED_IN_TRANSACTION: ErrorCode =
        ErrorCode::named(263, "OperationNotSupportedInTransaction");
    pub const TRANSACTION_EXCEEDED_LIFETIME_LIMIT: ErrorCode =
        ErrorCode::named(290, "TransactionExceededLifetimeLimitSeconds");
    pub const TOO_MANY_OPEN_CURSORS: ErrorCode = ErrorCode::named(146, "ExceededMemoryLimit");
    pub const UNKNOWN_REPL_WRITE_CONCERN: ErrorCode =
        ErrorCode::named(79, "UnknownReplWriteConcern");
    pub const UNSATISFIABLE_WRITE_CONCERN: ErrorCode =
        ErrorCode::named(100, "UnsatisfiableWriteConcern");
    pub const NOT_WRITABLE_PRIMARY: ErrorCode = ErrorCode::named(10107, "NotWritablePrimary");
    pub const SHUTDOWN_IN_PROGRESS: ErrorCode = ErrorCode::named(91, "ShutdownInProgress");
    pub const BSON_OBJECT_TOO_LARGE: ErrorCode = ErrorCode::named(10334, "BSONObjectTooLarge");
    pub const NO_MATCHING_DOCUMENT: ErrorCode = ErrorCode::named(47, "NoMatchingDocument");
    pub const INVALID_RESUME_TOKEN: ErrorCode = ErrorCode::named(260, "InvalidResumeToken");
    pub const CHANGE_STREAM_FATAL_ERROR: ErrorCode =
        ErrorCode::named(280, "ChangeStreamFatalError");
    pub const CHANGE_STREAM_HISTORY_LOST: ErrorCode =
        ErrorCode::named(286, "ChangeStreamHistoryLost");
    pub const CURSOR_KILLED: ErrorCode = ErrorCode::named(237, "CursorKilled");
    pub const DUPLICATE_KEY: ErrorCode = ErrorCode::named(11000, "DuplicateKey");
    pub const INVALID_UUID: ErrorCode = ErrorCode::named(207, "InvalidUUID");
    pub const MAX_TIME_MS_EXPIRED: ErrorCode = ErrorCode::named(50, "MaxTimeMSExpired");
    pub const INTERRUPTED: ErrorCode = ErrorCode::named(11601, "Interrupted");
    pub const TOO_MANY_LOGICAL_SESSIONS: ErrorCode =
        ErrorCode::named(261, "TooManyLogicalSessions");
    pub const API_VERSION_ERROR: ErrorCode = ErrorCode::named(322, "APIVersionError");
    pub const API_STRICT_ERROR: ErrorCode = ErrorCode::named(323, "APIStrictError");
    pub const API_DEPRECATION_ERROR: ErrorCode = ErrorCode::named(324, "APIDeprecationError");

    /// Every named code above, and the others a client may ask a fail point to raise, for
    /// [`ErrorCode::of`].
    const NAMED: &'static [ErrorCode] = &[
        ErrorCode::INTERNAL_ERROR,
        ErrorCode::BAD_VALUE,
        ErrorCode::NO_SUCH_KEY,
        ErrorCode::FAILED_TO_PARSE,
        ErrorCode::TYPE_MISMATCH,
        ErrorCode::OVERFLOW,
        ErrorCode::CANNOT_BACKFILL_ARRAY,
        ErrorCode::ILLEGAL_OPERATION,
        ErrorCode::NAMESPACE_NOT_FOUND,
        ErrorCode::INDEX_NOT_FOUND,
        ErrorCode::AMBIGUOUS_INDEX_KEY_PATTERN,
        ErrorCode::PATH_NOT_VIABLE,
        ErrorCode::CANNOT_INDEX_PARALLEL_ARRAYS,
        ErrorCode::CONFLICTING_UPDATE_OPERATORS,
        ErrorCode::NAMESPACE_EXISTS,
        ErrorCode::DOLLAR_PREFIXED_FIELD_NAME,
        ErrorCode::INVALID_ID_FIELD,
        ErrorCode::NOT_SINGLE_VALUE_FIELD,
        ErrorCode::EMPTY_FIELD_NAME,
        ErrorCode::IMMUTABLE_FIELD,
        ErrorCode::CANNOT_CREATE_INDEX,
        ErrorCode::INVALID_OPTIONS,
        ErrorCode::INVALID_NAMESPACE,
        ErrorCode::NOT_EXACT_VALUE_FIELD,
        ErrorCode::INDEX_OPTIONS_CONFLICT,
        ErrorCode::INDEX_KEY_SPECS_CONFLICT,
        ErrorCode::OPERATION_FAILED,
        ErrorCode::INVALID_INDEX_SPECIFICATION_OPTION,
        ErrorCode::DOCUMENT_VALIDATION_FAILURE,
        ErrorCode::QUERY_FEATURE_NOT_ALLOWED,
        ErrorCode::GRAPH_CONTAINS_CYCLE,
        ErrorCode::VIEW_DEPTH_LIMIT_EXCEEDED,
        ErrorCode::COMMAND_NOT_SUPPORTED_ON_VIEW,
        ErrorCode::OPTION_NOT_SUPPORTED_ON_VIEW,
        ErrorCode::INVALID_VIEW_DEFINITION,
        ErrorCode::SNAPSHOT_TOO_OLD,
        ErrorCode::CAPPED_POSITION_LOST,
        ErrorCode::EXCEEDED_MEMORY_LIMIT,
        ErrorCode::INVALID_PIPELINE_OPERATOR,
        ErrorCode::QUERY_EXCEEDED_MEMORY_LIMIT,
        ErrorCode::CONVERSION_FAILURE,
        ErrorCode::IDL_FAILED_TO_PARSE,
        ErrorCode::INVALID_BSON,
        ErrorCode::INVALID_LENGTH,
        ErrorCode::USER_NOT_FOUND,
        ErrorCode::UNAUTHORIZED,
        ErrorCode::AUTHENTICATION_FAILED,
        ErrorCode::CURSOR_NOT_FOUND,
        ErrorCode::COMMAND_NOT_FOUND,
        ErrorCode::ALREADY_INITIALIZED,
        ErrorCode::NOT_IMPLEMENTED,
        ErrorCode::TRANSACTION_TOO_OLD,
        ErrorCode::NO_SUCH_TRANSACTION,
        ErrorCode::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
        ErrorCode::TRANSACTION_EXCEEDED_LIFETIME_LIMIT,
        ErrorCode::UNKNOWN_REPL_WRITE_CONCERN,
        ErrorCode::UNSATISFIABLE_WRITE_CONCERN,
        ErrorCode::NOT_WRITABLE_PRIMARY,
        ErrorCode::SHUTDOWN_IN_PROGRESS,
        ErrorCode::BSON_OBJECT_TOO_LARGE,
        ErrorCode::NO_MATCHING_DOCUMENT,
        ErrorCode::INVALID_RESUME_TOKEN,
        ErrorCode::CHANGE_STREAM_FATAL_ERROR,
        ErrorCode::CHANGE_STREAM_HISTORY_LOST,
        ErrorCode::CURSOR_KILLED,
        ErrorCode::DUPLICATE_KEY,
        ErrorCode::INVALID_UUID,
        ErrorCode::MAX_TIME_MS_EXPIRED,
        ErrorCode::INTERRUPTED,
        ErrorCode::TOO_MANY_LOGICAL_SESSIONS,
        ErrorCode::API_VERSION_ERROR,
        ErrorCode::API_STRICT_ERROR,
        ErrorCode::API_DEPRECATION_ERROR,
        ErrorCode::named(6, "HostUnreachable"),
        ErrorCode::named(7, "HostNotFound"),
        ErrorCode::named(8, "UnknownError"),
        ErrorCode::named(24, "LockTimeout"),
        ErrorCode::named(64, "WriteConcernFailed"),
        ErrorCode::named(89, "NetworkTimeout"),
        ErrorCode::named(112, "WriteConflict"),
        ErrorCode::named(134, "ReadConcernMajorityNotAvailableYet"),
        ErrorCode::named(175, "QueryPlanKilled"),
        ErrorCode::named(189, "PrimarySteppedDown"),
        ErrorCode::named(262, "ExceededTimeLimit"),
        ErrorCode::named(462, "IngressRequestRateLimitExceeded"),
        ErrorCode::named(9001, "SocketException"),
        ErrorCode::named(11600, "InterruptedAtShutdown"),
        ErrorCode::named(11602, "InterruptedDueToReplStateChange"),
        ErrorCode::named(13435, "NotPrimaryNoSecondaryOk"),
        ErrorCode::named(13436, "NotPrimaryOrSecondary"),
    ];

    /// The code with its MongoDB name; `Location<code>` for a code without one.
    pub fn of(code: i32) -> ErrorCode {
        ErrorCode::NAMED
            .iter()
            .copied()
            .find(|known| known.code == code)
            .unwrap_or(ErrorCode::location(code))
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.code, self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn location_codes_are_named_as_the_server_names_them() {
        assert_eq!(ErrorCode::location(16766).name(), "Location16766");
        assert_eq!(ErrorCode::DUPLICATE_KEY.name(), "DuplicateKey");
        assert_eq!(ErrorCode::DUPLICATE_KEY.to_string(), "11000 (DuplicateKey)");
        assert_eq!(ErrorCode::of(11601).name(), "Interrupted");
        assert_eq!(ErrorCode::of(9001).name(), "SocketException");
        assert_eq!(ErrorCode::of(12345).name(), "Location12345");
    }
}
