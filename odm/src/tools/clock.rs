//! Calendar arithmetic for the tools' date formats: ISO-8601 text, and the fields that CSV date
//! layouts name. Dates are milliseconds since the Unix epoch in UTC, as BSON stores them.
//!
//! Written here because the conversions are a few lines of well-known arithmetic (Howard
//! Hinnant's `days_from_civil`), on the proleptic Gregorian calendar MongoDB uses.

/// Days since 1970-01-01 of a civil date.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a count of days since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The number of days in a month.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// The fields of a date and time, as text formats name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
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

impl Default for Civil {
    fn default() -> Civil {
        Civil {
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

impl Civil {
    /// Milliseconds since the epoch; an error names the field out of range.
    pub fn to_millis(self) -> Result<i64, String> {
        if !(1..=12).contains(&self.month) {
            return Err(format!("month {} is out of range", self.month));
        }
        if self.day == 0 || self.day > days_in_month(self.year, self.month) {
            return Err(format!("day {} is out of range", self.day));
        }
        if self.hour > 23 || self.minute > 59 || self.second > 59 || self.millis > 999 {
            return Err("the time of day is out of range".to_owned());
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
            .ok_or_else(|| "the date is out of range".to_owned())
    }

    /// The UTC fields of a date.
    pub fn from_millis(millis: i64) -> Civil {
        let days = millis.div_euclid(86_400_000);
        let in_day = millis.rem_euclid(86_400_000);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: (in_day / 3_600_000) as u32,
            minute: (in_day / 60_000 % 60) as u32,
            second: (in_day / 1000 % 60) as u32,
            millis: (in_day % 1000) as u32,
            offset_minutes: 0,
        }
    }
}

/// `2024-05-06T07:08:09.010Z`: the form relaxed Extended JSON writes.
pub fn format_iso(millis: i64) -> String {
    let c = Civil::from_millis(millis);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second, c.millis
    )
}

/// Reads an ISO-8601 date: `YYYY-MM-DD`, then optionally `THH:MM`, `:SS`, a fraction of a
/// second, and `Z`, `±HH:MM`, `±HHMM` or `±HH` (no zone means UTC). A space may stand for the
/// `T`. These are the forms MongoDB's tools write and read.
pub fn parse_iso(text: &str) -> Result<i64, String> {
    let bad = || format!("`{text}` is not an ISO-8601 date");
    let mut s = Scanner {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let mut civil = Civil {
        year: i64::from(s.digits(4).ok_or_else(bad)?),
        ..Civil::default()
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
    civil.to_millis().map_err(|e| format!("`{text}`: {e}"))
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
    fn civil_days_round_trip_over_the_bson_range() {
        for days in (-1_000_000..1_000_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

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
