//! UTC dates for `--since`/`--until` and for listings, without a date crate: days from the civil calendar and back
//! (H. Hinnant's algorithms).

use anyhow::Result;

use crate::error::UserError;

const MS_PER_DAY: i64 = 86_400_000;

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (if month <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, month, day)
}

/// Which end of a day a date-only bound means: `--since DAY` starts at its first ms, `--until DAY` ends at its last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayEnd {
    Start,
    End,
}

/// Parses `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM` or `YYYY-MM-DDTHH:MM:SS` (UTC, a space may stand for `T`, a trailing
/// `Z` is allowed) into ms since the Unix epoch.
pub fn parse_date(text: &str, end: DayEnd) -> Result<i64> {
    let invalid = || {
        UserError::new(format!("invalid date `{text}`"))
            .hint("write a UTC date as 2026-03-01, 2026-03-01T14:30 or 2026-03-01T14:30:00")
    };
    let trimmed = text.trim().trim_end_matches('Z');
    let (date, time) = match trimmed.split_once(['T', ' ']) {
        Some((date, time)) => (date, Some(time)),
        None => (trimmed, None),
    };
    let number = |s: &str, range: std::ops::RangeInclusive<i64>| -> Option<i64> {
        let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        digits.then(|| s.parse::<i64>().ok()).flatten().filter(|n| range.contains(n))
    };
    let parts: Vec<&str> = date.split('-').collect();
    let [y, m, d] = parts[..] else { return Err(invalid().into()) };
    let (Some(year), Some(month), Some(day)) = (number(y, 1970..=9999), number(m, 1..=12), number(d, 1..=31)) else {
        return Err(invalid().into());
    };
    let day_ms = days_from_civil(year, month, day) * MS_PER_DAY;
    if civil_from_days(day_ms / MS_PER_DAY) != (year, month, day) {
        return Err(invalid().into());
    }
    let Some(time) = time else {
        return Ok(match end {
            DayEnd::Start => day_ms,
            DayEnd::End => day_ms + MS_PER_DAY - 1,
        });
    };
    let fields: Vec<&str> = time.split(':').collect();
    let (h, min, s) = match fields[..] {
        [h, m] => (number(h, 0..=23), number(m, 0..=59), Some(0)),
        [h, m, s] => (number(h, 0..=23), number(m, 0..=59), number(s, 0..=59)),
        _ => return Err(invalid().into()),
    };
    let (Some(h), Some(min), Some(s)) = (h, min, s) else { return Err(invalid().into()) };
    Ok(day_ms + ((h * 60 + min) * 60 + s) * 1000)
}

/// `2026-03-01 14:30` (UTC) for listings.
pub fn format_ms(ms: i64) -> String {
    let (year, month, day) = civil_from_days(ms.div_euclid(MS_PER_DAY));
    let minutes = ms.rem_euclid(MS_PER_DAY) / 60_000;
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}", minutes / 60, minutes % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_bound_days() {
        let start = parse_date("2026-03-01", DayEnd::Start).unwrap();
        assert_eq!(format_ms(start), "2026-03-01 00:00");
        assert_eq!(parse_date("2026-03-01", DayEnd::End).unwrap(), start + MS_PER_DAY - 1);
        assert_eq!(parse_date("2026-03-01T14:30Z", DayEnd::Start).unwrap(), start + 870 * 60_000);
        assert_eq!(parse_date("2026-03-01 14:30:05", DayEnd::End).unwrap(), start + 870 * 60_000 + 5000);
        assert_eq!(parse_date("1970-01-01", DayEnd::Start).unwrap(), 0);
        assert_eq!(format_ms(1_700_000_000_000), "2023-11-14 22:13");
        for bad in ["2026-02-30", "2026-13-01", "yesterday", "2026-03-01T25:00", "2026-3", "2026-03-01T1:2:3:4"] {
            let err = parse_date(bad, DayEnd::Start).unwrap_err();
            assert!(crate::error::hints_of(&err)[0].contains("2026-03-01"), "{bad}");
        }
    }
}
