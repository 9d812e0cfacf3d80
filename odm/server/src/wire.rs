//! MongoDB's wire protocol, the framing only: message headers, `OP_MSG` (kind-0 and kind-1
//! sections, the CRC-32C checksum), the legacy `OP_QUERY` handshake and its `OP_REPLY`, and
//! `OP_COMPRESSED`. Pure functions over bytes, so that the parser is fuzzed on its own
//! (`engine/fuzz`, target `wire`).
//!
//! Rules: every length read from the network is checked against the bytes that are there and
//! against MongoDB's limits before anything is allocated for it; a malformed message is a
//! [`WireError`], never a panic.

use bson::{Document, RawDocument, RawDocumentBuf};
use thiserror::Error;

use super::compression::{self, Compressor};

/// The fixed header that starts every message.
pub const HEADER_LEN: usize = 16;
/// MongoDB's `maxMessageSizeBytes`.
pub const MAX_MESSAGE_SIZE: usize = 48_000_000;
/// MongoDB's `maxBsonObjectSize`: the largest document a user may store.
pub const MAX_DOCUMENT_SIZE: usize = 16 * 1024 * 1024;
/// The largest command document: a document of the maximum size plus room for the command's
/// own fields (MongoDB's `BSONObjMaxInternalSize`).
pub const MAX_COMMAND_SIZE: usize = MAX_DOCUMENT_SIZE + 16 * 1024;

pub const OP_REPLY: i32 = 1;
pub const OP_QUERY: i32 = 2004;
pub const OP_COMPRESSED: i32 = 2012;
pub const OP_MSG: i32 = 2013;

/// `OP_MSG` flag: a CRC-32C of the message follows its sections.
pub const CHECKSUM_PRESENT: u32 = 1;
/// `OP_MSG` flag: the sender expects no reply (and sends more without waiting).
pub const MORE_TO_COME: u32 = 1 << 1;
/// `OP_MSG` flag: the client accepts replies streamed with `MORE_TO_COME` (exhaust cursors).
pub const EXHAUST_ALLOWED: u32 = 1 << 16;
/// Flags a receiver may ignore are the high 16 bits; an unknown low bit is an error.
const REQUIRED_FLAGS: u32 = 0xffff;
const KNOWN_FLAGS: u32 = CHECKSUM_PRESENT | MORE_TO_COME | EXHAUST_ALLOWED;

