//! BSON nesting depth, counted as MongoDB counts it: the top-level document is level 1 and each
//! non-empty embedded document or array one more (empty ones add no level). Both walks keep an
//! explicit stack, so a document of any depth is measured without recursion; everything that
//! recurses over documents elsewhere (validation, keys, order, decoding, parsers) relies on one
//! of these limits having been checked at the door.
//!
//! Two limits: `MAX_STORED_DEPTH` (100) for what is stored, `MAX_INPUT_DEPTH` (200) for
//! commands. `check_raw` is the one walk over a stored document's or a command's bytes that
//! checks them well formed (lengths within their container, UTF-8 keys and strings, booleans,
//! binary and code-with-scope lengths, known types) and within a limit. It is written by hand
//! because the bson crate's checking walk costs three times the instructions; a property test
//! holds the two to the same answers on damaged bytes.

use bson::{Bson, Document, RawDocument};

use crate::raw;

/// The nesting a stored document may have: 100 levels, the limit MongoDB documents ("BSON
/// Document Nesting Depth"). The server itself refuses only past 180, leaving 20 of its own
/// 200-level parse limit for the oplog and replies; keeping to the documented limit means a
/// document stored here can always be moved to MongoDB.
pub const MAX_STORED_DEPTH: usize = 100;

/// MongoDB's `BSONDepth::kDefaultMaxAllowableDepth`: what a command may carry (filters, updates,
/// pipelines and their literal values), above the stored limit to leave room for operators.
pub const MAX_INPUT_DEPTH: usize = 200;

/// The stack a thread that runs queries, updates or aggregations is given: 8 MiB. Every
/// recursion over a value is bounded by a depth checked at the door (documents and commands,
/// here) or as the value is built (computed values, `expr::bounds`), and evaluation recurses
/// no deeper than the parsed expression; 8 MiB holds the deepest of these with room to spare in
/// a debug build. The engine's own threads and the server's use it; an application that runs
/// queries on threads of its own should give them as much.
pub const QUERY_THREAD_STACK_BYTES: usize = 8 * 1024 * 1024;

/// Why a raw document failed [`check_raw`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RawNestingError {
    /// Bytes that are not BSON; the reason names the element and what is wrong with it.
    Malformed(String),
    TooDeep,
}

/// Walks every element of `doc` (so malformed bytes anywhere are found) and checks that it has
/// at most `max` levels.
///
/// It reads the bytes itself, once, without decoding a value: every length within its
/// container, every key and string valid UTF-8 and every string NUL-terminated, booleans 0 or
/// 1, binary lengths (and the old subtype's inner length) consistent, a code-with-scope's string
/// and scope filling it exactly, element types known: what the bson crate checks as it reads
/// each value (a property test holds the two to the same answers), in a third of the instructions.
/// Each value's end is at most its container's NUL, so the walk never leaves the bytes.
pub(crate) fn check_raw(doc: &RawDocument, max: usize) -> Result<(), RawNestingError> {
    let bytes = doc.as_bytes();
    // `RawDocument` has checked the top level's length and final NUL.
    // The ends of the containers around the one being read (none allocated for a flat one).
    let mut frames: Vec<usize> = Vec::new();
    let mut pos = 4;
    let mut end = bytes.len() - 1;
    loop {
        if pos >= end {
            // Never past it (see above); checked all the same, as a refusal, not a panic.
            if pos > end {
                return Err(RawNestingError::Malformed(format!(
                    "an element runs past its document's end at byte {end}"
                )));
            }
            // The container's NUL: back to its parent, after it.
            pos += 1;
            match frames.pop() {
                Some(parent_end) => {
                    end = parent_end;
                    continue;
                }
                None => return Ok(()),
            }
        }
        let kind = bytes[pos];
        let key_start = pos + 1;
        let key_len = bytes[key_start..end]
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| malformed_at(bytes, key_start, end, "key without its NUL"))?;
        let key = &bytes[key_start..key_start + key_len];
        if !raw::utf8(key) {
            return Err(malformed(key, "key is not UTF-8"));
        }
        let value = Value {
            bytes,
            key,
            at: key_start + key_len + 1,
            end,
        };
        let (next, opened) = value.extent(kind)?;
        match opened {
            // A non-empty container is one more level; its elements are walked next.
            Some((first, close)) => {
                if frames.len() + 1 >= max {
                    return Err(RawNestingError::TooDeep);
                }
                frames.push(end);
                end = close;
                pos = first;
            }
            None => pos = next,
        }
    }
}

