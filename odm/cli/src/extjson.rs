//! MongoDB Extended JSON, read and written as `mongoimport` and `mongoexport` do.
//!
//! Writing: version 2, relaxed (plain JSON numbers and ISO dates where they lose nothing) or
//! canonical (every value typed, so that every BSON value survives a round trip exactly; NaN
//! is one value in Extended JSON, so a NaN's sign and payload bits are not kept).
//!
//! Reading takes all of these, in any mix: canonical and relaxed v2; the legacy `$`-forms
//! (`{"$date": <millis>}`, `{"$binary": "..", "$type": ".."}`, `{"$regex": .., "$options": ..}`,
//! `{"$numberLong": <number>}`); and the shell's forms that `mongoexport` once wrote and
//! `mongoimport` still reads (`ObjectId("..")`, `ISODate("..")`, `new Date(..)`, `NumberLong(..)`,
//! `NumberInt(..)`, `NumberDecimal(..)`, `BinData(t, "..")`, `UUID("..")`, `Timestamp(t, i)`,
//! `DBRef("c", id)`, `MinKey`, `MaxKey`, `undefined`, `/pattern/flags`, single-quoted strings
//! and unquoted keys). A `$`-object whose keys are exactly a wrapper's is converted, and an
//! invalid one is an error; any other `$`-object (a query operator) stays a document.
//!
//! Written by hand: `serde_json` reads none of the shell forms, and its maps lose key order
//! unless a crate-wide feature changes them for every user of the crate.
//!
//! Errors carry the line and column of the offending character.

use bson::spec::BinarySubtype;
use bson::{
    Binary, Bson, DateTime, Decimal128, Document, JavaScriptCodeWithScope, Regex, Timestamp,
    oid::ObjectId,
};

use std::fmt::Write as _;

use base64::Engine as _;

use super::clock;

/// How values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Plain JSON numbers, ISO dates: readable, but a double with an integral value reads back
    /// as a double only because it is written with a `.0`, and the integer widths are not kept.
    #[default]
    Relaxed,
    /// Every number and date typed: every BSON value survives a round trip exactly.
    Canonical,
}

/// Writes one value.
pub fn write(out: &mut String, value: &Bson, format: Format) {
    Writer {
        out,
        format,
        indent: None,
    }
    .value(value, 0);
}

/// One document on one line.
pub fn to_line(doc: &Document, format: Format) -> String {
    let mut out = String::new();
    Writer {
        out: &mut out,
        format,
        indent: None,
    }
    .document(doc, 0);
    out
}

/// One document, indented by two spaces a level.
pub fn to_pretty(doc: &Document, format: Format) -> String {
    let mut out = String::new();
    Writer {
        out: &mut out,
        format,
        indent: Some(2),
    }
    .document(doc, 0);
    out
}

struct Writer<'a> {
    out: &'a mut String,
    format: Format,
    indent: Option<usize>,
}

impl Writer<'_> {
    fn newline(&mut self, level: usize) {
        if let Some(step) = self.indent {
            self.out.push('\n');
            for _ in 0..step * level {
                self.out.push(' ');
            }
        }
    }

    fn separator(&mut self) {
        self.out.push(':');
        if self.indent.is_some() {
            self.out.push(' ');
        }
    }

    fn document(&mut self, doc: &Document, level: usize) {
        if doc.is_empty() {
            self.out.push_str("{}");
            return;
        }
        self.out.push('{');
        for (i, (key, value)) in doc.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.newline(level + 1);
            string(self.out, key);
            self.separator();
            self.value(value, level + 1);
        }
        self.newline(level);
        self.out.push('}');
    }

    fn array(&mut self, items: &[Bson], level: usize) {
        if items.is_empty() {
            self.out.push_str("[]");
            return;
        }
        self.out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.newline(level + 1);
            self.value(item, level + 1);
        }
        self.newline(level);
        self.out.push(']');
    }

    /// `{"$key": <inner>}`, written on one line whatever the indentation.
    fn wrapped(&mut self, key: &str, inner: impl FnOnce(&mut String)) {
        self.out.push_str("{\"");
        self.out.push_str(key);
        self.out.push_str("\":");
        inner(self.out);
        self.out.push('}');
    }

    fn value(&mut self, value: &Bson, level: usize) {
        let canonical = self.format == Format::Canonical;
        match value {
            Bson::Document(d) => self.document(d, level),
            Bson::Array(a) => self.array(a, level),
            Bson::String(s) => string(self.out, s),
            Bson::Boolean(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Bson::Null => self.out.push_str("null"),
            Bson::Int32(i) if canonical => {
                self.wrapped("$numberInt", |o| string(o, &i.to_string()));
            }
            Bson::Int32(i) => self.out.push_str(&i.to_string()),
            Bson::Int64(i) if canonical => {
                self.wrapped("$numberLong", |o| string(o, &i.to_string()));
            }
            Bson::Int64(i) => self.out.push_str(&i.to_string()),
            Bson::Double(f) if canonical || !f.is_finite() => {
                self.wrapped("$numberDouble", |o| string(o, &double_text(*f)));
            }
            Bson::Double(f) => self.out.push_str(&double_text(*f)),
            Bson::Decimal128(d) => self.wrapped("$numberDecimal", |o| string(o, &d.to_string())),
            Bson::ObjectId(id) => self.wrapped("$oid", |o| string(o, &id.to_hex())),
            Bson::DateTime(d) => {
                let ms = d.timestamp_millis();
                // Relaxed mode writes ISO text for years 1970 to 9999, as the specification
                // says; other dates, and every date in canonical mode, as milliseconds.
                if !canonical && (0..253_402_300_800_000).contains(&ms) {
                    self.wrapped("$date", |o| {
                        string(o, &odm_engine::calendar::iso_string(ms));
                    });
                } else {
                    self.wrapped("$date", |o| {
                        o.push_str("{\"$numberLong\":");
                        string(o, &ms.to_string());
                        o.push('}');
                    });
                }
            }
            Bson::Binary(b) => self.wrapped("$binary", |o| {
                o.push_str("{\"base64\":");
                string(
                    o,
                    &base64::engine::general_purpose::STANDARD.encode(&b.bytes),
                );
                o.push_str(",\"subType\":");
                string(o, &format!("{:02x}", u8::from(b.subtype)));
                o.push('}');
            }),
            Bson::RegularExpression(r) => self.wrapped("$regularExpression", |o| {
                let mut options: Vec<char> = r.options.as_str().chars().collect();
                options.sort_unstable();
                o.push_str("{\"pattern\":");
                string(o, r.pattern.as_str());
                o.push_str(",\"options\":");
                string(o, &options.into_iter().collect::<String>());
                o.push('}');
            }),
            Bson::Timestamp(t) => self.wrapped("$timestamp", |o| {
                let _ = write!(o, "{{\"t\":{},\"i\":{}}}", t.time, t.increment);
            }),
            Bson::Symbol(s) => self.wrapped("$symbol", |o| string(o, s)),
            Bson::JavaScriptCode(code) => self.wrapped("$code", |o| string(o, code)),
            Bson::JavaScriptCodeWithScope(c) => {
                self.out.push_str("{\"$code\":");
                string(self.out, &c.code);
                self.out.push_str(",\"$scope\":");
                let indent = self.indent.take();
                self.document(&c.scope, level);
                self.indent = indent;
                self.out.push('}');
            }
            Bson::MinKey => self.out.push_str("{\"$minKey\":1}"),
            Bson::MaxKey => self.out.push_str("{\"$maxKey\":1}"),
            Bson::Undefined => self.out.push_str("{\"$undefined\":true}"),
            Bson::DbPointer(p) => {
                // The bson crate keeps a pointer's fields private; its own Extended JSON has
                // them.
                let text = Bson::DbPointer(p.clone())
                    .into_canonical_extjson()
                    .to_string();
                self.out.push_str(&text);
            }
        }
    }
}

