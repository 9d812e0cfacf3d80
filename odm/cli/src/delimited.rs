//! CSV and TSV as `mongoimport` and `mongoexport` use them.
//!
//! In: each column is a field path (`a.b` builds `{a: {b: ..}}`), named by `--fields`,
//! `--fieldFile` or the header line; with `--columnsHaveTypes` each name carries its type, as
//! `name.type(argument)`: `auto()`, `string()`, `int32()`, `int64()`, `double()`, `decimal()`,
//! `boolean()`, `binary(base64|hex)`, `date(layout)` and `date_go(layout)` (Go's layout, whose
//! reference time is `2006-01-02T15:04:05Z07:00`), `date_ms(layout)` (.NET's `yyyy-MM-dd`) and
//! `date_oracle(layout)` (Oracle's `YYYY-MM-DD HH24:MI:SS`). Untyped columns are read as
//! `auto()`: an integer (Int32 when it fits, else Int64), a double, or else a string.
//!
//! Quoting follows RFC 4180 through the `csv` crate, which takes a bare `"` inside an unquoted
//! cell literally (`mongoimport` refuses such a line).
//!
//! Out: the chosen fields, one per column: strings as they are, numbers and booleans as text,
//! dates in ISO-8601, ObjectIds as `ObjectId(hex)`, other values as relaxed Extended JSON; a
//! missing field is an empty cell.

use base64::Engine as _;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, DateTime, Decimal128, Document};
use odm_engine::path::{Parents, Path};

use super::clock::{DateFields, OutOfRange, Scanner};
use super::extjson;

/// The type of a column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnType {
    Auto,
    String,
    Int32,
    Int64,
    Double,
    Decimal,
    Boolean,
    Binary(BinaryEncoding),
    Date(Vec<DateToken>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryEncoding {
    Base64,
    Hex,
}

/// One column: where its value goes, and how it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: ColumnType,
}

/// Why a column list (`--fields`, a header line) does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ColumnError {
    #[error("`{0}` is not a field name")]
    NotAFieldName(String),
    #[error("`{0}`: a field name in a column list cannot start with `$`")]
    DollarName(String),
    /// Two columns name the same field, or one a field inside the other's.
    #[error("fields `{0}` and `{1}` overlap")]
    Overlap(String, String),
    #[error(
        "`{0}` has no type: with --columnsHaveTypes each field is `name.type()`, for example \
         `age.int32()`"
    )]
    Untyped(String),
    #[error("`{column}`: binary columns are `binary(base64)` or `binary(hex)`, not `{encoding}`")]
    BinaryEncoding { column: String, encoding: String },
    #[error("`{column}`: `{type_name}()` takes no argument")]
    ArgumentNotTaken { column: String, type_name: String },
    #[error(
        "`{column}`: `{type_name}` is not a column type (auto, string, int32, int64, double, \
         decimal, boolean, binary, date, date_go, date_ms, date_oracle)"
    )]
    UnknownType { column: String, type_name: String },
    #[error(transparent)]
    Layout(#[from] NoYear),
}

/// A date column's layout that names no year.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the date layout `{0}` names no year")]
pub struct NoYear(pub String);

/// Why a cell does not read as its column's type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CellError {
    /// The text is not of the type (`what`, with its article).
    #[error("`{text}` is not {what}")]
    NotA { text: String, what: &'static str },
    #[error("`{text}` does not match the date layout: {source}")]
    Date { text: String, source: DateTextError },
}

/// A column whose field lies under another column's value (`a` holds 1, `a.b` is a column).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` lies under a column that holds a value")]
pub struct UnderValue(pub String);

/// Why a date does not read by its layout; positions are 1-based characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DateTextError {
    #[error("expected {what} at character {at}")]
    Expected { what: String, at: usize },
    #[error("hour {0} is not on a 12-hour clock")]
    NotTwelveHour(u32),
    #[error("unexpected text at character {at}")]
    Unexpected { at: usize },
    #[error(transparent)]
    OutOfRange(#[from] OutOfRange),
}

