//! What may be stored as a document: MongoDB's rules, checked before anything is written.
//!
//! - at most [`MAX_DOCUMENT_SIZE`] bytes of BSON, `_id` included, and at most
//!   [`MAX_STORED_DEPTH`] levels of nesting;
//! - an `_id` of any type but array, regular expression or undefined, and with no field name
//!   starting with `$` inside it; an ObjectId is generated when `_id` is absent, and `_id` is
//!   always stored as the first field.
//!
//! Other field names may start with `$` or hold dots, at any level, as MongoDB allows since
//! 5.0; update operators are told apart from such fields by the update parser, not here.

use bson::{Document, RawBsonRef, RawDocument, RawDocumentBuf, oid::ObjectId};

use crate::error::DocumentError;
use crate::nesting::{self, MAX_STORED_DEPTH, RawNestingError};

/// MongoDB's `BSONObjMaxUserSize`: 16 MiB.
pub const MAX_DOCUMENT_SIZE: usize = 16 * 1024 * 1024;

/// Anything that can become a raw BSON document to store.
pub trait IntoRawDocument {
    fn into_raw_document(self) -> Result<RawDocumentBuf, DocumentError>;
}

impl IntoRawDocument for RawDocumentBuf {
    fn into_raw_document(self) -> Result<RawDocumentBuf, DocumentError> {
        Ok(self)
    }
}

impl IntoRawDocument for &RawDocument {
    fn into_raw_document(self) -> Result<RawDocumentBuf, DocumentError> {
        Ok(self.to_owned())
    }
}

impl IntoRawDocument for &Document {
    fn into_raw_document(self) -> Result<RawDocumentBuf, DocumentError> {
        RawDocumentBuf::try_from(self).map_err(|e| DocumentError::Malformed {
            reason: e.to_string(),
        })
    }
}

impl IntoRawDocument for Document {
    fn into_raw_document(self) -> Result<RawDocumentBuf, DocumentError> {
        (&self).into_raw_document()
    }
}

/// A document ready to store: `_id` first, every rule checked.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) raw: RawDocumentBuf,
}

impl Prepared {
    /// The `_id` value; present by construction.
    pub(crate) fn id(&self) -> RawBsonRef<'_> {
        self.raw
            .iter()
            .next()
            .and_then(Result::ok)
            .map_or(RawBsonRef::Null, |(_, v)| v)
    }
}

/// A document as MongoDB stores it and a driver sends it: checked as an insert checks it,
/// `_id` first, an ObjectId generated when it is absent.
pub fn with_id_first(raw: RawDocumentBuf) -> Result<RawDocumentBuf, DocumentError> {
    prepare(raw).map(|prepared| prepared.raw)
}

/// Checks a document and puts `_id` first, generating an ObjectId when it is absent.
pub(crate) fn prepare(raw: RawDocumentBuf) -> Result<Prepared, DocumentError> {
    // Malformed bytes anywhere, and nesting past the limit, are refused at the door rather
    // than stored; every later walk over the document relies on both.
    nesting::check_raw(&raw, MAX_STORED_DEPTH).map_err(|e| match e {
        RawNestingError::Malformed(reason) => DocumentError::Malformed { reason },
        RawNestingError::TooDeep => DocumentError::TooDeep {
            max: MAX_STORED_DEPTH,
        },
    })?;
    // The first `_id`: the walk above has read every element, so this one reads keys only,
    // and stops there (first, as a rule).
    let mut id_position = None;
    for (position, element) in raw.iter_elements().enumerate() {
        let element = element.map_err(malformed)?;
        if element.key().as_str() == "_id" {
            check_id(element.value().map_err(malformed)?)?;
            id_position = Some(position);
            break;
        }
    }
    let raw = match id_position {
        Some(0) => raw,
        Some(_) => move_id_first(&raw)?,
        None => with_generated_id(&raw),
    };
    let size = raw.as_bytes().len();
    if size > MAX_DOCUMENT_SIZE {
        return Err(DocumentError::TooLarge {
            size,
            max: MAX_DOCUMENT_SIZE,
        });
    }
    Ok(Prepared { raw })
}

