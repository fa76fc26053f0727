//! Durations in human units with three significant digits, and their parsing for flags like `--min-time 250us`.

use crate::error::UserError;

/// `1.23µs`, `45.6ms`, `789ns`, `2.00s`: three significant digits.
pub fn format_ns(ns: u64) -> String {
    format_ns_f64(ns as f64)
}

/// [`format_ns`] for fractional values (means, medians).
pub fn format_ns_f64(ns: f64) -> String {
    const UNITS: [(f64, &str); 4] = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")];
    let abs = ns.abs();
    for (scale, unit) in UNITS {
        if abs >= scale || unit == "ns" {
            let v = ns / scale;
            if unit == "ns" && v.fract() == 0.0 {
                return format!("{v:.0}ns");
            }
            let digits = if v.abs() >= 100.0 {
                0
            } else if v.abs() >= 10.0 {
                1
            } else {
                2
            };
            // Rounding can carry into the next unit (999.7µs -> 1000µs): say 1.00ms instead.
            let text = format!("{v:.digits$}");
            if unit != "s" && text.trim_start_matches('-').starts_with("1000") {
                return format_ns_f64(ns.signum() * scale * 1000.0);
            }
            return format!("{text}{unit}");
        }
    }
    unreachable!("the ns unit always matches")
}

/// Parses `250us`, `1.5ms`, `2s`, `100ns`, `100` (ns) into nanoseconds.
pub fn parse_duration(text: &str) -> Result<u64, UserError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let Ok(value) = num.parse::<f64>() else {
        return Err(UserError::new(format!("`{text}` is not a duration"))
            .hint("write a number and a unit, e.g. 250us, 1.5ms, 2s"));
    };
    let scale = match unit.trim() {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => {
            return Err(
                UserError::new(format!("unknown duration unit `{other}` in `{text}`")).hint("use ns, us, ms or s")
            )
        }
    };
    Ok((value * scale).round() as u64)
}

/// Bytes with three significant digits and a binary unit: `512 B`, `1.50 KiB`, `12.3 MiB`.
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    match unit {
        0 if value.fract() == 0.0 => format!("{value} B"),
        0 => format!("{value:.1} B"),
        _ if value >= 100.0 => format!("{value:.0} {}", UNITS[unit]),
        _ if value >= 10.0 => format!("{value:.1} {}", UNITS[unit]),
        _ => format!("{value:.2} {}", UNITS[unit]),
    }
}

/// Calls per invocation: `3` for whole numbers, `2.50` and `0.33` otherwise (two decimals, so table columns line
/// up).
pub fn format_calls(calls: f64) -> String {
    if (calls - calls.round()).abs() < 1e-9 {
        return format!("{calls:.0}");
    }
    format!("{calls:.2}")
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1 invocation`, `2 invocations`.
pub fn plural(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    format!("{n} {noun}{}", plural_s(n))
}

/// The `s` of a plural: `""` for one, `"s"` otherwise.
pub fn plural_s(n: impl Into<u64>) -> &'static str {
    if n.into() == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_digits() {
        assert_eq!(format_ns(0), "0ns");
        assert_eq!(format_ns(999), "999ns");
        assert_eq!(format_ns(1234), "1.23µs");
        assert_eq!(format_ns(45_600_000), "45.6ms");
        assert_eq!(format_ns(999_700), "1.00ms");
        assert_eq!(format_ns(2_000_000_000), "2.00s");
        assert_eq!(format_ns(123_456_789_000), "123s");
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("250us").unwrap(), 250_000);
        assert_eq!(parse_duration("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_duration("7").unwrap(), 7);
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("3h").is_err());
    }
}