/// Why a message could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// The header's length is below the header's own size or over `maxMessageSizeBytes`.
    #[error("message length {length} is outside the allowed range 16..={max}")]
    BadLength { length: i64, max: usize },
    #[error("unsupported opcode {0}")]
    UnknownOpCode(i32),
    #[error("{what} runs past the end of the message")]
    Truncated { what: &'static str },
    #[error("{what} is followed by {extra} unexpected bytes")]
    TrailingBytes { what: &'static str, extra: usize },
    #[error("OP_MSG has unknown required flag bits {0:#x}")]
    UnknownFlags(u32),
    #[error(
        "OP_MSG checksum mismatch: the message says {stated:#010x}, its bytes give {computed:#010x}"
    )]
    ChecksumMismatch { stated: u32, computed: u32 },
    #[error("OP_MSG section kind {0} is unknown")]
    UnknownSectionKind(u8),
    #[error("OP_MSG has no body section (kind 0)")]
    MissingBody,
    #[error("OP_MSG has more than one body section (kind 0)")]
    SeveralBodies,
    #[error("OP_MSG document sequence `{0}` duplicates a field of the body")]
    DuplicateSequence(String),
    #[error("{what} is not a valid BSON document: {reason}")]
    BadDocument { what: &'static str, reason: String },
    #[error("{what} is {size} bytes, over the {max}-byte limit")]
    DocumentTooLarge {
        what: &'static str,
        size: usize,
        max: usize,
    },
    #[error("a string in {what} is not terminated or not UTF-8")]
    BadCString { what: &'static str },
    #[error("OP_COMPRESSED may not wrap opcode {0}")]
    BadCompressedOpCode(i32),
    #[error(transparent)]
    Compression(#[from] compression::CompressionError),
}

impl WireError {
    /// The code MongoDB answers a malformed message with (when it answers rather than closing
    /// the connection).
    pub fn code(&self) -> odm_engine::ErrorCode {
        match self {
            WireError::DocumentTooLarge { .. } => odm_engine::ErrorCode::BSON_OBJECT_TOO_LARGE,
            WireError::ChecksumMismatch { .. } => odm_engine::ErrorCode::location(40420),
            _ => odm_engine::ErrorCode::INVALID_BSON,
        }
    }
}

/// A message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub length: i32,
    pub request_id: i32,
    pub response_to: i32,
    pub op_code: i32,
}

impl Header {
    /// Reads a header; checks the length it states against the limits, so that the caller
    /// may then read `body_len()` more bytes.
    pub fn parse(bytes: &[u8; HEADER_LEN]) -> Result<Header, WireError> {
        let field =
            |i: usize| i32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let header = Header {
            length: field(0),
            request_id: field(4),
            response_to: field(8),
            op_code: field(12),
        };
        let length = i64::from(header.length);
        if length < HEADER_LEN as i64 || length > MAX_MESSAGE_SIZE as i64 {
            return Err(WireError::BadLength {
                length,
                max: MAX_MESSAGE_SIZE,
            });
        }
        Ok(header)
    }

    /// The bytes that follow the header.
    pub fn body_len(&self) -> usize {
        self.length as usize - HEADER_LEN
    }

    fn write(&self, out: &mut Vec<u8>) {
        for field in [self.length, self.request_id, self.response_to, self.op_code] {
            out.extend_from_slice(&field.to_le_bytes());
        }
    }
}

/// A request as the server acts on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub request_id: i32,
    /// The compressor the request came in with: the reply is compressed the same way.
    pub compressor: Option<Compressor>,
    pub kind: RequestKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RequestKind {
    /// An `OP_MSG` command: its body with each document sequence added as an array field.
    Msg { flags: u32, command: Document },
    /// A legacy `OP_QUERY` (only commands: `<db>.$cmd`), unwrapped from `$query` if wrapped.
    Query {
        /// The database, from `<db>.$cmd`.
        collection: String,
        command: Document,
    },
}

impl Request {
    /// Whether the client asked for no reply (`OP_MSG` with `moreToCome`).
    pub fn more_to_come(&self) -> bool {
        matches!(self.kind, RequestKind::Msg { flags, .. } if flags & MORE_TO_COME != 0)
    }
}

/// Reads a message's body (the bytes after `header`).
pub fn parse(header: &Header, body: &[u8]) -> Result<Request, WireError> {
    if body.len() != header.body_len() {
        return Err(WireError::Truncated { what: "message" });
    }
    match header.op_code {
        OP_COMPRESSED => {
            let mut r = Reader::new(body, "OP_COMPRESSED");
            let original = r.i32()?;
            let size = r.i32()?;
            let id = r.u8()?;
            if original == OP_COMPRESSED {
                return Err(WireError::BadCompressedOpCode(original));
            }
            let compressor = Compressor::from_id(id)?;
            let size = usize::try_from(size)
                .ok()
                .filter(|s| *s <= MAX_MESSAGE_SIZE - HEADER_LEN)
                .ok_or(WireError::BadLength {
                    length: i64::from(size),
                    max: MAX_MESSAGE_SIZE,
                })?;
            let inner = compressor.decompress(r.rest(), size)?;
            let inner_header = Header {
                length: (inner.len() + HEADER_LEN) as i32,
                op_code: original,
                ..*header
            };
            let mut request = parse_uncompressed(&inner_header, &inner, None)?;
            request.compressor = Some(compressor);
            Ok(request)
        }
        _ => parse_uncompressed(header, body, Some(body)),
    }
}

/// `whole_body` is the body as received, for the checksum (a compressed message's checksum
/// would cover the compressed bytes; MongoDB does not send checksums inside compression).
fn parse_uncompressed(
    header: &Header,
    body: &[u8],
    whole_body: Option<&[u8]>,
) -> Result<Request, WireError> {
    match header.op_code {
        OP_MSG => parse_msg(header, body, whole_body),
        OP_QUERY => parse_query(header, body),
        other => Err(WireError::UnknownOpCode(other)),
    }
}

fn parse_msg(
    header: &Header,
    body: &[u8],
    whole_body: Option<&[u8]>,
) -> Result<Request, WireError> {
    let mut r = Reader::new(body, "OP_MSG");
    let flags = r.u32()?;
    let unknown = flags & REQUIRED_FLAGS & !KNOWN_FLAGS;
    if unknown != 0 {
        return Err(WireError::UnknownFlags(unknown));
    }
    let mut sections = r.rest();
    if flags & CHECKSUM_PRESENT != 0 {
        if sections.len() < 4 {
            return Err(WireError::Truncated {
                what: "OP_MSG checksum",
            });
        }
        let (rest, stated) = sections.split_at(sections.len() - 4);
        let stated = u32::from_le_bytes([stated[0], stated[1], stated[2], stated[3]]);
        if let Some(whole) = whole_body {
            let mut digest = CRC32C.digest();
            let mut head = Vec::with_capacity(HEADER_LEN);
            header.write(&mut head);
            digest.update(&head);
            digest.update(&whole[..whole.len() - 4]);
            let computed = digest.finalize();
            if computed != stated {
                return Err(WireError::ChecksumMismatch { stated, computed });
            }
        }
        sections = rest;
    }
    let mut command: Option<Document> = None;
    let mut sequences: Vec<(String, Vec<bson::Bson>)> = Vec::new();
    let mut r = Reader::new(sections, "OP_MSG section");
    while !r.is_empty() {
        match r.u8()? {
            0 => {
                if command.is_some() {
                    return Err(WireError::SeveralBodies);
                }
                command = Some(r.document("OP_MSG body", MAX_COMMAND_SIZE)?);
            }
            1 => {
                let size = r.i32()?;
                let size =
                    usize::try_from(size)
                        .ok()
                        .filter(|s| *s >= 4)
                        .ok_or(WireError::Truncated {
                            what: "OP_MSG document sequence",
                        })?;
                let payload = r.take(size - 4, "OP_MSG document sequence")?;
                let mut seq = Reader::new(payload, "OP_MSG document sequence");
                let identifier = seq.cstring()?;
                let mut documents = Vec::new();
                while !seq.is_empty() {
                    let doc = seq.document("OP_MSG sequence document", MAX_COMMAND_SIZE)?;
                    documents.push(bson::Bson::Document(doc));
                }
                sequences.push((identifier, documents));
            }
            kind => return Err(WireError::UnknownSectionKind(kind)),
        }
    }
    let mut command = command.ok_or(WireError::MissingBody)?;
    for (identifier, documents) in sequences {
        if command.contains_key(&identifier) {
            return Err(WireError::DuplicateSequence(identifier));
        }
        command.insert(identifier, documents);
    }
    Ok(Request {
        request_id: header.request_id,
        compressor: None,
        kind: RequestKind::Msg { flags, command },
    })
}

fn parse_query(header: &Header, body: &[u8]) -> Result<Request, WireError> {
    let mut r = Reader::new(body, "OP_QUERY");
    let _flags = r.i32()?;
    let collection = r.cstring()?;
    let _skip = r.i32()?;
    let _to_return = r.i32()?;
    let mut command = r.document("OP_QUERY query", MAX_COMMAND_SIZE)?;
    if !r.is_empty() {
        // The optional field selector; commands ignore it.
        r.document("OP_QUERY field selector", MAX_COMMAND_SIZE)?;
    }
    if !r.is_empty() {
        return Err(WireError::TrailingBytes {
            what: "OP_QUERY",
            extra: r.rest().len(),
        });
    }
    // Old drivers wrap a command as `{$query: {...}, $readPreference: ...}`.
    let wrapper = match command.iter().next() {
        Some((key, bson::Bson::Document(_))) if key == "$query" || key == "query" => {
            Some(key.clone())
        }
        _ => None,
    };
    if let Some(bson::Bson::Document(mut inner)) = wrapper.and_then(|key| command.remove(&key)) {
        // The wrapper's time limit is the command's.
        if let Some(limit) = command.remove("$maxTimeMS")
            && !inner.contains_key("maxTimeMS")
        {
            inner.insert("maxTimeMS", limit);
        }
        command = inner;
    }
    Ok(Request {
        request_id: header.request_id,
        compressor: None,
        kind: RequestKind::Query {
            collection,
            command,
        },
    })
}

/// An `OP_MSG` reply holding `body`, compressed with `compressor` when given.
pub fn encode_msg(
    request_id: i32,
    response_to: i32,
    body: &RawDocument,
    flags: u32,
    compressor: Option<Compressor>,
) -> Vec<u8> {
    let mut payload = Vec::with_capacity(5 + body.as_bytes().len());
    payload.extend_from_slice(&flags.to_le_bytes());
    payload.push(0);
    payload.extend_from_slice(body.as_bytes());
    frame(request_id, response_to, OP_MSG, payload, compressor)
}

/// An `OP_REPLY` holding one document, the answer to a legacy `OP_QUERY` command.
pub fn encode_reply(
    request_id: i32,
    response_to: i32,
    body: &RawDocument,
    compressor: Option<Compressor>,
) -> Vec<u8> {
    let mut payload = Vec::with_capacity(20 + body.as_bytes().len());
    // responseFlags: AwaitCapable (8), as MongoDB sets it.
    payload.extend_from_slice(&8i32.to_le_bytes());
    payload.extend_from_slice(&0i64.to_le_bytes()); // cursorID
    payload.extend_from_slice(&0i32.to_le_bytes()); // startingFrom
    payload.extend_from_slice(&1i32.to_le_bytes()); // numberReturned
    payload.extend_from_slice(body.as_bytes());
    frame(request_id, response_to, OP_REPLY, payload, compressor)
}

fn frame(
    request_id: i32,
    response_to: i32,
    op_code: i32,
    payload: Vec<u8>,
    compressor: Option<Compressor>,
) -> Vec<u8> {
    let (op_code, payload) = match compressor {
        Some(c) if c != Compressor::Noop => {
            let compressed = c.compress(&payload);
            let mut wrapped = Vec::with_capacity(9 + compressed.len());
            wrapped.extend_from_slice(&op_code.to_le_bytes());
            wrapped.extend_from_slice(&(payload.len() as i32).to_le_bytes());
            wrapped.push(c.id());
            wrapped.extend_from_slice(&compressed);
            (OP_COMPRESSED, wrapped)
        }
        _ => (op_code, payload),
    };
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    Header {
        length: (HEADER_LEN + payload.len()) as i32,
        request_id,
        response_to,
        op_code,
    }
    .write(&mut out);
    out.extend_from_slice(&payload);
    out
}

/// CRC-32C (Castagnoli), the `OP_MSG` checksum.
pub const CRC32C: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

/// Appends the checksum to an encoded `OP_MSG` and sets its flag (for clients and tests; the
/// server sends no checksums).
pub fn add_checksum(message: &mut Vec<u8>) {
    let flags_at = HEADER_LEN;
    let flags = u32::from_le_bytes(message[flags_at..flags_at + 4].try_into().expect("4 bytes"))
        | CHECKSUM_PRESENT;
    message[flags_at..flags_at + 4].copy_from_slice(&flags.to_le_bytes());
    let length = (message.len() + 4) as i32;
    message[..4].copy_from_slice(&length.to_le_bytes());
    let sum = CRC32C.checksum(message);
    message.extend_from_slice(&sum.to_le_bytes());
}

/// A cursor over a message's bytes whose every read checks what is left.
struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader { bytes, what }
    }

    fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if n > self.bytes.len() {
            return Err(WireError::Truncated { what });
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let what = self.what;
        Ok(self.take(N, what)?.try_into().expect("length checked"))
    }

    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.array::<1>()?[0])
    }

    fn i32(&mut self) -> Result<i32, WireError> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn cstring(&mut self) -> Result<String, WireError> {
        let what = self.what;
        let end = self
            .bytes
            .iter()
            .position(|b| *b == 0)
            .ok_or(WireError::BadCString { what })?;
        let s =
            std::str::from_utf8(&self.bytes[..end]).map_err(|_| WireError::BadCString { what })?;
        let s = s.to_owned();
        self.bytes = &self.bytes[end + 1..];
        Ok(s)
    }

    /// A BSON document: its stated length checked against what is left and `max`, then every
    /// element validated while converting.
    fn document(&mut self, what: &'static str, max: usize) -> Result<Document, WireError> {
        if self.bytes.len() < 4 {
            return Err(WireError::Truncated { what });
        }
        let stated = i32::from_le_bytes(self.bytes[..4].try_into().expect("4 bytes"));
        let size = usize::try_from(stated)
            .ok()
            .filter(|s| *s >= 5)
            .ok_or_else(|| WireError::BadDocument {
                what,
                reason: format!("stated length {stated}"),
            })?;
        if size > max {
            return Err(WireError::DocumentTooLarge { what, size, max });
        }
        let bytes = self.take(size, what)?;
        let raw = RawDocument::from_bytes(bytes).map_err(|e| WireError::BadDocument {
            what,
            reason: e.to_string(),
        })?;
        document_from_raw(raw, what)
    }
}