/// The value of one element being checked: where it starts in `bytes`, the position of its
/// container's NUL (which no value may reach), and its key, which names it in errors.
struct Value<'a> {
    bytes: &'a [u8],
    key: &'a [u8],
    at: usize,
    end: usize,
}

impl Value<'_> {
    /// Where the value ends, and for a non-empty embedded document, array or code-with-scope
    /// scope, the position of its first element and of its NUL: the level it opens.
    #[inline]
    fn extent(&self, kind: u8) -> Result<(usize, Option<(usize, usize)>), RawNestingError> {
        let at = self.at;
        Ok(match kind {
            0x01 | 0x09 | 0x11 | 0x12 => (self.fixed(8)?, None),
            0x10 => (self.fixed(4)?, None),
            0x07 => (self.fixed(12)?, None),
            0x13 => (self.fixed(16)?, None),
            0x06 | 0x0A | 0x7F | 0xFF => (at, None),
            0x08 => {
                let stop = self.fixed(1)?;
                if self.bytes[at] > 1 {
                    return Err(self.fail("boolean is neither 0 nor 1"));
                }
                (stop, None)
            }
            0x02 | 0x0D | 0x0E => (self.string_at(at, self.end)?, None),
            0x0C => {
                let stop = self.string_at(at, self.end)?;
                (
                    Some(stop + 12)
                        .filter(|&s| s <= self.end)
                        .ok_or_else(|| self.fail("value runs past its document"))?,
                    None,
                )
            }
            0x0B => (self.cstring_at(self.cstring_at(at)?)?, None),
            0x05 => (self.binary()?, None),
            0x03 | 0x04 => {
                let close = self.document_at(at, self.end)?;
                (close + 1, (close > at + 4).then_some((at + 4, close)))
            }
            0x0F => self.code_with_scope()?,
            _ => return Err(self.fail("unknown element type")),
        })
    }

    fn fail(&self, what: &str) -> RawNestingError {
        malformed(self.key, what)
    }

    /// The i32 at `i` when its four bytes lie before the container's end.
    fn i32_at(&self, i: usize) -> Result<i32, RawNestingError> {
        self.bytes
            .get(i..i + 4)
            .filter(|_| i + 4 <= self.end)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| self.fail("length runs past its document"))
    }

    /// A value of `n` bytes: its end.
    fn fixed(&self, n: usize) -> Result<usize, RawNestingError> {
        Some(self.at + n)
            .filter(|&stop| stop <= self.end)
            .ok_or_else(|| self.fail("value runs past its document"))
    }

    /// A length-prefixed string at `i`: UTF-8, NUL-terminated, before `limit`; its end.
    fn string_at(&self, i: usize, limit: usize) -> Result<usize, RawNestingError> {
        let n = self.i32_at(i)?;
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| self.fail("string length below 1"))?;
        let stop = (i + 4)
            .checked_add(n)
            .filter(|&s| s <= limit)
            .ok_or_else(|| self.fail("string runs past its document"))?;
        if self.bytes[stop - 1] != 0 {
            return Err(self.fail("string without its NUL"));
        }
        if !raw::utf8(&self.bytes[i + 4..stop - 1]) {
            return Err(self.fail("string is not UTF-8"));
        }
        Ok(stop)
    }

    /// A C string at `i` (regex parts): UTF-8, before the container's end; its end.
    fn cstring_at(&self, i: usize) -> Result<usize, RawNestingError> {
        let n = self
            .bytes
            .get(i..self.end)
            .and_then(|b| b.iter().position(|&b| b == 0))
            .ok_or_else(|| self.fail("regex part without its NUL"))?;
        if !raw::utf8(&self.bytes[i..i + n]) {
            return Err(self.fail("regex part is not UTF-8"));
        }
        Ok(i + n + 1)
    }

    /// An embedded document at `i` (length at least 5, final NUL) ending by `limit`: the
    /// position of its NUL.
    fn document_at(&self, i: usize, limit: usize) -> Result<usize, RawNestingError> {
        let n = self.i32_at(i)?;
        let close = usize::try_from(n)
            .ok()
            .filter(|&n| n >= 5)
            .and_then(|n| (i + n).checked_sub(1))
            .filter(|&c| c < limit)
            .ok_or_else(|| self.fail("document length below 5 or past its container"))?;
        if self.bytes[close] != 0 {
            return Err(self.fail("document without its NUL"));
        }
        Ok(close)
    }

    /// Binary data: its length within the container and, for the old subtype 2, the inner
    /// length four less; its end.
    fn binary(&self) -> Result<usize, RawNestingError> {
        let at = self.at;
        let n =
            usize::try_from(self.i32_at(at)?).map_err(|_| self.fail("binary length below 0"))?;
        let stop = (at + 5)
            .checked_add(n)
            .filter(|&s| s <= self.end)
            .ok_or_else(|| self.fail("binary runs past its document"))?;
        if self.bytes[at + 4] == 0x02
            && (n < 4 || usize::try_from(self.i32_at(at + 5)?).ok() != Some(n - 4))
        {
            return Err(self.fail("old binary subtype with a wrong inner length"));
        }
        Ok(stop)
    }

    /// Code with scope: a total length, a string and a scope document filling it exactly; its
    /// end, and the level the scope opens when it is not empty.
    fn code_with_scope(&self) -> Result<(usize, Option<(usize, usize)>), RawNestingError> {
        let at = self.at;
        let total = usize::try_from(self.i32_at(at)?)
            .ok()
            .filter(|&n| n >= 14)
            .ok_or_else(|| self.fail("code with scope length below 14"))?;
        let stop = at
            .checked_add(total)
            .filter(|&s| s <= self.end)
            .ok_or_else(|| self.fail("code with scope runs past its document"))?;
        let scope = self.string_at(at + 4, stop)?;
        let close = self.document_at(scope, stop)?;
        if close + 1 != stop {
            return Err(self.fail("code with scope whose scope does not fill it"));
        }
        Ok((stop, (close > scope + 4).then_some((scope + 4, close))))
    }
}

