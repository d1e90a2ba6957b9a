//! Simulated time: integer nanoseconds, and the duration syntax workload
//! files use ("750us", "3ms", "1.5s", "2min", "1h", or a bare integer of
//! nanoseconds).

/// Simulated time and durations, in nanoseconds.
pub type Nanos = u64;

pub const NSEC_PER_USEC: Nanos = 1_000;
pub const NSEC_PER_MSEC: Nanos = 1_000_000;
pub const NSEC_PER_SEC: Nanos = 1_000_000_000;

/// Parses "750us", "3ms", "1.5s", "200ns" or "12345" (nanoseconds).
pub fn parse_duration(text: &str) -> Result<Nanos, String> {
    let s = text.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return Err(format!("'{text}' is not a duration: write a number with a unit, e.g. \"750us\", \"3ms\", \"2s\""));
    }
    let scale = match unit.trim() {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        other => {
            return Err(format!("unknown time unit '{other}' in '{text}': use ns, us, ms, s, min or h"));
        }
    };
    let value: f64 = num.parse().map_err(|_| format!("'{num}' in '{text}' is not a number"))?;
    let ns = value * scale;
    if !ns.is_finite() || !(0.0..=1e18).contains(&ns) {
        return Err(format!("duration '{text}' is out of range"));
    }
    Ok(ns.round() as Nanos)
}

/// A duration given on the command line: a unit is required, since a bare
/// `--duration 5` is far more likely meant as seconds than as nanoseconds.
pub fn parse_duration_flag(text: &str) -> Result<Nanos, String> {
    if text.trim().ends_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("'{text}' has no unit: write e.g. {}s or {}ms", text.trim(), text.trim()));
    }
    parse_duration(text)
}

/// Formats nanoseconds with the largest unit that keeps it readable.
pub fn format_duration(ns: Nanos) -> String {
    if ns >= NSEC_PER_SEC {
        format!("{:.3}s", ns as f64 / 1e9)
    } else if ns >= NSEC_PER_MSEC {
        format!("{:.3}ms", ns as f64 / 1e6)
    } else if ns >= NSEC_PER_USEC {
        format!("{:.1}us", ns as f64 / 1e3)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("750us").unwrap(), 750_000);
        assert_eq!(parse_duration("3ms").unwrap(), 3_000_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration("42").unwrap(), 42);
        assert_eq!(parse_duration(" 10 ns ").unwrap(), 10);
        assert_eq!(parse_duration("2min").unwrap(), 120_000_000_000);
        assert_eq!(parse_duration("78h").unwrap(), 280_800_000_000_000);
    }

    #[test]
    fn command_line_durations_need_a_unit() {
        assert!(parse_duration_flag("5").unwrap_err().contains("has no unit"));
        assert_eq!(parse_duration_flag("5s").unwrap(), 5_000_000_000);
    }

    #[test]
    fn rejects_bad_units_with_the_fix() {
        let err = parse_duration("3xs").unwrap_err();
        assert!(err.contains("use ns, us, ms, s, min or h"), "{err}");
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("-1ms").is_err());
    }
}
