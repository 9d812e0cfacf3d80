//! Errors of the typed layer: the engine's, plus the conditions only a typed model has.

use thiserror::Error;

/// What a typed operation can fail with.
///
/// ```
/// use odm::{Database, Document, Error};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Debug, Serialize, Deserialize, Document)]
/// #[odm(collection = "meters")]
/// struct Meter {
///     #[odm(id)]
///     id: i64,
///     reading: i32,
/// }
///
/// let db = Database::in_memory()?;
/// let meters = db.collection::<Meter>()?;
/// // Another program stored a string where the model has a number.
/// db.engine()
///     .collection("meters")
///     .insert_one(bson::doc! { "_id": 7_i64, "reading": "high" })?;
/// let err = meters.get(7_i64).unwrap_err();
/// assert!(matches!(err, Error::Engine(odm::engine::Error::Decode { .. })));
/// let message = err.to_string();
/// assert!(message.contains("meters") && message.contains("reading"), "{message}");
///
/// // A duplicate `_id` is refused and changes nothing.
/// meters.insert_one(&Meter { id: 1, reading: 5 })?;
/// assert!(meters.insert_one(&Meter { id: 1, reading: 6 }).is_err());
/// assert_eq!(meters.get(1_i64)?.unwrap().reading, 5);
/// # Ok::<(), odm::Error>(())
/// ```
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