/// A double as text that reads back as the same double: Rust's shortest round-trip form,
/// which keeps a `.0` on integral values; `Infinity`, `-Infinity` and `NaN` otherwise.
fn double_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_owned()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else {
        format!("{f:?}")
    }
}

/// A JSON string literal (the engine's, which the server's log writes too).
pub use odm_engine::json::string;

/// Why text did not read as Extended JSON, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct ParseError {
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
    /// The text ended inside a value (more lines may complete it).
    pub at_end: bool,
}

/// Reads one document from the whole of `text`.
pub fn parse_document(text: &str) -> Result<Document, ParseError> {
    let mut parser = Parser::new(text);
    let doc = parser.document()?;
    parser.skip_space();
    if !parser.at_end() {
        return Err(parser.error("unexpected text after the document"));
    }
    Ok(doc)
}

/// Reads one value (a document, an array, ...) from the whole of `text`.
pub fn parse_value(text: &str) -> Result<Bson, ParseError> {
    let mut parser = Parser::new(text);
    let value = parser.value(0)?;
    parser.skip_space();
    if !parser.at_end() {
        return Err(parser.error("unexpected text after the value"));
    }
    Ok(value)
}

/// Nesting deeper than this is refused (BSON's own limit is 100 levels of documents).
const MAX_DEPTH: usize = 200;

