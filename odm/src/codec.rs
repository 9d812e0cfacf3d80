//! Models to stored documents and back: serde, with the id field stored as `_id` and, for a
//! versioned model, its schema version as `_v`. A versioned model reading a document of an
//! earlier version migrates it (`Document::upgrade`), and one of a later version is an error;
//! an unversioned model (no `version`) does not look at `_v`.

use bson::RawDocumentBuf;
use bson::raw::cstr;

use crate::error::{Error, Result};
use crate::model::Document;

/// The field a versioned model's documents keep their schema version in.
pub(crate) const VERSION_FIELD: &str = "_v";

/// The stored form of a model for the collection `collection`: serde's document, its id field
/// renamed `_id`, its version added.
pub(crate) fn to_raw<T: Document>(value: &T, collection: &str) -> Result<RawDocumentBuf> {
    let raw =
        bson::serialize_to_raw_document_buf(value).map_err(|e| Error::serialize(collection, e))?;
    if T::ID_FIELD == "_id" && T::VERSION == 0 {
        return Ok(raw);
    }
    if let Some(mut renamed) = rename_leading_id::<T>(raw.as_bytes()) {
        if T::VERSION > 0 {
            renamed.append(cstr!("_v"), i64::from(T::VERSION));
        }
        return Ok(renamed);
    }
    let mut out = RawDocumentBuf::new();
    for element in &raw {
        let (name, value) = element.map_err(|e| Error::serialize(collection, e))?;
        if name.as_str() == T::ID_FIELD {
            out.append(cstr!("_id"), value);
        } else if name.as_str() != VERSION_FIELD {
            out.append(name, value);
        }
    }
    if T::VERSION > 0 {
        out.append(cstr!("_v"), i64::from(T::VERSION));
    }
    Ok(out)
}

/// The common case, cheaply: the id field serialized first (it is declared first) is renamed
/// `_id` by rewriting its key in one copy of the bytes. `None` when the first element is another
/// field (or there is no field to rename), and the caller rebuilds the document.
fn rename_leading_id<T: Document>(bytes: &[u8]) -> Option<RawDocumentBuf> {
    let name = T::ID_FIELD.as_bytes();
    if name == b"_id" {
        return None;
    }
    // Layout: i32 length, then the first element: type byte, key, NUL, value.
    let key = bytes.get(5..5 + name.len())?;
    if key != name || bytes.get(5 + name.len()) != Some(&0) {
        return None;
    }
    let total = bytes.len() - name.len() + 3;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&i32::try_from(total).ok()?.to_le_bytes());
    out.push(bytes[4]);
    out.extend_from_slice(b"_id\0");
    out.extend_from_slice(&bytes[6 + name.len()..]);
    RawDocumentBuf::from_bytes(out).ok()
}

/// The `_id` name a model decodes under, when it is not `_id`.
pub(crate) fn id_alias<T: Document>() -> Option<&'static str> {
    (T::ID_FIELD != "_id").then_some(T::ID_FIELD)
}

/// The schema version of a stored document (0 when it has none).
pub(crate) fn stored_version(raw: &bson::RawDocument) -> u32 {
    match raw.get(VERSION_FIELD) {
        Ok(Some(bson::RawBsonRef::Int32(v))) => u32::try_from(v).unwrap_or(0),
        Ok(Some(bson::RawBsonRef::Int64(v))) => u32::try_from(v).unwrap_or(0),
        _ => 0,
    }
}

/// A model from stored bytes of the collection `collection`, migrated from an earlier schema
/// version when needed; a document that does not decode is an error naming the collection and
/// `_id`.
pub(crate) fn from_raw<T: Document>(raw: &bson::RawDocument, collection: &str) -> Result<T> {
    decode_versioned::<T>(raw).map_err(|reason| {
        Error::Engine(odm_engine::Error::Decode {
            collection: collection.to_owned(),
            id: odm_engine::decode::id_text(raw),
            reason: odm_engine::decode::DecodeFailure::Model(reason),
        })
    })
}

/// A model from stored bytes, migrated when older, with the reason of a failure alone (for
/// migration chains).
pub fn decode_versioned<T: Document>(raw: &bson::RawDocument) -> Result<T, String> {
    // One pass reads the document and notes its version; only an older or newer document
    // takes another path. An unversioned model does not look at versions.
    if T::VERSION == 0 {
        return odm_engine::decode::from_slice_with_id(raw.as_bytes(), id_alias::<T>())
            .map_err(|e| e.to_string());
    }
    let version = |v: Option<i64>| v.and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
    match odm_engine::decode::from_slice_versioned::<T>(raw.as_bytes(), id_alias::<T>()) {
        Ok((value, stored)) if version(stored) == T::VERSION => Ok(value),
        Ok((_, stored)) => other_version::<T>(raw, version(stored)),
        Err(reason) => match stored_version(raw) {
            v if v == T::VERSION => Err(reason.to_string()),
            v => other_version::<T>(raw, v),
        },
    }
}

/// A document of another schema version than `T`'s: migrated when older, refused when newer.
fn other_version<T: Document>(raw: &bson::RawDocument, version: u32) -> Result<T, String> {
    if version < T::VERSION {
        return T::upgrade(raw, version);
    }
    Err(format!(
        "the document is of schema version {version}, newer than this program's {} (version {})",
        T::COLLECTION,
        T::VERSION
    ))
}

/// Runs a migration function over a stored document, then decodes the result as `T`.
pub fn migrate_with<T: Document>(
    raw: &bson::RawDocument,
    from: u32,
    migrate: fn(bson::Document, u32) -> Result<bson::Document, String>,
) -> Result<T, String> {
    let doc = bson::Document::try_from(raw).map_err(|e| e.to_string())?;
    let mut migrated = migrate(doc, from)?;
    migrated.insert(VERSION_FIELD, i64::from(T::VERSION));
    let raw = RawDocumentBuf::try_from(&migrated).map_err(|e| e.to_string())?;
    decode_versioned::<T>(&raw)
}
