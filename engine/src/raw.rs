//! BSON read element by element on the bytes: where each element starts and ends, without
//! validating names or decoding values. The in-place update path edits documents with it, and
//! the change log's update description compares arrays with it. A value's length is what the
//! decoder reads when it skips one ([`crate::decode::value_length`]): one reading of BSON's
//! value layouts.
//!
//! Every function bounds-checks and returns `None` on bytes it cannot read; callers then take
//! the decoding path, which reports the damage. Written by hand: the `bson` crate's raw
//! iterators validate each name and build a value for each element, which is what these
//! callers avoid.

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

pub(crate) const DOCUMENT: u8 = 0x03;
pub(crate) const ARRAY: u8 = 0x04;

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

/// Every element of the document (or array) starting at `container`.
pub(crate) fn elements(bytes: &[u8], container: usize) -> Option<Vec<Element>> {
    let end = end_of(bytes, container)?;
    let mut at = container + 4;
    let mut out = Vec::new();
    while at < end {
        let e = element_at(bytes, at, end)?;
        at = e.end;
        out.push(e);
    }
    Some(out)
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

/// The element starting at `at`, which must end by `end`.
fn element_at(bytes: &[u8], at: usize, end: usize) -> Option<Element> {
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