/// A reader over text holding one or more values.
#[derive(Debug)]
pub struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    pub fn new(text: &'a str) -> Parser<'a> {
        Parser { text, pos: 0 }
    }

    /// A reader starting at byte `pos` of `text` (positions in errors count from the start).
    pub fn at(text: &'a str, pos: usize) -> Parser<'a> {
        Parser {
            text,
            pos: floor_char(text, pos.min(text.len())),
        }
    }

    /// Consumes `byte` when it comes next.
    pub fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// The byte offset reached.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// An error at the current position.
    pub fn error(&self, message: impl Into<String>) -> ParseError {
        self.error_at(self.pos, message)
    }

    fn error_at(&self, pos: usize, message: impl Into<String>) -> ParseError {
        let pos = pos.min(self.text.len());
        let before = &self.text[..floor_char(self.text, pos)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        ParseError {
            line,
            column: before[line_start..].chars().count() + 1,
            message: message.into(),
            at_end: pos >= self.text.len(),
        }
    }

    /// Skips white space (and a byte-order mark at the start).
    pub fn skip_space(&mut self) {
        if self.pos == 0 && self.text.starts_with('\u{feff}') {
            self.pos = 3;
        }
        while let Some(b) = self.peek() {
            if b.is_ascii_whitespace() {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), ParseError> {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(what))
        }
    }

    fn unexpected(&self, expected: &str) -> ParseError {
        match self.text[self.pos.min(self.text.len())..].chars().next() {
            None => self.error(format!("the text ends where {expected} was expected")),
            Some(c) => self.error(format!("found `{c}` where {expected} was expected")),
        }
    }

    /// The next value, which must be a document.
    pub fn document(&mut self) -> Result<Document, ParseError> {
        self.skip_space();
        let start = self.pos;
        match self.value(0)? {
            Bson::Document(d) => Ok(d),
            other => Err(self.error_at(
                start,
                format!("expected a document, found {}", type_name(&other)),
            )),
        }
    }

    /// The next value.
    pub fn value(&mut self, depth: usize) -> Result<Bson, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nested more than {MAX_DEPTH} levels deep")));
        }
        self.skip_space();
        let start = self.pos;
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                let doc = self.members(depth)?;
                convert_wrapper(doc).map_err(|e| self.error_at(start, e.to_string()))
            }
            Some(b'[') => {
                self.pos += 1;
                self.items(depth).map(Bson::Array)
            }
            Some(b'"' | b'\'') => self.string().map(Bson::String),
            Some(b'/') => self.regex(),
            Some(b'-' | b'+' | b'.' | b'0'..=b'9') => self.number(),
            Some(b) if b.is_ascii_alphabetic() || b == b'_' || b == b'$' => self.word(depth),
            None | Some(_) => Err(self.unexpected("a value")),
        }
    }

    fn members(&mut self, depth: usize) -> Result<Document, ParseError> {
        let mut doc = Document::new();
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(doc);
        }
        loop {
            self.skip_space();
            let key = match self.peek() {
                Some(b'"' | b'\'') => self.string()?,
                Some(b) if b.is_ascii_alphabetic() || b == b'_' || b == b'$' => {
                    self.identifier().to_owned()
                }
                _ => return Err(self.unexpected("a field name")),
            };
            self.expect(b':', "`:`")?;
            let value = self.value(depth + 1)?;
            doc.insert(key, value);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(doc);
                }
                _ => return Err(self.unexpected("`,` or `}`")),
            }
        }
    }

    fn items(&mut self, depth: usize) -> Result<Vec<Bson>, ParseError> {
        let mut items = Vec::new();
        self.skip_space();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(items);
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(items);
                }
                _ => return Err(self.unexpected("`,` or `]`")),
            }
        }
    }

    fn identifier(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(b) = self.peek() {
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'$' {
                self.pos += 1;
            } else {
                break;
            }
        }
        &self.text[start..self.pos]
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let quote = self.peek().unwrap_or(b'"');
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            let Some(c) = rest.chars().next() else {
                return Err(self.error_at(start, "a string is not closed"));
            };
            self.pos += c.len_utf8();
            match c {
                c if c as u32 == u32::from(quote) => return Ok(out),
                '\\' => {
                    let Some(e) = self.text[self.pos..].chars().next() else {
                        return Err(self.error_at(start, "a string is not closed"));
                    };
                    self.pos += e.len_utf8();
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'u' => out.push(self.unicode_escape()?),
                        '"' | '\'' | '\\' | '/' => out.push(e),
                        other => {
                            return Err(
                                self.error(format!("`\\{other}` is not an escape sequence"))
                            );
                        }
                    }
                }
                c if (c as u32) < 0x20 && c != '\t' => {
                    return Err(self.error_at(
                        self.pos - 1,
                        "a control character inside a string must be escaped",
                    ));
                }
                c => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let digits = self.text.get(self.pos..self.pos + 4).unwrap_or("");
        let value = u32::from_str_radix(digits, 16)
            .ok()
            .filter(|_| digits.len() == 4 && digits.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("`\\u` needs four hexadecimal digits"))?;
        self.pos += 4;
        Ok(value)
    }

    fn unicode_escape(&mut self) -> Result<char, ParseError> {
        let first = self.hex4()?;
        let code = if (0xd800..0xdc00).contains(&first) {
            if !self.text[self.pos..].starts_with("\\u") {
                return Err(self.error("a high surrogate must be followed by a low one"));
            }
            self.pos += 2;
            let second = self.hex4()?;
            if !(0xdc00..0xe000).contains(&second) {
                return Err(self.error("a high surrogate must be followed by a low one"));
            }
            0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00)
        } else {
            first
        };
        char::from_u32(code).ok_or_else(|| self.error("a lone surrogate is not a character"))
    }

    fn regex(&mut self) -> Result<Bson, ParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut pattern = String::new();
        loop {
            let Some(c) = self.text[self.pos..].chars().next() else {
                return Err(self.error_at(start, "a regular expression is not closed"));
            };
            self.pos += c.len_utf8();
            match c {
                '/' => break,
                '\\' if self.text[self.pos..].starts_with('/') => {
                    pattern.push('/');
                    self.pos += 1;
                }
                '\n' => return Err(self.error_at(start, "a regular expression is not closed")),
                c => pattern.push(c),
            }
        }
        let flags = self.identifier();
        regex(&pattern, flags).map_err(|e| self.error_at(start, e.to_string()))
    }

    fn number(&mut self) -> Result<Bson, ParseError> {
        let start = self.pos;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.pos += 1;
        }
        if self.text[self.pos..].starts_with("Infinity") {
            self.pos += "Infinity".len();
            let negative = self.text.as_bytes()[start] == b'-';
            return Ok(Bson::Double(if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }));
        }
        while let Some(b) = self.peek() {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-') {
                self.pos += 1;
            } else {
                break;
            }
        }
        let text = &self.text[start..self.pos];
        number(text).ok_or_else(|| self.error_at(start, format!("`{text}` is not a number")))
    }

    /// A keyword or a shell constructor.
    fn word(&mut self, depth: usize) -> Result<Bson, ParseError> {
        let start = self.pos;
        let mut word = self.identifier();
        if word == "new" {
            self.skip_space();
            word = self.identifier();
        }
        match word {
            "true" => return Ok(Bson::Boolean(true)),
            "false" => return Ok(Bson::Boolean(false)),
            "null" => return Ok(Bson::Null),
            "undefined" => return Ok(Bson::Undefined),
            "NaN" => return Ok(Bson::Double(f64::NAN)),
            "Infinity" => return Ok(Bson::Double(f64::INFINITY)),
            "MinKey" | "MaxKey" => {
                // `MinKey` and `MinKey()` both.
                self.skip_space();
                if self.peek() == Some(b'(') {
                    self.pos += 1;
                    self.expect(b')', "`)`")?;
                }
                return Ok(if word == "MinKey" {
                    Bson::MinKey
                } else {
                    Bson::MaxKey
                });
            }
            _ => {}
        }
        self.skip_space();
        if self.peek() != Some(b'(') {
            return Err(self.error_at(start, format!("`{word}` is not a value")));
        }
        self.pos += 1;
        let mut args = Vec::new();
        self.skip_space();
        if self.peek() == Some(b')') {
            self.pos += 1;
        } else {
            loop {
                args.push(self.value(depth + 1)?);
                self.skip_space();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b')') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.unexpected("`,` or `)`")),
                }
            }
        }
        constructor(word, args).map_err(|e| self.error_at(start, e.to_string()))
    }
}

