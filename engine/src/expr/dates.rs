//! Dates in expressions, in a time zone: the date parts (`$year` ... `$millisecond`,
//! `$dayOfWeek`, `$dayOfYear`, `$week`, `$isoWeek`, `$isoWeekYear`, `$isoDayOfWeek`),
//! `$dateToString`, `$dateToParts`, `$dateFromParts`, `$dateFromString`, `$dateAdd`,
//! `$dateSubtract`, `$dateDiff` and `$dateTrunc`.
//!
//! The rules, from MongoDB's manual: a date argument is a date, a timestamp or an ObjectId (its
//! creation time); `timezone` is an IANA name or a UTC offset (`+hh`, `+hhmm`, `+hh:mm`), and
//! absent means UTC; a null or missing argument gives null. Calendar units (year, quarter,
//! month, week, day) are counted on the zone's local calendar, so that adding a day across a
//! daylight-saving change keeps the local time; hours and smaller are fixed lengths of time.
//! `$dateTrunc` aligns bins from 2000-01-01T00:00 local (for weeks, from the first
//! `startOfWeek` day on or after it).

use std::fmt::Write;

use bson::{Bson, Document};

use super::named::Args;
use super::{ExprError, error};
pub(crate) use crate::calendar::iso_string;
use crate::calendar::{
    self, Civil, Zone, civil, days_from_civil, days_in_month, from_local, iso_year_start,
    offset_millis, to_local,
};
use crate::code::ErrorCode;

const DAY: i64 = 86_400_000;

fn code(n: i32) -> ErrorCode {
    ErrorCode::location(n)
}

/// The instant a date argument holds; `None` for null or missing.
fn instant(op: &str, v: Option<Bson>) -> Result<Option<i64>, ExprError> {
    match v {
        None | Some(Bson::Null | Bson::Undefined) => Ok(None),
        Some(Bson::DateTime(d)) => Ok(Some(d.timestamp_millis())),
        Some(Bson::Timestamp(t)) => Ok(Some(i64::from(t.time) * 1000)),
        Some(Bson::ObjectId(id)) => Ok(Some(id.timestamp().timestamp_millis())),
        Some(other) => Err(error(
            op,
            format!(
                "can't convert from BSON type {} to Date",
                super::func::type_alias(Some(&other))
            ),
        )
        .with_code(code(16006))),
    }
}

/// The zone a `timezone` value names: UTC when not given; `None` when it is null or missing
/// (the result is then null).
fn zone_of(op: &str, given: bool, v: Option<Bson>) -> Result<Option<Zone>, ExprError> {
    match v {
        _ if !given => Ok(Some(Zone::UTC)),
        None | Some(Bson::Null | Bson::Undefined) => Ok(None),
        Some(Bson::String(name)) => calendar::zone(&name).map(Some).ok_or_else(|| {
            error(op, format!("unrecognized time zone identifier: \"{name}\""))
                .with_code(code(40485))
        }),
        Some(other) => Err(error(
            op,
            format!(
                "timezone must evaluate to a string, found {}",
                super::func::type_alias(Some(&other))
            ),
        )
        .with_code(code(40517))),
    }
}

fn zone_arg(args: &Args) -> Result<Option<Zone>, ExprError> {
    zone_of(args.op(), args.given("timezone"), args.get("timezone")?)
}

/// Whether a zone is UTC itself (its name, or a fixed offset of zero), for `$dateToString`'s
/// default format.
fn is_utc(zone: &Zone) -> bool {
    zone.iana_name().is_some_and(|n| n == "UTC")
        || zone
            .to_fixed_offset()
            .ok()
            .is_some_and(|o| o.seconds() == 0)
}

/// A date's local parts in a zone.
fn local(zone: &Zone, millis: i64) -> Civil {
    civil(to_local(zone, millis))
}

fn int(n: i64) -> Bson {
    crate::number::int_or_long(n)
}

// ---- Date parts ----

/// `$year`, `$month`, ... `$isoDayOfWeek` of `[date]`, or of `[date, timezone]` when written
/// `{date, timezone}`.
pub(crate) fn part(op: &str, mut v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
    let zone = if v.len() > 1 {
        zone_of(op, true, v.pop().flatten())?
    } else {
        Some(Zone::UTC)
    };
    let Some(millis) = instant(op, v.pop().flatten())? else {
        return Ok(Some(Bson::Null));
    };
    let Some(zone) = zone else {
        return Ok(Some(Bson::Null));
    };
    let c = local(&zone, millis);
    let n: i64 = match op {
        "$year" => return Ok(Some(int(c.year))),
        "$isoWeekYear" => return Ok(Some(int(c.iso_week().0))),
        "$month" => c.month.into(),
        "$dayOfMonth" => c.day.into(),
        "$hour" => c.hour.into(),
        "$minute" => c.minute.into(),
        "$second" => c.second.into(),
        "$millisecond" => c.millis.into(),
        "$dayOfWeek" => c.weekday.into(),
        "$week" => c.sunday_week().into(),
        "$isoWeek" => c.iso_week().1.into(),
        "$isoDayOfWeek" => c.iso_weekday().into(),
        _ => c.yearday.into(),
    };
    Ok(Some(int(n)))
}

// ---- $dateToString ----

use crate::calendar::MONTH_NAMES as MONTHS;

/// A year as `%Y` and `%G` write it: four digits, 0 to 9999.
fn four_digit_year(op: &str, year: i64) -> Result<String, ExprError> {
    if (0..=9999).contains(&year) {
        Ok(format!("{year:04}"))
    } else {
        Err(error(
            op,
            format!("the year {year} is outside the supported range of 0-9999"),
        )
        .with_code(code(18537)))
    }
}

