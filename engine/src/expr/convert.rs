//! Type conversions: `$convert`, and its short forms `$toString`, `$toInt`, `$toLong`,
//! `$toDouble`, `$toDecimal`, `$toBool`, `$toDate`, `$toObjectId`.
//!
//! Null or missing gives null (or `$convert`'s `onNull`); a value that cannot convert is a
//! `ConversionFailure` naming the operator (or `$convert`'s `onError`).

use bson::{Bson, Decimal128};

use super::ExprError;
use super::dates::iso_string;
use super::func::type_alias;
use super::named::Args;
use crate::code::ErrorCode;

fn cannot(op: &str, v: &Bson) -> ExprError {
    super::error(op, format!("cannot convert {} `{v}`", type_alias(Some(v))))
        .with_code(ErrorCode::CONVERSION_FAILURE)
}

/// A double as MongoDB prints it: integral values without a fraction, others in the shortest
/// form that reads back the same.
pub(crate) fn double_text(d: f64) -> String {
    if d.is_nan() {
        "NaN".to_owned()
    } else if d.is_infinite() {
        if d > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else if d.fract() == 0.0 && d.abs() < 1e15 {
        format!("{d:.0}")
    } else {
        format!("{d}")
    }
}

pub(crate) fn to_string(v: Bson) -> Result<Option<Bson>, ExprError> {
    Ok(Some(Bson::String(match v {
        Bson::Null | Bson::Undefined => return Ok(Some(Bson::Null)),
        Bson::String(s) => s,
        Bson::Int32(i) => i.to_string(),
        Bson::Int64(i) => i.to_string(),
        Bson::Double(d) => double_text(d),
        Bson::Decimal128(d) => d.to_string(),
        Bson::Boolean(b) => b.to_string(),
        Bson::ObjectId(id) => id.to_hex(),
        Bson::DateTime(d) => iso_string(d.timestamp_millis()),
        other => return Err(cannot("$toString", &other)),
    })))
}

/// A whole number from any convertible value, truncated toward zero; `None` when it cannot be.
fn whole(op: &str, v: &Bson) -> Result<i64, ExprError> {
    match v {
        Bson::Int32(i) => Ok(i64::from(*i)),
        Bson::Int64(i) => Ok(*i),
        Bson::Boolean(b) => Ok(i64::from(*b)),
        #[allow(clippy::cast_possible_truncation)]
        Bson::Double(d) if d.is_finite() && d.trunc().abs() < 9.223_372_036_854_775e18 => {
            Ok(d.trunc() as i64)
        }
        // Truncated toward zero, whatever notation the decimal prints in (`1.7E+12`).
        Bson::Decimal128(d) => decimal_whole(&d.to_string()).ok_or_else(|| cannot(op, v)),
        Bson::String(s) => s.trim().parse().map_err(|_| cannot(op, v)),
        Bson::DateTime(d) if op == "$toLong" => Ok(d.timestamp_millis()),
        _ => Err(cannot(op, v)),
    }
}

pub(crate) fn to_int(v: Bson) -> Result<Option<Bson>, ExprError> {
    if matches!(v, Bson::Null | Bson::Undefined) {
        return Ok(Some(Bson::Null));
    }
    let n = whole("$toInt", &v)?;
    i32::try_from(n).map(|i| Some(Bson::Int32(i))).map_err(|_| {
        super::error("$toInt", format!("`{v}` is out of the range of an int"))
            .with_code(ErrorCode::CONVERSION_FAILURE)
    })
}

pub(crate) fn to_long(v: Bson) -> Result<Option<Bson>, ExprError> {
    if matches!(v, Bson::Null | Bson::Undefined) {
        return Ok(Some(Bson::Null));
    }
    whole("$toLong", &v).map(|n| Some(Bson::Int64(n)))
}

pub(crate) fn to_double(v: Bson) -> Result<Option<Bson>, ExprError> {
    Ok(Some(Bson::Double(match &v {
        Bson::Null | Bson::Undefined => return Ok(Some(Bson::Null)),
        Bson::Int32(i) => f64::from(*i),
        Bson::Int64(i) => *i as f64,
        Bson::Double(d) => *d,
        Bson::Boolean(b) => f64::from(u8::from(*b)),
        Bson::Decimal128(d) => d.to_string().parse().map_err(|_| cannot("$toDouble", &v))?,
        Bson::String(s) => {
            let d: f64 = s.trim().parse().map_err(|_| cannot("$toDouble", &v))?;
            // A finite number written too large overflows; only the names are infinite.
            let named = s.trim().trim_start_matches(['+', '-']).to_ascii_lowercase();
            if d.is_infinite() && !named.starts_with("inf") {
                return Err(cannot("$toDouble", &v));
            }
            d
        }
        Bson::DateTime(d) => d.timestamp_millis() as f64,
        _ => return Err(cannot("$toDouble", &v)),
    })))
}

pub(crate) fn to_decimal(v: Bson) -> Result<Option<Bson>, ExprError> {
    let text = match &v {
        Bson::Null | Bson::Undefined => return Ok(Some(Bson::Null)),
        Bson::Decimal128(_) => return Ok(Some(v)),
        Bson::Int32(i) => i.to_string(),
        Bson::Int64(i) => i.to_string(),
        // Fifteen significant digits, as MongoDB converts a double.
        Bson::Double(d) if d.is_finite() => format!("{d:.14e}"),
        Bson::Boolean(b) => u8::from(*b).to_string(),
        Bson::String(s) => s.trim().to_owned(),
        Bson::DateTime(d) => d.timestamp_millis().to_string(),
        _ => return Err(cannot("$toDecimal", &v)),
    };
    text.parse::<Decimal128>()
        .map(|d| Some(Bson::Decimal128(d)))
        .map_err(|_| cannot("$toDecimal", &v))
}

pub(crate) fn to_bool(v: Bson) -> Bson {
    match v {
        Bson::Null | Bson::Undefined => Bson::Null,
        Bson::Boolean(b) => Bson::Boolean(b),
        // Any string, even empty, and any document, array, id or date is true.
        other => Bson::Boolean(match other {
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                super::truthy(Some(&other))
            }
            _ => true,
        }),
    }
}

