//! A fast serde deserializer over stored BSON bytes, used by `StoredDocument::decode`.
//!
//! It walks the bytes once, borrowing strings and keys from them, and handles the types that
//! make up most documents: double, string, document, array, bool, null, int32, int64, ObjectId
//! and date (the last two presented exactly as the bson crate presents them, so bson's own
//! types and `Bson`/`Document` decode the same way). Any other BSON type, or one of the bson
//! crate's private newtype hints, makes it give up with a fallback, and the caller decodes the
//! whole document with the bson crate instead: the result is the same, only slower.
//!
//! Every read is bounds-checked; malformed bytes are an error, never a panic.

use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

/// Why a stored document does not decode as the requested type.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeFailure {
    /// The bytes are not a well-formed BSON document, or a key cannot be renamed.
    #[error(transparent)]
    Malformed(Box<bson::error::Error>),
    /// This decoder refused a value (`path` is where in the stored document, when known).
    #[error("{}{reason}", at_path(path.as_deref()))]
    Refused {
        path: Option<String>,
        reason: String,
    },
    /// The bson crate refused a value (`path` as for `Refused`).
    #[error("{}{source}", at_path(path.as_deref()))]
    Bson {
        path: Option<String>,
        source: Box<bson::error::Error>,
    },
    /// The typed layer refused the document for the reason it gives (a schema migration's
    /// reason, or a schema version newer than the program's).
    #[error("{0}")]
    Model(String),
}

/// Decodes a whole document, falling back to the bson crate where this decoder does not go.
pub(crate) fn from_slice<T: DeserializeOwned>(
    bytes: &[u8],
) -> std::result::Result<T, DecodeFailure> {
    from_slice_with_id(bytes, None)
}

/// Decodes a whole document whose top-level `_id` the type `T` calls `id_field` (a typed model
/// whose id field serde names otherwise).
pub fn from_slice_with_id<T: DeserializeOwned>(
    bytes: &[u8],
    id_field: Option<&'static str>,
) -> std::result::Result<T, DecodeFailure> {
    from_slice_versioned(bytes, id_field).map(|(value, _)| value)
}

/// [`from_slice_with_id`], also returning the document's top-level `_v` (a typed model's
/// schema version) when it is an integer, read in the same pass.
pub fn from_slice_versioned<T: DeserializeOwned>(
    bytes: &[u8],
    id_field: Option<&'static str>,
) -> std::result::Result<(T, Option<i64>), DecodeFailure> {
    match fast::<T>(bytes, id_field) {
        Ok(decoded) => Ok(decoded),
        Err(DecodeError::Fallback) => {
            let raw = bson::RawDocument::from_bytes(bytes)
                .map_err(|e| DecodeFailure::Malformed(Box::new(e)))?;
            let version = match raw.get("_v") {
                Ok(Some(bson::RawBsonRef::Int32(v))) => Some(i64::from(v)),
                Ok(Some(bson::RawBsonRef::Int64(v))) => Some(v),
                _ => None,
            };
            let Some(name) = id_field else {
                // Straight from the bytes: a detour through `Document` would present dates and
                // other types differently.
                let value =
                    bson::deserialize_from_slice(bytes).map_err(|source| DecodeFailure::Bson {
                        path: slow_failure_path::<T>(bytes, None),
                        source: Box::new(source),
                    })?;
                return Ok((value, version));
            };
            let mut renamed = bson::RawDocumentBuf::new();
            for element in raw {
                let (key, value) = element.map_err(|e| DecodeFailure::Malformed(Box::new(e)))?;
                if key.as_str() == "_id" {
                    let name = bson::raw::CString::try_from(name)
                        .map_err(|e| DecodeFailure::Malformed(Box::new(e)))?;
                    renamed.append(name, value);
                } else {
                    renamed.append(key, value);
                }
            }
            let value = bson::deserialize_from_slice(renamed.as_bytes()).map_err(|source| {
                DecodeFailure::Bson {
                    path: slow_failure_path::<T>(renamed.as_bytes(), id_field),
                    source: Box::new(source),
                }
            })?;
            Ok((value, version))
        }
        Err(DecodeError::Message(reason)) => Err(DecodeFailure::Refused {
            path: fast_failure_path::<T>(bytes, id_field),
            reason,
        }),
    }
}