/// A date formatted in a zone with MongoDB's `$dateToString` specifiers.
fn format_date(op: &str, millis: i64, zone: &Zone, format: &str) -> Result<String, ExprError> {
    let c = local(zone, millis);
    let offset_minutes = offset_millis(zone, millis) / 60_000;
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(ch) = chars.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        let Some(spec) = chars.next() else {
            return Err(
                error(op, "unmatched '%' at the end of the format string").with_code(code(18535))
            );
        };
        let _ = match spec {
            'Y' => write!(out, "{}", four_digit_year(op, c.year)?),
            'G' => write!(out, "{}", four_digit_year(op, c.iso_week().0)?),
            'm' => write!(out, "{:02}", c.month),
            'd' => write!(out, "{:02}", c.day),
            'H' => write!(out, "{:02}", c.hour),
            'M' => write!(out, "{:02}", c.minute),
            'S' => write!(out, "{:02}", c.second),
            'L' => write!(out, "{:03}", c.millis),
            'j' => write!(out, "{:03}", c.yearday),
            'w' => write!(out, "{}", c.weekday),
            'u' => write!(out, "{}", c.iso_weekday()),
            'U' => write!(out, "{:02}", c.sunday_week()),
            'V' => write!(out, "{:02}", c.iso_week().1),
            'b' => write!(out, "{}", &MONTHS[c.month as usize - 1][..3]),
            'B' => write!(out, "{}", MONTHS[c.month as usize - 1]),
            'z' => {
                let sign = if offset_minutes < 0 { '-' } else { '+' };
                let m = offset_minutes.abs();
                write!(out, "{sign}{:02}{:02}", m / 60, m % 60)
            }
            'Z' => write!(out, "{offset_minutes}"),
            '%' => write!(out, "%"),
            other => {
                return Err(error(op, format!("invalid format character `%{other}`"))
                    .with_code(code(18536)));
            }
        };
    }
    Ok(out)
}

/// A `format` argument: `Ok(None)` when not written, `Err(None)` when null or missing (the
/// result is then null), the string otherwise; another type is refused with `code`.
fn format_arg(
    args: &Args,
    code_if_not_string: i32,
) -> Result<std::result::Result<Option<String>, ()>, ExprError> {
    match args.get("format")? {
        None if args.given("format") => Ok(Err(())),
        None => Ok(Ok(None)),
        Some(Bson::Null | Bson::Undefined) => Ok(Err(())),
        Some(Bson::String(f)) => Ok(Ok(Some(f))),
        Some(other) => Err(
            error(args.op(), format!("`format` must be a string, not {other}"))
                .with_code(code(code_if_not_string)),
        ),
    }
}

/// `$dateToString: {date, format, timezone, onNull}`.
pub(crate) fn to_string(args: &Args) -> Result<Option<Bson>, ExprError> {
    let op = args.op();
    let Ok(format) = format_arg(args, 18533)? else {
        return Ok(Some(Bson::Null));
    };
    let date = instant(op, args.get("date")?)?;
    let Some(zone) = zone_arg(args)? else {
        return Ok(Some(Bson::Null));
    };
    let Some(millis) = date else {
        return if args.given("onNull") {
            args.get("onNull")
        } else {
            Ok(Some(Bson::Null))
        };
    };
    let format = format.unwrap_or_else(|| {
        if is_utc(&zone) {
            "%Y-%m-%dT%H:%M:%S.%LZ".to_owned()
        } else {
            "%Y-%m-%dT%H:%M:%S.%L".to_owned()
        }
    });
    format_date(op, millis, &zone, &format).map(|s| Some(Bson::String(s)))
}

// ---- $dateToParts and $dateFromParts ----

/// `$dateToParts: {date, timezone, iso8601}`: the date's local parts as int32s.
pub(crate) fn to_parts(args: &Args) -> Result<Option<Bson>, ExprError> {
    let op = args.op();
    let iso = match args.get("iso8601")? {
        None if !args.given("iso8601") => false,
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(Bson::Boolean(b)) => b,
        Some(other) => {
            return Err(error(
                op,
                format!("iso8601 must evaluate to a bool, found {other}"),
            )
            .with_code(code(40521)));
        }
    };
    let date = instant(op, args.get("date")?)?;
    let (Some(zone), Some(millis)) = (zone_arg(args)?, date) else {
        return Ok(Some(Bson::Null));
    };
    let c = local(&zone, millis);
    let mut out = Document::new();
    if iso {
        let (year, week) = c.iso_week();
        out.insert("isoWeekYear", int(year));
        out.insert("isoWeek", int(week.into()));
        out.insert("isoDayOfWeek", int(c.iso_weekday().into()));
    } else {
        out.insert("year", int(c.year));
        out.insert("month", int(c.month.into()));
        out.insert("day", int(c.day.into()));
    }
    out.insert("hour", int(c.hour.into()));
    out.insert("minute", int(c.minute.into()));
    out.insert("second", int(c.second.into()));
    out.insert("millisecond", int(c.millis.into()));
    Ok(Some(Bson::Document(out)))
}

/// One part of `$dateFromParts`: an integer (an integral double or decimal counts), within
/// `range`; `None` when null or missing.
fn date_part(
    op: &str,
    name: &str,
    v: Option<Bson>,
    range: (i64, i64),
) -> Result<Option<i64>, ExprError> {
    let Some(v) = v else { return Ok(None) };
    if matches!(v, Bson::Null | Bson::Undefined) {
        return Ok(None);
    }
    let n = super::as_i64(&v).ok_or_else(|| {
        error(
            op,
            format!("'{name}' must evaluate to an integer, found {v}"),
        )
        .with_code(code(40515))
    })?;
    if n < range.0 || n > range.1 {
        let c = match name {
            "year" => 40523,
            "isoWeekYear" => 31095,
            _ => 31034,
        };
        return Err(error(
            op,
            format!(
                "'{name}' must evaluate to a value in the range [{}, {}]; value {n} is not in range",
                range.0, range.1
            ),
        )
        .with_code(code(c)));
    }
    Ok(Some(n))
}