/// The largest char boundary at or before `pos`.
fn floor_char(text: &str, mut pos: usize) -> usize {
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

/// A JSON number: an integer is an Int32 when it fits, else an Int64, else a double; a
/// fraction or an exponent makes a double. Hexadecimal integers (`0x1f`) as the shell reads
/// them.
fn number(text: &str) -> Option<Bson> {
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        let v = i64::from_str_radix(hex, 16).ok()?;
        return Some(integer(if negative { -v } else { v }));
    }
    if digits.is_empty()
        || !digits
            .bytes()
            .all(|b| b.is_ascii_digit() || b"eE.+-".contains(&b))
    {
        return None;
    }
    if digits.bytes().all(|b| b.is_ascii_digit())
        && let Ok(v) = text.trim_start_matches('+').parse::<i64>()
    {
        return Some(integer(v));
    }
    text.trim_start_matches('+')
        .parse::<f64>()
        .ok()
        .map(Bson::Double)
}

fn integer(v: i64) -> Bson {
    i32::try_from(v).map_or(Bson::Int64(v), Bson::Int32)
}

/// Why a shell constructor, a regular expression literal or an Extended JSON wrapper does not
/// make a value; the message a [`ParseError`] carries at the value's start.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    #[error("`{0}` is not a regular expression option")]
    RegexOption(char),
    #[error("a regular expression cannot contain a NUL character")]
    NulInRegex,
    #[error("`{constructor}` takes {takes} argument(s), found {found}")]
    Arity {
        constructor: String,
        takes: usize,
        found: usize,
    },
    /// A constructor's arguments are not of the kinds it takes (`what`).
    #[error("`{constructor}` takes {what}")]
    Arguments {
        constructor: String,
        what: &'static str,
    },
    #[error("`{0}(...)` is not a value this reader knows")]
    UnknownConstructor(String),
    #[error("{0} does not fit in `NumberInt`")]
    NotAnInt(i64),
    #[error("a `DBRef` database name is a string")]
    DbRefDatabase,
    #[error("`{0}` is not an ObjectId (24 hexadecimal digits)")]
    NotAnObjectId(String),
    #[error("an ObjectId is written as 24 hexadecimal digits in a string")]
    ObjectIdNotText,
    #[error("`{0}` is not a decimal number")]
    NotADecimal(String),
    #[error("binary data is not base64: {0}")]
    NotBase64(base64::DecodeError),
    #[error("`{0}` is not a UUID")]
    NotAUuid(String),
    #[error("invalid DBPointer: {0}")]
    Pointer(bson::error::Error),
    /// A wrapper's field (named, in backquotes) that must be a string.
    #[error("{0} must be a string")]
    NotAString(&'static str),
    #[error("`{0}` is not a 32-bit integer")]
    NotInt32(String),
    #[error("`{0}` is not a 64-bit integer")]
    NotInt64(String),
    #[error("`$numberLong` must be a string of digits")]
    NumberLongNotDigits,
    #[error("`{0}` is not a double")]
    NotADouble(String),
    #[error(transparent)]
    Date(#[from] clock::IsoDateError),
    #[error("`$date` must be an ISO-8601 string or milliseconds")]
    DateNotIsoOrMillis,
    #[error("`$scope` must be a document")]
    ScopeNotDocument,
    #[error("`$minKey` and `$maxKey` hold 1")]
    KeyBound,
    #[error("`$undefined` holds true")]
    Undefined,
    /// A wrapper whose inner document lacks the fields it must hold (`holds`).
    #[error("`{wrapper}` must hold {holds}")]
    Shape {
        wrapper: &'static str,
        holds: &'static str,
    },
    #[error("`{0}` is not a binary subtype (one byte in hexadecimal)")]
    NotASubtype(String),
}

fn takes(constructor: &str, what: &'static str) -> ValueError {
    ValueError::Arguments {
        constructor: constructor.to_owned(),
        what,
    }
}

fn shape(wrapper: &'static str, holds: &'static str) -> ValueError {
    ValueError::Shape { wrapper, holds }
}

fn regex(pattern: &str, options: &str) -> Result<Bson, ValueError> {
    if let Some(bad) = options.chars().find(|c| !"imxslu".contains(*c)) {
        return Err(ValueError::RegexOption(bad));
    }
    if pattern.contains('\0') || options.contains('\0') {
        return Err(ValueError::NulInRegex);
    }
    let mut sorted: Vec<char> = options.chars().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let options: String = sorted.into_iter().collect();
    // NULs were refused above, so both convert.
    match (pattern.to_owned().try_into(), options.try_into()) {
        (Ok(pattern), Ok(options)) => Ok(Bson::RegularExpression(Regex { pattern, options })),
        _ => Err(ValueError::NulInRegex),
    }
}

fn type_name(value: &Bson) -> &'static str {
    match value {
        Bson::Document(_) => "a document",
        Bson::Array(_) => "an array",
        Bson::String(_) => "a string",
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => "a number",
        Bson::Boolean(_) => "a boolean",
        Bson::Null => "null",
        _ => "a value of another type",
    }
}