/// `$toDate`: a date from a date, a timestamp, an ObjectId (its time), a long, double or
/// decimal of milliseconds since the epoch (truncated), or an ISO 8601 string.
pub(crate) fn to_date(v: Bson) -> Result<Option<Bson>, ExprError> {
    let op = "$toDate";
    let millis = match &v {
        Bson::DateTime(d) => d.timestamp_millis(),
        Bson::Timestamp(t) => i64::from(t.time) * 1000,
        Bson::ObjectId(id) => id.timestamp().timestamp_millis(),
        Bson::Int64(n) => *n,
        Bson::Double(_) | Bson::Decimal128(_) => whole(op, &v)?,
        Bson::String(s) => super::dates::parse_date_string(s).map_err(|reason| {
            super::error(op, format!("error parsing date string '{s}': {reason}"))
                .with_code(ErrorCode::CONVERSION_FAILURE)
        })?,
        _ => return Err(cannot(op, &v)),
    };
    Ok(Some(Bson::DateTime(bson::DateTime::from_millis(millis))))
}

/// `$toObjectId`: an ObjectId from itself or from 24 hexadecimal digits.
pub(crate) fn to_object_id(v: Bson) -> Result<Option<Bson>, ExprError> {
    match &v {
        Bson::ObjectId(_) => Ok(Some(v)),
        Bson::String(s) if s.len() == 24 => bson::oid::ObjectId::parse_str(s)
            .map(|id| Some(Bson::ObjectId(id)))
            .map_err(|_| cannot("$toObjectId", &v)),
        _ => Err(cannot("$toObjectId", &v)),
    }
}

