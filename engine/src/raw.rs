//! BSON read element by element on the bytes: where each element starts and ends, without
//! validating names or decoding values. The in-place update path edits documents with it, and
//! the change log's update description compares arrays with it. A value's length is what the
//! decoder reads when it skips one ([`crate::decode::value_length`]): one reading of BSON's
//! value layouts.
//!
//! [`get`] answers what the bson crate's `RawDocument::get` answers, from the bytes (names
//! compared as bytes, a value built for the matching element only), for the matcher's path
//! walk and index key extraction. Elements are also written as bytes: `push_element`,
//! `push_string`, `document`, and `open_element` with `close_document` for a document whose
//! length is known only when it ends (a change record's update description).
//!
//! Every function bounds-checks and returns `None` on bytes it cannot read; callers then take
//! the decoding path, which reports the damage. Written by hand: the `bson` crate's raw
//! iterators validate each name and build a value for each element, which is what these
//! callers avoid.

use bson::{RawBsonRef, RawDocument};

pub(crate) use crate::element_type::{
    ARRAY, BOOLEAN, DATE_TIME, DOCUMENT, DOUBLE, INT32, INT64, STRING,
};

/// An element inside a document's bytes: where it starts (its type byte), where its name ends
/// (the name's NUL), where its value starts and where the element ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Element {
    pub(crate) start: usize,
    pub(crate) name_end: usize,
    pub(crate) value: usize,
    pub(crate) end: usize,
    pub(crate) kind: u8,
}

impl Element {
    pub(crate) fn name<'b>(&self, bytes: &'b [u8]) -> &'b [u8] {
        &bytes[self.start + 1..self.name_end]
    }

    pub(crate) fn value_bytes<'b>(&self, bytes: &'b [u8]) -> &'b [u8] {
        &bytes[self.value..self.end]
    }
}

/// Calls `f` with the value of `e` (an element of `bytes`) as `bson` reads it; `None` when
/// `bson` cannot read it. The value is copied into a one-element document for the call.
pub(crate) fn with_value<R>(
    bytes: &[u8],
    e: &Element,
    f: impl FnOnce(bson::RawBsonRef<'_>) -> R,
) -> Option<R> {
    let value = bytes.get(e.value..e.end)?;
    let mut one = Vec::with_capacity(value.len() + 7);
    one.extend_from_slice(&i32::try_from(value.len() + 7).ok()?.to_le_bytes());
    one.push(e.kind);
    one.push(0);
    one.extend_from_slice(value);
    one.push(0);
    let doc = bson::RawDocument::from_bytes(&one).ok()?;
    let value = doc.get("").ok()??;
    Some(f(value))
}

/// `bson`'s `RawDocument::get`, answered from the bytes where it can be (see [`read_field`]):
/// the value of the first element named `name`. On a well-formed document (every stored one:
/// writes refuse malformed bytes, see `document::prepare`) it answers what `bson` answers. On
/// damaged bytes it never panics; it reports `bson`'s error where it cannot read its way to the
/// element, and may still answer where `bson` would refuse an element it passed over (a name
/// that is not UTF-8, say).
pub(crate) fn get<'a>(
    doc: &'a bson::RawDocument,
    name: &str,
) -> bson::error::Result<Option<RawBsonRef<'a>>> {
    read_field(doc, name).or_else(|Unanswered| doc.get(name))
}

/// [`read_field`] cannot answer: damaged bytes, or a value of a kind only `bson` builds (arrays,
/// regexes, code, symbols, `DBPointer`s, old binary).
struct Unanswered;

/// [`get`] read straight from the bytes, comparing names as bytes so that only the matching
/// name is read. On well-formed documents, and wherever `bson` answers too, it answers what
/// `bson` does (tested below).
fn read_field<'a>(
    doc: &'a bson::RawDocument,
    name: &str,
) -> Result<Option<RawBsonRef<'a>>, Unanswered> {
    let bytes = doc.as_bytes();
    let end = end_of(bytes, 0).ok_or(Unanswered)?;
    let mut at = 4;
    while at < end {
        let e = element_at(bytes, at, end).ok_or(Unanswered)?;
        if e.name(bytes) == name.as_bytes() {
            return value_ref(e.kind, e.value_bytes(bytes))
                .map(Some)
                .ok_or(Unanswered);
        }
        at = e.end;
    }
    Ok(None)
}