/// A stored document's `_id` as errors show it; `<unknown>` when it has none.
pub fn id_text(raw: &bson::RawDocument) -> String {
    raw.get("_id")
        .ok()
        .flatten()
        .map_or_else(|| "<unknown>".to_owned(), render)
}

/// A value in MongoDB shell style for messages.
pub(crate) fn render(v: bson::RawBsonRef<'_>) -> String {
    match bson::Bson::try_from(v) {
        Ok(b) => b.to_string(),
        Err(_) => "<malformed>".to_owned(),
    }
}

/// What leads a decoding failure's reason: the stored path where it happened (`at `a.0.b`: `),
/// or nothing when the document itself failed.
fn at_path(path: Option<&str>) -> String {
    path.map(|path| format!("at `{path}`: "))
        .unwrap_or_default()
}

/// Where decoding `T` fails in this decoder, found by decoding again with the path tracked:
/// only after a failure, so that decoding that succeeds pays nothing for it.
fn fast_failure_path<T: DeserializeOwned>(
    bytes: &[u8],
    id_field: Option<&'static str>,
) -> Option<String> {
    let mut reader = Reader::new(bytes, true);
    let end = reader.document_bounds().ok()?;
    let value = Value {
        r: &mut reader,
        ty: DOCUMENT,
        end: Some(end),
        id_field,
        top: true,
    };
    serde_path_to_error::deserialize::<_, T>(value)
        .err()
        .and_then(|e| stored_path(e.path(), id_field))
}

/// [`fast_failure_path`] through the bson crate's deserializer.
fn slow_failure_path<T: DeserializeOwned>(
    bytes: &[u8],
    id_field: Option<&'static str>,
) -> Option<String> {
    let deserializer = bson::RawDeserializer::new(bytes).ok()?;
    serde_path_to_error::deserialize::<_, T>(deserializer)
        .err()
        .and_then(|e| stored_path(e.path(), id_field))
}

/// A serde path as the stored document's dotted path (array positions as numbers, the model's
/// id field as `_id`); `None` for the document itself.
fn stored_path(path: &serde_path_to_error::Path, id_field: Option<&str>) -> Option<String> {
    use serde_path_to_error::Segment;
    let segments: Vec<String> = path
        .iter()
        .enumerate()
        .map(|(i, segment)| match segment {
            Segment::Seq { index } => index.to_string(),
            Segment::Map { key } if i == 0 && Some(key.as_str()) == id_field => "_id".to_owned(),
            Segment::Map { key } => key.clone(),
            Segment::Enum { variant } => variant.clone(),
            Segment::Unknown => "?".to_owned(),
        })
        .collect();
    (!segments.is_empty()).then(|| segments.join("."))
}

/// The fast path alone.
fn fast<T: DeserializeOwned>(
    bytes: &[u8],
    id_field: Option<&'static str>,
) -> Result<(T, Option<i64>)> {
    let mut reader = Reader::new(bytes, false);
    let end = reader.document_bounds()?;
    let value = T::deserialize(Value {
        r: &mut reader,
        ty: DOCUMENT,
        end: Some(end),
        id_field,
        top: true,
    })?;
    if reader.pos != bytes.len() {
        return Err(malformed("bytes after the document"));
    }
    Ok((value, reader.version))
}

use crate::element_type::{
    ARRAY, BOOLEAN as BOOL, DATE_TIME as DATE, DOCUMENT, DOUBLE, INT32, INT64, NULL, OBJECT_ID,
    STRING,
};