/// A shell constructor, `ObjectId("...")` and its kin.
fn constructor(name: &str, args: Vec<Bson>) -> Result<Bson, ValueError> {
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(ValueError::Arity {
                constructor: name.to_owned(),
                takes: n,
                found: args.len(),
            })
        }
    };
    match name {
        "ObjectId" => {
            arity(1)?;
            oid(&args[0])
        }
        "Date" | "ISODate" => date_constructor(name, &args),
        "NumberLong" | "NumberInt" => {
            arity(1)?;
            number_constructor(name, &args[0])
        }
        "NumberDecimal" => {
            arity(1)?;
            decimal_constructor(&args[0])
        }
        "BinData" => {
            arity(2)?;
            bin_data(&args[0], &args[1])
        }
        "UUID" => {
            arity(1)?;
            let Bson::String(s) = &args[0] else {
                return Err(takes("UUID", "a string"));
            };
            uuid(s)
        }
        "Timestamp" => {
            arity(2)?;
            let part = |v: &Bson| integral(v).and_then(|v| u32::try_from(v).ok());
            match (part(&args[0]), part(&args[1])) {
                (Some(time), Some(increment)) => Ok(Bson::Timestamp(Timestamp { time, increment })),
                _ => Err(takes("Timestamp", "two unsigned 32-bit integers")),
            }
        }
        "RegExp" => match args.as_slice() {
            [Bson::String(p)] => regex(p, ""),
            [Bson::String(p), Bson::String(o)] => regex(p, o),
            _ => Err(takes("RegExp", "a pattern and options")),
        },
        "DBRef" | "Dbref" => db_ref(args),
        "DBPointer" => match args.as_slice() {
            [Bson::String(ns), Bson::ObjectId(id)] => pointer(ns, *id),
            _ => Err(takes("DBPointer", "a namespace and an ObjectId")),
        },
        other => Err(ValueError::UnknownConstructor(other.to_owned())),
    }
}

/// `Date()` (now), `Date("2024-01-02T03:04:05Z")` or `Date(1704164645000)`; `ISODate` alike.
fn date_constructor(name: &str, args: &[Bson]) -> Result<Bson, ValueError> {
    match args {
        [] => Ok(Bson::DateTime(DateTime::now())),
        [Bson::String(s)] => Ok(Bson::DateTime(DateTime::from_millis(clock::parse_iso(s)?))),
        [n] => integral(n)
            .map(|ms| Bson::DateTime(DateTime::from_millis(ms)))
            .ok_or_else(|| takes(name, "a date string or milliseconds")),
        _ => Err(takes(name, "one argument")),
    }
}

/// `NumberLong(...)` or `NumberInt(...)` of an integer or its digits in a string.
fn number_constructor(name: &str, arg: &Bson) -> Result<Bson, ValueError> {
    let v = match arg {
        Bson::String(s) => s.trim().parse::<i64>().ok(),
        other => integral(other),
    }
    .ok_or_else(|| takes(name, "an integer"))?;
    if name == "NumberLong" {
        Ok(Bson::Int64(v))
    } else {
        i32::try_from(v)
            .map(Bson::Int32)
            .map_err(|_| ValueError::NotAnInt(v))
    }
}

/// `NumberDecimal("1.5")`, or of a number as written.
fn decimal_constructor(arg: &Bson) -> Result<Bson, ValueError> {
    let text = match arg {
        Bson::String(s) => s.clone(),
        Bson::Int32(i) => i.to_string(),
        Bson::Int64(i) => i.to_string(),
        Bson::Double(f) => f.to_string(),
        _ => return Err(takes("NumberDecimal", "a string")),
    };
    decimal(&text)
}

/// `BinData(subtype, "base64")`.
fn bin_data(subtype: &Bson, data: &Bson) -> Result<Bson, ValueError> {
    let subtype = integral(subtype)
        .and_then(|t| u8::try_from(t).ok())
        .ok_or_else(|| takes("BinData", "a subtype from 0 to 255"))?;
    let Bson::String(data) = data else {
        return Err(takes("BinData", "base64 text"));
    };
    binary(data, subtype)
}

/// `DBRef("collection", id)` or `DBRef("collection", id, "db")`: the `{$ref, $id, $db}`
/// document.
fn db_ref(args: Vec<Bson>) -> Result<Bson, ValueError> {
    let mut args = args.into_iter();
    match (args.next(), args.next(), args.next(), args.next()) {
        (Some(Bson::String(collection)), Some(id), db, None) => {
            let mut doc = bson::doc! {"$ref": collection, "$id": id};
            match db {
                Some(Bson::String(db)) => {
                    doc.insert("$db", db);
                }
                None => {}
                Some(_) => return Err(ValueError::DbRefDatabase),
            }
            Ok(Bson::Document(doc))
        }
        _ => Err(takes("DBRef", "a collection name and an id")),
    }
}

fn integral(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(f) if f.fract() == 0.0 && f.abs() < 9.3e18 => Some(*f as i64),
        _ => None,
    }
}

fn oid(v: &Bson) -> Result<Bson, ValueError> {
    match v {
        Bson::String(s) => ObjectId::parse_str(s)
            .map(Bson::ObjectId)
            .map_err(|_| ValueError::NotAnObjectId(s.clone())),
        _ => Err(ValueError::ObjectIdNotText),
    }
}

fn decimal(text: &str) -> Result<Bson, ValueError> {
    text.parse::<Decimal128>()
        .map(Bson::Decimal128)
        .map_err(|_| ValueError::NotADecimal(text.to_owned()))
}

fn binary(base64_text: &str, subtype: u8) -> Result<Bson, ValueError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64_text)
        .map_err(ValueError::NotBase64)?;
    Ok(Bson::Binary(Binary {
        subtype: BinarySubtype::from(subtype),
        bytes,
    }))
}

fn uuid(text: &str) -> Result<Bson, ValueError> {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    let bytes = (hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| {
            (0..16)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .ok()
        })
        .flatten()
        .ok_or_else(|| ValueError::NotAUuid(text.to_owned()))?;
    Ok(Bson::Binary(Binary {
        subtype: BinarySubtype::Uuid,
        bytes,
    }))
}