/// The value of kind `kind` whose bytes are exactly `v`, for the kinds [`read_field`] reads.
fn value_ref(kind: u8, v: &[u8]) -> Option<RawBsonRef<'_>> {
    let le4 = |at: usize| -> Option<[u8; 4]> { v.get(at..at + 4)?.try_into().ok() };
    let le8 = || -> Option<[u8; 8]> { v.try_into().ok() };
    Some(match kind {
        0x01 => RawBsonRef::Double(f64::from_le_bytes(le8()?)),
        // The length prefix is what measured `v`; the text is the rest without its NUL.
        0x02 => RawBsonRef::String(std::str::from_utf8(v.get(4..)?.strip_suffix(&[0])?).ok()?),
        DOCUMENT => RawBsonRef::Document(bson::RawDocument::from_bytes(v).ok()?),
        0x05 => {
            let len = length_at(v, 0)?;
            let subtype = *v.get(4)?;
            // The old binary subtype carries a second length that `bson` checks.
            if subtype == 0x02 || v.len() != len.checked_add(5)? {
                return None;
            }
            RawBsonRef::Binary(bson::RawBinaryRef {
                subtype: subtype.into(),
                bytes: &v[5..],
            })
        }
        0x06 => RawBsonRef::Undefined,
        0x07 => RawBsonRef::ObjectId(bson::oid::ObjectId::from_bytes(v.try_into().ok()?)),
        0x08 => match v {
            [0] => RawBsonRef::Boolean(false),
            [1] => RawBsonRef::Boolean(true),
            _ => return None,
        },
        0x09 => RawBsonRef::DateTime(bson::DateTime::from_millis(i64::from_le_bytes(le8()?))),
        0x0A => RawBsonRef::Null,
        0x10 if v.len() == 4 => RawBsonRef::Int32(i32::from_le_bytes(le4(0)?)),
        0x11 if v.len() == 8 => RawBsonRef::Timestamp(bson::Timestamp {
            increment: u32::from_le_bytes(le4(0)?),
            time: u32::from_le_bytes(le4(4)?),
        }),
        0x12 => RawBsonRef::Int64(i64::from_le_bytes(le8()?)),
        0x13 => RawBsonRef::Decimal128(bson::Decimal128::from_bytes(v.try_into().ok()?)),
        0x7F => RawBsonRef::MaxKey,
        0xFF => RawBsonRef::MinKey,
        _ => return None,
    })
}

/// Every element of the document (or array) starting at `container`.
pub(crate) fn elements(bytes: &[u8], container: usize) -> Option<Vec<Element>> {
    let mut out = Vec::new();
    each(bytes, container, |e| out.push(e))?;
    Some(out)
}

/// How many elements the document (or array) starting at `container` holds: [`elements`]'s
/// length, without keeping them.
pub(crate) fn count(bytes: &[u8], container: usize) -> Option<usize> {
    let mut n = 0;
    each(bytes, container, |_| n += 1)?;
    Some(n)
}

/// Calls `f` with each element of the document (or array) starting at `container`, in order;
/// `None` when the bytes cannot be read to its end.
pub(crate) fn each(bytes: &[u8], container: usize, f: impl FnMut(Element)) -> Option<()> {
    let end = end_of(bytes, container)?;
    each_between(bytes, container + 4, end, f)
}

/// Calls `f` with each element from `at`, an element's start, to `end`, a container's
/// terminating NUL; `None` when the bytes cannot be read that far.
pub(crate) fn each_between(
    bytes: &[u8],
    mut at: usize,
    end: usize,
    mut f: impl FnMut(Element),
) -> Option<()> {
    while at < end {
        let e = element_at(bytes, at, end)?;
        at = e.end;
        f(e);
    }
    Some(())
}