/// `$dateFromParts`: a date from calendar parts (`year`, `month`, `day`) or ISO week parts
/// (`isoWeekYear`, `isoWeek`, `isoDayOfWeek`), with the time parts and `timezone`. Parts past
/// their range carry into the next larger one (month 14 is February of the next year).
pub(crate) fn from_parts(args: &Args) -> Result<Option<Bson>, ExprError> {
    let op = args.op();
    let calendar_form = ["year", "month", "day"].iter().any(|p| args.given(p));
    let iso_form = ["isoWeekYear", "isoWeek", "isoDayOfWeek"]
        .iter()
        .any(|p| args.given(p));
    if calendar_form && iso_form {
        let (reason, c) = if args.given("year") {
            ("'year' cannot be used with the ISO week parts", 40489)
        } else {
            ("'isoWeekYear' cannot be used with 'month' or 'day'", 40525)
        };
        return Err(error(op, reason).with_code(code(c)));
    }
    let first = if iso_form { "isoWeekYear" } else { "year" };
    if !args.given(first) {
        return Err(error(op, format!("'{first}' is required")).with_code(code(40516)));
    }
    let small = (-32768, 32767);
    let any = (i64::MIN, i64::MAX);
    let mut null = false;
    let mut read = |name: &str, range: (i64, i64), default: i64| -> Result<i64, ExprError> {
        if !args.given(name) {
            return Ok(default);
        }
        let v = date_part(op, name, args.get(name)?, range)?;
        null |= v.is_none();
        Ok(v.unwrap_or(0))
    };
    let days = if iso_form {
        let year = read("isoWeekYear", (1, 9999), 1)?;
        let week = read("isoWeek", small, 1)?;
        let weekday = read("isoDayOfWeek", small, 1)?;
        iso_year_start(year) + (week - 1) * 7 + (weekday - 1)
    } else {
        let year = read("year", (1, 9999), 1)?;
        let month = read("month", small, 1)?;
        let day = read("day", small, 1)?;
        let months = year * 12 + month - 1;
        days_from_civil(months.div_euclid(12), months.rem_euclid(12) as u32 + 1, 1) + day - 1
    };
    let hour = read("hour", small, 0)?;
    let minute = read("minute", small, 0)?;
    let second = read("second", any, 0)?;
    let millisecond = read("millisecond", any, 0)?;
    let zone = zone_arg(args)?;
    let Some(zone) = zone.filter(|_| !null) else {
        return Ok(Some(Bson::Null));
    };
    let local_time = i128::from(days) * i128::from(DAY)
        + i128::from(hour) * 3_600_000
        + i128::from(minute) * 60_000
        + i128::from(second) * 1000
        + i128::from(millisecond);
    let local_time = i64::try_from(local_time)
        .map_err(|_| error(op, "the date overflows").with_code(ErrorCode::OVERFLOW))?;
    Ok(Some(Bson::DateTime(bson::DateTime::from_millis(
        from_local(&zone, local_time),
    ))))
}

// ---- $dateFromString ----

/// What a date string gave: its local parts, and its own offset or zone if it named one.
#[derive(Debug, Default)]
struct Parsed {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    yearday: Option<i64>,
    iso_year: Option<i64>,
    iso_week: Option<i64>,
    iso_weekday: Option<i64>,
    hour: i64,
    minute: i64,
    second: i64,
    millis: i64,
    zone: Option<Zone>,
}

/// Why a date string does not parse (`$dateFromString`, `$toDate`); the text MongoDB's
/// message gives after "error parsing date string".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DateParseError {
    #[error("mixing of ISO dates with natural dates is not allowed")]
    MixedIsoAndNatural,
    /// An ISO week or weekday without an ISO year.
    #[error("the parsed date was invalid")]
    IsoWithoutYear,
    #[error("an incomplete date/time string has been found, with elements missing")]
    Incomplete,
    #[error("the string has no month")]
    NoMonth,
    #[error("the string has no day")]
    NoDay,
    #[error("the month {0} is out of range")]
    MonthOutOfRange(i64),
    #[error("the day {0} is out of range")]
    DayOutOfRange(i64),
    #[error("the time of day is out of range")]
    TimeOutOfRange,
    #[error("expected a number at position {at} of \"{text}\"")]
    ExpectedNumber { at: usize, text: String },
    #[error("a number is too long")]
    NumberTooLong,
    #[error("expected a UTC offset")]
    ExpectedOffset,
    #[error("`{0}` is not a UTC offset")]
    NotAnOffset(String),
    #[error("`{0}` is not a month name")]
    NotAMonth(String),
    #[error("the offset of {0} minutes is out of range")]
    OffsetOutOfRange(i64),
    #[error("`{0}` is not a time zone")]
    NotAZone(String),
    #[error("an hour without minutes")]
    HourWithoutMinutes,
    #[error("the hour {0} is out of range for am/pm")]
    HourOutOfRangeForAmPm(i64),
    #[error("a year without a month")]
    YearWithoutMonth,
    #[error("a month without a day")]
    MonthWithoutDay,
    #[error("a day without a year")]
    DayWithoutYear,
    #[error("a month without a year")]
    MonthWithoutYear,
    #[error("\"{0}\" has trailing data")]
    TrailingData(String),
    #[error("\"{text}\" does not match the format \"{format}\"")]
    FormatMismatch { text: String, format: String },
    #[error("the minutes offset is out of range")]
    MinutesOffsetOutOfRange,
    #[error("invalid format character `%{0}`")]
    InvalidFormatCharacter(char),
    #[error("unmatched '%' at the end of the format string")]
    UnmatchedPercent,
    #[error("\"{0}\" has trailing data after the format")]
    TrailingDataAfterFormat(String),
}

impl Parsed {
    /// The local time the parts name, on a UTC-like clock.
    fn local_millis(&self) -> Result<i64, DateParseError> {
        let natural = self.year.is_some() || self.month.is_some() || self.day.is_some();
        let iso = self.iso_week.is_some() || self.iso_weekday.is_some();
        if (natural || self.yearday.is_some()) && (iso || self.iso_year.is_some()) {
            return Err(DateParseError::MixedIsoAndNatural);
        }
        if iso && self.iso_year.is_none() {
            return Err(DateParseError::IsoWithoutYear);
        }
        let days = if let Some(iso_year) = self.iso_year {
            iso_year_start(iso_year)
                + (self.iso_week.unwrap_or(1) - 1) * 7
                + (self.iso_weekday.unwrap_or(1) - 1)
        } else {
            let year = self.year.ok_or(DateParseError::Incomplete)?;
            if let Some(yearday) = self.yearday {
                days_from_civil(year, 1, 1) + yearday - 1
            } else {
                let month = self.month.ok_or(DateParseError::NoMonth)?;
                let day = self.day.ok_or(DateParseError::NoDay)?;
                if !(1..=12).contains(&month) {
                    return Err(DateParseError::MonthOutOfRange(month));
                }
                if day < 1 || day > i64::from(days_in_month(year, month as u32)) {
                    return Err(DateParseError::DayOutOfRange(day));
                }
                days_from_civil(year, month as u32, 1) + day - 1
            }
        };
        if self.hour > 24 || self.minute > 59 || self.second > 60 {
            return Err(DateParseError::TimeOutOfRange);
        }
        Ok(days * DAY
            + self.hour * 3_600_000
            + self.minute * 60_000
            + self.second * 1000
            + self.millis)
    }
}