/// Converts the raw document `what`, checking every element (and nesting within the input
/// limit, so that no later recursive walk overflows the stack).
fn document_from_raw(raw: &RawDocument, what: &'static str) -> Result<Document, WireError> {
    let bad = |reason: String| WireError::BadDocument { what, reason };
    odm_engine::check_input(raw, odm_engine::MAX_INPUT_DEPTH).map_err(|e| bad(e.to_string()))?;
    Document::try_from(raw).map_err(|e| bad(e.to_string()))
}

/// Serializes a reply body. A body that cannot be encoded (it would have to hold a value the
/// BSON crate refuses to write) becomes an `InternalError` reply rather than a dropped one.
pub fn to_raw(body: &Document) -> RawDocumentBuf {
    RawDocumentBuf::try_from(body).unwrap_or_else(|e| {
        let mut doc = RawDocumentBuf::new();
        doc.append(bson::raw::cstr!("ok"), 0.0);
        doc.append(
            bson::raw::cstr!("errmsg"),
            format!("could not encode the reply: {e}"),
        );
        doc.append(bson::raw::cstr!("code"), 1);
        doc.append(bson::raw::cstr!("codeName"), "InternalError");
        doc
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn header_of(message: &[u8]) -> Header {
        Header::parse(message[..HEADER_LEN].try_into().unwrap()).unwrap()
    }

    fn roundtrip(message: &[u8]) -> Result<Request, WireError> {
        parse(&header_of(message), &message[HEADER_LEN..])
    }

    #[test]
    fn op_msg_round_trips_with_and_without_compression() {
        let body = to_raw(&doc! {"ping": 1, "$db": "admin"});
        for compressor in [
            None,
            Some(Compressor::Noop),
            Some(Compressor::Snappy),
            Some(Compressor::Zlib),
            Some(Compressor::Zstd),
        ] {
            let message = encode_msg(7, 0, &body, 0, compressor);
            let request = roundtrip(&message).unwrap();
            assert_eq!(request.request_id, 7);
            assert_eq!(
                request.kind,
                RequestKind::Msg {
                    flags: 0,
                    command: doc! {"ping": 1, "$db": "admin"}
                }
            );
        }
    }

    #[test]
    fn document_sequences_become_array_fields() {
        let mut payload = Vec::new();
        payload.extend_from_slice(&0u32.to_le_bytes());
        payload.push(0);
        payload.extend_from_slice(to_raw(&doc! {"insert": "c", "$db": "d"}).as_bytes());
        let docs = [to_raw(&doc! {"_id": 1}), to_raw(&doc! {"_id": 2})];
        let mut seq = b"documents\0".to_vec();
        for d in &docs {
            seq.extend_from_slice(d.as_bytes());
        }
        payload.push(1);
        payload.extend_from_slice(&((seq.len() + 4) as i32).to_le_bytes());
        payload.extend_from_slice(&seq);
        let message = frame(1, 0, OP_MSG, payload, None);
        let RequestKind::Msg { command, .. } = roundtrip(&message).unwrap().kind else {
            panic!("an OP_MSG")
        };
        assert_eq!(
            command,
            doc! {"insert": "c", "$db": "d", "documents": [{"_id": 1}, {"_id": 2}]}
        );
    }

    #[test]
    fn checksums_are_verified() {
        let mut message = encode_msg(1, 0, &to_raw(&doc! {"ping": 1}), 0, None);
        add_checksum(&mut message);
        assert!(roundtrip(&message).is_ok());
        let at = message.len() - 6;
        message[at] ^= 1;
        assert!(matches!(
            roundtrip(&message),
            Err(WireError::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn unknown_required_flags_and_sections_are_refused() {
        let mut message = encode_msg(1, 0, &to_raw(&doc! {"ping": 1}), 1 << 5, None);
        assert_eq!(roundtrip(&message), Err(WireError::UnknownFlags(1 << 5)));
        // An unknown optional flag (high bits) is ignored.
        message = encode_msg(1, 0, &to_raw(&doc! {"ping": 1}), 1 << 20, None);
        assert!(roundtrip(&message).is_ok());
        message[HEADER_LEN + 4] = 7;
        assert_eq!(roundtrip(&message), Err(WireError::UnknownSectionKind(7)));
    }

    #[test]
    fn lengths_are_checked_before_use() {
        let mut bytes = [0u8; HEADER_LEN];
        bytes[..4].copy_from_slice(&(MAX_MESSAGE_SIZE as i32 + 1).to_le_bytes());
        assert!(matches!(
            Header::parse(&bytes),
            Err(WireError::BadLength { .. })
        ));
        bytes[..4].copy_from_slice(&(-5i32).to_le_bytes());
        assert!(matches!(
            Header::parse(&bytes),
            Err(WireError::BadLength { .. })
        ));
        // A body document claiming more bytes than the message has.
        let mut message = encode_msg(1, 0, &to_raw(&doc! {"ping": 1}), 0, None);
        message[HEADER_LEN + 5..HEADER_LEN + 9].copy_from_slice(&1000i32.to_le_bytes());
        assert!(matches!(
            roundtrip(&message),
            Err(WireError::Truncated { .. })
        ));
    }

    #[test]
    fn legacy_query_commands_are_unwrapped() {
        let mut payload = Vec::new();
        payload.extend_from_slice(&0i32.to_le_bytes());
        payload.extend_from_slice(b"admin.$cmd\0");
        payload.extend_from_slice(&0i32.to_le_bytes());
        payload.extend_from_slice(&(-1i32).to_le_bytes());
        payload.extend_from_slice(
            to_raw(&doc! {"$query": {"isMaster": 1}, "$readPreference": {"mode": "primary"}})
                .as_bytes(),
        );
        let message = frame(3, 0, OP_QUERY, payload, None);
        assert_eq!(
            roundtrip(&message).unwrap().kind,
            RequestKind::Query {
                collection: "admin.$cmd".into(),
                command: doc! {"isMaster": 1}
            }
        );
    }

    #[test]
    fn a_legacy_wrappers_time_limit_becomes_the_commands() {
        let query = |wrapped: Document| {
            let mut payload = Vec::new();
            payload.extend_from_slice(&0i32.to_le_bytes());
            payload.extend_from_slice(b"db.$cmd\0");
            payload.extend_from_slice(&0i32.to_le_bytes());
            payload.extend_from_slice(&(-1i32).to_le_bytes());
            payload.extend_from_slice(to_raw(&wrapped).as_bytes());
            match roundtrip(&frame(3, 0, OP_QUERY, payload, None))
                .unwrap()
                .kind
            {
                RequestKind::Query { command, .. } => command,
                RequestKind::Msg { .. } => panic!("an OP_QUERY"),
            }
        };
        assert_eq!(
            query(doc! {"$query": {"count": "c"}, "$maxTimeMS": 5}),
            doc! {"count": "c", "maxTimeMS": 5}
        );
        assert_eq!(
            query(doc! {"$query": {"count": "c", "maxTimeMS": 7}, "$maxTimeMS": 5}),
            doc! {"count": "c", "maxTimeMS": 7},
            "the command's own wins"
        );
    }
}