/// The position of the terminating NUL of the document starting at `container`.
pub(crate) fn end_of(bytes: &[u8], container: usize) -> Option<usize> {
    let len = length_at(bytes, container)?;
    let end = container.checked_add(len)?.checked_sub(1)?;
    match bytes.get(end) {
        Some(0) if len >= 5 => Some(end),
        _ => None,
    }
}

/// The little-endian `int32` length at `at`, when it is not negative.
pub(crate) fn length_at(bytes: &[u8], at: usize) -> Option<usize> {
    let four: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    usize::try_from(i32::from_le_bytes(four)).ok()
}

/// The bytes of a document's elements: all of it but its length and its NUL (a `RawDocument`
/// has both).
pub(crate) fn elements_bytes(doc: &RawDocument) -> &[u8] {
    let bytes = doc.as_bytes();
    &bytes[4..bytes.len() - 1]
}

/// A document holding the elements of `parts` (each part's bytes one or more whole elements),
/// in order: its length, them, a NUL. The caller keeps them within a document's limits
/// (16 MiB, or a change record's few documents), far below what the length can hold.
pub(crate) fn document(parts: &[&[u8]]) -> Vec<u8> {
    let len = parts.iter().map(|p| p.len()).sum::<usize>() + 5;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&(len as i32).to_le_bytes());
    for part in parts {
        out.extend_from_slice(part);
    }
    out.push(0);
    out
}

/// Whether `bytes` are UTF-8; ASCII (most names and strings) is told without the full check.
#[inline]
pub(crate) fn utf8(bytes: &[u8]) -> bool {
    bytes.is_ascii() || std::str::from_utf8(bytes).is_ok()
}

/// The first element of a document (`RawDocument` bytes); `None` when it has none or it
/// cannot be read.
pub(crate) fn first(bytes: &[u8]) -> Option<Element> {
    element_at(bytes, 4, bytes.len().checked_sub(1)?)
}

/// Appends an element: its type, its name (which holds no NUL), the value's bytes as encoded.
pub(crate) fn push_element(out: &mut Vec<u8>, kind: u8, name: &str, value: &[u8]) {
    out.push(kind);
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    out.extend_from_slice(value);
}

/// Starts an element of `kind` (a document or an array) named `name` at the end of `out`, its
/// length left to [`close_document`], given the position this returns: for a document written
/// as it is found, whose length is not known before.
pub(crate) fn open_element(out: &mut Vec<u8>, kind: u8, name: &str) -> usize {
    push_element(out, kind, name, &[0; 4]);
    out.len() - 4
}