/// Reads the column list: names (untyped), or `name.type(arg)` each (typed).
pub fn columns(names: &[String], typed: bool) -> Result<Vec<Column>, ColumnError> {
    let mut out: Vec<Column> = Vec::new();
    for raw in names {
        let raw = raw.trim();
        let column = if typed {
            typed_column(raw)?
        } else {
            Column {
                name: raw.to_owned(),
                kind: ColumnType::Auto,
            }
        };
        if column.name.is_empty() || column.name.split('.').any(str::is_empty) {
            return Err(ColumnError::NotAFieldName(raw.to_owned()));
        }
        if column.name.split('.').any(|part| part.starts_with('$')) {
            return Err(ColumnError::DollarName(raw.to_owned()));
        }
        for other in &out {
            let (a, b) = (&other.name, &column.name);
            if a == b || b.starts_with(&format!("{a}.")) || a.starts_with(&format!("{b}.")) {
                return Err(ColumnError::Overlap(a.clone(), b.clone()));
            }
        }
        out.push(column);
    }
    Ok(out)
}

fn typed_column(raw: &str) -> Result<Column, ColumnError> {
    let bad = || ColumnError::Untyped(raw.to_owned());
    let open = raw.find('(').ok_or_else(bad)?;
    if !raw.ends_with(')') {
        return Err(bad());
    }
    let argument = &raw[open + 1..raw.len() - 1];
    let dot = raw[..open].rfind('.').ok_or_else(bad)?;
    let name = &raw[..dot];
    let type_name = &raw[dot + 1..open];
    let kind = match (type_name, argument) {
        ("auto", "") => ColumnType::Auto,
        ("string", "") => ColumnType::String,
        ("int32", "") => ColumnType::Int32,
        ("int64", "") => ColumnType::Int64,
        ("double", "") => ColumnType::Double,
        ("decimal", "") => ColumnType::Decimal,
        ("boolean", "") => ColumnType::Boolean,
        ("binary", "base64") => ColumnType::Binary(BinaryEncoding::Base64),
        ("binary", "hex") => ColumnType::Binary(BinaryEncoding::Hex),
        ("date" | "date_go", layout) => ColumnType::Date(go_layout(layout)?),
        ("date_ms", layout) => ColumnType::Date(ms_layout(layout)?),
        ("date_oracle", layout) => ColumnType::Date(oracle_layout(layout)?),
        ("binary", other) => {
            return Err(ColumnError::BinaryEncoding {
                column: raw.to_owned(),
                encoding: other.to_owned(),
            });
        }
        ("auto" | "string" | "int32" | "int64" | "double" | "decimal" | "boolean", _) => {
            return Err(ColumnError::ArgumentNotTaken {
                column: raw.to_owned(),
                type_name: type_name.to_owned(),
            });
        }
        _ => {
            return Err(ColumnError::UnknownType {
                column: raw.to_owned(),
                type_name: type_name.to_owned(),
            });
        }
    };
    Ok(Column {
        name: name.to_owned(),
        kind,
    })
}

/// Reads one cell as its column's type.
pub fn cell(text: &str, kind: &ColumnType) -> Result<Bson, CellError> {
    let trimmed = text.trim();
    let fail = |what: &'static str| CellError::NotA {
        text: text.to_owned(),
        what,
    };
    match kind {
        ColumnType::Auto => Ok(auto(text)),
        ColumnType::String => Ok(Bson::String(text.to_owned())),
        ColumnType::Int32 => trimmed
            .parse::<i32>()
            .map(Bson::Int32)
            .map_err(|_| fail("a 32-bit integer")),
        ColumnType::Int64 => trimmed
            .parse::<i64>()
            .map(Bson::Int64)
            .map_err(|_| fail("a 64-bit integer")),
        ColumnType::Double => trimmed
            .parse::<f64>()
            .map(Bson::Double)
            .map_err(|_| fail("a double")),
        ColumnType::Decimal => trimmed
            .parse::<Decimal128>()
            .map(Bson::Decimal128)
            .map_err(|_| fail("a decimal")),
        ColumnType::Boolean => match trimmed {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(Bson::Boolean(true)),
            "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(Bson::Boolean(false)),
            _ => Err(fail("a boolean")),
        },
        ColumnType::Binary(encoding) => {
            let bytes = match encoding {
                BinaryEncoding::Base64 => base64::engine::general_purpose::STANDARD
                    .decode(trimmed)
                    .map_err(|_| fail("base64"))?,
                BinaryEncoding::Hex => hex(trimmed).ok_or_else(|| fail("hexadecimal"))?,
            };
            Ok(Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes,
            }))
        }
        ColumnType::Date(layout) => parse_date(trimmed, layout)
            .map(|ms| Bson::DateTime(DateTime::from_millis(ms)))
            .map_err(|source| CellError::Date {
                text: text.to_owned(),
                source,
            }),
    }
}

