//! Compiled regexes shared across checks. A watch's rules and noise texts are stored as
//! strings and compiled on each check; compiling the mask presets alone costs about ten times
//! applying them, so compiled regexes are kept by pattern.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::Regex;

/// Largest compiled program accepted from a user's pattern.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Patterns kept; when full, the cache starts over (the patterns in use come back at once).
const CAPACITY: usize = 512;

/// The compiled `pattern` (with [`REGEX_SIZE_LIMIT`]), from the cache when it was compiled
/// before. Errors are not cached.
pub fn compiled_regex(pattern: &str) -> Result<Regex, regex::Error> {
    static CACHE: OnceLock<Mutex<HashMap<String, Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(regex) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(pattern) {
        return Ok(regex.clone());
    }
    let regex = regex::RegexBuilder::new(pattern).size_limit(REGEX_SIZE_LIMIT).build()?;
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= CAPACITY {
        cache.clear();
    }
    cache.insert(pattern.to_owned(), regex.clone());
    Ok(regex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_once_and_reports_errors() {
        let a = compiled_regex(r"\d+ EUR").expect("compiles");
        let b = compiled_regex(r"\d+ EUR").expect("compiles");
        assert!(a.is_match("12 EUR") && b.is_match("7 EUR"));
        assert_eq!(a.as_str(), b.as_str());
        assert!(compiled_regex("(").is_err());
        assert!(compiled_regex("(").is_err(), "errors are not cached as successes");
        assert!(compiled_regex(&"a{1000}".repeat(1000)).is_err(), "the size limit applies");
    }
}
