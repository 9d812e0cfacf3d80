//! Key types: what an index key forgets, kept beside it so that covered queries can rebuild the
//! indexed values exactly from the index alone.
//!
//! The key encoding gives equal values equal bytes, so it forgets which of int32, int64, double
//! and decimal128 a number was (and the sign of a zero), and it writes a missing field as `null`.
//! The key types of one index key list, in encoding order (field by field, depth first through
//! subdocuments and arrays):
//! - for every number, its type: one byte, and for a decimal128 its 16 bytes as well;
//! - for every field whose value is `null`, whether the field was `null` or missing.
//!
//! A key holding a value that the encoding cannot give back (a symbol, encoded as its string; a
//! DBPointer; code with scope) has the single type byte [`UNDECODABLE`]: its document is read
//! instead. Keys with neither numbers nor nulls have no type bytes at all.
//!
//! Law (tested in `engine/tests/key_order.rs`): `decode(encode(v), types(v)) == v`, byte for
//! byte, for every value the encoding can give back.

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Decimal128, RawBsonRef, Regex, Timestamp, oid::ObjectId};

use super::{Direction, END};

const INT32: u8 = 0x01;
const INT64: u8 = 0x02;
const DOUBLE: u8 = 0x03;
const NEGATIVE_ZERO: u8 = 0x04;
const DECIMAL: u8 = 0x05;
const NULL: u8 = 0x10;
const MISSING: u8 = 0x11;
/// The key holds a value the encoding cannot give back.
pub const UNDECODABLE: u8 = 0xFF;

/// Appends the key types of one index key: per key field, its value and whether the field was
/// missing (its value then being the stand-in `null`).
pub fn types_of<'a>(fields: impl IntoIterator<Item = (RawBsonRef<'a>, bool)>, out: &mut Vec<u8>) {
    let start = out.len();
    for (value, missing) in fields {
        match value {
            RawBsonRef::Null => out.push(if missing { MISSING } else { NULL }),
            other => {
                if value_types(other, out).is_none() {
                    out.truncate(start);
                    out.push(UNDECODABLE);
                    return;
                }
            }
        }
    }
}

/// The types of the numbers inside one value; `None` for an undecodable value.
fn value_types(value: RawBsonRef<'_>, out: &mut Vec<u8>) -> Option<()> {
    match value {
        RawBsonRef::Int32(_) => out.push(INT32),
        RawBsonRef::Int64(_) => out.push(INT64),
        RawBsonRef::Double(x) if x == 0.0 && x.is_sign_negative() => out.push(NEGATIVE_ZERO),
        RawBsonRef::Double(_) => out.push(DOUBLE),
        RawBsonRef::Decimal128(d) => {
            out.push(DECIMAL);
            out.extend_from_slice(&d.bytes());
        }
        RawBsonRef::Document(d) => {
            for element in d {
                value_types(element.ok()?.1, out)?;
            }
        }
        RawBsonRef::Array(a) => {
            for element in a {
                value_types(element.ok()?, out)?;
            }
        }
        RawBsonRef::Symbol(_)
        | RawBsonRef::DbPointer(_)
        | RawBsonRef::JavaScriptCodeWithScope(_) => {
            return None;
        }
        _ => {}
    }
    Some(())
}

/// Rebuilds the values of an index key (its fields, without the `_id` that may follow) from the
/// key and its types: per field `Some(value)`, or `None` for a missing field. `None` when the
/// key is undecodable or the bytes are not a well-formed key with these types.
pub fn decode(key: &[u8], directions: &[Direction], types: &[u8]) -> Option<Vec<Option<Bson>>> {
    if types.first() == Some(&UNDECODABLE) {
        return None;
    }
    let mut reader = Decoder {
        key,
        at: 0,
        mask: 0,
        types,
        at_type: 0,
    };
    let mut fields = Vec::with_capacity(directions.len());
    for direction in directions {
        reader.mask = match direction {
            Direction::Ascending => 0x00,
            Direction::Descending => 0xFF,
        };
        let tag = reader.byte()?;
        if tag == super::tag(crate::order::Bracket::Null) {
            match reader.next_type()? {
                NULL => fields.push(Some(Bson::Null)),
                MISSING => fields.push(None),
                _ => return None,
            }
        } else {
            fields.push(Some(reader.payload(tag)?));
        }
    }
    (reader.at_type == types.len()).then_some(fields)
}