/// A cursor over a date string.
struct Cursor<'s> {
    text: &'s str,
    at: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn eat(&mut self, c: char) -> bool {
        if self.rest().starts_with(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// From `least` to `most` ASCII digits.
    fn digits(&mut self, least: usize, most: usize) -> Result<(i64, usize), DateParseError> {
        let count = self
            .rest()
            .bytes()
            .take(most)
            .take_while(u8::is_ascii_digit)
            .count();
        if count < least {
            return Err(DateParseError::ExpectedNumber {
                at: self.at,
                text: self.text.to_owned(),
            });
        }
        let n = self.rest()[..count]
            .parse()
            .map_err(|_| DateParseError::NumberTooLong)?;
        self.at += count;
        Ok((n, count))
    }

    /// Milliseconds from a fraction of a second of any length.
    fn fraction(&mut self) -> Result<i64, DateParseError> {
        let (n, count) = self.digits(1, 9)?;
        let scaled = match count {
            1 => n * 100,
            2 => n * 10,
            3 => n,
            _ => n / 10_i64.pow(count as u32 - 3),
        };
        // Any further digits are read and dropped.
        while self.rest().starts_with(|c: char| c.is_ascii_digit()) {
            self.at += 1;
        }
        Ok(scaled)
    }

    /// `+hh`, `+hhmm` or `+hh:mm` (either sign).
    fn offset(&mut self) -> Result<Zone, DateParseError> {
        let start = self.at;
        let sign = if self.eat('+') {
            1
        } else if self.eat('-') {
            -1
        } else {
            return Err(DateParseError::ExpectedOffset);
        };
        let (hours, _) = self.digits(2, 2)?;
        self.eat(':');
        let minutes = if self.rest().starts_with(|c: char| c.is_ascii_digit()) {
            self.digits(2, 2)?.0
        } else {
            0
        };
        let seconds = sign * (hours * 3600 + minutes * 60);
        jiff::tz::Offset::from_seconds(seconds as i32)
            .map(Zone::fixed)
            .map_err(|_| DateParseError::NotAnOffset(self.text[start..self.at].to_owned()))
    }

    fn month_name(&mut self) -> Result<i64, DateParseError> {
        let word: String = self
            .rest()
            .chars()
            .take_while(char::is_ascii_alphabetic)
            .collect();
        let lower = word.to_ascii_lowercase();
        let month = MONTHS
            .iter()
            .position(|m| {
                let m = m.to_ascii_lowercase();
                lower == m || (lower.len() == 3 && m.starts_with(&lower))
            })
            .ok_or_else(|| DateParseError::NotAMonth(word.clone()))?;
        self.at += word.len();
        Ok(month as i64 + 1)
    }
}

/// Zone abbreviations a date string may end with, and their offsets in minutes.
const ABBREVIATIONS: &[(&str, i32)] = &[
    ("UTC", 0),
    ("UT", 0),
    ("GMT", 0),
    ("WET", 0),
    ("WEST", 60),
    ("BST", 60),
    ("CET", 60),
    ("CEST", 120),
    ("EET", 120),
    ("EEST", 180),
    ("MSK", 180),
    ("EST", -300),
    ("EDT", -240),
    ("CST", -360),
    ("CDT", -300),
    ("MST", -420),
    ("MDT", -360),
    ("PST", -480),
    ("PDT", -420),
    ("AKST", -540),
    ("AKDT", -480),
    ("HST", -600),
    ("JST", 540),
    ("AEST", 600),
    ("AEDT", 660),
];

fn fixed_minutes(minutes: i64) -> Result<Zone, DateParseError> {
    i32::try_from(minutes * 60)
        .ok()
        .and_then(|s| jiff::tz::Offset::from_seconds(s).ok())
        .map(Zone::fixed)
        .ok_or(DateParseError::OffsetOutOfRange(minutes))
}

impl Cursor<'_> {
    fn skip_spaces(&mut self) -> bool {
        let before = self.at;
        while self.eat(' ') {}
        self.at > before
    }

    /// The ASCII letters at the cursor (not consumed).
    fn word(&self) -> &str {
        let n = self
            .rest()
            .bytes()
            .take_while(u8::is_ascii_alphabetic)
            .count();
        &self.rest()[..n]
    }

    /// An ordinal suffix after a day: `st`, `nd`, `rd`, `th`.
    fn ordinal(&mut self) {
        let w = self.word().to_ascii_lowercase();
        if ["st", "nd", "rd", "th"].contains(&w.as_str()) {
            self.at += 2;
        }
    }

    /// A zone at the end of a free-form string: `Z`, an offset, `GMT+hh:mm`, an abbreviation,
    /// a military letter or an IANA name.
    fn free_zone(&mut self) -> Result<Zone, DateParseError> {
        if self.rest().starts_with(['+', '-']) {
            return self.offset();
        }
        let word = self.word().to_owned();
        let upper = word.to_ascii_uppercase();
        if (upper == "GMT" || upper == "UTC") && self.rest()[word.len()..].starts_with(['+', '-']) {
            self.at += word.len();
            return self.offset();
        }
        if word.len() == self.rest().len() || word.len() == self.rest().trim_end().len() {
            if let Some((_, minutes)) = ABBREVIATIONS.iter().find(|(a, _)| *a == upper) {
                self.at += word.len();
                return fixed_minutes(i64::from(*minutes));
            }
            // Military zones: A (+1) to M (+12) without J, N (-1) to Y (-12), Z (0).
            if let [letter] = upper.as_bytes() {
                let hours = match letter {
                    b'Z' => 0,
                    b'A'..=b'I' => i64::from(letter - b'A') + 1,
                    b'K'..=b'M' => i64::from(letter - b'K') + 10,
                    b'N'..=b'Y' => -(i64::from(letter - b'N') + 1),
                    _ => return Err(DateParseError::NotAZone(word)),
                };
                self.at += 1;
                return fixed_minutes(hours * 60);
            }
        }
        let name = self.rest().trim();
        let zone = calendar::zone(name).ok_or_else(|| DateParseError::NotAZone(name.to_owned()))?;
        self.at = self.text.len();
        Ok(zone)
    }

    /// A time of day: `hh:mm[:ss[.fff]]` with an optional `am`/`pm`, `11am`, `noon` or
    /// `midnight`.
    fn time_of_day(&mut self, p: &mut Parsed) -> Result<(), DateParseError> {
        let word = self.word().to_ascii_lowercase();
        if word == "noon" || word == "midnight" {
            p.hour = if word == "noon" { 12 } else { 0 };
            self.at += word.len();
            return Ok(());
        }
        p.hour = self.digits(1, 2)?.0;
        if self.eat(':') {
            p.minute = self.digits(2, 2)?.0;
            if self.eat(':') {
                p.second = self.digits(2, 2)?.0;
                if self.eat('.') || self.eat(',') {
                    p.millis = self.fraction()?;
                }
            }
        } else if !matches!(self.word().to_ascii_lowercase().as_str(), "am" | "pm") {
            return Err(DateParseError::HourWithoutMinutes);
        }
        let save = self.at;
        self.skip_spaces();
        match self.word().to_ascii_lowercase().as_str() {
            "am" | "pm" => {
                if p.hour == 0 || p.hour > 12 {
                    return Err(DateParseError::HourOutOfRangeForAmPm(p.hour));
                }
                let pm = self.word().eq_ignore_ascii_case("pm");
                p.hour = p.hour % 12 + if pm { 12 } else { 0 };
                self.at += 2;
            }
            _ => self.at = save,
        }
        Ok(())
    }

    /// A date: ISO (`2017-02-08`, `2017-W06-3`, `2017/02/08`, `2017-Feb-08`), American
    /// (`2/8/17`, `2/8/2017`), day first (`08-02-2017`, `08.02.2017`), or with a month's name
    /// (`February 8th, 2017`, `8 Feb 2017`).
    fn free_date(&mut self, p: &mut Parsed) -> Result<(), DateParseError> {
        if !self.word().is_empty() {
            p.month = Some(self.month_name()?);
            self.skip_spaces();
            p.day = Some(self.digits(1, 2)?.0);
            self.ordinal();
            self.eat(',');
            self.skip_spaces();
            p.year = Some(self.digits(4, 4)?.0);
            return Ok(());
        }
        let (first, width) = self.digits(1, 4)?;
        if width == 4 {
            p.year = Some(first);
            let separator = if self.eat('-') {
                '-'
            } else if self.eat('/') {
                '/'
            } else {
                return Err(DateParseError::YearWithoutMonth);
            };
            if separator == '-' && self.eat('W') {
                p.iso_year = p.year.take();
                p.iso_week = Some(self.digits(2, 2)?.0);
                if self.eat('-') {
                    p.iso_weekday = Some(self.digits(1, 1)?.0);
                }
                return Ok(());
            }
            p.month = Some(if self.word().is_empty() {
                self.digits(1, 2)?.0
            } else {
                self.month_name()?
            });
            if !self.eat(separator) {
                return Err(DateParseError::MonthWithoutDay);
            }
            p.day = Some(self.digits(1, 2)?.0);
            return Ok(());
        }
        if self.eat('/') {
            // American: month/day/year.
            p.month = Some(first);
            p.day = Some(self.digits(1, 2)?.0);
            if !self.eat('/') {
                return Err(DateParseError::DayWithoutYear);
            }
            let (year, digits) = self.digits(2, 4)?;
            p.year = Some(match digits {
                2 if year < 70 => 2000 + year,
                2 => 1900 + year,
                _ => year,
            });
            return Ok(());
        }
        if self.eat('-') || self.eat('.') {
            p.day = Some(first);
            p.month = Some(if self.word().is_empty() {
                self.digits(1, 2)?.0
            } else {
                self.month_name()?
            });
            if !(self.eat('-') || self.eat('.')) {
                return Err(DateParseError::MonthWithoutYear);
            }
            p.year = Some(self.digits(4, 4)?.0);
            return Ok(());
        }
        p.day = Some(first);
        self.ordinal();
        self.skip_spaces();
        p.month = Some(self.month_name()?);
        self.eat(',');
        self.skip_spaces();
        p.year = Some(self.digits(4, 4)?.0);
        Ok(())
    }
}

