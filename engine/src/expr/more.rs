//! Positional operators added to MongoDB's breadth, with its argument rules and codes:
//! `$indexOfBytes` and `$indexOfCP` (a null string gives null; the substring must be a string;
//! start and end are non-negative whole numbers, end exclusive), `$replaceOne` and
//! `$replaceAll` (types checked before nulls: 51746, 51745, 51744; any null gives null),
//! `$setEquals` (every operand an array, null included: 17044) and `$log` (null gives null;
//! a decimal operand gives a decimal).

use bson::Bson;

use super::func::{compare_bson, type_alias};
use super::{ExprError, error};
use crate::code::ErrorCode;
use crate::collation::Collation;

fn code(op: &str, code: i32, reason: impl std::fmt::Display) -> ExprError {
    error(op, reason).with_code(ErrorCode::location(code))
}

fn nullish(v: Option<&Bson>) -> bool {
    matches!(v, None | Some(Bson::Null | Bson::Undefined))
}

/// A start or end index: a whole number that fits in 32 bits (40096), not negative (40097).
fn index(op: &str, which: &str, v: Option<&Bson>) -> Result<usize, ExprError> {
    let n = match v {
        Some(Bson::Int32(i)) => Some(i64::from(*i)),
        Some(Bson::Int64(i)) if i32::try_from(*i).is_ok() => Some(*i),
        Some(Bson::Double(f)) if f.fract() == 0.0 && f.abs() <= f64::from(i32::MAX) => {
            Some(*f as i64)
        }
        Some(Bson::Decimal128(d)) => d
            .to_string()
            .parse::<f64>()
            .ok()
            .filter(|f| f.fract() == 0.0 && f.abs() <= f64::from(i32::MAX))
            .map(|f| f as i64),
        _ => None,
    };
    let Some(n) = n else {
        return Err(code(
            op,
            40096,
            format!(
                "{op} requires an integral {which} index, found a value of type: {}",
                type_alias(v)
            ),
        ));
    };
    usize::try_from(n).map_err(|_| {
        code(
            op,
            40097,
            format!("{op} requires a nonnegative {which} index, found: {n}"),
        )
    })
}

/// `$indexOfBytes` (`code_points` false) and `$indexOfCP` (true).
pub(crate) fn index_of(v: &[Option<Bson>], code_points: bool) -> Result<Option<Bson>, ExprError> {
    let (op, not_string, token_not_string) = if code_points {
        ("$indexOfCP", 40093, 40094)
    } else {
        ("$indexOfBytes", 40091, 40092)
    };
    let text = match v[0].as_ref() {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(Bson::String(s)) => s.as_str(),
        Some(other) => {
            return Err(code(
                op,
                not_string,
                format!(
                    "{op} requires a string as the first argument, found: {}",
                    type_alias(Some(other))
                ),
            ));
        }
    };
    let Some(Bson::String(token)) = v[1].as_ref() else {
        return Err(code(
            op,
            token_not_string,
            format!(
                "{op} requires a string as the second argument, found: {}",
                type_alias(v[1].as_ref())
            ),
        ));
    };
    let start = match v.get(2) {
        Some(x) => index(op, "starting", x.as_ref())?,
        None => 0,
    };
    let found = if code_points {
        let offsets: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let length = offsets.len();
        let end = match v.get(3) {
            Some(x) => index(op, "ending", x.as_ref())?.min(length),
            None => length,
        };
        if text.is_empty() && token.is_empty() && start == 0 {
            Some(0)
        } else if end < start {
            None
        } else {
            // A match starts before `end`; it may run past it.
            (start..end).find(|&i| text[offsets[i]..].starts_with(token.as_str()))
        }
    } else {
        let bytes = text.as_bytes();
        let end = match v.get(3) {
            Some(x) => index(op, "ending", x.as_ref())?.min(bytes.len()),
            None => bytes.len(),
        };
        if start > bytes.len() || end < start {
            None
        } else {
            // The whole match lies in [start, end).
            let window = &bytes[..end];
            (start..=end.saturating_sub(token.len()))
                .find(|&i| i + token.len() <= end && window[i..].starts_with(token.as_bytes()))
        }
    };
    Ok(Some(Bson::Int32(
        found.map_or(-1, |i| i32::try_from(i).unwrap_or(-1)),
    )))
}