#[derive(Debug)]
pub(crate) enum DecodeError {
    /// A type or hint this decoder leaves to the bson crate.
    Fallback,
    Message(String),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Fallback => f.write_str("left to the bson crate"),
            DecodeError::Message(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for DecodeError {}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DecodeError::Message(msg.to_string())
    }
}

type Result<T> = std::result::Result<T, DecodeError>;

fn malformed(what: &str) -> DecodeError {
    DecodeError::Message(format!("malformed BSON: {what}"))
}

struct Reader<'de> {
    buf: &'de [u8],
    pos: usize,
    /// The top-level `_v`, noted as the document is read.
    version: Option<i64>,
    /// Struct field names are presented as text (UTF-8 checked) rather than bytes, so that a
    /// path tracker records them; only when a failed decode is repeated to find its path.
    keys_as_text: bool,
}

impl<'de> Reader<'de> {
    fn new(buf: &'de [u8], keys_as_text: bool) -> Self {
        Reader {
            buf,
            pos: 0,
            version: None,
            keys_as_text,
        }
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'de [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| malformed("value runs past the end"))?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    #[inline]
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    #[inline]
    fn i32(&mut self) -> Result<i32> {
        let b = self.take(4)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    #[inline]
    fn i64(&mut self) -> Result<i64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_le_bytes(a))
    }

    /// A length prefix that must be at least `min`.
    #[inline]
    fn len(&mut self, min: i32) -> Result<usize> {
        let n = self.i32()?;
        if n < min {
            return Err(malformed("negative or short length"));
        }
        Ok(n as usize)
    }

    /// A NUL-terminated key as bytes; UTF-8 is checked only where a key is used as text.
    #[inline]
    fn cstr_bytes(&mut self) -> Result<&'de [u8]> {
        let start = self.pos;
        let rest = self.buf.get(start..).unwrap_or_default();
        let len = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| malformed("unterminated key"))?;
        self.pos = start + len + 1;
        Ok(&rest[..len])
    }

    fn cstr(&mut self) -> Result<&'de str> {
        let bytes = self.cstr_bytes()?;
        std::str::from_utf8(bytes).map_err(|_| malformed("key is not UTF-8"))
    }

    #[inline]
    fn string(&mut self) -> Result<&'de str> {
        let n = self.len(1)?;
        let bytes = self.take(n)?;
        let (text, nul) = bytes.split_at(n - 1);
        if nul != [0] {
            return Err(malformed("string not NUL-terminated"));
        }
        std::str::from_utf8(text).map_err(|_| malformed("string is not UTF-8"))
    }

    /// Reads a document header and returns the position of its terminating NUL.
    fn document_bounds(&mut self) -> Result<usize> {
        let start = self.pos;
        let n = self.len(5)?;
        let end = start
            .checked_add(n - 1)
            .filter(|&e| e < self.buf.len() && self.buf[e] == 0)
            .ok_or_else(|| malformed("document length"))?;
        Ok(end)
    }

    /// Skips a value of type `ty`.
    fn skip(&mut self, ty: u8) -> Result<()> {
        match ty {
            DOUBLE | DATE | INT64 | 0x11 => self.take(8).map(drop),
            STRING | 0x0D | 0x0E => self.string().map(drop),
            DOCUMENT | ARRAY | 0x0F => {
                let n = self.len(5)?;
                self.take(n - 4).map(drop)
            }
            0x05 => {
                let n = self.len(0)?;
                self.take(n + 1).map(drop)
            }
            0x06 | NULL | 0x7F | 0xFF => Ok(()),
            OBJECT_ID => self.take(12).map(drop),
            BOOL => self.take(1).map(drop),
            0x0B => {
                self.cstr()?;
                self.cstr().map(drop)
            }
            0x0C => {
                self.string()?;
                self.take(12).map(drop)
            }
            INT32 => self.take(4).map(drop),
            0x13 => self.take(16).map(drop),
            _ => Err(malformed("unknown element type")),
        }
    }
}