/// The integer part of a decimal's text (`-12.5`, `1.7E+12`, `15E-1`); `None` when it is not
/// finite or does not fit a long.
fn decimal_whole(text: &str) -> Option<i64> {
    let (mantissa, exponent) = match text.find(['E', 'e']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i32>().ok()?),
        None => (text, 0),
    };
    let negative = mantissa.starts_with('-');
    let mantissa = mantissa.trim_start_matches(['-', '+']);
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits = format!("{int_part}{frac_part}");
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // The decimal point sits after `int_part.len() + exponent` digits.
    let point = i64::try_from(int_part.len()).ok()? + i64::from(exponent);
    let whole = if point <= 0 {
        String::from("0")
    } else {
        let point = usize::try_from(point).ok()?;
        if point > 40 {
            return None;
        }
        while digits.len() < point {
            digits.push('0');
        }
        digits[..point].to_owned()
    };
    let magnitude: i128 = whole.parse().ok()?;
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// The type `$convert`'s `to` names, by alias (`"int"`) or by BSON type number (16). Types it
/// cannot convert to are named too: their conversion fails, so `onError` applies.
fn target(v: &Bson) -> Option<&'static str> {
    const TYPES: [(&str, i64); 21] = [
        ("double", 1),
        ("string", 2),
        ("object", 3),
        ("array", 4),
        ("binData", 5),
        ("undefined", 6),
        ("objectId", 7),
        ("bool", 8),
        ("date", 9),
        ("null", 10),
        ("regex", 11),
        ("dbPointer", 12),
        ("javascript", 13),
        ("symbol", 14),
        ("javascriptWithScope", 15),
        ("int", 16),
        ("timestamp", 17),
        ("long", 18),
        ("decimal", 19),
        ("minKey", -1),
        ("maxKey", 127),
    ];
    match v {
        Bson::String(s) => TYPES.iter().find(|(n, _)| n == s).map(|(n, _)| *n),
        other => {
            let code = super::as_i64(other)?;
            TYPES.iter().find(|(_, c)| *c == code).map(|(n, _)| *n)
        }
    }
}

/// `$convert: {input, to, onError, onNull}`.
pub(crate) fn convert(args: &Args) -> Result<Option<Bson>, ExprError> {
    let op = args.op();
    let input = args.get("input")?;
    if matches!(input, None | Some(Bson::Null | Bson::Undefined)) {
        return if args.given("onNull") {
            args.get("onNull")
        } else {
            Ok(Some(Bson::Null))
        };
    }
    let to = match args.get("to")? {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(Bson::Document(d)) => d.get("type").cloned().unwrap_or(Bson::Null),
        Some(t) => t,
    };
    let Some(to) = target(&to) else {
        return Err(match to {
            Bson::String(name) => super::error(op, format!("unknown type name: {name}"))
                .with_code(ErrorCode::BAD_VALUE),
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                super::error(op, format!("{to} is not a type this operator converts to"))
                    .with_code(ErrorCode::FAILED_TO_PARSE)
            }
            other => super::error(
                op,
                format!(
                    "`to` must be a type name or number, not {}",
                    type_alias(Some(&other))
                ),
            )
            .with_code(ErrorCode::FAILED_TO_PARSE),
        });
    };
    let input = input.unwrap_or(Bson::Null);
    let converted = match to {
        "double" => to_double(input),
        "string" => to_string(input),
        "objectId" => to_object_id(input),
        "bool" => Ok(Some(to_bool(input))),
        "date" => to_date(input),
        "int" => to_int(input),
        "long" => to_long(input),
        "decimal" => to_decimal(input),
        other => Err(
            super::error(op, format!("conversion to {other} is not supported"))
                .with_code(ErrorCode::CONVERSION_FAILURE),
        ),
    };
    match converted {
        Err(e) if args.given("onError") => {
            let _ = e;
            args.get("onError")
        }
        other => other.map_err(|e| ExprError {
            operator: op.to_owned(),
            ..e
        }),
    }
}