fn malformed(e: impl ToString) -> DocumentError {
    DocumentError::Malformed {
        reason: e.to_string(),
    }
}

pub(crate) fn check_id(value: RawBsonRef<'_>) -> Result<(), DocumentError> {
    if let RawBsonRef::Document(d) = value {
        check_id_names(d, "_id")?;
    }
    let kind = match value {
        RawBsonRef::Array(_) => "array",
        RawBsonRef::RegularExpression(_) => "regex",
        RawBsonRef::Undefined => "undefined",
        _ => return Ok(()),
    };
    Err(DocumentError::InvalidId { kind })
}

/// Refuses `$`-prefixed field names at any depth of an `_id` document.
fn check_id_names(doc: &RawDocument, prefix: &str) -> Result<(), DocumentError> {
    for element in doc {
        let (name, value) = element.map_err(malformed)?;
        let path = format!("{prefix}.{}", name.as_str());
        if name.as_str().starts_with('$') {
            return Err(DocumentError::DollarField { field: path });
        }
        if let RawBsonRef::Document(sub) = value {
            check_id_names(sub, &path)?;
        }
    }
    Ok(())
}

fn with_generated_id(raw: &RawDocument) -> RawDocumentBuf {
    let mut out = RawDocumentBuf::new();
    out.append(bson::raw::cstr!("_id"), ObjectId::new());
    append_all(&mut out, raw, |_| true);
    out
}

fn move_id_first(raw: &RawDocument) -> Result<RawDocumentBuf, DocumentError> {
    let id = raw
        .get("_id")
        .map_err(malformed)?
        .unwrap_or(RawBsonRef::Null);
    let mut out = RawDocumentBuf::new();
    out.append(bson::raw::cstr!("_id"), id);
    let mut seen_id = false;
    append_all(&mut out, raw, |name| {
        let first_id = name == "_id" && !seen_id;
        seen_id |= name == "_id";
        !first_id
    });
    Ok(out)
}

fn append_all(out: &mut RawDocumentBuf, raw: &RawDocument, mut keep: impl FnMut(&str) -> bool) {
    // `prepare` has already iterated `raw` without error.
    for (name, value) in raw.iter().map_while(Result::ok) {
        if keep(name.as_str()) {
            out.append(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, rawdoc};

    #[test]
    fn generates_an_object_id_first() {
        let p = prepare(rawdoc! { "a": 1 }).unwrap();
        assert!(matches!(p.id(), RawBsonRef::ObjectId(_)));
        assert_eq!(p.raw.iter().count(), 2);
    }

    #[test]
    fn moves_id_to_the_front() {
        let p = prepare(rawdoc! { "a": 1, "_id": 7 }).unwrap();
        let names: Vec<String> = p
            .raw
            .iter()
            .map(|e| e.unwrap().0.as_str().to_owned())
            .collect();
        assert_eq!(names, ["_id", "a"]);
        assert_eq!(p.id(), RawBsonRef::Int32(7));
    }

    #[test]
    fn refuses_bad_documents() {
        assert_eq!(
            prepare(rawdoc! { "_id": { "a": { "$b": 1 } } }).unwrap_err(),
            DocumentError::DollarField {
                field: "_id.a.$b".into()
            }
        );
        assert!(prepare(rawdoc! { "$a": 1, "b": { "$c": 2 }, "d.e": 3 }).is_ok());
        assert_eq!(
            prepare(rawdoc! { "_id": [1] }).unwrap_err(),
            DocumentError::InvalidId { kind: "array" }
        );
        let big = doc! { "s": "x".repeat(MAX_DOCUMENT_SIZE) };
        assert!(matches!(
            prepare(big.into_raw_document().unwrap()).unwrap_err(),
            DocumentError::TooLarge { .. }
        ));
    }

    #[test]
    fn error_messages_name_the_problem() {
        let e = prepare(rawdoc! { "_id": bson::Regex { pattern: "a".try_into().unwrap(), options: "".try_into().unwrap() } }).unwrap_err();
        assert_eq!(e.to_string(), "`_id` cannot be of type regex");
    }
}