/// The encoded length of a value of BSON type `kind` at the start of `bytes`, as the reader
/// skips it (lengths and strings checked); `None` when it cannot be read.
pub(crate) fn value_length(kind: u8, bytes: &[u8]) -> Option<usize> {
    let mut reader = Reader::new(bytes, false);
    reader.skip(kind).ok()?;
    Some(reader.pos)
}

/// The value at the reader's position, of BSON type `ty`. For documents and arrays whose header
/// was already read, `end` is the position of their terminating NUL.
struct Value<'a, 'de> {
    r: &'a mut Reader<'de>,
    ty: u8,
    end: Option<usize>,
    /// For the top-level document only: the name under which `_id` is presented.
    id_field: Option<&'static str>,
    /// Whether this is the top-level document.
    top: bool,
}

impl<'de> Value<'_, 'de> {
    fn container_end(&mut self) -> Result<usize> {
        match self.end {
            Some(end) => Ok(end),
            None => self.r.document_bounds(),
        }
    }

    fn object_id(&mut self) -> Result<&'de [u8]> {
        self.r.take(12)
    }

    fn object_id_array(&mut self) -> Result<[u8; 12]> {
        let mut id = [0u8; 12];
        id.copy_from_slice(self.object_id()?);
        Ok(id)
    }
}

