//! The calendar of BSON dates: milliseconds since the Unix epoch in UTC, on the proleptic
//! Gregorian calendar, as MongoDB reads them. One place for the arithmetic that expressions
//! (`$year`, `$dateToString`, ...) and the data tools' date formats share.
//!
//! Time zones are jiff's, with the IANA database bundled into the binary: a date's local time
//! is its UTC time plus the zone's offset at that instant, and a local time that a
//! daylight-saving change skips or repeats resolves as jiff's `compatible` rule does (the later
//! offset in a gap, the earlier in a fold). Beyond the years jiff represents (-9999 to 9999),
//! a zone's offset is the one it has at the nearest representable instant.

/// The months' English names, January first (`$dateToString`'s `%B`, the data tools' date
/// layouts).
pub const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The parts of a UTC date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
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
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
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

/// Days since 1970-01-01 of a civil date (the inverse of [`civil_from_days`]).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// The number of days in a month (1 to 12).
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(year) => 29,
        _ => 28,
    }
}

/// The UTC parts of a date.
pub fn civil(millis: i64) -> Civil {
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

impl Civil {
    /// ISO 8601's weekday: 1 (Monday) to 7 (Sunday).
    pub fn iso_weekday(&self) -> u32 {
        (self.weekday + 5) % 7 + 1
    }

    /// ISO 8601's week-numbering year and week (1 to 53): week 1 is the week, Monday to
    /// Sunday, holding the year's first Thursday.
    pub fn iso_week(&self) -> (i64, u32) {
        let week = (i64::from(self.yearday) - i64::from(self.iso_weekday()) + 10) / 7;
        if week < 1 {
            (self.year - 1, iso_weeks_in(self.year - 1))
        } else if week > i64::from(iso_weeks_in(self.year)) {
            (self.year + 1, 1)
        } else {
            (self.year, week as u32)
        }
    }

    /// The week of the year counting from Sunday (0 to 53): days before the year's first
    /// Sunday are in week 0 (`strftime`'s `%U`, MongoDB's `$week`).
    pub fn sunday_week(&self) -> u32 {
        (self.yearday - 1 + 7 - (self.weekday - 1)) / 7
    }
}

/// How many ISO weeks a week-numbering year has: 53 when it starts on a Thursday, or on a
/// Wednesday in a leap year; otherwise 52.
pub fn iso_weeks_in(year: i64) -> u32 {
    // 1 (Monday) to 7 (Sunday) of January 1st; 1970-01-01 was a Thursday.
    let jan1 = (days_from_civil(year, 1, 1) + 3).rem_euclid(7) + 1;
    if jan1 == 4 || (jan1 == 3 && is_leap(year)) {
        53
    } else {
        52
    }
}

/// Days since 1970-01-01 of the Monday that starts ISO week 1 of `year`.
pub fn iso_year_start(year: i64) -> i64 {
    let jan4 = days_from_civil(year, 1, 4);
    // Monday is 0 here.
    jan4 - (jan4 + 3).rem_euclid(7)
}

/// A time zone of date expressions: an IANA name or a fixed UTC offset.
pub type Zone = jiff::tz::TimeZone;

/// The zone MongoDB's `timezone` argument names: an IANA identifier (`Europe/London`, `UTC`)
/// or an offset `+hh`, `+hhmm` or `+hh:mm` (either sign). `None` when it names none.
pub fn zone(name: &str) -> Option<Zone> {
    if let Some(rest) = name.strip_prefix('+').or_else(|| name.strip_prefix('-')) {
        let digits: String = rest.chars().filter(|c| *c != ':').collect();
        let colon_at_2 = rest.find(':').is_none_or(|i| i == 2 && rest.len() == 5);
        if !colon_at_2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (hours, minutes) = match digits.len() {
            2 => (digits.parse::<i32>().ok()?, 0),
            4 => (
                digits[..2].parse::<i32>().ok()?,
                digits[2..].parse::<i32>().ok()?,
            ),
            _ => return None,
        };
        if minutes >= 60 {
            return None;
        }
        let sign = if name.starts_with('-') { -1 } else { 1 };
        let offset = jiff::tz::Offset::from_seconds(sign * (hours * 3600 + minutes * 60)).ok()?;
        return Some(Zone::fixed(offset));
    }
    if name.is_empty() {
        return None;
    }
    jiff::tz::db().get(name).ok()
}

/// The UTC offset of `zone` at the instant `millis`, in milliseconds.
pub fn offset_millis(zone: &Zone, millis: i64) -> i64 {
    let instant = jiff::Timestamp::from_millisecond(millis.clamp(MIN_INSTANT, MAX_INSTANT))
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    i64::from(zone.to_offset(instant).seconds()) * 1000
}

/// The local time, as milliseconds on a UTC-like clock, of the instant `millis` in `zone`.
pub fn to_local(zone: &Zone, millis: i64) -> i64 {
    millis.saturating_add(offset_millis(zone, millis))
}

/// The instant at which `zone`'s clocks read `local` (milliseconds on a UTC-like clock).
pub fn from_local(zone: &Zone, local: i64) -> i64 {
    let c = civil(local);
    let civil_time = i16::try_from(c.year).ok().and_then(|year| {
        jiff::civil::DateTime::new(
            year,
            c.month as i8,
            c.day as i8,
            c.hour as i8,
            c.minute as i8,
            c.second as i8,
            0,
        )
        .ok()
    });
    match civil_time.and_then(|dt| zone.to_ambiguous_timestamp(dt).compatible().ok()) {
        Some(instant) => instant.as_millisecond().saturating_add(i64::from(c.millis)),
        // Outside jiff's years: the offset at the nearest instant it represents.
        None => local.saturating_sub(offset_millis(zone, local)),
    }
}

/// The instants jiff represents (years -9999 to 9999), in milliseconds.
const MIN_INSTANT: i64 = -377_705_116_800_000;
const MAX_INSTANT: i64 = 253_402_300_799_999;

/// `2024-03-01T12:00:00.000Z`: ISO-8601 in UTC with milliseconds.
pub fn iso_string(millis: i64) -> String {
    let c = civil(millis);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second, c.millis
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_round_trip_and_known_dates() {
        for days in (-1_000_000..1_000_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
            assert!(d <= days_in_month(y, m));
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(iso_string(1_709_208_000_123), "2024-02-29T12:00:00.123Z");
        assert_eq!(civil(0).weekday, 5);
    }

    #[test]
    fn iso_weeks_follow_iso_8601() {
        let day = |y, m, d| civil(days_from_civil(y, m, d) * 86_400_000);
        // 2021-01-03 (a Sunday) is in 2020's week 53; 2024-12-30 in 2025's week 1.
        assert_eq!(day(2021, 1, 3).iso_week(), (2020, 53));
        assert_eq!(day(2021, 1, 4).iso_week(), (2021, 1));
        assert_eq!(day(2024, 12, 30).iso_week(), (2025, 1));
        assert_eq!(day(2026, 11, 24).iso_week(), (2026, 48));
        assert_eq!(iso_weeks_in(2020), 53);
        assert_eq!(iso_weeks_in(2021), 52);
        assert_eq!(iso_year_start(2021), days_from_civil(2021, 1, 4));
        // %U: 2023-01-01 is a Sunday, so week 1 starts that day.
        assert_eq!(day(2023, 1, 1).sunday_week(), 1);
        assert_eq!(day(2022, 1, 1).sunday_week(), 0);
        // Every ISO week round-trips through its Monday.
        for days in (-200_000..200_000).step_by(13) {
            let c = civil(days * 86_400_000);
            let (year, week) = c.iso_week();
            let monday = iso_year_start(year) + i64::from(week - 1) * 7;
            assert_eq!(monday + i64::from(c.iso_weekday()) - 1, days);
        }
    }

    #[test]
    fn zones_read_names_and_offsets() {
        let ny = zone("America/New_York").unwrap();
        // 2024-03-10T07:00Z is 03:00 EDT (the clocks skip 02:00 to 03:00).
        let t = 1_710_054_000_000;
        assert_eq!(offset_millis(&ny, t), -4 * 3_600_000);
        assert_eq!(offset_millis(&ny, t - 1), -5 * 3_600_000);
        assert_eq!(from_local(&ny, to_local(&ny, t)), t);
        assert_eq!(offset_millis(&zone("+05:30").unwrap(), 0), 19_800_000);
        assert_eq!(offset_millis(&zone("-0800").unwrap(), 0), -28_800_000);
        assert_eq!(offset_millis(&zone("+03").unwrap(), 0), 10_800_000);
        for bad in ["", "+5", "+05:3", "Mars/Olympus", "+0560", "05:00"] {
            assert!(zone(bad).is_none(), "{bad}");
        }
        // Far outside jiff's years the offset is the nearest one, not a panic.
        assert_eq!(from_local(&ny, i64::MAX / 2), i64::MAX / 2 + 5 * 3_600_000);
    }
}
