//! Dates as the tools' text formats write them: ISO-8601 in and out, and the fields that CSV
//! date layouts name, turned into BSON's milliseconds since the epoch. The calendar itself is
//! the engine's (`odm_engine::calendar`).

#[cfg(test)]
use odm_engine::calendar::iso_string as format_iso;
use odm_engine::calendar::{days_from_civil, days_in_month};

/// The fields of a date and time, as text formats name them, with the zone they are written
/// in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateFields {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
    /// The offset from UTC the fields are written in, in minutes east.
    pub offset_minutes: i32,
}

impl Default for DateFields {
    fn default() -> DateFields {
        DateFields {
            year: 1970,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            millis: 0,
            offset_minutes: 0,
        }
    }
}

impl DateFields {
    /// Milliseconds since the epoch; an error names the field out of range.
    pub fn to_millis(self) -> Result<i64, OutOfRange> {
        if !(1..=12).contains(&self.month) {
            return Err(OutOfRange::Month(self.month));
        }
        if self.day == 0 || self.day > days_in_month(self.year, self.month) {
            return Err(OutOfRange::Day(self.day));
        }
        if self.hour > 23 || self.minute > 59 || self.second > 59 || self.millis > 999 {
            return Err(OutOfRange::TimeOfDay);
        }
        let days = days_from_civil(self.year, self.month, self.day);
        let seconds = days * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second)
            - i64::from(self.offset_minutes) * 60;
        seconds
            .checked_mul(1000)
            .and_then(|ms| ms.checked_add(i64::from(self.millis)))
            .ok_or(OutOfRange::Instant)
    }
}

/// The field of a [`DateFields`] out of its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutOfRange {
    #[error("month {0} is out of range")]
    Month(u32),
    #[error("day {0} is out of range")]
    Day(u32),
    #[error("the time of day is out of range")]
    TimeOfDay,
    /// Milliseconds since the epoch past a long.
    #[error("the date is out of range")]
    Instant,
}

/// Why [`parse_iso`] refuses a text (quoted in the message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IsoDateError {
    #[error("`{0}` is not an ISO-8601 date")]
    NotIso(String),
    #[error("`{text}`: {source}")]
    OutOfRange { text: String, source: OutOfRange },
}

/// Reads an ISO-8601 date: `YYYY-MM-DD`, then optionally `THH:MM`, `:SS`, a fraction of a
/// second, and `Z`, `±HH:MM`, `±HHMM` or `±HH` (no zone means UTC). A space may stand for the
/// `T`. These are the forms MongoDB's tools write and read.
pub fn parse_iso(text: &str) -> Result<i64, IsoDateError> {
    let bad = || IsoDateError::NotIso(text.to_owned());
    let mut s = Scanner {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let mut civil = DateFields {
        year: i64::from(s.digits(4).ok_or_else(bad)?),
        ..DateFields::default()
    };
    if !s.eat(b'-') {
        return Err(bad());
    }
    civil.month = s.digits(2).ok_or_else(bad)?;
    if !s.eat(b'-') {
        return Err(bad());
    }
    civil.day = s.digits(2).ok_or_else(bad)?;
    if s.eat(b'T') || s.eat(b't') || s.eat(b' ') {
        civil.hour = s.digits(2).ok_or_else(bad)?;
        if !s.eat(b':') {
            return Err(bad());
        }
        civil.minute = s.digits(2).ok_or_else(bad)?;
        if s.eat(b':') {
            civil.second = s.digits(2).ok_or_else(bad)?;
            if s.eat(b'.') || s.eat(b',') {
                let start = s.pos;
                let mut millis = 0;
                while let Some(d) = s.digit() {
                    if s.pos - start <= 3 {
                        millis = millis * 10 + d;
                    }
                }
                if s.pos == start {
                    return Err(bad());
                }
                for _ in (s.pos - start)..3 {
                    millis *= 10;
                }
                civil.millis = millis;
            }
        }
        civil.offset_minutes = s.zone().ok_or_else(bad)?;
    }
    if s.pos != s.bytes.len() {
        return Err(bad());
    }
    civil
        .to_millis()
        .map_err(|source| IsoDateError::OutOfRange {
            text: text.to_owned(),
            source,
        })
}

/// A cursor over ASCII text, for the date formats.
#[derive(Debug)]
pub struct Scanner<'a> {
    pub bytes: &'a [u8],
    pub pos: usize,
}

impl Scanner<'_> {
    pub fn eat(&mut self, byte: u8) -> bool {
        if self.bytes.get(self.pos) == Some(&byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub fn digit(&mut self) -> Option<u32> {
        let d = self.bytes.get(self.pos).filter(|b| b.is_ascii_digit())?;
        self.pos += 1;
        Some(u32::from(d - b'0'))
    }

    /// Exactly `n` digits.
    pub fn digits(&mut self, n: usize) -> Option<u32> {
        let mut value = 0;
        for _ in 0..n {
            value = value * 10 + self.digit()?;
        }
        Some(value)
    }

    /// One to `max` digits.
    pub fn some_digits(&mut self, max: usize) -> Option<u32> {
        let mut value = self.digit()?;
        for _ in 1..max {
            match self.digit() {
                Some(d) => value = value * 10 + d,
                None => break,
            }
        }
        Some(value)
    }

    /// A zone: nothing or `Z` (UTC), `±HH:MM`, `±HHMM` or `±HH`; minutes east of UTC.
    pub fn zone(&mut self) -> Option<i32> {
        if self.eat(b'Z') || self.eat(b'z') || self.pos == self.bytes.len() {
            return Some(0);
        }
        let sign = if self.eat(b'+') {
            1
        } else if self.eat(b'-') {
            -1
        } else {
            return None;
        };
        let hours = self.digits(2)? as i32;
        let colon = self.eat(b':');
        let minutes = match self.digits(2) {
            Some(m) => m as i32,
            None if !colon => 0,
            None => return None,
        };
        if hours > 23 || minutes > 59 {
            return None;
        }
        Some(sign * (hours * 60 + minutes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_in_every_accepted_form() {
        assert_eq!(parse_iso("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_iso("1970-01-01"), Ok(0));
        assert_eq!(parse_iso("1970-01-01T00:00:01.5Z"), Ok(1500));
        assert_eq!(parse_iso("1970-01-01T01:00:00+01:00"), Ok(0));
        assert_eq!(parse_iso("1970-01-01T01:00:00.000+0100"), Ok(0));
        assert_eq!(parse_iso("1969-12-31 23:00-01"), Ok(0));
        assert_eq!(parse_iso("2024-02-29T12:00:00Z"), Ok(1_709_208_000_000));
        assert!(parse_iso("2023-02-29").is_err());
        assert!(parse_iso("2023-13-01").is_err());
        assert!(parse_iso("2023-01-01T25:00").is_err());
        assert!(parse_iso("yesterday").is_err());
        for ms in [
            0,
            1,
            -1,
            1_709_208_000_123,
            -62_135_596_800_000,
            253_402_300_799_999,
        ] {
            assert_eq!(parse_iso(&format_iso(ms)), Ok(ms), "{}", format_iso(ms));
        }
    }
}
