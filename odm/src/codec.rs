//! Models to stored documents and back: serde, with the id field stored as `_id`.

use bson::RawDocumentBuf;
use bson::raw::cstr;

use crate::error::{Error, Result};
use crate::model::Document;

/// The stored form of a model: serde's document, its id field renamed `_id`.
pub(crate) fn to_raw<T: Document>(value: &T) -> Result<RawDocumentBuf> {
    let serialize_error = |reason: String| Error::Serialize {
        collection: T::COLLECTION.to_owned(),
        reason,
    };
    let raw =
        bson::serialize_to_raw_document_buf(value).map_err(|e| serialize_error(e.to_string()))?;
    if T::ID_FIELD == "_id" {
        return Ok(raw);
    }
    let mut out = RawDocumentBuf::new();
    for element in &raw {
        let (name, value) = element.map_err(|e| serialize_error(e.to_string()))?;
        if name.as_str() == T::ID_FIELD {
            out.append(cstr!("_id"), value);
        } else {
            out.append(name, value);
        }
    }
    Ok(out)
}

/// The `_id` name a model decodes under, when it is not `_id`.
pub(crate) fn id_alias<T: Document>() -> Option<&'static str> {
    (T::ID_FIELD != "_id").then_some(T::ID_FIELD)
}

/// A model from stored bytes.
pub(crate) fn from_raw<T: Document>(raw: &bson::RawDocument) -> Result<T> {
    odm_engine::decode::from_slice_with_id(raw.as_bytes(), id_alias::<T>()).map_err(|reason| {
        Error::Engine(odm_engine::Error::Decode {
            collection: T::COLLECTION.to_owned(),
            id: raw
                .get("_id")
                .ok()
                .flatten()
                .map_or_else(|| "<unknown>".to_owned(), |id| format!("{id:?}")),
            reason,
        })
    })
}