/// A date string without a format, in the forms people write: a date (see
/// [`Cursor::free_date`]), then an optional time of day after `T` or spaces, then an optional
/// zone (`Z`, an offset, `GMT+02:00`, a common abbreviation, a military letter, an IANA name).
fn parse_free(text: &str) -> Result<Parsed, DateParseError> {
    let mut p = Parsed::default();
    let trimmed = text.trim();
    let mut c = Cursor {
        text: trimmed,
        at: 0,
    };
    c.free_date(&mut p)?;
    let spaced = c.skip_spaces();
    let starts_time = |c: &Cursor| {
        c.rest().starts_with(|ch: char| ch.is_ascii_digit())
            || ["noon", "midnight"].contains(&c.word().to_ascii_lowercase().as_str())
    };
    if c.eat('T') || (spaced && starts_time(&c)) {
        c.time_of_day(&mut p)?;
        c.skip_spaces();
    }
    if !c.rest().is_empty() {
        p.zone = Some(c.free_zone()?);
    }
    if !c.rest().trim().is_empty() {
        return Err(DateParseError::TrailingData(text.to_owned()));
    }
    Ok(p)
}

/// A date string read with `$dateFromString`'s format specifiers.
fn parse_with(text: &str, format: &str) -> Result<Parsed, DateParseError> {
    let mismatch = || DateParseError::FormatMismatch {
        text: text.to_owned(),
        format: format.to_owned(),
    };
    let mut p = Parsed::default();
    let mut c = Cursor { text, at: 0 };
    let mut spec = format.chars();
    while let Some(f) = spec.next() {
        if f != '%' {
            if !c.eat(f) {
                return Err(mismatch());
            }
            continue;
        }
        match spec.next() {
            Some('Y') => p.year = Some(c.digits(4, 4)?.0),
            Some('G') => p.iso_year = Some(c.digits(4, 4)?.0),
            Some('m') => p.month = Some(c.digits(1, 2)?.0),
            Some('d') => p.day = Some(c.digits(1, 2)?.0),
            Some('j') => p.yearday = Some(c.digits(1, 3)?.0),
            Some('H') => p.hour = c.digits(1, 2)?.0,
            Some('M') => p.minute = c.digits(1, 2)?.0,
            Some('S') => p.second = c.digits(1, 2)?.0,
            Some('L') => p.millis = c.fraction()?,
            Some('V') => p.iso_week = Some(c.digits(1, 2)?.0),
            Some('u') => p.iso_weekday = Some(c.digits(1, 1)?.0),
            Some('U' | 'w') => {
                c.digits(1, 2)?;
            }
            Some('b' | 'B') => p.month = Some(c.month_name()?),
            Some('z') => p.zone = Some(c.offset()?),
            Some('Z') => {
                let sign = if c.eat('-') {
                    -1
                } else {
                    c.eat('+');
                    1
                };
                let minutes = sign * c.digits(1, 4)?.0;
                p.zone = Some(
                    jiff::tz::Offset::from_seconds((minutes * 60) as i32)
                        .map(Zone::fixed)
                        .map_err(|_| DateParseError::MinutesOffsetOutOfRange)?,
                );
            }
            Some('%') => {
                if !c.eat('%') {
                    return Err(mismatch());
                }
            }
            Some(other) => return Err(DateParseError::InvalidFormatCharacter(other)),
            None => return Err(DateParseError::UnmatchedPercent),
        }
    }
    if !c.rest().is_empty() {
        return Err(DateParseError::TrailingDataAfterFormat(text.to_owned()));
    }
    Ok(p)
}