/// `auto()`: an integer, a double, or a string.
pub fn auto(text: &str) -> Bson {
    let trimmed = text.trim();
    if !trimmed.is_empty()
        && trimmed
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'-' || b == b'+')
        && let Ok(v) = trimmed.parse::<i64>()
    {
        return i32::try_from(v).map_or(Bson::Int64(v), Bson::Int32);
    }
    if !trimmed.is_empty()
        && trimmed
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
        && trimmed.bytes().any(|b| b.is_ascii_digit())
        && let Ok(f) = trimmed.parse::<f64>()
    {
        return Bson::Double(f);
    }
    Bson::String(text.to_owned())
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok())
        .collect()
}

/// Sets `value` at the dotted `path` of `doc`, creating the documents on the way; a column
/// whose parent another column gave a value is refused.
pub fn set_path(doc: &mut Document, path: &str, value: Bson) -> Result<(), UnderValue> {
    Path::new(path)
        .set(doc, value, Parents::Create)
        .map_err(|_| UnderValue(path.to_owned()))
}

/// The value at a dotted path, by the tools' positional rule ([`Path::get_positional`]).
pub fn get_path<'d>(doc: &'d Document, path: &str) -> Option<&'d Bson> {
    Path::new(path).get_positional(doc)
}

/// A value as a CSV cell.
pub fn cell_text(value: Option<&Bson>) -> String {
    match value {
        None | Some(Bson::Null | Bson::Undefined) => String::new(),
        Some(Bson::String(s)) => s.clone(),
        Some(Bson::Int32(i)) => i.to_string(),
        Some(Bson::Int64(i)) => i.to_string(),
        Some(Bson::Double(f)) if f.is_finite() => format!("{f:?}"),
        Some(Bson::Boolean(b)) => b.to_string(),
        Some(Bson::Decimal128(d)) => d.to_string(),
        Some(Bson::DateTime(d)) => odm_engine::calendar::iso_string(d.timestamp_millis()),
        Some(Bson::ObjectId(id)) => format!("ObjectId({})", id.to_hex()),
        Some(other) => {
            let mut out = String::new();
            extjson::write(&mut out, other, extjson::Format::Relaxed);
            out
        }
    }
}

/// One element of a date layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DateToken {
    Literal(String),
    Year4,
    Year2,
    /// The month as 2 digits (`exact`) or 1 to 2.
    Month {
        exact: bool,
    },
    MonthName {
        long: bool,
    },
    Day {
        exact: bool,
    },
    /// Go's `_2`: a day padded with a space.
    DaySpace,
    Hour24 {
        exact: bool,
    },
    Hour12 {
        exact: bool,
    },
    Minute {
        exact: bool,
    },
    Second {
        exact: bool,
    },
    /// A fraction of a second after a `.` or `,`: exactly `digits`, or up to 9 when optional.
    Fraction {
        digits: usize,
        optional: bool,
    },
    AmPm,
    /// `Z07:00`-style zones: `Z` for UTC allowed when `z_allowed`.
    Zone {
        z_allowed: bool,
    },
    Weekday {
        long: bool,
    },
}