fn pointer(namespace: &str, id: ObjectId) -> Result<Bson, ValueError> {
    // The bson crate builds a pointer only from its own Extended JSON.
    let json = serde_json::json!({"$dbPointer": {"$ref": namespace, "$id": {"$oid": id.to_hex()}}});
    Bson::try_from(json).map_err(ValueError::Pointer)
}

fn string_of(v: &Bson, what: &'static str) -> Result<String, ValueError> {
    match v {
        Bson::String(s) => Ok(s.clone()),
        _ => Err(ValueError::NotAString(what)),
    }
}

/// Converts an object whose keys are exactly an Extended JSON wrapper's; returns any other
/// object unchanged.
fn convert_wrapper(doc: Document) -> Result<Bson, ValueError> {
    let mut keys: Vec<&str> = doc.keys().map(String::as_str).collect();
    if !keys.first().is_some_and(|k| k.starts_with('$')) {
        return Ok(Bson::Document(doc));
    }
    keys.sort_unstable();
    let get = |k: &str| doc.get(k).unwrap_or(&Bson::Null);
    match keys.as_slice() {
        ["$oid"] => oid(get("$oid")),
        ["$numberInt"] => {
            let s = string_of(get("$numberInt"), "`$numberInt`")?;
            s.parse::<i32>()
                .map(Bson::Int32)
                .map_err(|_| ValueError::NotInt32(s))
        }
        ["$numberLong"] => number_long(get("$numberLong")),
        ["$numberDouble"] => number_double(&string_of(get("$numberDouble"), "`$numberDouble`")?),
        ["$numberDecimal"] => decimal(&string_of(get("$numberDecimal"), "`$numberDecimal`")?),
        ["$date"] => date_wrapper(get("$date")),
        ["$binary"] => binary_wrapper(get("$binary")),
        ["$binary", "$type"] => {
            let data = string_of(get("$binary"), "`$binary`")?;
            let subtype = string_of(get("$type"), "`$type`")?;
            binary(&data, hex_subtype(&subtype)?)
        }
        ["$uuid"] => uuid(&string_of(get("$uuid"), "`$uuid`")?),
        ["$regularExpression"] => regular_expression(get("$regularExpression")),
        ["$options", "$regex"] => match (get("$regex"), get("$options")) {
            (Bson::String(p), Bson::String(o)) => regex(p, o),
            // A query operator (`{$regex: /a/, $options: "i"}`) stays as it is.
            _ => Ok(Bson::Document(doc)),
        },
        ["$regex"] => match get("$regex") {
            Bson::String(p) => regex(p, ""),
            _ => Ok(Bson::Document(doc)),
        },
        ["$timestamp"] => timestamp_wrapper(get("$timestamp")),
        ["$symbol"] => Ok(Bson::Symbol(string_of(get("$symbol"), "`$symbol`")?)),
        ["$code"] => Ok(Bson::JavaScriptCode(string_of(get("$code"), "`$code`")?)),
        ["$code", "$scope"] => {
            let code = string_of(get("$code"), "`$code`")?;
            let Bson::Document(scope) = get("$scope") else {
                return Err(ValueError::ScopeNotDocument);
            };
            Ok(Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code,
                scope: scope.clone(),
            }))
        }
        ["$minKey"] if integral(get("$minKey")) == Some(1) => Ok(Bson::MinKey),
        ["$maxKey"] if integral(get("$maxKey")) == Some(1) => Ok(Bson::MaxKey),
        ["$minKey" | "$maxKey"] => Err(ValueError::KeyBound),
        ["$undefined"] if get("$undefined") == &Bson::Boolean(true) => Ok(Bson::Undefined),
        ["$undefined"] => Err(ValueError::Undefined),
        ["$dbPointer"] => db_pointer(get("$dbPointer")),
        _ => Ok(Bson::Document(doc)),
    }
}

/// `{$numberLong: "42"}`, or a whole number in relaxed form.
fn number_long(value: &Bson) -> Result<Bson, ValueError> {
    match value {
        Bson::String(s) => s
            .parse::<i64>()
            .map(Bson::Int64)
            .map_err(|_| ValueError::NotInt64(s.clone())),
        other => integral(other)
            .map(Bson::Int64)
            .ok_or(ValueError::NumberLongNotDigits),
    }
}

/// `{$numberDouble: "1.5"}`, and the names of the values JSON has no numbers for.
fn number_double(text: &str) -> Result<Bson, ValueError> {
    match text {
        "Infinity" => Ok(Bson::Double(f64::INFINITY)),
        "-Infinity" => Ok(Bson::Double(f64::NEG_INFINITY)),
        "NaN" | "-NaN" => Ok(Bson::Double(f64::NAN)),
        _ => text
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Bson::Double)
            .ok_or_else(|| ValueError::NotADouble(text.to_owned())),
    }
}

/// `{$date: "2024-01-02T03:04:05Z"}`, or milliseconds since the epoch.
fn date_wrapper(value: &Bson) -> Result<Bson, ValueError> {
    let ms = match value {
        Bson::String(s) => clock::parse_iso(s)?,
        Bson::Int64(ms) => *ms,
        other => integral(other).ok_or(ValueError::DateNotIsoOrMillis)?,
    };
    Ok(Bson::DateTime(DateTime::from_millis(ms)))
}

/// `{$binary: {base64, subType}}`, the canonical form.
fn binary_wrapper(value: &Bson) -> Result<Bson, ValueError> {
    let Bson::Document(inner) = value else {
        return Err(shape("$binary", "`base64` and `subType`"));
    };
    let (Some(Bson::String(data)), Some(Bson::String(subtype)), 2) =
        (inner.get("base64"), inner.get("subType"), inner.len())
    else {
        return Err(shape("$binary", "`base64` and `subType`"));
    };
    binary(data, hex_subtype(subtype)?)
}