/// The instant of a date string without a format, in UTC unless it names a zone (`$toDate`).
pub(crate) fn parse_date_string(text: &str) -> Result<i64, DateParseError> {
    let parsed = parse_free(text)?;
    let local_time = parsed.local_millis()?;
    Ok(from_local(&parsed.zone.unwrap_or(Zone::UTC), local_time))
}

/// `$dateFromString: {dateString, format, timezone, onError, onNull}`.
pub(crate) fn from_string(args: &Args) -> Result<Option<Bson>, ExprError> {
    let op = args.op();
    let Ok(format) = format_arg(args, 40684)? else {
        return Ok(Some(Bson::Null));
    };
    if let Some(f) = &format {
        check_parse_format(op, f)?;
    }
    let zone = zone_arg(args)?;
    let text = match args.get("dateString")? {
        None | Some(Bson::Null | Bson::Undefined) => {
            return if args.given("onNull") {
                args.get("onNull")
            } else {
                Ok(Some(Bson::Null))
            };
        }
        Some(Bson::String(s)) => s,
        Some(other) => {
            return on_error(
                args,
                error(
                    op,
                    format!(
                        "a date string must be a string, not {}",
                        super::type_name(&other)
                    ),
                )
                .with_code(ErrorCode::CONVERSION_FAILURE),
            );
        }
    };
    let Some(zone) = zone else {
        return Ok(Some(Bson::Null));
    };
    let parsed = match &format {
        Some(f) => parse_with(&text, f),
        None => parse_free(&text),
    };
    let result = parsed.and_then(|p| {
        let local_time = p.local_millis()?;
        Ok((local_time, p.zone))
    });
    match result {
        Ok((local_time, own_zone)) => {
            if own_zone.is_some() && args.given("timezone") {
                return Err(error(
                    op,
                    "a date string with time zone information cannot be used with a timezone argument",
                )
                .with_code(ErrorCode::CONVERSION_FAILURE));
            }
            let zone = own_zone.unwrap_or(zone);
            Ok(Some(Bson::DateTime(bson::DateTime::from_millis(
                from_local(&zone, local_time),
            ))))
        }
        Err(reason) => on_error(
            args,
            error(op, format!("error parsing date string '{text}': {reason}"))
                .with_code(ErrorCode::CONVERSION_FAILURE),
        ),
    }
}

/// The specifiers `$dateFromString` reads (all but `%U` and `%w` mean a part of the date).
fn check_parse_format(op: &str, format: &str) -> Result<(), ExprError> {
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some(
                    'Y' | 'G' | 'm' | 'd' | 'j' | 'H' | 'M' | 'S' | 'L' | 'V' | 'u' | 'U' | 'w'
                    | 'b' | 'B' | 'z' | 'Z' | '%',
                ) => {}
                Some(other) => {
                    return Err(error(op, format!("invalid format character `%{other}`"))
                        .with_code(code(18536)));
                }
                None => {
                    return Err(error(op, "unmatched '%' at the end of the format string")
                        .with_code(code(18535)));
                }
            }
        }
    }
    Ok(())
}

/// `onError`'s value when it was given, or the error.
fn on_error(args: &Args, e: ExprError) -> Result<Option<Bson>, ExprError> {
    if args.given("onError") {
        args.get("onError")
    } else {
        Err(e)
    }
}

// ---- $dateAdd, $dateSubtract, $dateDiff, $dateTrunc ----

/// A unit of time, as `$dateAdd`, `$dateDiff` and `$dateTrunc` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Year,
    Quarter,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
}

impl Unit {
    /// The unit's length, for the units of fixed length.
    fn millis(self) -> Option<i64> {
        match self {
            Unit::Hour => Some(3_600_000),
            Unit::Minute => Some(60_000),
            Unit::Second => Some(1000),
            Unit::Millisecond => Some(1),
            _ => None,
        }
    }

    /// The unit in months, for the units counted in months.
    fn months(self) -> Option<i64> {
        match self {
            Unit::Year => Some(12),
            Unit::Quarter => Some(3),
            Unit::Month => Some(1),
            _ => None,
        }
    }
}

/// A `unit` (not null): `$dateAdd` and `$dateSubtract` answer a wrong one with their own codes.
fn unit_of(op: &str, v: Bson) -> Result<Unit, ExprError> {
    let adding = op == "$dateAdd" || op == "$dateSubtract";
    let unit = match v {
        Bson::String(s) => s,
        other => {
            let c = if adding { 5_166_404 } else { 5_439_013 };
            return Err(
                error(op, format!("unit must be a string, found {other}")).with_code(code(c))
            );
        }
    };
    Ok(match unit.as_str() {
        "year" => Unit::Year,
        "quarter" => Unit::Quarter,
        "month" => Unit::Month,
        "week" => Unit::Week,
        "day" => Unit::Day,
        "hour" => Unit::Hour,
        "minute" => Unit::Minute,
        "second" => Unit::Second,
        "millisecond" => Unit::Millisecond,
        other => {
            let c = if adding {
                ErrorCode::FAILED_TO_PARSE
            } else {
                code(5_439_014)
            };
            return Err(error(op, format!("unknown time unit value: {other}")).with_code(c));
        }
    })
}

fn is_nullish(v: Option<&Bson>) -> bool {
    matches!(v, None | Some(Bson::Null | Bson::Undefined))
}

/// The arguments `names`, evaluated; `None` when any is null or missing (the result is then
/// null, before any argument is checked). `timezone` counts only when written.
fn all_present(args: &Args, names: &[&str]) -> Result<Option<Vec<Bson>>, ExprError> {
    let mut values = Vec::with_capacity(names.len());
    for name in names {
        if *name == "timezone" && !args.given(name) {
            values.push(Bson::String("UTC".to_owned()));
            continue;
        }
        let v = args.get(name)?;
        if is_nullish(v.as_ref()) {
            return Ok(None);
        }
        values.extend(v);
    }
    Ok(Some(values))
}

