//! Dates in expressions: `$year`, `$month`, `$dayOfMonth`, `$hour`, `$minute`, `$second`,
//! `$millisecond`, `$dayOfWeek`, `$dayOfYear` and `$dateToString`, in UTC (a `timezone` other
//! than UTC is refused).

use std::fmt::Write;

use bson::{Bson, Document};

use super::{ExprError, error};

use crate::calendar::civil;
pub(crate) use crate::calendar::iso_string;

/// A date formatted with MongoDB's `$dateToString` specifiers.
fn format_date(millis: i64, format: &str) -> Result<String, ExprError> {
    let c = civil(millis);
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(ch) = chars.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        match chars.next() {
            Some('Y') => {
                let _ = write!(out, "{:04}", c.year);
            }
            Some('m') => {
                let _ = write!(out, "{:02}", c.month);
            }
            Some('d') => {
                let _ = write!(out, "{:02}", c.day);
            }
            Some('H') => {
                let _ = write!(out, "{:02}", c.hour);
            }
            Some('M') => {
                let _ = write!(out, "{:02}", c.minute);
            }
            Some('S') => {
                let _ = write!(out, "{:02}", c.second);
            }
            Some('L') => {
                let _ = write!(out, "{:03}", c.millis);
            }
            Some('j') => {
                let _ = write!(out, "{:03}", c.yearday);
            }
            Some('w') => {
                let _ = write!(out, "{}", c.weekday);
            }
            // ISO weekday: Monday 1 to Sunday 7.
            Some('u') => {
                let _ = write!(out, "{}", (c.weekday + 5) % 7 + 1);
            }
            Some('z') => out.push_str("+0000"),
            Some('Z') => out.push('0'),
            Some('%') => out.push('%'),
            Some(other) => {
                return Err(error(
                    "$dateToString",
                    format!("`%{other}` is not a supported format specifier"),
                ));
            }
            None => return Err(error("$dateToString", "the format ends with a lone `%`")),
        }
    }
    Ok(out)
}

/// The date of a date-part operator: the date itself, or `{date, timezone}` in UTC.
fn date_argument(op: &str, v: Bson) -> Result<Option<i64>, ExprError> {
    match v {
        Bson::Null | Bson::Undefined => Ok(None),
        Bson::DateTime(d) => Ok(Some(d.timestamp_millis())),
        Bson::Timestamp(t) => Ok(Some(i64::from(t.time) * 1000)),
        Bson::ObjectId(id) => Ok(Some(id.timestamp().timestamp_millis())),
        Bson::Document(mut d) => {
            check_timezone(op, &d)?;
            if let Some(unknown) = d.keys().find(|k| *k != "date" && *k != "timezone") {
                return Err(error(op, format!("unknown argument `{unknown}`")));
            }
            date_argument(op, d.remove("date").unwrap_or(Bson::Null))
        }
        other => Err(error(
            op,
            format!(
                "expects a date, not {}",
                super::func::type_alias(Some(&other))
            ),
        )),
    }
}

fn check_timezone(op: &str, d: &Document) -> Result<(), ExprError> {
    match d.get("timezone") {
        None | Some(Bson::Null) => Ok(()),
        Some(Bson::String(tz))
            if matches!(
                tz.as_str(),
                "UTC" | "GMT" | "Z" | "+00:00" | "+0000" | "Etc/UTC"
            ) =>
        {
            Ok(())
        }
        Some(other) => Err(error(
            op,
            format!("timezone `{other}` is not supported by this engine (only UTC)"),
        )),
    }
}

/// `$year`, `$month`, ... of a date.
pub(crate) fn part(op: &str, v: Bson) -> Result<Option<Bson>, ExprError> {
    let Some(millis) = date_argument(op, v)? else {
        return Ok(Some(Bson::Null));
    };
    let c = civil(millis);
    let n = match op {
        "$year" => {
            return Ok(Some(
                i32::try_from(c.year).map_or(Bson::Int64(c.year), Bson::Int32),
            ));
        }
        "$month" => c.month,
        "$dayOfMonth" => c.day,
        "$hour" => c.hour,
        "$minute" => c.minute,
        "$second" => c.second,
        "$millisecond" => c.millis,
        "$dayOfWeek" => c.weekday,
        _ => c.yearday,
    };
    Ok(Some(Bson::Int32(i32::try_from(n).unwrap_or(0))))
}

/// `$dateToString: {date, format, timezone, onNull}`.
pub(crate) fn to_string(v: Bson) -> Result<Option<Bson>, ExprError> {
    let op = "$dateToString";
    let Bson::Document(mut d) = v else {
        return Err(error(
            op,
            "expects a document {date, format, timezone, onNull}",
        ));
    };
    check_timezone(op, &d)?;
    if let Some(unknown) = d
        .keys()
        .find(|k| !["date", "format", "timezone", "onNull"].contains(&k.as_str()))
    {
        return Err(error(op, format!("unknown argument `{unknown}`")));
    }
    let format = match d.remove("format") {
        None => "%Y-%m-%dT%H:%M:%S.%LZ".to_owned(),
        Some(Bson::String(f)) => f,
        Some(_) => return Err(error(op, "`format` must be a string")),
    };
    let Some(millis) = date_argument(op, d.remove("date").unwrap_or(Bson::Null))? else {
        return Ok(Some(d.remove("onNull").unwrap_or(Bson::Null)));
    };
    format_date(millis, &format).map(|s| Some(Bson::String(s)))
}