macro_rules! forward_to_any {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            self.deserialize_any(visitor)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Value<'_, 'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        match self.ty {
            DOUBLE => visitor.visit_f64(f64::from_bits(self.r.i64()? as u64)),
            STRING => visitor.visit_borrowed_str(self.r.string()?),
            DOCUMENT | ARRAY => {
                let end = self.container_end()?;
                let elements = Elements {
                    r: &mut *self.r,
                    end,
                    pending: None,
                    id_field: self.id_field,
                    top: self.top,
                    version_next: false,
                };
                let value = if self.ty == DOCUMENT {
                    visitor.visit_map(elements)?
                } else {
                    visitor.visit_seq(elements)?
                };
                finish_container(self.r, end)?;
                Ok(value)
            }
            OBJECT_ID => {
                let hex = bson::oid::ObjectId::from_bytes(self.object_id_array()?).to_hex();
                visitor.visit_map(OneEntry::new("$oid", hex.into_deserializer()))
            }
            BOOL => match self.r.u8()? {
                0 => visitor.visit_bool(false),
                1 => visitor.visit_bool(true),
                _ => Err(malformed("boolean is neither 0 nor 1")),
            },
            DATE => {
                let millis = self.r.i64()?.to_string();
                let body = OneEntry::new("$numberLong", millis.into_deserializer());
                visitor.visit_map(OneEntry::new(
                    "$date",
                    de::value::MapAccessDeserializer::new(body),
                ))
            }
            NULL => visitor.visit_unit(),
            INT32 => visitor.visit_i32(self.r.i32()?),
            INT64 => visitor.visit_i64(self.r.i64()?),
            _ => Err(DecodeError::Fallback),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.ty {
            NULL => visitor.visit_none(),
            0x06 => Err(DecodeError::Fallback),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        match self.ty {
            OBJECT_ID => visitor.visit_borrowed_bytes(self.object_id()?),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name.starts_with("$__") {
            return Err(DecodeError::Fallback);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.ty {
            STRING => visitor.visit_enum(self.r.string()?.into_deserializer()),
            DOCUMENT => {
                let end = self.r.document_bounds()?;
                let ty = self.r.u8()?;
                let name = self.r.cstr()?;
                let value = visitor.visit_enum(Variant {
                    r: &mut *self.r,
                    ty,
                    name,
                })?;
                finish_container(self.r, end)?;
                Ok(value)
            }
            _ => Err(de::Error::custom(
                "expected a string or a one-field document for an enum",
            )),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.end.is_some() {
            return Err(malformed("ignored container already opened"));
        }
        self.r.skip(self.ty)?;
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        false
    }

    forward_to_any! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32
        deserialize_f64 deserialize_char deserialize_str deserialize_string deserialize_unit
        deserialize_seq deserialize_map deserialize_identifier
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_any(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        self.deserialize_any(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_any(visitor)
    }
}

/// After a visitor returns from a document or array, skips what it left unread and checks that
/// the container ends where its length said.
fn finish_container(r: &mut Reader<'_>, end: usize) -> Result<()> {
    while r.pos < end {
        let ty = r.u8()?;
        r.cstr()?;
        r.skip(ty)?;
    }
    if r.pos != end {
        return Err(malformed("element runs past its document"));
    }
    r.pos += 1;
    Ok(())
}

/// The elements of a document (as a map) or of an array (as a sequence, keys ignored).
struct Elements<'a, 'de> {
    r: &'a mut Reader<'de>,
    end: usize,
    /// The type of the element whose key was read and whose value is next.
    pending: Option<u8>,
    /// The name `_id` is presented under (top-level document only).
    id_field: Option<&'static str>,
    /// Whether these are the top-level document's elements.
    top: bool,
    /// Whether the next value is the top-level `_v`.
    version_next: bool,
}

impl<'de> Elements<'_, 'de> {
    /// Reads the next element's type and key; `None` at the end of the container.
    #[inline]
    fn next_element(&mut self) -> Result<Option<(u8, &'de [u8])>> {
        if self.r.pos >= self.end {
            return Ok(None);
        }
        let ty = self.r.u8()?;
        let key = self.r.cstr_bytes()?;
        Ok(Some((ty, key)))
    }
}

impl<'de> MapAccess<'de> for Elements<'_, 'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let Some((ty, key)) = self.next_element()? else {
            return Ok(None);
        };
        self.pending = Some(ty);
        self.version_next = self.top && key == b"_v";
        match self.id_field {
            Some(name) if key == b"_id" => seed
                .deserialize(Key(name.as_bytes(), self.r.keys_as_text))
                .map(Some),
            _ => seed.deserialize(Key(key, self.r.keys_as_text)).map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let ty = self
            .pending
            .take()
            .ok_or_else(|| malformed("value without key"))?;
        if std::mem::take(&mut self.version_next) {
            let at = self.r.pos;
            self.r.version = match ty {
                INT32 => Some(i64::from(self.r.i32()?)),
                INT64 => Some(self.r.i64()?),
                _ => None,
            };
            self.r.pos = at;
        }
        seed.deserialize(Value {
            r: &mut *self.r,
            ty,
            end: None,
            id_field: None,
            top: false,
        })
    }
}

impl<'de> SeqAccess<'de> for Elements<'_, 'de> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let Some((ty, _)) = self.next_element()? else {
            return Ok(None);
        };
        seed.deserialize(Value {
            r: &mut *self.r,
            ty,
            end: None,
            id_field: None,
            top: false,
        })
        .map(Some)
    }
}

/// A document key. Struct field names are matched as bytes, without a UTF-8 check (unless the
/// second field asks for text); any other use of the key (a map key, a `Document`) checks it.
struct Key<'de>(&'de [u8], bool);

impl<'de> de::Deserializer<'de> for Key<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let text = std::str::from_utf8(self.0).map_err(|_| malformed("key is not UTF-8"))?;
        visitor.visit_borrowed_str(text)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        // The UTF-8 check runs only when text was asked for: a struct matches its field names
        // as bytes.
        match self.1.then(|| std::str::from_utf8(self.0)) {
            Some(Ok(text)) => visitor.visit_borrowed_str(text),
            _ => visitor.visit_borrowed_bytes(self.0),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum ignored_any
    }
}

/// A map with one entry, for the extended-JSON shapes (`{"$oid": ...}`, `{"$date": ...}`) that
/// the bson crate's own types expect.
struct OneEntry<D> {
    key: Option<&'static str>,
    value: Option<D>,
}

