//! Yes or no. The whole text, trimmed and lower-cased (with a final `.` or `!` dropped), must be
//! one of the words below; anything else is refused rather than guessed.
//!
//! - true: `true`, `yes`, `y`, `1`, `on`, `ja`, `oui`, `si`, `sí`, `vrai`, `wahr`;
//! - false: `false`, `no`, `n`, `0`, `off`, `nein`, `non`, `nee`, `faux`, `falsch`.

use super::{ParseError, quote};

const TRUE: &[&str] = &["true", "yes", "y", "1", "on", "ja", "oui", "si", "sí", "vrai", "wahr"];
const FALSE: &[&str] = &["false", "no", "n", "0", "off", "nein", "non", "nee", "faux", "falsch"];

/// Reads a yes/no word. See the module documentation for the words.
///
/// ```
/// use driftwatch_values::parse::boolean;
/// assert_eq!(boolean(" Ja "), Ok(true));
/// assert_eq!(boolean("off"), Ok(false));
/// assert!(boolean("maybe").is_err());
/// ```
pub fn boolean(text: &str) -> Result<bool, ParseError> {
    let word = text.trim().trim_end_matches(['.', '!']).trim_end().to_lowercase();
    if TRUE.contains(&word.as_str()) {
        Ok(true)
    } else if FALSE.contains(&word.as_str()) {
        Ok(false)
    } else {
        Err(ParseError::new(format!("{} is neither yes nor no (such as true/yes/1/on or false/no/0/off)", quote(text))))
    }
}