struct Decoder<'a> {
    key: &'a [u8],
    at: usize,
    mask: u8,
    types: &'a [u8],
    at_type: usize,
}

impl Decoder<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.key.get(self.at)? ^ self.mask;
        self.at += 1;
        Some(b)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut out = [0u8; N];
        for b in &mut out {
            *b = self.byte()?;
        }
        Some(out)
    }

    fn next_type(&mut self) -> Option<u8> {
        let t = *self.types.get(self.at_type)?;
        self.at_type += 1;
        Some(t)
    }

    fn payload(&mut self, tag: u8) -> Option<Bson> {
        use crate::order::Bracket;
        let is = |b: Bracket| super::tag(b) == tag;
        Some(if is(Bracket::MinKey) {
            Bson::MinKey
        } else if is(Bracket::MaxKey) {
            Bson::MaxKey
        } else if is(Bracket::Undefined) {
            Bson::Undefined
        } else if is(Bracket::Null) {
            Bson::Null
        } else if is(Bracket::Number) {
            self.number()?
        } else if is(Bracket::String) {
            Bson::String(self.string()?)
        } else if is(Bracket::Code) {
            Bson::JavaScriptCode(self.string()?)
        } else if is(Bracket::Object) {
            Bson::Document(self.document()?)
        } else if is(Bracket::Array) {
            let mut items = Vec::new();
            loop {
                match self.byte()? {
                    END => break Bson::Array(items),
                    t => items.push(self.payload(t)?),
                }
            }
        } else if is(Bracket::Binary) {
            let len = u32::from_be_bytes(self.array::<4>()?) as usize;
            let subtype = BinarySubtype::from(self.byte()?);
            let end = self.at.checked_add(len).filter(|&e| e <= self.key.len())?;
            let bytes = self.key[self.at..end]
                .iter()
                .map(|b| b ^ self.mask)
                .collect();
            self.at = end;
            Bson::Binary(Binary { subtype, bytes })
        } else if is(Bracket::ObjectId) {
            Bson::ObjectId(ObjectId::from_bytes(self.array::<12>()?))
        } else if is(Bracket::Bool) {
            Bson::Boolean(self.byte()? != 0)
        } else if is(Bracket::Date) {
            let bits = u64::from_be_bytes(self.array::<8>()?) ^ (1 << 63);
            Bson::DateTime(bson::DateTime::from_millis(bits as i64))
        } else if is(Bracket::Timestamp) {
            let time = u32::from_be_bytes(self.array::<4>()?);
            let increment = u32::from_be_bytes(self.array::<4>()?);
            Bson::Timestamp(Timestamp { time, increment })
        } else if is(Bracket::Regex) {
            let pattern = self.string()?;
            let options = self.string()?;
            Bson::RegularExpression(Regex {
                pattern: bson::raw::CString::try_from(pattern).ok()?,
                options: bson::raw::CString::try_from(options).ok()?,
            })
        } else {
            return None;
        })
    }

    fn string(&mut self) -> Option<String> {
        let mut bytes = Vec::new();
        loop {
            match self.byte()? {
                0 => match self.byte()? {
                    0 => return String::from_utf8(bytes).ok(),
                    0xFF => bytes.push(0),
                    _ => return None,
                },
                b => bytes.push(b),
            }
        }
    }

    fn document(&mut self) -> Option<bson::Document> {
        let mut doc = bson::Document::new();
        loop {
            match self.byte()? {
                END => return Some(doc),
                t => {
                    let name = self.string()?;
                    let value = self.payload(t)?;
                    doc.insert(name, value);
                }
            }
        }
    }

    /// A number: its value from the key, its type from the key types.
    fn number(&mut self) -> Option<Bson> {
        let read = super::number::read(&mut || self.byte())?;
        let ty = self.next_type()?;
        match ty {
            DECIMAL => {
                let bytes: [u8; 16] = self
                    .types
                    .get(self.at_type..self.at_type + 16)?
                    .try_into()
                    .ok()?;
                self.at_type += 16;
                Some(Bson::Decimal128(Decimal128::from_bytes(bytes)))
            }
            DOUBLE => Some(Bson::Double(read.double()?)),
            NEGATIVE_ZERO if read == super::number::Read::Zero => Some(Bson::Double(-0.0)),
            INT32 => Some(Bson::Int32(i32::try_from(read.integer()?).ok()?)),
            INT64 => Some(Bson::Int64(read.integer()?)),
            _ => None,
        }
    }
}