/// `{$regularExpression: {pattern, options}}`.
fn regular_expression(value: &Bson) -> Result<Bson, ValueError> {
    let Bson::Document(inner) = value else {
        return Err(shape("$regularExpression", "`pattern` and `options`"));
    };
    match (inner.get("pattern"), inner.get("options"), inner.len()) {
        (Some(Bson::String(p)), Some(Bson::String(o)), 2) => regex(p, o),
        _ => Err(shape("$regularExpression", "`pattern` and `options`")),
    }
}

/// `{$timestamp: {t, i}}`.
fn timestamp_wrapper(value: &Bson) -> Result<Bson, ValueError> {
    let Bson::Document(inner) = value else {
        return Err(shape("$timestamp", "`t` and `i`"));
    };
    let part = |k: &str| {
        inner
            .get(k)
            .and_then(integral)
            .and_then(|v| u32::try_from(v).ok())
    };
    match (part("t"), part("i"), inner.len()) {
        (Some(time), Some(increment), 2) => Ok(Bson::Timestamp(Timestamp { time, increment })),
        _ => Err(shape("$timestamp", "`t` and `i`, unsigned 32-bit integers")),
    }
}

/// `{$dbPointer: {$ref, $id}}`.
fn db_pointer(value: &Bson) -> Result<Bson, ValueError> {
    let Bson::Document(inner) = value else {
        return Err(shape("$dbPointer", "`$ref` and `$id`"));
    };
    match (inner.get("$ref"), inner.get("$id"), inner.len()) {
        (Some(Bson::String(ns)), Some(Bson::ObjectId(id)), 2) => pointer(ns, *id),
        _ => Err(shape("$dbPointer", "`$ref` and an ObjectId `$id`")),
    }
}