/// A malformed element, named by its key.
fn malformed(key: &[u8], what: &str) -> RawNestingError {
    RawNestingError::Malformed(format!("field `{}`: {what}", String::from_utf8_lossy(key)))
}

/// A malformed element whose key could not be read: named by its offset and first bytes.
fn malformed_at(bytes: &[u8], start: usize, end: usize, what: &str) -> RawNestingError {
    let shown = &bytes[start..end.min(start + 16)];
    RawNestingError::Malformed(format!(
        "{what} at byte {start} (`{}`)",
        String::from_utf8_lossy(shown)
    ))
}

/// Checks raw bytes from outside (a network message) before anything recursive reads them:
/// every element well formed and at most `max` levels, walked without recursion. The error
/// says which.
pub fn check_input(doc: &RawDocument, max: usize) -> Result<(), InputError> {
    check_raw(doc, max).map_err(|e| match e {
        RawNestingError::Malformed(reason) => InputError::Malformed(reason),
        RawNestingError::TooDeep => InputError::TooDeep { max },
    })
}

/// Why [`check_input`] refuses raw bytes from outside.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// Bytes that are not BSON; the reason names the element and what is wrong with it.
    #[error("{0}")]
    Malformed(String),
    /// More levels than the limit `max`.
    #[error("nests deeper than the limit of {max} levels")]
    TooDeep { max: usize },
}

/// Whether `doc` has more than `max` levels.
pub(crate) fn exceeds(doc: &Document, max: usize) -> bool {
    values_exceed(Values::Fields(doc.values()), max)
}

/// Whether `value`, standing where a top-level document would, has more than `max` levels (a
/// scalar has none).
pub(crate) fn value_exceeds(value: &Bson, max: usize) -> bool {
    match children(value) {
        Some(values) => values_exceed(values, max),
        None => false,
    }
}

/// Whether any of `docs` has more than `max` levels.
pub(crate) fn any_exceeds<'a>(docs: impl IntoIterator<Item = &'a Document>, max: usize) -> bool {
    docs.into_iter().any(|d| exceeds(d, max))
}

/// The message the parsers give when their input passes [`MAX_INPUT_DEPTH`].
pub(crate) fn too_deep_reason() -> String {
    format!("nests deeper than the limit of {MAX_INPUT_DEPTH} levels")
}

