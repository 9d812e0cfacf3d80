//! The traits `#[derive(Document)]` and `#[derive(Embedded)]` implement.

use odm_engine::{IndexSpec, ShardKey};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A model stored in a collection: what the derive knows about it.
///
/// Laws the derive upholds (and a hand-written impl must): `COLLECTION` is a valid collection
/// name; every path in `indexes()` and `shard_key()` names a field as serde writes it; the
/// field `ID_FIELD` (serde's name for the id field) is stored as `_id`.
pub trait Document: Serialize + DeserializeOwned + 'static {
    /// The typed field handles, `Self::fields().name`.
    type Fields;
    /// The collection the model lives in.
    const COLLECTION: &'static str;
    /// Serde's name of the id field; stored under `_id`.
    const ID_FIELD: &'static str;
    /// The schema version (`#[odm(version = N)]`); 0 for an unversioned model. Versioned
    /// models store it in each document as `_v`.
    const VERSION: u32 = 0;
    fn fields() -> Self::Fields;
    /// The indexes the model declares.
    fn indexes() -> Vec<IndexSpec>;
    /// The shard key the model declares, if any.
    fn shard_key() -> Option<ShardKey>;

    /// A stored document of the earlier version `from` as this model: through the previous
    /// model and `From` (`#[odm(from = Previous)]`) or a function (`#[odm(migrate = f)]`).
    fn upgrade(stored: &bson::RawDocument, from: u32) -> Result<Self, String> {
        let _ = stored;
        Err(format!(
            "the document is of schema version {from}, {} is at version {} and declares no migration",
            Self::COLLECTION,
            Self::VERSION
        ))
    }
}

/// A type stored inside documents (a subdocument, or the elements of an array), whose fields
/// have handles too, continuing the path of the field that holds it.
pub trait Embedded: Serialize + DeserializeOwned {
    /// Handles on the fields, rooted in the model `R`, for a field whose value type is `W`
    /// (`Self`, or `Vec<Self>` for an array of subdocuments).
    type Fields<R, W>;
    /// The handles under `prefix` (empty for the type's own fields).
    fn fields_at<R, W>(prefix: &str) -> Self::Fields<R, W>;
    /// Handles relative to one value of this type, for `$elemMatch` and `$pull` conditions.
    fn fields() -> Self::Fields<Self, Self>
    where
        Self: Sized,
    {
        Self::fields_at("")
    }
}

/// A path under a prefix: `a.b`, or `b` under no prefix.
#[doc(hidden)]
pub fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}