/// `$replaceOne` (`all` false) and `$replaceAll`: `[input, find, replacement]`.
pub(crate) fn replace(v: &[Option<Bson>], all: bool) -> Result<Option<Bson>, ExprError> {
    let op = if all { "$replaceAll" } else { "$replaceOne" };
    for (value, which, c) in [
        (&v[0], "input", 51746),
        (&v[1], "find", 51745),
        (&v[2], "replacement", 51744),
    ] {
        if !nullish(value.as_ref()) && !matches!(value, Some(Bson::String(_))) {
            return Err(code(
                op,
                c,
                format!(
                    "{op} requires that '{which}' be a string, found: {}",
                    type_alias(value.as_ref())
                ),
            ));
        }
    }
    let (Some(Bson::String(input)), Some(Bson::String(find)), Some(Bson::String(with))) =
        (&v[0], &v[1], &v[2])
    else {
        return Ok(Some(Bson::Null));
    };
    // The result's length is known before it is built, and held to a string's bound.
    let grows_by = with.len().saturating_sub(find.len());
    let times = match (all, find.is_empty()) {
        (false, _) => usize::from(input.contains(find.as_str())),
        (true, true) => input.chars().count() + 1,
        (true, false) => input.matches(find.as_str()).count(),
    };
    super::bounds::check_string_len(
        op,
        input.len().saturating_add(grows_by.saturating_mul(times)),
    )?;
    let out = if !all {
        input.replacen(find.as_str(), with, 1)
    } else if find.is_empty() {
        // Before every character and at the end (MongoDB inserts before every byte; a string
        // here stays valid UTF-8, so characters are the unit).
        let mut out = String::with_capacity(input.len() * (with.len() + 1) + with.len());
        for c in input.chars() {
            out.push_str(with);
            out.push(c);
        }
        out.push_str(with);
        out
    } else {
        input.replace(find.as_str(), with)
    };
    Ok(Some(Bson::String(out)))
}

/// `$setEquals`: whether every array holds the same distinct values as the first.
pub(crate) fn set_equals(
    v: Vec<Option<Bson>>,
    cx: Option<&Collation>,
) -> Result<Option<Bson>, ExprError> {
    let op = "$setEquals";
    let mut sets: Vec<Vec<Bson>> = Vec::with_capacity(v.len());
    for (i, value) in v.into_iter().enumerate() {
        match value {
            Some(Bson::Array(items)) => {
                let mut distinct: Vec<Bson> = Vec::new();
                for x in items {
                    if !distinct.iter().any(|y| compare_bson(&x, y, cx).is_eq()) {
                        distinct.push(x);
                    }
                }
                sets.push(distinct);
            }
            other => {
                return Err(code(
                    op,
                    17044,
                    format!(
                        "all operands of $setEquals must be arrays; argument {} is of type: {}",
                        i + 1,
                        type_alias(other.as_ref())
                    ),
                ));
            }
        }
    }
    let first = &sets[0];
    let equal = sets[1..].iter().all(|s| {
        s.len() == first.len()
            && first
                .iter()
                .all(|x| s.iter().any(|y| compare_bson(x, y, cx).is_eq()))
    });
    Ok(Some(Bson::Boolean(equal)))
}

/// A number as a double (a decimal through its text, its specials included); `None` for
/// anything that is not a number.
pub(crate) fn as_f64(v: &Bson) -> Option<f64> {
    match v {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        Bson::Decimal128(d) => {
            let text = d.to_string();
            text.parse::<f64>().ok().or(match text.as_str() {
                "NaN" | "-NaN" => Some(f64::NAN),
                "Infinity" | "Inf" => Some(f64::INFINITY),
                "-Infinity" | "-Inf" => Some(f64::NEG_INFINITY),
                _ => None,
            })
        }
        _ => None,
    }
}

/// `$log: [number, base]`.
pub(crate) fn log(v: &[Option<Bson>]) -> Result<Option<Bson>, ExprError> {
    let op = "$log";
    if nullish(v[0].as_ref()) || nullish(v[1].as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let (Some(a), Some(b)) = (v[0].as_ref(), v[1].as_ref()) else {
        return Ok(Some(Bson::Null));
    };
    let x = as_f64(a).ok_or_else(|| {
        code(
            op,
            28756,
            format!(
                "$log's argument must be numeric, not {}",
                type_alias(Some(a))
            ),
        )
    })?;
    let base = as_f64(b).ok_or_else(|| {
        code(
            op,
            28757,
            format!("$log's base must be numeric, not {}", type_alias(Some(b))),
        )
    })?;
    // With a decimal operand, in decimal (for what is above zero; the rest as in doubles).
    if (matches!(a, Bson::Decimal128(_)) || matches!(b, Bson::Decimal128(_)))
        && let Some(result) = super::decimal_math::log(a, b)
    {
        return Ok(Some(result));
    }
    if !(x > 0.0 || x.is_nan()) {
        return Err(code(
            op,
            28758,
            format!("$log's argument must be a positive number, but is {x}"),
        ));
    }
    // Exactly 1 is the base without a logarithm; any other value near it has one.
    #[allow(clippy::float_cmp)]
    let base_is_one = base == 1.0;
    if !((base > 0.0 && !base_is_one) || base.is_nan()) {
        return Err(code(
            op,
            28759,
            format!("$log's base must be a positive number not equal to 1, but is {base}"),
        ));
    }
    Ok(Some(Bson::Double(x.ln() / base.ln())))
}