/// `startOfWeek`: the weekday a week starts on, 0 (Monday) to 6 (Sunday); Sunday when not
/// given; `None` when null or missing. Read only when the unit is `week`.
fn start_of_week(args: &Args) -> Result<Option<i64>, ExprError> {
    let op = args.op();
    if !args.given("startOfWeek") {
        return Ok(Some(6));
    }
    let name = match args.get("startOfWeek")? {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(None),
        Some(Bson::String(s)) => s,
        Some(other) => {
            return Err(
                error(op, format!("startOfWeek must be a string, found {other}"))
                    .with_code(code(5_439_015)),
            );
        }
    };
    let days = [
        ("monday", "mon"),
        ("tuesday", "tue"),
        ("wednesday", "wed"),
        ("thursday", "thu"),
        ("friday", "fri"),
        ("saturday", "sat"),
        ("sunday", "sun"),
    ];
    let lower = name.to_ascii_lowercase();
    days.iter()
        .position(|(long, short)| lower == *long || lower == *short)
        .map(|i| Some(i as i64))
        .ok_or_else(|| {
            error(op, format!("unknown day of week value: {name}")).with_code(code(5_439_016))
        })
}

/// The days since 1970-01-01 of a local time's day, and its time within the day.
fn split_day(local_time: i64) -> (i64, i64) {
    (local_time.div_euclid(DAY), local_time.rem_euclid(DAY))
}

/// A month count (`year * 12 + month - 1`) and a day, clamped to the month's length.
fn month_day(months: i64, day: u32) -> i64 {
    let (year, month) = (months.div_euclid(12), months.rem_euclid(12) as u32 + 1);
    days_from_civil(year, month, day.min(days_in_month(year, month)))
}

/// `$dateAdd` (`sign` 1) and `$dateSubtract` (`sign` -1): `{startDate, unit, amount,
/// timezone}`. Months, quarters and years keep the day of the month where the new month has
/// it and clamp to its last day otherwise.
pub(crate) fn add(args: &Args, sign: i64) -> Result<Option<Bson>, ExprError> {
    let op = args.op();
    let Some(mut v) = all_present(args, &["startDate", "unit", "amount", "timezone"])? else {
        return Ok(Some(Bson::Null));
    };
    let (zone, amount, unit, start) = (v.pop(), v.pop(), v.pop(), v.pop());
    let start = instant(op, start)
        .map_err(|e| e.with_code(code(5_166_403)))?
        .unwrap_or(0);
    let unit = unit_of(op, unit.unwrap_or(Bson::Null))?;
    let amount = amount.unwrap_or(Bson::Null);
    let amount = super::as_i64(&amount).ok_or_else(|| {
        error(
            op,
            format!("amount must be an integer value, found {amount}"),
        )
        .with_code(code(5_166_405))
    })?;
    let zone = zone_of(op, true, zone)?.unwrap_or(Zone::UTC);
    if sign < 0 && amount == i64::MIN {
        return Err(error(op, "the amount cannot be negated").with_code(code(6_045_000)));
    }
    // The years the months make must fit in an int, as MongoDB checks.
    if unit
        .months()
        .is_some_and(|m| i32::try_from(i128::from(amount) * i128::from(m) / 12).is_err())
    {
        return Err(error(
            op,
            format!("the amount {amount} of {unit:?} is out of range"),
        )
        .with_code(code(5_976_500)));
    }
    let overflow = || error(op, "the date overflows").with_code(code(5_166_406));
    let amount = amount.checked_mul(sign).ok_or_else(overflow)?;
    let result = if let Some(length) = unit.millis() {
        amount
            .checked_mul(length)
            .and_then(|ms| start.checked_add(ms))
            .ok_or_else(overflow)?
    } else {
        let local_time = to_local(&zone, start);
        let (days, in_day) = split_day(local_time);
        let new_days = if let Some(months) = unit.months() {
            let c = civil(local_time);
            let total = c
                .year
                .checked_mul(12)
                .and_then(|m| m.checked_add(i64::from(c.month) - 1))
                .and_then(|m| m.checked_add(amount.checked_mul(months)?))
                .filter(|m| m.unsigned_abs() < 1 << 40)
                .ok_or_else(overflow)?;
            month_day(total, c.day)
        } else {
            let per = if unit == Unit::Week { 7 } else { 1 };
            amount
                .checked_mul(per)
                .and_then(|d| days.checked_add(d))
                .filter(|d| d.unsigned_abs() < 1 << 40)
                .ok_or_else(overflow)?
        };
        let new_local = new_days
            .checked_mul(DAY)
            .and_then(|t| t.checked_add(in_day))
            .ok_or_else(overflow)?;
        from_local(&zone, new_local)
    };
    Ok(Some(Bson::DateTime(bson::DateTime::from_millis(result))))
}

/// A date moved by `amount` of a unit named as `$dateAdd` names them, in UTC; `None` when the
/// unit is unknown or the result overflows (time windows of `$setWindowFields`).
pub(crate) fn shift_utc(millis: i64, unit: &str, amount: i64) -> Option<i64> {
    let unit = unit_of("$dateAdd", Bson::String(unit.to_owned())).ok()?;
    if let Some(length) = unit.millis() {
        return amount.checked_mul(length)?.checked_add(millis);
    }
    let (days, in_day) = split_day(millis);
    let new_days = if let Some(months) = unit.months() {
        let c = civil(millis);
        let total =
            (c.year * 12 + i64::from(c.month) - 1).checked_add(amount.checked_mul(months)?)?;
        if total.unsigned_abs() >= 1 << 40 {
            return None;
        }
        month_day(total, c.day)
    } else {
        let per = if unit == Unit::Week { 7 } else { 1 };
        days.checked_add(amount.checked_mul(per)?)?
    };
    new_days.checked_mul(DAY)?.checked_add(in_day)
}

/// Whether `unit` names a unit of `$dateAdd` (for checking a time window when parsed).
pub(crate) fn is_unit(unit: &str) -> bool {
    unit_of("$dateAdd", Bson::String(unit.to_owned())).is_ok()
}

