//! The order-preserving byte encoding of index keys and `_id`s.
//!
//! Law (tested in `engine/tests/key_order.rs`): for any values `a` and `b`,
//! `encode(a).cmp(&encode(b)) == order::compare(a, b)`, and compound keys compare field by field,
//! each field ascending or descending. Two consequences the rest of the engine relies on:
//! values that compare equal encode to the same bytes (`1`, `1.0` and `NumberLong(1)` are one
//! key), and every encoding is prefix-free, so concatenated fields compare field by field and a
//! descending field is just its ascending bytes inverted.
//!
//! Layout: a tag byte per type bracket (in bracket order), then a payload:
//! - numbers: a class byte and a compact payload, exact for every value (see the submodule
//!   `number`);
//! - strings, regexes and code: bytes with 0x00 escaped as 0x00 0xFF, closed by 0x00 0x00;
//! - objects: per element its value's tag, its escaped name and its payload, closed by 0x00;
//!   arrays: per element tag and payload, closed by 0x00 (every tag is above 0x00);
//! - binData: length (u32 BE), subtype, bytes; ObjectId: its 12 bytes; bool: 0 or 1;
//!   date: millis as i64 with the sign bit flipped (BE); timestamp: time and increment (BE).
//!
//! This is the only module that chooses byte order for keys; all of it is big-endian.

mod number;
mod types;

pub use types::{UNDECODABLE, decode as decode_with_types, types_of};

use bson::{Bson, RawArray, RawBson, RawBsonRef, RawDocument};

use crate::collation::Collation;
use crate::order::{Bracket, bracket, db_pointer_parts};

/// The sort direction of one index field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    Ascending,
    Descending,
}

impl Direction {
    /// MongoDB's spelling in index specs and sorts: `1` or `-1`.
    pub fn as_i32(self) -> i32 {
        match self {
            Direction::Ascending => 1,
            Direction::Descending => -1,
        }
    }

    /// Descending for a negative number, ascending otherwise.
    pub fn of_sign(n: i64) -> Direction {
        if n < 0 {
            Direction::Descending
        } else {
            Direction::Ascending
        }
    }
}

const END: u8 = 0x00;

fn tag(b: Bracket) -> u8 {
    match b {
        Bracket::MinKey => 0x05,
        Bracket::Undefined => 0x0A,
        Bracket::Null => 0x0F,
        Bracket::Number => 0x14,
        Bracket::String => 0x19,
        Bracket::Object => 0x1E,
        Bracket::Array => 0x23,
        Bracket::Binary => 0x28,
        Bracket::ObjectId => 0x2D,
        Bracket::Bool => 0x32,
        Bracket::Date => 0x37,
        Bracket::Timestamp => 0x3C,
        Bracket::Regex => 0x41,
        Bracket::DbPointer => 0x46,
        Bracket::Code => 0x4B,
        Bracket::CodeWithScope => 0x50,
        Bracket::MaxKey => 0xF0,
    }
}

/// The tag byte that starts every encoded value of a bracket; used for bracket-wide ranges
/// (all dates, all strings).
pub fn bracket_tag(b: Bracket) -> u8 {
    tag(b)
}

/// Appends the encoding of one value in the given direction.
pub fn encode_into(out: &mut Vec<u8>, v: RawBsonRef<'_>, direction: Direction) {
    encode_collated_into(out, v, direction, None);
}

/// Appends the encoding of one value in the given direction, its strings (and symbols, at any
/// depth) as their sort keys under `collation`: the keys of an index created with one, which
/// order as the collation orders strings and are equal for strings it holds equal. A sort key
/// cannot be read back into its string.
pub fn encode_collated_into(
    out: &mut Vec<u8>,
    v: RawBsonRef<'_>,
    direction: Direction,
    collation: Option<&Collation>,
) {
    let start = out.len();
    encode_value(out, v, collation);
    if direction == Direction::Descending {
        invert(&mut out[start..]);
    }
}

/// Appends the encoding of an owned value. Scalars are encoded through a borrowed view without
/// copying; documents, arrays and the rarer types go through one conversion to raw BSON.
pub fn encode_bson_into(
    out: &mut Vec<u8>,
    v: &Bson,
    direction: Direction,
) -> Result<(), bson::error::Error> {
    let view = match v {
        Bson::Double(x) => RawBsonRef::Double(*x),
        Bson::String(x) => RawBsonRef::String(x),
        Bson::Symbol(x) => RawBsonRef::Symbol(x),
        Bson::Boolean(x) => RawBsonRef::Boolean(*x),
        Bson::Null => RawBsonRef::Null,
        Bson::Undefined => RawBsonRef::Undefined,
        Bson::MinKey => RawBsonRef::MinKey,
        Bson::MaxKey => RawBsonRef::MaxKey,
        Bson::Int32(x) => RawBsonRef::Int32(*x),
        Bson::Int64(x) => RawBsonRef::Int64(*x),
        Bson::ObjectId(x) => RawBsonRef::ObjectId(*x),
        Bson::DateTime(x) => RawBsonRef::DateTime(*x),
        Bson::Timestamp(x) => RawBsonRef::Timestamp(*x),
        Bson::Decimal128(x) => RawBsonRef::Decimal128(*x),
        Bson::JavaScriptCode(x) => RawBsonRef::JavaScriptCode(x),
        other => {
            let raw = RawBson::try_from(other.clone())?;
            encode_into(out, raw.as_raw_bson_ref(), direction);
            return Ok(());
        }
    };
    encode_into(out, view, direction);
    Ok(())
}