/// Go's layout: the reference time `Mon Jan 2 15:04:05 MST 2006` written in the wanted form.
pub fn go_layout(layout: &str) -> Result<Vec<DateToken>, NoYear> {
    use DateToken as T;
    // Longest first, so that `2006` wins over `2`, `January` over `Jan`, `Z07:00` over `Z07`.
    let table: &[(&str, DateToken)] = &[
        ("January", T::MonthName { long: true }),
        ("Monday", T::Weekday { long: true }),
        ("Z07:00", T::Zone { z_allowed: true }),
        ("-07:00", T::Zone { z_allowed: false }),
        ("Z0700", T::Zone { z_allowed: true }),
        ("-0700", T::Zone { z_allowed: false }),
        ("2006", T::Year4),
        ("Jan", T::MonthName { long: false }),
        ("Mon", T::Weekday { long: false }),
        ("Z07", T::Zone { z_allowed: true }),
        ("-07", T::Zone { z_allowed: false }),
        ("MST", T::Literal("MST".into())),
        ("06", T::Year2),
        ("01", T::Month { exact: true }),
        ("02", T::Day { exact: true }),
        ("_2", T::DaySpace),
        ("15", T::Hour24 { exact: false }),
        ("03", T::Hour12 { exact: true }),
        ("04", T::Minute { exact: true }),
        ("05", T::Second { exact: true }),
        ("PM", T::AmPm),
        ("pm", T::AmPm),
        ("1", T::Month { exact: false }),
        ("2", T::Day { exact: false }),
        ("3", T::Hour12 { exact: false }),
        ("4", T::Minute { exact: false }),
        ("5", T::Second { exact: false }),
    ];
    // Fractions: `.000` (exact) or `.999` (optional), after `.` or `,`.
    let fraction = |rest: &str| {
        let after = rest.strip_prefix('.').or_else(|| rest.strip_prefix(','))?;
        ['0', '9'].into_iter().find_map(|digit| {
            let n = after.chars().take_while(|c| *c == digit).count();
            // Go's rule: the run must not go on into other digits (`2006.01.02` has none).
            let ends = !after[n..].starts_with(|c: char| c.is_ascii_digit());
            (n > 0 && ends).then(|| {
                let token = T::Fraction {
                    digits: n,
                    optional: digit == '9',
                };
                (token, n + 1)
            })
        })
    };
    let tokens = tokenize(layout, table, fraction);
    checked(tokens, layout)
}

/// .NET's layout (`yyyy-MM-dd HH:mm:ss.fff zzz`), as `date_ms` columns take it.
pub fn ms_layout(layout: &str) -> Result<Vec<DateToken>, NoYear> {
    use DateToken as T;
    let table: &[(&str, DateToken)] = &[
        ("yyyy", T::Year4),
        ("yy", T::Year2),
        ("MMMM", T::MonthName { long: true }),
        ("MMM", T::MonthName { long: false }),
        ("MM", T::Month { exact: true }),
        ("M", T::Month { exact: false }),
        ("dddd", T::Weekday { long: true }),
        ("ddd", T::Weekday { long: false }),
        ("dd", T::Day { exact: true }),
        ("d", T::Day { exact: false }),
        ("HH", T::Hour24 { exact: true }),
        ("H", T::Hour24 { exact: false }),
        ("hh", T::Hour12 { exact: true }),
        ("h", T::Hour12 { exact: false }),
        ("mm", T::Minute { exact: true }),
        ("m", T::Minute { exact: false }),
        ("ss", T::Second { exact: true }),
        ("s", T::Second { exact: false }),
        ("tt", T::AmPm),
        ("zzz", T::Zone { z_allowed: false }),
        ("K", T::Zone { z_allowed: true }),
    ];
    // Fractions: `fff` (exact) or `FFF` (optional), after a separator the token reads.
    let fraction = |rest: &str| {
        [('f', false), ('F', true)]
            .into_iter()
            .find_map(|(letter, optional)| {
                let n = rest.chars().take_while(|c| *c == letter).count();
                (n > 0).then_some((
                    T::Fraction {
                        digits: n,
                        optional,
                    },
                    n,
                ))
            })
    };
    let tokens = tokenize(layout, table, fraction);
    checked(tokens, layout)
}

