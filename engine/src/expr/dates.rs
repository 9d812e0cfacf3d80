//! Dates in expressions: `$year`, `$month`, `$dayOfMonth`, `$hour`, `$minute`, `$second`,
//! `$millisecond`, `$dayOfWeek`, `$dayOfYear` and `$dateToString`, in UTC (a `timezone` other
//! than UTC is refused).

use std::fmt::Write;

use bson::{Bson, Document};

use super::{ExprError, error};

/// The parts of a UTC date.
pub(crate) struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
    /// 1 (Sunday) to 7 (Saturday).
    pub weekday: u32,
    /// 1 to 366.
    pub yearday: u32,
}

/// The civil date of days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

pub(crate) fn civil(millis: i64) -> Civil {
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let before_month = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let leap_day = u32::from(month > 2 && is_leap(year));
    let part = |n: i64| u32::try_from(n).unwrap_or(0);
    Civil {
        year,
        month,
        day,
        hour: part(in_day / 3_600_000),
        minute: part(in_day / 60_000 % 60),
        second: part(in_day / 1000 % 60),
        millis: part(in_day % 1000),
        // 1970-01-01 was a Thursday (5 counting Sunday as 1).
        weekday: part((days + 4).rem_euclid(7)) + 1,
        yearday: before_month[usize::try_from(month - 1).unwrap_or(0)] + day + leap_day,
    }
}

/// `2024-03-01T12:00:00.000Z`.
pub(crate) fn iso_string(millis: i64) -> String {
    format_date(millis, "%Y-%m-%dT%H:%M:%S.%LZ").unwrap_or_default()
}

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