/// Ends the document (or array) whose length sits at `at`: its NUL, then its length. The
/// caller keeps it within a document's limits, far below what the length can hold.
pub(crate) fn close_document(out: &mut Vec<u8>, at: usize) {
    out.push(0);
    let len = (out.len() - at) as i32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// Appends a string element (see [`push_element`]); the text is far below 2 GiB.
pub(crate) fn push_string(out: &mut Vec<u8>, name: &str, text: &str) {
    out.push(STRING);
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    out.extend_from_slice(&((text.len() + 1) as i32).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.push(0);
}

/// The element starting at `at`, which must end by `end`.
pub(crate) fn element_at(bytes: &[u8], at: usize, end: usize) -> Option<Element> {
    let kind = *bytes.get(at)?;
    let name_end = at + 1 + bytes.get(at + 1..end)?.iter().position(|&b| b == 0)?;
    let value = name_end + 1;
    let len = crate::decode::value_length(kind, bytes.get(value..end)?)?;
    let element_end = value.checked_add(len)?;
    (element_end <= end).then_some(Element {
        start: at,
        name_end,
        value,
        end: element_end,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use bson::{Bson, Document, RawDocumentBuf, doc};

    use super::*;

    /// Law: the scanner finds the elements `bson` finds, with the same names and value bytes.
    #[test]
    fn elements_are_those_bson_reads() {
        let doc = doc! {
            "d": 1.5, "s": "text", "o": {"x": [1, 2]}, "a": [true, Bson::Null],
            "b": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2] },
            "id": bson::oid::ObjectId::new(), "t": bson::DateTime::from_millis(3),
            "r": bson::Regex { pattern: "a.b".try_into().unwrap(), options: "i".try_into().unwrap() },
            "i": 7, "l": 8_i64, "ts": bson::Timestamp { time: 1, increment: 2 },
            "m": Bson::MinKey, "M": Bson::MaxKey, "u": Bson::Undefined,
            "dec": "1.5".parse::<bson::Decimal128>().unwrap(),
            "js": Bson::JavaScriptCode("f()".into()),
        };
        let raw = RawDocumentBuf::try_from(&doc).unwrap();
        let bytes = raw.as_bytes();
        let found = elements(bytes, 0).expect("readable");
        let names: Vec<&str> = doc.keys().map(String::as_str).collect();
        assert_eq!(found.len(), names.len());
        for (e, name) in found.iter().zip(names) {
            assert_eq!(e.name(bytes), name.as_bytes());
            let mut one = Document::new();
            one.insert("", doc.get(name).unwrap().clone());
            let alone = RawDocumentBuf::try_from(&one).unwrap();
            let alone = alone.as_bytes();
            assert_eq!(e.value_bytes(bytes), &alone[6..alone.len() - 1], "{name}");
        }
    }

    /// Law: [`read_field`], when it answers, answers what `bson`'s `get` answers, for every name in
    /// the document, names it lacks, and damaged copies of it.
    #[test]
    fn field_reads_what_bson_reads() {
        let doc = doc! {
            "d": 1.5, "s": "text", "o": {"x": [1, 2]}, "a": [true, Bson::Null],
            "b": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2] },
            "id": bson::oid::ObjectId::new(), "t": bson::DateTime::from_millis(-3),
            "r": bson::Regex { pattern: "a.b".try_into().unwrap(), options: "i".try_into().unwrap() },
            "i": 7, "l": 8_i64, "ts": bson::Timestamp { time: 1, increment: 2 },
            "m": Bson::MinKey, "M": Bson::MaxKey, "u": Bson::Undefined, "n": Bson::Null,
            "f": false, "dec": "1.5".parse::<bson::Decimal128>().unwrap(),
            "js": Bson::JavaScriptCode("f()".into()),
        };
        let mut raw = RawDocumentBuf::try_from(&doc).unwrap();
        // A name given twice: both readings take the first.
        raw.append(bson::raw::cstr!("i"), 9);
        let names: Vec<&str> = doc
            .keys()
            .map(String::as_str)
            .chain(["", "x", "dd"])
            .collect();
        let mut answered = 0;
        for &name in &names {
            if let Ok(found) = read_field(&raw, name) {
                answered += 1;
                assert_eq!(found, raw.get(name).unwrap(), "{name}");
            }
        }
        // Every kind but the array, the regex and the code is read here.
        assert_eq!(answered, names.len() - 3);
        let good = raw.as_bytes().to_vec();
        for at in 4..good.len() {
            for byte in [0x00, 0x01, 0x7F, 0xFF] {
                let mut bad = good.clone();
                bad[at] = byte;
                let Ok(bad) = bson::RawDocument::from_bytes(&bad) else {
                    continue;
                };
                for name in doc.keys() {
                    if let (Ok(ours), Ok(theirs)) = (read_field(bad, name), bad.get(name)) {
                        // Compared as printed, so that a NaN equals itself.
                        let (ours, theirs) = (format!("{ours:?}"), format!("{theirs:?}"));
                        assert_eq!(ours, theirs, "{name}, byte {at} set to {byte}");
                    }
                }
            }
        }
    }

    #[test]
    fn damaged_bytes_are_not_read() {
        let raw = RawDocumentBuf::try_from(&doc! {"a": "text", "b": [1]}).unwrap();
        let good = raw.as_bytes().to_vec();
        for cut in 0..good.len() {
            let mut bad = good[..cut].to_vec();
            bad.extend(std::iter::repeat_n(0xff, good.len() - cut));
            // Never a panic; wherever the damage is, reading stops or still finds elements
            // within the bytes.
            let _ = elements(&bad, 0);
        }
        let mut wrong_length = good.clone();
        wrong_length[0] = 200;
        assert!(elements(&wrong_length, 0).is_none());
    }
}