/// The bytes every string starting with `prefix` begins with (tag and escaped bytes, no
/// terminator), in the given direction: the lower end of a prefix range.
pub fn encode_string_prefix(out: &mut Vec<u8>, prefix: &str, direction: Direction) {
    let start = out.len();
    out.push(tag(Bracket::String));
    for &byte in prefix.as_bytes() {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    if direction == Direction::Descending {
        invert(&mut out[start..]);
    }
}

/// The ascending encoding of one value, as used for `_id`s.
pub fn encode(v: RawBsonRef<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    encode_value(&mut out, v, None);
    out
}

fn invert(bytes: &mut [u8]) {
    for b in bytes {
        *b = !*b;
    }
}

fn encode_value(out: &mut Vec<u8>, v: RawBsonRef<'_>, cx: Option<&Collation>) {
    let b = bracket(&v);
    out.push(tag(b));
    encode_payload(out, v, b, cx);
}

fn encode_payload(out: &mut Vec<u8>, v: RawBsonRef<'_>, b: Bracket, cx: Option<&Collation>) {
    match v {
        _ if b == Bracket::Number => number::encode(out, v),
        RawBsonRef::String(s) | RawBsonRef::Symbol(s) => match cx {
            Some(collation) => encode_bytes(out, &collation.sort_key(s)),
            None => encode_bytes(out, s.as_bytes()),
        },
        RawBsonRef::JavaScriptCode(s) => encode_bytes(out, s.as_bytes()),
        RawBsonRef::Document(d) => encode_document(out, d, cx),
        RawBsonRef::Array(a) => encode_array(out, a, cx),
        RawBsonRef::Binary(bin) => {
            out.extend_from_slice(&(bin.bytes.len() as u32).to_be_bytes());
            out.push(u8::from(bin.subtype));
            out.extend_from_slice(bin.bytes);
        }
        RawBsonRef::ObjectId(id) => out.extend_from_slice(&id.bytes()),
        RawBsonRef::Boolean(x) => out.push(u8::from(x)),
        RawBsonRef::DateTime(d) => {
            out.extend_from_slice(&((d.timestamp_millis() as u64) ^ (1 << 63)).to_be_bytes());
        }
        RawBsonRef::Timestamp(t) => {
            out.extend_from_slice(&t.time.to_be_bytes());
            out.extend_from_slice(&t.increment.to_be_bytes());
        }
        RawBsonRef::RegularExpression(r) => {
            encode_bytes(out, r.pattern.as_str().as_bytes());
            encode_bytes(out, r.options.as_str().as_bytes());
        }
        RawBsonRef::DbPointer(_) => {
            let (ns, id) = db_pointer_parts(v);
            encode_bytes(out, &ns);
            out.extend_from_slice(&id);
        }
        RawBsonRef::JavaScriptCodeWithScope(c) => {
            encode_bytes(out, c.code.as_bytes());
            encode_document(out, c.scope, None);
        }
        // MinKey, MaxKey, null and undefined: the tag is the whole value.
        _ => {}
    }
}

fn encode_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    for &byte in bytes {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

fn encode_document(out: &mut Vec<u8>, d: &RawDocument, cx: Option<&Collation>) {
    // A malformed element ends the document, as in `order::compare_documents`.
    for (name, value) in d.iter().map_while(Result::ok) {
        let b = bracket(&value);
        out.push(tag(b));
        encode_bytes(out, name.as_str().as_bytes());
        encode_payload(out, value, b, cx);
    }
    out.push(END);
}

fn encode_array(out: &mut Vec<u8>, a: &RawArray, cx: Option<&Collation>) {
    for value in a.into_iter().map_while(Result::ok) {
        encode_value(out, value, cx);
    }
    out.push(END);
}

/// The length of the one encoded value at the start of `bytes` in the given direction, or `None`
/// when the bytes are not a well-formed encoding. Used to split an index entry into its fields
/// and the `_id` that follows them.
pub fn encoded_len(bytes: &[u8], direction: Direction) -> Option<usize> {
    let mask = match direction {
        Direction::Ascending => 0x00,
        Direction::Descending => 0xFF,
    };
    let mut reader = Reader { bytes, mask, at: 0 };
    reader.value()?;
    Some(reader.at)
}

/// Walks an encoding without decoding it; every read is bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
    mask: u8,
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)? ^ self.mask;
        self.at += 1;
        Some(b)
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.at = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())?;
        Some(())
    }

    fn value(&mut self) -> Option<()> {
        let t = self.byte()?;
        self.payload(t)
    }

    fn payload(&mut self, t: u8) -> Option<()> {
        match t {
            0x05 | 0x0A | 0x0F | 0xF0 => Some(()),
            0x14 => self.number(),
            0x19 | 0x4B => self.string(),
            0x1E => self.document(),
            0x23 => loop {
                match self.byte()? {
                    END => return Some(()),
                    t => self.payload(t)?,
                }
            },
            0x28 => {
                let mut len = [0u8; 4];
                for b in &mut len {
                    *b = self.byte()?;
                }
                self.skip(1 + u32::from_be_bytes(len) as usize)
            }
            0x2D => self.skip(12),
            0x32 => self.skip(1),
            0x37 | 0x3C => self.skip(8),
            0x41 => {
                self.string()?;
                self.string()
            }
            0x46 => {
                self.string()?;
                self.skip(12)
            }
            0x50 => {
                self.string()?;
                self.document()
            }
            _ => None,
        }
    }

    fn number(&mut self) -> Option<()> {
        number::read(&mut || self.byte()).map(drop)
    }

    fn string(&mut self) -> Option<()> {
        loop {
            if self.byte()? == 0 {
                match self.byte()? {
                    0 => return Some(()),
                    0xFF => {}
                    _ => return None,
                }
            }
        }
    }

    fn document(&mut self) -> Option<()> {
        loop {
            match self.byte()? {
                END => return Some(()),
                t => {
                    self.string()?;
                    self.payload(t)?;
                }
            }
        }
    }
}

