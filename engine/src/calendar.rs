//! The calendar of BSON dates: milliseconds since the Unix epoch in UTC, on the proleptic
//! Gregorian calendar, as MongoDB reads them. One place for the arithmetic that expressions
//! (`$year`, `$dateToString`, ...) and the data tools' date formats share.

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
}