/// Oracle's layout (`YYYY-MM-DD HH24:MI:SS.FF3`), as `date_oracle` columns take it.
pub fn oracle_layout(layout: &str) -> Result<Vec<DateToken>, NoYear> {
    use DateToken as T;
    let table: &[(&str, DateToken)] = &[
        ("YYYY", T::Year4),
        ("YY", T::Year2),
        ("MONTH", T::MonthName { long: true }),
        ("MON", T::MonthName { long: false }),
        ("MM", T::Month { exact: true }),
        ("DAY", T::Weekday { long: true }),
        ("DY", T::Weekday { long: false }),
        ("DD", T::Day { exact: true }),
        ("HH24", T::Hour24 { exact: true }),
        ("HH12", T::Hour12 { exact: true }),
        ("HH", T::Hour12 { exact: true }),
        ("MI", T::Minute { exact: true }),
        ("SS", T::Second { exact: true }),
        ("AM", T::AmPm),
        ("PM", T::AmPm),
        ("TZH:TZM", T::Zone { z_allowed: false }),
    ];
    // Fractions: `FF3` (exact digits) or `FF` (optional), after a separator the token reads.
    let fraction = |rest: &str| {
        let after = rest.strip_prefix("FF")?;
        let n = after.chars().take_while(char::is_ascii_digit).count();
        let digits = after[..n].parse::<usize>().unwrap_or(9).clamp(1, 9);
        let token = T::Fraction {
            digits,
            optional: n == 0,
        };
        Some((token, 2 + n))
    };
    let tokens = tokenize(&layout.to_ascii_uppercase(), table, fraction);
    checked(tokens, layout)
}

