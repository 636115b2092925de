//! The process's clock: the wall clock, or the wall clock moved by an offset read from a file
//! (`DRIFTWATCH_CLOCK_FILE`), so that schedules of days (digests, quiet hours, expectations) can
//! be rehearsed, and tested, in seconds. Every node given the same file sees the same time.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use driftwatch_core::{Clock, SystemClock};

/// How long a read offset is trusted before the file is read again.
const REREAD_AFTER: Duration = Duration::from_millis(20);

/// The wall clock plus the offset written in a file: `+26h`, `-5m`, `90s` or `0` (units ms, s,
/// m, h, d). A missing or empty file is no offset; a file that cannot be parsed keeps the last
/// good offset and is reported once.
pub struct FileClock {
    path: PathBuf,
    state: Mutex<State>,
}

struct State {
    read_at: Option<Instant>,
    offset: TimeDelta,
    complained: bool,
}

impl FileClock {
    /// A clock moved by the offset in `path`.
    pub fn new(path: PathBuf) -> FileClock {
        FileClock { path, state: Mutex::new(State { read_at: None, offset: TimeDelta::zero(), complained: false }) }
    }

    fn offset(&self) -> TimeDelta {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.read_at.is_some_and(|at| at.elapsed() < REREAD_AFTER) {
            return state.offset;
        }
        state.read_at = Some(Instant::now());
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        match parse_offset(&text) {
            Ok(offset) => {
                if offset != state.offset {
                    tracing::info!(clock.offset = %text.trim(), "the clock file moved the clock");
                }
                state.offset = offset;
                state.complained = false;
            }
            Err(why) if !state.complained => {
                state.complained = true;
                tracing::warn!(path = %self.path.display(), %why, "the clock file cannot be read; keeping the last offset");
            }
            Err(_) => {}
        }
        state.offset
    }
}

impl Clock for FileClock {
    fn now(&self) -> DateTime<Utc> {
        SystemClock.now() + self.offset()
    }
}

/// `+26h`, `-5m`, `90s`, `0` or nothing → the offset.
pub fn parse_offset(text: &str) -> Result<TimeDelta, String> {
    let text = text.trim();
    if text.is_empty() || text == "0" {
        return Ok(TimeDelta::zero());
    }
    let (negative, magnitude) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let duration = driftwatch_core::parse_duration(magnitude)?;
    let delta = TimeDelta::from_std(duration).map_err(|_| format!("`{text}` is too far"))?;
    Ok(if negative { -delta } else { delta })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_parse_with_their_sign() {
        assert_eq!(parse_offset(""), Ok(TimeDelta::zero()));
        assert_eq!(parse_offset("+26h\n"), Ok(TimeDelta::hours(26)));
        assert_eq!(parse_offset("-5m"), Ok(TimeDelta::minutes(-5)));
        assert_eq!(parse_offset("90s"), Ok(TimeDelta::seconds(90)));
        assert!(parse_offset("tomorrow").is_err());
    }

    #[test]
    fn the_clock_follows_the_file() {
        let dir = std::env::temp_dir().join(format!("driftwatch-clock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("clock");
        let clock = FileClock::new(path.clone());
        let before = clock.now();
        assert!((before - Utc::now()).num_seconds().abs() < 5, "no file is no offset");
        std::fs::write(&path, "+2d").unwrap();
        std::thread::sleep(REREAD_AFTER * 2);
        let moved = clock.now() - Utc::now();
        assert!(moved > TimeDelta::hours(47) && moved < TimeDelta::hours(49), "{moved}");
        std::fs::write(&path, "garbage").unwrap();
        std::thread::sleep(REREAD_AFTER * 2);
        assert!(clock.now() - Utc::now() > TimeDelta::hours(47), "a bad file keeps the last offset");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