/// The values of one level being walked (an enum, not a boxed iterator: no allocation per
/// level).
enum Values<'a> {
    Fields(bson::document::Values<'a>),
    Items(std::slice::Iter<'a, Bson>),
}

impl<'a> Iterator for Values<'a> {
    type Item = &'a Bson;

    fn next(&mut self) -> Option<&'a Bson> {
        match self {
            Values::Fields(values) => values.next(),
            Values::Items(items) => items.next(),
        }
    }
}

fn values_exceed(top: Values<'_>, max: usize) -> bool {
    let mut frames = Vec::with_capacity(8);
    frames.push(top);
    while let Some(frame) = frames.last_mut() {
        let Some(value) = frame.next() else {
            frames.pop();
            continue;
        };
        let Some(child) = children(value) else {
            continue;
        };
        if frames.len() >= max {
            return true;
        }
        frames.push(child);
    }
    false
}

/// The values one level below `value`, for a non-empty document or array (empty ones add no
/// level).
fn children(value: &Bson) -> Option<Values<'_>> {
    match value {
        Bson::Document(d) if !d.is_empty() => Some(Values::Fields(d.values())),
        Bson::Array(a) if !a.is_empty() => Some(Values::Items(a.iter())),
        Bson::JavaScriptCodeWithScope(c) if !c.scope.is_empty() => {
            Some(Values::Fields(c.scope.values()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawBsonRef, RawDocumentBuf, doc};
    use proptest::prelude::*;

    /// The reference [`check_raw`] is held to: every element read through the bson crate's
    /// iterator (which checks each value as it builds it), levels counted on a stack.
    fn bson_walk(doc: &RawDocument, max: usize) -> Result<(), RawNestingError> {
        type Values<'a> = Box<dyn Iterator<Item = bson::error::Result<RawBsonRef<'a>>> + 'a>;
        fn values(doc: &RawDocument) -> Values<'_> {
            Box::new(doc.iter().map(|e| e.map(|(_, v)| v)))
        }
        let mut frames = vec![values(doc)];
        while let Some(frame) = frames.last_mut() {
            let Some(value) = frame.next() else {
                frames.pop();
                continue;
            };
            let value = value.map_err(|e| RawNestingError::Malformed(e.to_string()))?;
            let child = match value {
                RawBsonRef::Document(d) if !d.is_empty() => values(d),
                RawBsonRef::Array(a) if !a.is_empty() => Box::new(a.into_iter()),
                RawBsonRef::JavaScriptCodeWithScope(c) if !c.scope.is_empty() => values(c.scope),
                _ => continue,
            };
            if frames.len() >= max {
                return Err(RawNestingError::TooDeep);
            }
            frames.push(child);
        }
        Ok(())
    }

    fn scalar() -> impl Strategy<Value = Bson> {
        prop_oneof![
            any::<f64>().prop_map(Bson::Double),
            "[a-zé\\x00]{0,6}".prop_map(Bson::String),
            any::<bool>().prop_map(Bson::Boolean),
            Just(Bson::Null),
            Just(Bson::Undefined),
            Just(Bson::MinKey),
            Just(Bson::MaxKey),
            any::<i32>().prop_map(Bson::Int32),
            any::<i64>().prop_map(Bson::Int64),
            any::<[u8; 12]>().prop_map(|b| Bson::ObjectId(bson::oid::ObjectId::from_bytes(b))),
            any::<i64>().prop_map(|t| Bson::DateTime(bson::DateTime::from_millis(t))),
            (any::<u32>(), any::<u32>())
                .prop_map(|(time, increment)| Bson::Timestamp(bson::Timestamp { time, increment })),
            any::<[u8; 16]>().prop_map(|b| Bson::Decimal128(bson::Decimal128::from_bytes(b))),
            (
                prop::sample::select(vec![0u8, 2, 4, 0x80]),
                prop::collection::vec(any::<u8>(), 0..6)
            )
                .prop_map(|(subtype, bytes)| Bson::Binary(bson::Binary {
                    subtype: subtype.into(),
                    bytes,
                })),
            ("[a-z]{0,3}", "[imsx]{0,2}").prop_map(|(p, o)| Bson::RegularExpression(bson::Regex {
                pattern: p.try_into().expect("no NUL"),
                options: o.try_into().expect("no NUL"),
            })),
            "[a-z]{0,4}".prop_map(Bson::JavaScriptCode),
            "[a-z]{0,4}".prop_map(Bson::Symbol),
        ]
    }

    fn value() -> impl Strategy<Value = Bson> {
        scalar().prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Bson::Array),
                prop::collection::vec(("[a-z0-9]{0,2}", inner.clone()), 0..3)
                    .prop_map(|fields| Bson::Document(fields.into_iter().collect())),
                (
                    "[a-z]{0,3}",
                    prop::collection::vec(("[a-z]{1,2}", inner), 0..2)
                )
                    .prop_map(|(code, scope)| {
                        Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
                            code,
                            scope: scope.into_iter().collect(),
                        })
                    }),
            ]
        })
    }

    fn document() -> impl Strategy<Value = RawDocumentBuf> {
        prop::collection::vec(("[a-zé]{0,2}", value()), 0..5).prop_map(|fields| {
            let doc: Document = fields.into_iter().collect();
            RawDocumentBuf::try_from(&doc).expect("encodes")
        })
    }

    fn outcome(r: &Result<(), RawNestingError>) -> &'static str {
        match r {
            Ok(()) => "ok",
            Err(RawNestingError::TooDeep) => "too deep",
            Err(RawNestingError::Malformed(_)) => "malformed",
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        /// Well-formed documents pass, and levels are counted as the reference counts them.
        #[test]
        fn documents_the_encoder_writes_pass_and_count_their_levels(
            doc in document(),
            max in 1usize..6,
        ) {
            prop_assert!(check_raw(&doc, MAX_STORED_DEPTH).is_ok());
            prop_assert_eq!(check_raw(&doc, max), bson_walk(&doc, max));
        }

        /// Damaged bytes: accepted exactly where the bson crate reads every element.
        #[test]
        fn damaged_bytes_pass_only_where_the_bson_crate_reads_them(
            doc in document(),
            damage in prop::collection::vec(
                (any::<prop::sample::Index>(), any::<bool>(), prop_oneof![
                    Just(0u8), Just(1), Just(2), Just(5), Just(0x7F), Just(0x80), Just(0xC3),
                    Just(0xFF), any::<u8>(),
                ]),
                1..4,
            ),
            max in prop_oneof![Just(2usize), Just(MAX_STORED_DEPTH)],
        ) {
            let mut bytes = doc.into_bytes();
            // A byte set to a value, or moved by a little (a length's low byte: a length off
            // by a few).
            for (at, set, byte) in damage {
                let at = at.index(bytes.len());
                bytes[at] = if set { byte } else { bytes[at].wrapping_add(byte % 5).wrapping_sub(2) };
            }
            let Ok(damaged) = RawDocument::from_bytes(&bytes) else {
                return Ok(());
            };
            let (ours, theirs) = (check_raw(damaged, max), bson_walk(damaged, max));
            prop_assert_eq!(
                outcome(&ours) == "ok",
                outcome(&theirs) == "ok",
                "ours {:?}, the bson crate's {:?}",
                ours,
                theirs
            );
        }
    }

    fn nested(levels: usize) -> Document {
        let mut d = doc! { "a": 1 };
        for _ in 1..levels {
            d = doc! { "a": d };
        }
        d
    }

    #[test]
    fn levels_count_as_mongodb_counts_them() {
        assert!(!exceeds(&nested(100), 100));
        assert!(exceeds(&nested(101), 100));
        let raw = bson::RawDocumentBuf::try_from(&nested(100)).unwrap();
        assert!(check_raw(&raw, 100).is_ok());
        let raw = bson::RawDocumentBuf::try_from(&nested(101)).unwrap();
        assert!(matches!(
            check_raw(&raw, 100),
            Err(RawNestingError::TooDeep)
        ));
        // Empty documents and arrays add no level.
        let mut d = nested(100);
        d.insert("b", doc! {});
        let mut inner = doc! { "e": [] };
        for _ in 1..100 {
            inner = doc! { "x": inner };
        }
        assert!(!exceeds(&inner, 100));
        assert!(!exceeds(&d, 100));
    }
}