/// Splits a layout into tokens: a fraction where `fraction` finds one (it returns the token and
/// the bytes it spans), else the longest entry of `table` (listed longest first), else one
/// literal character. A fraction reads its own separator, so a `.` or `,` just before it is
/// dropped from the literals.
fn tokenize(
    layout: &str,
    table: &[(&str, DateToken)],
    fraction: impl Fn(&str) -> Option<(DateToken, usize)>,
) -> Vec<DateToken> {
    let mut tokens = Vec::new();
    let mut rest = layout;
    'outer: while !rest.is_empty() {
        if let Some((token, len)) = fraction(rest) {
            if matches!(tokens.last(), Some(DateToken::Literal(s)) if s == "." || s == ",") {
                tokens.pop();
            }
            tokens.push(token);
            rest = &rest[len..];
            continue;
        }
        for (pattern, token) in table {
            if let Some(after) = rest.strip_prefix(pattern) {
                tokens.push(token.clone());
                rest = after;
                continue 'outer;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        push_literal(&mut tokens, c);
        rest = &rest[c.len_utf8()..];
    }
    tokens
}

fn push_literal(tokens: &mut Vec<DateToken>, c: char) {
    if let Some(DateToken::Literal(s)) = tokens.last_mut() {
        s.push(c);
    } else {
        tokens.push(DateToken::Literal(c.to_string()));
    }
}

fn checked(tokens: Vec<DateToken>, layout: &str) -> Result<Vec<DateToken>, NoYear> {
    let has = |f: fn(&DateToken) -> bool| tokens.iter().any(f);
    if !has(|t| matches!(t, DateToken::Year4 | DateToken::Year2)) {
        return Err(NoYear(layout.to_owned()));
    }
    Ok(tokens)
}

use odm_engine::calendar::MONTH_NAMES as MONTHS;
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Reads `text` by a layout; milliseconds since the epoch (UTC unless the layout has a zone).
pub fn parse_date(text: &str, layout: &[DateToken]) -> Result<i64, DateTextError> {
    let mut s = Scanner {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let mut civil = DateFields::default();
    let mut pm = None;
    for token in layout {
        match token {
            DateToken::Literal(l) => {
                if !s.bytes[s.pos..].starts_with(l.as_bytes()) {
                    return Err(mismatch(&s, &format!("`{l}`")));
                }
                s.pos += l.len();
            }
            DateToken::Year4 => {
                civil.year = i64::from(s.digits(4).ok_or_else(|| mismatch(&s, "a 4-digit year"))?);
            }
            DateToken::Year2 => {
                let y = i64::from(s.digits(2).ok_or_else(|| mismatch(&s, "a 2-digit year"))?);
                // Go's rule: 69..99 are 1900s, 00..68 the 2000s.
                civil.year = if y >= 69 { 1900 + y } else { 2000 + y };
            }
            DateToken::Month { exact } => civil.month = number(&mut s, *exact, "a month")?,
            DateToken::MonthName { long } => {
                let i = name(&mut s, &MONTHS, *long).ok_or_else(|| mismatch(&s, "a month name"))?;
                civil.month = i as u32 + 1;
            }
            DateToken::Day { exact } => civil.day = number(&mut s, *exact, "a day")?,
            DateToken::DaySpace => {
                s.eat(b' ');
                civil.day = number(&mut s, false, "a day")?;
            }
            DateToken::Hour24 { exact } => civil.hour = number(&mut s, *exact, "an hour")?,
            DateToken::Hour12 { exact } => {
                civil.hour = number(&mut s, *exact, "an hour")?;
                if !(1..=12).contains(&civil.hour) {
                    return Err(DateTextError::NotTwelveHour(civil.hour));
                }
            }
            DateToken::Minute { exact } => civil.minute = number(&mut s, *exact, "minutes")?,
            DateToken::Second { exact } => civil.second = number(&mut s, *exact, "seconds")?,
            DateToken::Fraction { digits, optional } => {
                if let Some(millis) = fraction(&mut s, *digits, *optional)? {
                    civil.millis = millis;
                }
            }
            DateToken::AmPm => pm = Some(is_pm(&mut s)?),
            DateToken::Zone { z_allowed } => {
                if !z_allowed && matches!(s.bytes.get(s.pos), Some(b'Z' | b'z')) {
                    return Err(mismatch(&s, "a zone offset such as -07:00"));
                }
                civil.offset_minutes = s.zone().ok_or_else(|| mismatch(&s, "a zone offset"))?;
            }
            DateToken::Weekday { long } => {
                // Read and checked for form only: the date itself says which day it is.
                name(&mut s, &WEEKDAYS, *long).ok_or_else(|| mismatch(&s, "a weekday"))?;
            }
        }
    }
    if s.pos != s.bytes.len() {
        return Err(DateTextError::Unexpected { at: s.pos + 1 });
    }
    match pm {
        Some(true) if civil.hour < 12 => civil.hour += 12,
        Some(false) if civil.hour == 12 => civil.hour = 0,
        _ => {}
    }
    Ok(civil.to_millis()?)
}

/// Where the text stops matching the layout.
fn mismatch(s: &Scanner<'_>, what: &str) -> DateTextError {
    DateTextError::Expected {
        what: what.to_owned(),
        at: s.pos + 1,
    }
}

/// Which of `names` the text goes on with (its first three letters unless `long`, in any
/// case), read past.
fn name(s: &mut Scanner<'_>, names: &[&str], long: bool) -> Option<usize> {
    let rest = std::str::from_utf8(&s.bytes[s.pos..]).ok()?;
    names.iter().position(|n| {
        let candidate = if long { n } else { &n[..3] };
        let matched = rest
            .get(..candidate.len())
            .is_some_and(|r| r.eq_ignore_ascii_case(candidate));
        if matched {
            s.pos += candidate.len();
        }
        matched
    })
}

/// A fraction of a second after its `.` or `,`, of exactly `digits` digits unless `optional`
/// (then 1 to 9): its milliseconds, further digits dropped; `None` when an optional one is
/// absent.
fn fraction(
    s: &mut Scanner<'_>,
    digits: usize,
    optional: bool,
) -> Result<Option<u32>, DateTextError> {
    let separated = s.eat(b'.') || s.eat(b',');
    if !separated {
        if optional {
            return Ok(None);
        }
        return Err(mismatch(s, "a fraction of a second"));
    }
    let start = s.pos;
    let mut millis = 0;
    while let Some(d) = s.digit() {
        if s.pos - start <= 3 {
            millis = millis * 10 + d;
        }
    }
    let n = s.pos - start;
    if (!optional && n != digits) || n == 0 || n > 9 {
        return Err(mismatch(s, &format!("{digits} digits of a second")));
    }
    for _ in n..3 {
        millis *= 10;
    }
    Ok(Some(millis))
}

/// `AM` or `PM`, in any case: whether it is `PM`.
fn is_pm(s: &mut Scanner<'_>) -> Result<bool, DateTextError> {
    let rest = &s.bytes[s.pos..];
    let pm = if rest.len() >= 2 && rest[..2].eq_ignore_ascii_case(b"PM") {
        true
    } else if rest.len() >= 2 && rest[..2].eq_ignore_ascii_case(b"AM") {
        false
    } else {
        return Err(mismatch(s, "AM or PM"));
    };
    s.pos += 2;
    Ok(pm)
}

fn number(s: &mut Scanner<'_>, exact: bool, what: &str) -> Result<u32, DateTextError> {
    let value = if exact { s.digits(2) } else { s.some_digits(2) };
    value.ok_or_else(|| mismatch(s, what))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why [`date`] gives no date.
    #[derive(Debug, PartialEq, thiserror::Error)]
    enum DateCellError {
        #[error(transparent)]
        Column(#[from] ColumnError),
        #[error(transparent)]
        Cell(#[from] CellError),
        #[error("{0:?} is not a date")]
        NotADate(Bson),
    }

    /// A date cell read by a column's layout.
    fn date(text: &str, column: &str) -> Result<i64, DateCellError> {
        let columns = columns(&[column.to_owned()], true)?;
        match cell(text, &columns[0].kind)? {
            Bson::DateTime(d) => Ok(d.timestamp_millis()),
            other => Err(DateCellError::NotADate(other)),
        }
    }

    #[test]
    fn typed_columns_read_each_type() {
        let cols = columns(
            &[
                "a.b.int32()".into(),
                "big.int64()".into(),
                "x.double()".into(),
                "d.decimal()".into(),
                "ok.boolean()".into(),
                "bin.binary(hex)".into(),
                "s.string()".into(),
                "any.auto()".into(),
            ],
            true,
        )
        .unwrap();
        assert_eq!(cols[0].name, "a.b");
        assert_eq!(cell("42", &cols[0].kind), Ok(Bson::Int32(42)));
        assert!(
            cell("4.2", &cols[0].kind)
                .unwrap_err()
                .to_string()
                .contains("32-bit")
        );
        assert_eq!(
            cell("9007199254740993", &cols[1].kind),
            Ok(Bson::Int64(9_007_199_254_740_993))
        );
        assert_eq!(cell("1.5", &cols[2].kind), Ok(Bson::Double(1.5)));
        assert!(matches!(
            cell("1.10", &cols[3].kind),
            Ok(Bson::Decimal128(_))
        ));
        assert_eq!(cell("T", &cols[4].kind), Ok(Bson::Boolean(true)));
        assert!(cell("yes", &cols[4].kind).is_err());
        assert!(matches!(cell("00ff", &cols[5].kind), Ok(Bson::Binary(b)) if b.bytes == [0, 255]));
        assert_eq!(cell("007", &cols[6].kind), Ok(Bson::String("007".into())));
        assert_eq!(cell("007", &cols[7].kind), Ok(Bson::Int32(7)));
        assert_eq!(auto("1e3"), Bson::Double(1000.0));
        assert_eq!(auto("3000000000"), Bson::Int64(3_000_000_000));
        assert_eq!(auto("-"), Bson::String("-".into()));
        assert_eq!(auto("abc"), Bson::String("abc".into()));
    }

    #[test]
    fn column_lists_are_checked() {
        assert!(
            columns(&["a".into(), "a.b".into()], false)
                .unwrap_err()
                .to_string()
                .contains("overlap")
        );
        assert!(columns(&["a..b".into()], false).is_err());
        assert!(
            columns(&["a.$b".into()], false)
                .unwrap_err()
                .to_string()
                .contains("cannot start with `$`")
        );
        assert!(
            columns(&["age".into()], true)
                .unwrap_err()
                .to_string()
                .contains("has no type")
        );
        assert!(
            columns(&["age.integer()".into()], true)
                .unwrap_err()
                .to_string()
                .contains("not a column type")
        );
        assert!(columns(&["b.binary(base32)".into()], true).is_err());
        assert!(
            columns(&["d.date(15:04)".into()], true)
                .unwrap_err()
                .to_string()
                .contains("no year")
        );
    }

    #[test]
    fn date_layouts_of_go_dotnet_and_oracle() {
        let expected = Ok(1_577_934_245_678); // 2020-01-02T03:04:05.678Z
        assert_eq!(
            date(
                "2020-01-02T03:04:05.678Z",
                "d.date(2006-01-02T15:04:05.000Z07:00)"
            ),
            expected
        );
        assert_eq!(
            date(
                "2020-01-02 04:04:05.678 +01:00",
                "d.date_go(2006-01-02 15:04:05.999 -07:00)"
            ),
            expected
        );
        assert_eq!(
            date(
                "Jan 2, 2020 3:04:05.678 AM",
                "d.date(Jan 2, 2006 3:04:05.000 PM)"
            ),
            expected
        );
        assert_eq!(
            date(
                "Thursday, 02-Jan-20 03:04:05.678",
                "d.date(Monday, 02-Jan-06 15:04:05.000)"
            ),
            expected
        );
        assert_eq!(
            date(
                "2020-01-02 03:04:05.678",
                "d.date_ms(yyyy-MM-dd HH:mm:ss.fff)"
            ),
            expected
        );
        assert_eq!(
            date(
                "02/01/2020 03:04:05.678 AM",
                "d.date_ms(dd/MM/yyyy hh:mm:ss.fff tt)"
            ),
            expected
        );
        assert_eq!(
            date(
                "2020-01-02 03:04:05.678",
                "d.date_oracle(YYYY-MM-DD HH24:MI:SS.FF3)"
            ),
            expected
        );
        assert_eq!(
            date("2020-01-02", "d.date(2006-01-02)"),
            Ok(1_577_923_200_000)
        );
        assert!(
            date("2020-02-30", "d.date(2006-01-02)")
                .unwrap_err()
                .to_string()
                .contains("day 30")
        );
        assert!(
            date("2020/01/02", "d.date(2006-01-02)")
                .unwrap_err()
                .to_string()
                .contains("expected `-`")
        );
        assert!(
            date("2020-01-02x", "d.date(2006-01-02)")
                .unwrap_err()
                .to_string()
                .contains("unexpected text")
        );
    }

    #[test]
    fn paths_build_nested_documents_and_cells_print_values() {
        let mut doc = Document::new();
        set_path(&mut doc, "a.b", Bson::Int32(1)).unwrap();
        set_path(&mut doc, "a.c", Bson::Int32(2)).unwrap();
        assert_eq!(doc, bson::doc! {"a": {"b": 1, "c": 2}});
        assert!(set_path(&mut doc, "a.b.c", Bson::Null).is_err());
        assert_eq!(cell_text(get_path(&doc, "a.c")), "2");
        assert_eq!(cell_text(get_path(&doc, "a.x")), "");
        assert_eq!(cell_text(Some(&Bson::Double(1.0))), "1.0");
        assert_eq!(cell_text(Some(&Bson::Array(vec![Bson::Int32(1)]))), "[1]");
        let list = bson::doc! {"l": [{"x": 5}]};
        assert_eq!(cell_text(get_path(&list, "l.0.x")), "5");
    }
}
