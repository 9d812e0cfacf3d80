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

use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf, oid::ObjectId};

use crate::error::DocumentError;
use crate::nesting::{self, MAX_STORED_DEPTH, RawNestingError};

/// MongoDB's `BSONObjMaxUserSize`: 16 MiB.
pub const MAX_DOCUMENT_SIZE: usize = 16 * 1024 * 1024;

/// MongoDB's `BSONObjMaxInternalSize`: the most bytes a document the server builds may take,
/// a result of a pipeline included (16 MiB and 16 KiB).
pub const MAX_RESULT_SIZE: usize = MAX_DOCUMENT_SIZE + 16 * 1024;

/// The bytes `doc` takes as BSON, counted without writing it. Recursive: for documents within
/// the bounds on nesting (stored ones, received ones and computed ones all are).
pub fn encoded_size(doc: &Document) -> usize {
    // Length, elements, terminating zero.
    4 + doc
        .iter()
        .map(|(key, value)| element_size(key.len(), value))
        .sum::<usize>()
        + 1
}

fn element_size(key_len: usize, value: &Bson) -> usize {
    1 + key_len + 1 + value_size(value)
}

/// A value's bytes after its type and name, as the BSON specification lays them out.
fn value_size(value: &Bson) -> usize {
    let string = |s: &str| 4 + s.len() + 1;
    match value {
        Bson::Double(_) | Bson::DateTime(_) | Bson::Timestamp(_) | Bson::Int64(_) => 8,
        Bson::Int32(_) => 4,
        Bson::Boolean(_) => 1,
        Bson::Decimal128(_) => 16,
        Bson::ObjectId(_) => 12,
        Bson::Null | Bson::Undefined | Bson::MaxKey | Bson::MinKey => 0,
        Bson::String(s) | Bson::JavaScriptCode(s) | Bson::Symbol(s) => string(s),
        Bson::Document(d) => encoded_size(d),
        Bson::Array(items) => {
            4 + items
                .iter()
                .enumerate()
                .map(|(i, item)| element_size(decimal_digits(i), item))
                .sum::<usize>()
                + 1
        }
        Bson::Binary(b) => {
            // The old binary subtype repeats the length inside.
            let old = usize::from(b.subtype == bson::spec::BinarySubtype::BinaryOld) * 4;
            4 + 1 + old + b.bytes.len()
        }
        Bson::RegularExpression(r) => r.pattern.as_str().len() + 1 + r.options.as_str().len() + 1,
        Bson::JavaScriptCodeWithScope(c) => 4 + string(&c.code) + encoded_size(&c.scope),
        // Its parts are private to the bson crate: measured by writing it.
        Bson::DbPointer(_) => {
            let one = bson::doc! { "": value.clone() };
            RawDocumentBuf::try_from(&one).map_or(0, |raw| raw.as_bytes().len() - 4 - 1 - 2)
        }
    }
}

/// How many decimal digits `n` takes: an array's keys are its positions written in decimal.
fn decimal_digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

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
    use proptest::prelude::*;

    /// A value of every BSON type, nested.
    fn any_value() -> impl Strategy<Value = Bson> {
        use bson::spec::BinarySubtype;
        let leaf = prop_oneof![
            any::<f64>().prop_map(Bson::Double),
            ".{0,12}".prop_map(Bson::String),
            ".{0,6}".prop_map(Bson::Symbol),
            ".{0,6}".prop_map(Bson::JavaScriptCode),
            any::<i32>().prop_map(Bson::Int32),
            any::<i64>().prop_map(Bson::Int64),
            any::<bool>().prop_map(Bson::Boolean),
            any::<i64>().prop_map(|ms| Bson::DateTime(bson::DateTime::from_millis(ms))),
            (any::<u32>(), any::<u32>())
                .prop_map(|(time, increment)| Bson::Timestamp(bson::Timestamp { time, increment })),
            any::<[u8; 12]>().prop_map(|b| Bson::ObjectId(ObjectId::from_bytes(b))),
            any::<[u8; 16]>().prop_map(|b| Bson::Decimal128(bson::Decimal128::from_bytes(b))),
            (prop::collection::vec(any::<u8>(), 0..20), any::<bool>()).prop_map(|(bytes, old)| {
                let subtype = if old {
                    BinarySubtype::BinaryOld
                } else {
                    BinarySubtype::Generic
                };
                Bson::Binary(bson::Binary { subtype, bytes })
            }),
            ("[a-z]{0,5}", "[imsx]{0,3}").prop_map(|(p, o)| Bson::RegularExpression(bson::Regex {
                pattern: p.as_str().try_into().unwrap(),
                options: o.as_str().try_into().unwrap(),
            })),
            Just(Bson::Null),
            Just(Bson::Undefined),
            Just(Bson::MinKey),
            Just(Bson::MaxKey),
        ];
        leaf.prop_recursive(4, 64, 12, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..12).prop_map(Bson::Array),
                prop::collection::vec(("[a-z.$]{0,6}", inner.clone()), 0..6)
                    .prop_map(|fields| Bson::Document(fields.into_iter().collect())),
                (".{0,6}", prop::collection::vec(("[a-z]{1,3}", inner), 0..3)).prop_map(
                    |(code, fields)| Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
                        code,
                        scope: fields.into_iter().collect(),
                    })
                ),
            ]
        })
    }

    proptest! {
        /// The size counted equals the size written, for every type and nesting.
        #[test]
        fn encoded_size_is_the_written_size(fields in prop::collection::vec(("[a-z]{0,8}", any_value()), 0..8)) {
            let doc: Document = fields.into_iter().collect();
            let written = RawDocumentBuf::try_from(&doc).unwrap().as_bytes().len();
            prop_assert_eq!(encoded_size(&doc), written);
        }
    }

    #[test]
    fn encoded_size_counts_array_keys_and_db_pointers() {
        let many = Bson::Array((0..1_234).map(Bson::Int32).collect());
        let doc = doc! { "a": many };
        let written = RawDocumentBuf::try_from(&doc).unwrap().as_bytes().len();
        assert_eq!(encoded_size(&doc), written);
        let mut bytes = vec![0, 0, 0, 0, 0x0C, b'p', 0, 2, 0, 0, 0, b'c', 0];
        bytes.extend_from_slice(&[1; 12]);
        bytes.push(0);
        let len = i32::try_from(bytes.len()).unwrap().to_le_bytes();
        bytes[..4].copy_from_slice(&len);
        let pointer = Document::try_from(RawDocument::from_bytes(&bytes).unwrap()).unwrap();
        assert_eq!(encoded_size(&pointer), bytes.len());
    }

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