/// `$dateDiff: {startDate, endDate, unit, timezone, startOfWeek}`: how many unit boundaries
/// lie between the two dates on the zone's local clock, as a long (negative when the end is
/// earlier).
pub(crate) fn diff(args: &Args) -> Result<Option<Bson>, ExprError> {
    let op = args.op();
    let Some(mut v) = all_present(args, &["startDate", "endDate", "unit", "timezone"])? else {
        return Ok(Some(Bson::Null));
    };
    let week = matches!(v.get(2), Some(Bson::String(u)) if u == "week");
    if week && args.given("startOfWeek") && is_nullish(args.get("startOfWeek")?.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let (zone, unit, end, start) = (v.pop(), v.pop(), v.pop(), v.pop());
    let not_date = |e: ExprError| e.with_code(code(5_166_307));
    let start = instant(op, start).map_err(not_date)?.unwrap_or(0);
    let end = instant(op, end).map_err(not_date)?.unwrap_or(0);
    let unit = unit_of(op, unit.unwrap_or(Bson::Null))?;
    let zone = zone_of(op, true, zone)?.unwrap_or(Zone::UTC);
    let Some(week_start) = (if unit == Unit::Week {
        start_of_week(args)?
    } else {
        Some(0)
    }) else {
        return Ok(Some(Bson::Null));
    };
    let (a, b) = (to_local(&zone, start), to_local(&zone, end));
    let n = match unit {
        Unit::Millisecond => i128::from(end) - i128::from(start),
        // Hours and smaller are fixed lengths: their boundaries are counted on the instants.
        _ if unit.millis().is_some() => {
            let length = unit.millis().unwrap_or(1);
            i128::from(end.div_euclid(length)) - i128::from(start.div_euclid(length))
        }
        Unit::Day => i128::from(b.div_euclid(DAY)) - i128::from(a.div_euclid(DAY)),
        Unit::Week => {
            // Weeks counted from a day that starts one: 1970-01-05 was a Monday.
            let week = |t: i64| (t.div_euclid(DAY) - 4 - week_start).div_euclid(7);
            i128::from(week(b)) - i128::from(week(a))
        }
        _ => {
            let months = |t: i64| {
                let c = civil(t);
                i128::from(c.year) * 12 + i128::from(c.month) - 1
            };
            let per = i128::from(unit.months().unwrap_or(1));
            months(b).div_euclid(per) - months(a).div_euclid(per)
        }
    };
    i64::try_from(n)
        .map(|n| Some(Bson::Int64(n)))
        .map_err(|_| error(op, "the difference overflows a long").with_code(code(5_166_309)))
}

/// 2000-01-01T00:00, where `$dateTrunc`'s bins start, in days since 1970-01-01.
const REFERENCE_DAYS: i64 = 10_957;

/// `$dateTrunc: {date, unit, binSize, timezone, startOfWeek}`: the start of the bin of
/// `binSize` units that holds the date, bins counted on the local clock from 2000-01-01.
pub(crate) fn trunc(args: &Args) -> Result<Option<Bson>, ExprError> {
    let op = args.op();
    let Some(mut v) = all_present(args, &["date", "unit", "timezone"])? else {
        return Ok(Some(Bson::Null));
    };
    // A written `binSize`, or `startOfWeek` for weeks, that is null also gives null first.
    let week = matches!(v.get(1), Some(Bson::String(u)) if u == "week");
    if (args.given("binSize") && is_nullish(args.get("binSize")?.as_ref()))
        || (week && args.given("startOfWeek") && is_nullish(args.get("startOfWeek")?.as_ref()))
    {
        return Ok(Some(Bson::Null));
    }
    let (zone, unit, date) = (v.pop(), v.pop(), v.pop());
    let millis = instant(op, date)
        .map_err(|e| e.with_code(code(5_439_012)))?
        .unwrap_or(0);
    let unit = unit_of(op, unit.unwrap_or(Bson::Null))?;
    let bin = if args.given("binSize") {
        match args.get("binSize")? {
            None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
            Some(v) => match super::as_i64(&v) {
                Some(n) if n > 0 => n,
                Some(_) => {
                    return Err(
                        error(op, format!("binSize must be greater than zero, found {v}"))
                            .with_code(code(5_439_018)),
                    );
                }
                None => {
                    return Err(
                        error(op, format!("binSize must be a 64-bit integer, found {v}"))
                            .with_code(code(5_439_017)),
                    );
                }
            },
        }
    } else {
        1
    };
    let zone = zone_of(op, true, zone)?.unwrap_or(Zone::UTC);
    let Some(week_start) = (if unit == Unit::Week {
        start_of_week(args)?
    } else {
        Some(0)
    }) else {
        return Ok(Some(Bson::Null));
    };
    let local_time = to_local(&zone, millis);
    let reference = REFERENCE_DAYS * DAY;
    let overflow = || {
        error(
            op,
            "the start of the date's bin is out of the range of dates",
        )
        .with_code(ErrorCode::OVERFLOW)
    };
    let start_local = if let Some(length) = unit.millis() {
        let size = i128::from(length) * i128::from(bin);
        let offset = i128::from(local_time) - i128::from(reference);
        let start = i128::from(reference) + offset.div_euclid(size) * size;
        i64::try_from(start).map_err(|_| overflow())?
    } else if let Some(months) = unit.months() {
        let c = civil(local_time);
        let since = (i128::from(c.year) - 2000) * 12 + i128::from(c.month) - 1;
        let size = i128::from(months) * i128::from(bin);
        let start = since.div_euclid(size) * size + 2000 * 12;
        // Months beyond any date's year (the range of dates is under 300 million years).
        let start = i64::try_from(start)
            .ok()
            .filter(|m| m.unsigned_abs() < 1 << 40)
            .ok_or_else(overflow)?;
        month_day(start, 1).checked_mul(DAY).ok_or_else(overflow)?
    } else {
        // Weeks from the first `startOfWeek` on or after the reference (a Saturday).
        let (first, size) = if unit == Unit::Week {
            let reference_weekday = (REFERENCE_DAYS + 3).rem_euclid(7);
            (
                REFERENCE_DAYS + (week_start - reference_weekday).rem_euclid(7),
                7 * i128::from(bin),
            )
        } else {
            (REFERENCE_DAYS, i128::from(bin))
        };
        let days = i128::from(local_time.div_euclid(DAY)) - i128::from(first);
        let start = i128::from(first) + days.div_euclid(size) * size;
        i64::try_from(start * i128::from(DAY)).map_err(|_| overflow())?
    };
    let result = if unit.millis().is_some() {
        // Fixed lengths: the bin's start keeps the offset the date had.
        let back = i128::from(local_time) - i128::from(start_local);
        i64::try_from(i128::from(millis) - back).map_err(|_| overflow())?
    } else {
        from_local(&zone, start_local)
    };
    Ok(Some(Bson::DateTime(bson::DateTime::from_millis(result))))
}