fn hex_subtype(text: &str) -> Result<u8, ValueError> {
    if text.is_empty() || text.len() > 2 {
        return Err(ValueError::NotASubtype(text.to_owned()));
    }
    u8::from_str_radix(text, 16).map_err(|_| ValueError::NotASubtype(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    /// One value of every BSON type, with the edge values of each.
    fn every_type() -> Document {
        let pointer = pointer(
            "db.coll",
            ObjectId::parse_str("5f0f1f2f3f4f5f6f7f8f9fa0").unwrap(),
        )
        .unwrap();
        doc! {
            "_id": ObjectId::parse_str("5f0f1f2f3f4f5f6f7f8f9fa0").unwrap(),
            "double": 1.0, "frac": 0.1, "neg_zero": -0.0, "big": 1e300, "tiny": 5e-324,
            "inf": f64::INFINITY, "ninf": f64::NEG_INFINITY, "nan": f64::NAN,
            "int32": i32::MIN, "int64": i64::MAX, "small64": 1_i64,
            "decimal": "1.2345678901234567890123456789012E+6144".parse::<Decimal128>().unwrap(),
            "string": "tab\t quote\" backslash\\ nul\u{0} é 𝄞 \u{7f}",
            "doc": {"nested": {"deeper": [1, {"x": null}]}, "": "empty key"},
            "array": [], "bool": true, "null": null,
            "date": DateTime::from_millis(1_700_000_000_123),
            "old_date": DateTime::from_millis(-62_135_596_800_001),
            "far_date": DateTime::from_millis(253_402_300_800_000),
            "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![0, 1, 255] },
            "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: vec![7; 16] },
            "user_binary": Binary { subtype: BinarySubtype::UserDefined(0x80), bytes: vec![] },
            "regex": Regex { pattern: "^a/b".to_owned().try_into().unwrap(), options: "imx".to_owned().try_into().unwrap() },
            "timestamp": Timestamp { time: u32::MAX, increment: 7 },
            "symbol": Bson::Symbol("sym".into()),
            "code": Bson::JavaScriptCode("function() {}".into()),
            "code_scope": JavaScriptCodeWithScope { code: "x".into(), scope: doc! {"x": 1} },
            "min": Bson::MinKey, "max": Bson::MaxKey, "undefined": Bson::Undefined,
            "pointer": pointer,
        }
    }

    /// Equal, with NaN equal to itself.
    fn same(a: &Document, b: &Document) -> bool {
        bson::RawDocumentBuf::try_from(a).unwrap() == bson::RawDocumentBuf::try_from(b).unwrap()
    }

    #[test]
    fn canonical_round_trips_every_type_exactly() {
        let doc = every_type();
        for text in [
            to_line(&doc, Format::Canonical),
            to_pretty(&doc, Format::Canonical),
        ] {
            let back = parse_document(&text).unwrap();
            assert!(same(&doc, &back), "{text}\n{back:?}");
        }
    }

    #[test]
    fn relaxed_keeps_values_but_not_integer_widths() {
        let doc = every_type();
        let text = to_line(&doc, Format::Relaxed);
        assert!(text.contains(r#""double":1.0"#), "{text}");
        assert!(
            text.contains(r#""date":{"$date":"2023-11-14T22:13:20.123Z"}"#),
            "{text}"
        );
        assert!(text.contains(r#""old_date":{"$date":{"$numberLong":"-62135596800001"}}"#));
        let back = parse_document(&text).unwrap();
        // Int64 values that fit in 32 bits come back narrower; everything else is the same.
        assert_eq!(back.get("small64"), Some(&Bson::Int32(1)));
        let mut expected = doc.clone();
        expected.insert("small64", 1);
        assert!(same(&expected, &back), "{back:?}");
    }

    #[test]
    fn legacy_and_shell_forms_read() {
        let text = r#"{
            _id: ObjectId("5f0f1f2f3f4f5f6f7f8f9fa0"), 'single': 'quoted',
            a: ISODate("2020-01-02T03:04:05.678Z"), b: new Date(1000), c: Date(0),
            d: NumberLong("9007199254740993"), e: NumberLong(5), f: NumberInt(7),
            g: NumberDecimal("1.5"), h: BinData(0, "AAE="), i: UUID("0123456789abcdef0123456789abcdef"),
            j: Timestamp(1, 2), k: /a\/b/i, l: MinKey, m: MaxKey(), n: undefined,
            o: {"$date": 86400000}, p: {"$date": "1970-01-02T00:00:00.000+0000"},
            q: {"$binary": "AAE=", "$type": "80"}, r: {"$regex": "x", "$options": "s"},
            s: {"$numberLong": 3}, t: DBRef("users", 5), u: Infinity, v: -Infinity, w: NaN,
            x: 0x1F, y: {"$uuid": "01234567-89ab-cdef-0123-456789abcdef"}
        }"#;
        let doc = parse_document(text).unwrap();
        assert_eq!(doc.get_str("single").unwrap(), "quoted");
        assert_eq!(
            doc.get_datetime("a").unwrap().timestamp_millis(),
            1_577_934_245_678
        );
        assert_eq!(doc.get_datetime("b").unwrap().timestamp_millis(), 1000);
        assert_eq!(doc.get("d"), Some(&Bson::Int64(9_007_199_254_740_993)));
        assert_eq!(doc.get("e"), Some(&Bson::Int64(5)));
        assert_eq!(doc.get("f"), Some(&Bson::Int32(7)));
        assert_eq!(
            doc.get_datetime("o").unwrap().timestamp_millis(),
            86_400_000
        );
        assert_eq!(
            doc.get_datetime("p").unwrap().timestamp_millis(),
            86_400_000
        );
        assert!(matches!(doc.get("h"), Some(Bson::Binary(b)) if b.bytes == [0, 1]));
        assert!(matches!(doc.get("i"), Some(Bson::Binary(b)) if b.subtype == BinarySubtype::Uuid));
        assert_eq!(doc.get("i"), doc.get("y"));
        assert!(
            matches!(doc.get("q"), Some(Bson::Binary(b)) if b.subtype == BinarySubtype::UserDefined(0x80))
        );
        assert!(
            matches!(doc.get("k"), Some(Bson::RegularExpression(r)) if r.pattern.as_str() == "a/b" && r.options.as_str() == "i")
        );
        assert!(matches!(doc.get("r"), Some(Bson::RegularExpression(_))));
        assert_eq!(
            doc.get("j"),
            Some(&Bson::Timestamp(Timestamp {
                time: 1,
                increment: 2
            }))
        );
        assert_eq!(doc.get("l"), Some(&Bson::MinKey));
        assert_eq!(doc.get("m"), Some(&Bson::MaxKey));
        assert_eq!(doc.get("n"), Some(&Bson::Undefined));
        assert_eq!(doc.get("s"), Some(&Bson::Int64(3)));
        assert_eq!(
            doc.get_document("t").unwrap(),
            &doc! {"$ref": "users", "$id": 5}
        );
        assert_eq!(doc.get("x"), Some(&Bson::Int32(31)));
        assert!(doc.get_f64("w").unwrap().is_nan());
    }

    #[test]
    fn query_operators_stay_documents() {
        let doc = parse_document(r#"{"a": {"$gt": 1}, "b": {"$regex": {"$numberInt": "1"}}, "c": {"$date": 1, "$x": 2}}"#).unwrap();
        assert_eq!(doc.get_document("a").unwrap(), &doc! {"$gt": 1});
        assert_eq!(doc.get_document("b").unwrap(), &doc! {"$regex": 1});
        assert_eq!(doc.get_document("c").unwrap(), &doc! {"$date": 1, "$x": 2});
    }

    #[test]
    fn numbers_take_the_narrowest_integer_type() {
        let doc = parse_document(
            r#"{"a": 1, "b": 2147483648, "c": 1.0, "d": 1e2, "e": 99999999999999999999, "f": -0}"#,
        )
        .unwrap();
        assert_eq!(doc.get("a"), Some(&Bson::Int32(1)));
        assert_eq!(doc.get("b"), Some(&Bson::Int64(2_147_483_648)));
        assert_eq!(doc.get("c"), Some(&Bson::Double(1.0)));
        assert_eq!(doc.get("d"), Some(&Bson::Double(100.0)));
        assert_eq!(doc.get("e"), Some(&Bson::Double(1e20)));
        assert_eq!(doc.get("f"), Some(&Bson::Int32(0)));
    }

    #[test]
    fn errors_name_line_column_and_cause() {
        let cases = [
            ("{\"a\": 1,\n  \"b\": tru}", 2, 8, "`tru` is not a value"),
            ("{\"a\" 1}", 1, 6, "found `1` where `:` was expected"),
            ("{\"a\": \"x}", 1, 7, "not closed"),
            ("{\"a\": {\"$oid\": \"123\"}}", 1, 7, "is not an ObjectId"),
            (
                "{\"a\": {\"$date\": \"soon\"}}",
                1,
                7,
                "not an ISO-8601 date",
            ),
            (
                "{\"a\": {\"$numberInt\": \"3000000000\"}}",
                1,
                7,
                "not a 32-bit integer",
            ),
            ("{\"a\": NumberInt(3000000000)}", 1, 7, "does not fit"),
            ("{\"a\": 1} x", 1, 10, "unexpected text"),
            ("[1]", 1, 1, "expected a document"),
            ("{\"é\": @}", 1, 7, "found `@`"),
        ];
        for (text, line, column, message) in cases {
            let e = parse_document(text).unwrap_err();
            assert_eq!((e.line, e.column), (line, column), "{text}: {e}");
            assert!(e.message.contains(message), "{text}: {e}");
        }
        assert!(parse_document("{\"a\": [1, 2").unwrap_err().at_end);
        assert!(!parse_document("{\"a\": ]").unwrap_err().at_end);
        let deep = "[".repeat(10_000);
        assert!(
            parse_value(&deep)
                .unwrap_err()
                .message
                .contains("nested more than")
        );
    }
}
