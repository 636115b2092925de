//! Durations and retry schedules as people write them (`30s`, `1m,5m,30m`): the one parser
//! of both, for settings, the API and the forms.

use std::time::Duration;

/// Parses a duration such as `250ms`, `30s`, `5m`, `2h` or `1d`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| format!("`{text}` is not a duration like 500ms, 30s, 5m, 2h"))?;
    let factor: u64 = match unit.trim() {
        "ms" => 1,
        "s" | "" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        other => return Err(format!("unknown unit `{other}` in `{text}` (use ms, s, m, h or d)")),
    };
    let ms = n.checked_mul(factor).ok_or_else(|| format!("`{text}` is too long"))?;
    Ok(Duration::from_millis(ms))
}

/// A duration as [`parse_duration`] reads it back: the largest unit that divides it evenly
/// (`90s`, `5m`, `2h`, `1d`, `250ms`).
pub fn format_duration(duration: Duration) -> String {
    let ms = duration.as_millis();
    for (unit, size) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

/// Parses a comma-separated retry schedule such as `1m,5m,30m,2h,12h`.
pub fn parse_schedule(text: &str) -> Result<Vec<Duration>, String> {
    let schedule: Vec<Duration> = text.split(',').map(parse_duration).collect::<Result<_, _>>()?;
    if schedule.is_empty() { Err("the retry schedule is empty".into()) } else { Ok(schedule) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_format_as_they_parse() {
        for text in ["250ms", "90s", "5m", "2h", "12h", "1d", "1500ms"] {
            assert_eq!(format_duration(parse_duration(text).expect("parses")), text);
        }
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
    }

    #[test]
    fn parses_durations_and_schedules() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("300000000000000d").is_err(), "overflow is an error, not a panic");
        assert_eq!(parse_schedule("1m,5m").map(|s| s.len()), Ok(2));
    }
}