/// The smallest byte string greater than every string that starts with `prefix`, or `None` when
/// there is none (the prefix is all 0xFF). `prefix..successor` is the range of a prefix scan.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last != 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(b: Bson) -> Vec<u8> {
        encode(RawBson::try_from(b).unwrap().as_raw_bson_ref())
    }

    #[test]
    fn equal_numbers_of_different_types_share_a_key() {
        let one = enc(Bson::Int32(1));
        assert_eq!(one, enc(Bson::Int64(1)));
        assert_eq!(one, enc(Bson::Double(1.0)));
        assert_eq!(one, enc(Bson::Decimal128("1.000".parse().unwrap())));
        assert_eq!(enc(Bson::Double(-0.0)), enc(Bson::Int32(0)));
    }

    #[test]
    fn strings_with_nul_bytes_stay_ordered() {
        assert!(enc(Bson::String("a".into())) < enc(Bson::String("a\0".into())));
        assert!(enc(Bson::String("a\0".into())) < enc(Bson::String("a\x01".into())));
        assert!(enc(Bson::String("ab".into())) < enc(Bson::String("b".into())));
    }

    #[test]
    fn descending_inverts_order() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        encode_into(&mut a, RawBsonRef::Int32(1), Direction::Descending);
        encode_into(&mut b, RawBsonRef::Int32(2), Direction::Descending);
        assert!(a > b);
    }

    #[test]
    fn encoded_len_finds_the_end_of_each_value() {
        let values = [
            Bson::Int32(-5),
            Bson::Double(0.25),
            Bson::String("a\0b".into()),
            Bson::Document(bson::doc! { "x": [1, "y", { "z": null }] }),
            Bson::Binary(bson::Binary {
                subtype: bson::spec::BinarySubtype::Generic,
                bytes: vec![0, 0xFF],
            }),
            Bson::RegularExpression(bson::Regex {
                pattern: "^a".try_into().unwrap(),
                options: "i".try_into().unwrap(),
            }),
        ];
        for direction in [Direction::Ascending, Direction::Descending] {
            for v in &values {
                let mut bytes = Vec::new();
                encode_into(
                    &mut bytes,
                    RawBson::try_from(v.clone()).unwrap().as_raw_bson_ref(),
                    direction,
                );
                let len = bytes.len();
                bytes.extend_from_slice(&[0x2D, 1, 2, 3]);
                assert_eq!(
                    encoded_len(&bytes, direction),
                    Some(len),
                    "{v:?} {direction:?}"
                );
            }
        }
        assert_eq!(encoded_len(&[0x19, b'a'], Direction::Ascending), None);
    }

    #[test]
    fn owned_values_encode_as_their_raw_form() {
        let values = [
            Bson::Int64(-7),
            Bson::String("s".into()),
            Bson::Document(bson::doc! { "a": [1] }),
            Bson::Array(vec![Bson::Null]),
            Bson::ObjectId(bson::oid::ObjectId::from_bytes([3; 12])),
        ];
        for v in values {
            for direction in [Direction::Ascending, Direction::Descending] {
                let mut owned = Vec::new();
                encode_bson_into(&mut owned, &v, direction).unwrap();
                let mut raw = Vec::new();
                encode_into(
                    &mut raw,
                    RawBson::try_from(v.clone()).unwrap().as_raw_bson_ref(),
                    direction,
                );
                assert_eq!(owned, raw, "{v:?}");
            }
        }
    }

    #[test]
    fn prefix_successor_skips_ff() {
        assert_eq!(prefix_successor(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(prefix_successor(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xFF]), None);
    }
}
