//! Calendar dates and UTC times without a time zone library: days of the proleptic Gregorian
//! calendar, RFC 3339 times to and from seconds since the epoch (the pin date of an environment,
//! GitHub's `resetAt`), and a collection's window cut into calendar months (one search each, so a
//! widened window asks only for the months it adds).

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// A day of the proleptic Gregorian calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub year: i32,
    pub month: u32,
    pub day: u32,
}

impl Date {
    /// `YYYY-MM-DD`.
    pub fn parse(text: &str) -> Option<Date> {
        let mut parts = text.trim().splitn(3, '-');
        let year = parts.next()?.parse().ok()?;
        let month: u32 = parts.next()?.parse().ok()?;
        let day: u32 = parts.next()?.parse().ok()?;
        let date = Date { year, month, day };
        ((1..=12).contains(&month) && (1..=days_in_month(year, month)).contains(&day)).then_some(date)
    }

    /// Today in UTC.
    pub fn today() -> Date {
        let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
        Date::from_days(secs.div_euclid(86_400))
    }

    /// Days since 1970-01-01.
    pub fn days(self) -> i64 {
        // Years start in March, so the leap day is the last of its year.
        let (y, m) =
            if self.month <= 2 { (self.year - 1, self.month + 9) } else { (self.year, self.month - 3) };
        let era = y.div_euclid(400) as i64;
        let yoe = y.rem_euclid(400) as i64;
        let doy = (153 * m as i64 + 2) / 5 + self.day as i64 - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    pub fn from_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        Date { year, month, day }
    }

    fn last_of_month(self) -> Date {
        Date { day: days_in_month(self.year, self.month), ..self }
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `since..=until` cut at month ends: each piece a month or the part of one inside the window.
pub fn months(since: Date, until: Date) -> Vec<(Date, Date)> {
    let mut pieces = Vec::new();
    let mut start = since;
    while start <= until {
        let end = start.last_of_month().min(until);
        pieces.push((start, end));
        start = Date::from_days(end.days() + 1);
    }
    pieces
}

/// Seconds since the epoch of an ISO 8601 UTC timestamp as GitHub writes them
/// (`2026-06-01T12:30:00Z`).
pub fn epoch_seconds(timestamp: &str) -> Option<i64> {
    let (date, time) = timestamp.trim().split_once('T')?;
    let time = time.strip_suffix('Z')?;
    let time = time.split('.').next()?;
    let mut hms = time.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    Some(Date::parse(date)?.days() * 86_400 + h * 3600 + m * 60 + s)
}

/// Seconds since the epoch as an RFC 3339 UTC time (`2024-03-18T11:20:00Z`).
pub fn rfc3339(secs: i64) -> String {
    let rem = secs.rem_euclid(86_400);
    let date = Date::from_days(secs.div_euclid(86_400));
    format!("{date}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Now, in seconds since the epoch.
pub fn now_seconds() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// `HH:MM:SS UTC` of an epoch second, for a line that says until when a wait lasts.
pub fn clock(epoch: i64) -> String {
    let s = epoch.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Date {
        Date::parse(text).unwrap()
    }

    #[test]
    fn days_round_trip_across_leap_years_and_the_epoch() {
        assert_eq!(d("1970-01-01").days(), 0);
        assert_eq!(d("2000-03-01").days(), 11_017);
        assert_eq!(d("2024-02-29").days() + 1, d("2024-03-01").days());
        for days in [-1, 0, 59, 11_016, 19_782, 20_788, 30_000] {
            assert_eq!(Date::from_days(days).days(), days);
        }
        assert_eq!(Date::from_days(-1), d("1969-12-31"));
    }

    #[test]
    fn only_real_days_parse() {
        assert!(Date::parse("2023-02-29").is_none());
        assert!(Date::parse("2024-13-01").is_none());
        assert!(Date::parse("2024-06").is_none());
        assert_eq!(Date::parse(" 2024-02-29 "), Some(Date { year: 2024, month: 2, day: 29 }));
    }

    #[test]
    fn a_window_is_cut_at_month_ends() {
        let pieces: Vec<String> =
            months(d("2024-01-20"), d("2024-03-05")).iter().map(|(a, b)| format!("{a}..{b}")).collect();
        assert_eq!(pieces, ["2024-01-20..2024-01-31", "2024-02-01..2024-02-29", "2024-03-01..2024-03-05"]);
        assert_eq!(months(d("2024-05-02"), d("2024-05-02")).len(), 1);
        assert!(months(d("2024-05-03"), d("2024-05-02")).is_empty());
    }

    #[test]
    fn reset_times_read_as_epoch_seconds() {
        assert_eq!(epoch_seconds("1970-01-02T00:00:01Z"), Some(86_401));
        assert_eq!(epoch_seconds("2026-06-01T12:30:00.250Z"), Some(d("2026-06-01").days() * 86_400 + 45_000));
        assert_eq!(epoch_seconds("2026-06-01 12:30:00"), None);
        assert_eq!(clock(45_001), "12:30:01 UTC");
        for secs in [0, 951_782_400, 1_710_760_800, 1_796_190_000] {
            assert_eq!(epoch_seconds(&rfc3339(secs)), Some(secs));
        }
        assert_eq!(rfc3339(1_710_760_800), "2024-03-18T11:20:00Z");
    }
}