impl<D> OneEntry<D> {
    fn new(key: &'static str, value: D) -> Self {
        OneEntry {
            key: Some(key),
            value: Some(value),
        }
    }
}

impl<'de, D: de::Deserializer<'de, Error = DecodeError>> MapAccess<'de> for OneEntry<D> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        match self.key.take() {
            Some(key) => seed
                .deserialize(de::value::BorrowedStrDeserializer::new(key))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let value = self
            .value
            .take()
            .ok_or_else(|| malformed("value read twice"))?;
        seed.deserialize(value)
    }
}

/// An externally tagged enum variant stored as `{variant: content}`.
struct Variant<'a, 'de> {
    r: &'a mut Reader<'de>,
    ty: u8,
    name: &'de str,
}

impl<'a, 'de> de::EnumAccess<'de> for Variant<'a, 'de> {
    type Error = DecodeError;
    type Variant = Value<'a, 'de>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self::Variant)> {
        let name = seed.deserialize(de::value::BorrowedStrDeserializer::new(self.name))?;
        Ok((
            name,
            Value {
                r: self.r,
                ty: self.ty,
                end: None,
                id_field: None,
                top: false,
            },
        ))
    }
}

impl<'de> de::VariantAccess<'de> for Value<'_, 'de> {
    type Error = DecodeError;

    fn unit_variant(self) -> Result<()> {
        de::Deserialize::deserialize(self)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_any(self, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        de::Deserializer::deserialize_any(self, visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{DateTime, Document, doc, oid::ObjectId};

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Typical {
        #[serde(rename = "_id")]
        id: ObjectId,
        name: String,
        when: DateTime,
        tags: Vec<String>,
        score: Option<f64>,
    }

    #[test]
    fn typical_documents_take_the_fast_path() {
        let id = ObjectId::new();
        let when = DateTime::from_millis(1_700_000_000_000);
        let doc = doc! { "_id": id, "name": "n", "when": when, "tags": ["a"], "score": null, "extra": { "x": [1, 2] } };
        let bytes = doc.to_vec().unwrap();
        let (typed, _): (Typical, _) = fast(&bytes, None).unwrap();
        assert_eq!(
            typed,
            Typical {
                id,
                name: "n".into(),
                when,
                tags: vec!["a".into()],
                score: None
            }
        );
        let (back, _): (Document, _) = fast(&bytes, None).unwrap();
        assert_eq!(back, doc);
    }

    #[test]
    fn other_types_fall_back_to_the_bson_crate() {
        let doc = doc! { "d": bson::Decimal128::from_bytes([0; 16]) };
        let bytes = doc.to_vec().unwrap();
        assert!(matches!(
            fast::<Document>(&bytes, None),
            Err(DecodeError::Fallback)
        ));
        assert_eq!(from_slice::<Document>(&bytes).unwrap(), doc);
    }

    proptest::proptest! {
        #[test]
        fn damaged_bytes_never_panic(flips in proptest::collection::vec((0usize..64, proptest::num::u8::ANY), 1..4)) {
            let mut bytes = doc! { "a": "text", "b": [1, { "c": 2.5 }], "d": ObjectId::from_bytes([7; 12]) }
                .to_vec()
                .unwrap();
            for (at, value) in flips {
                let at = at % bytes.len();
                bytes[at] = value;
            }
            let _ = from_slice::<Document>(&bytes);
            let _ = from_slice::<Typical>(&bytes);
        }
    }

    #[test]
    fn malformed_bytes_are_errors() {
        let bytes = doc! { "a": "text", "b": [1, 2] }.to_vec().unwrap();
        for cut in 0..bytes.len() {
            assert!(
                fast::<Document>(&bytes[..cut], None).is_err(),
                "cut at {cut}"
            );
        }
        let mut lying = bytes.clone();
        lying[0] = 200;
        assert!(fast::<Document>(&lying, None).is_err());
    }
}
