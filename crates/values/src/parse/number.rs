//! Numbers as pages write them: digit groups and decimal separators of any locale, and a sign.
//! [`number`] reads the first number of a text; `money.rs` uses the same reading with its own
//! choice of which number to read.
//!
//! The text is first folded: full-width and Arabic-Indic digits become ASCII digits, full-width
//! `，` `．` and the Arabic separators become `,` `.`, the minus signs `−` become `-`, the
//! apostrophes `’` `′` become `'`, and the spaces U+00A0, U+202F, U+2009, U+2007 become ` `.
//!
//! A number starts at a digit and runs on through separators that are followed by a digit:
//! - `.` and `,` may be a decimal or a thousands separator;
//! - `'` is a thousands separator only (`1'299.50`);
//! - a space is a thousands separator only, and only between three-digit groups
//!   (`1 299 000`, `kr 1 299,00`); `12 99` is the number 12.
//!
//! Which separator is the decimal one, in this order:
//! 1. a `.` or `,` followed by a dash (`-` `–` `—`) is, and means zero cents: `12.–`, `12,-`,
//!    `1'299.–`, `1.299,-`;
//! 2. the last `.`/`,` is, when a different separator comes before it: `1.299,00`, `1,299.00`,
//!    `1 299,00`, `1'299.50`;
//! 3. a `.`/`,` used more than once is a thousands separator: `1.299.000`, `1,23,456`;
//! 4. a lone `.`/`,` is a decimal separator unless exactly three digits follow it: `12,5`,
//!    `12.99`, `1.5` are decimals, while `1,299` and `1.299` are both 1299, in every locale and
//!    for every currency (prices are not quoted in thousandths, and a symbol such as `€` or `$`
//!    does not tell the locale: English pages write `€1,299`, Chilean ones `$19.990`). Three
//!    exceptions make such a separator decimal after all: the integer part starts with `0`
//!    (`0.125`), it has more than three digits (`1234.567`), or (money only) the currency has
//!    three minor digits (BHD, IQD, JOD, KWD, LYD, OMR, TND: `KWD 1.250` is 1.25). Known loss:
//!    fuel prices in thousandths (`1,799 €/l`, `$3.499`) read as thousands.
//!
//! Thousands groups after the first have three digits, or follow Indian grouping (two-digit
//! groups, then a last group of three: `1,23,456`). The first group has one to three digits.
//!
//! A `-` right before the digits makes the number negative, unless a letter or digit comes
//! before the `-` (`SKU-12` and `10-20` start with a positive number). What follows the number
//! is ignored (`12,5 %` is 12.5, `4.5 out of 5` is 4.5), except an abbreviation glued to it
//! (`1.5k`, `2M`, `3bn`, `5Mio`), which is refused rather than misread.
//!
//! Refused: no digit at all; more than 18 significant digits; groups that are not thousands
//! (`12.03.2024`); two kinds of thousands separator (`1.299'000`); the same separator for
//! thousands and decimals (`1.299.–`); an abbreviation.

use super::{ParseError, quote};

/// The most significant digits read; more is not a price or a count but an identifier or noise.
const MAX_SIGNIFICANT_DIGITS: usize = 18;

/// Abbreviations that, glued to a number, multiply it; refused rather than read as the bare
/// number.
const ABBREVIATIONS: &[&str] = &["k", "K", "M", "B", "bn", "mn", "Mio", "Mrd", "Tsd"];

/// Reads the first number in `text`. See the module documentation for the rules.
///
/// ```
/// use driftwatch_values::parse::number;
/// assert_eq!(number("12,5 %"), Ok(12.5));
/// assert_eq!(number("1,299 reviews"), Ok(1299.0));
/// assert!(number("1.5k").is_err());
/// ```
pub fn number(text: &str) -> Result<f64, ParseError> {
    let chars = fold(text);
    let token = next_token(&chars, 0).ok_or_else(|| ParseError::new(format!("no number in {}", quote(text))))?;
    read(&chars, &token, false, text)
}

/// The text's characters, folded as the module documentation says.
pub(super) fn fold(text: &str) -> Vec<char> {
    text.chars().map(fold_char).collect()
}

fn fold_char(c: char) -> char {
    let digit = |zero: u32| char::from_digit(u32::from(c) - zero, 10).unwrap_or(c);
    match c {
        '\u{FF10}'..='\u{FF19}' => digit(0xFF10),
        '\u{0660}'..='\u{0669}' => digit(0x0660),
        '\u{06F0}'..='\u{06F9}' => digit(0x06F0),
        '\u{FF0C}' | '\u{066C}' => ',',
        '\u{FF0E}' | '\u{066B}' => '.',
        '\u{FF04}' => '$',
        '\u{FFE5}' => '¥',
        '\u{FFE1}' => '£',
        '\u{2212}' | '\u{FE63}' | '\u{FF0D}' => '-',
        '\u{2019}' | '\u{02BC}' | '\u{2032}' => '\'',
        '\u{00A0}' | '\u{202F}' | '\u{2009}' | '\u{2007}' => ' ',
        other => other,
    }
}

fn is_dash(c: char) -> bool {
    matches!(c, '-' | '–' | '—')
}

/// A number as written: its place in the folded text and its parts.
#[derive(Debug)]
pub(super) struct Token {
    /// The first character: the sign, or the first digit.
    pub(super) start: usize,
    /// One past the last character (a zero-cents dash included).
    pub(super) end: usize,
    /// A `-` before the digits.
    pub(super) negative: bool,
    /// The digit runs, one more than `separators`.
    groups: Vec<String>,
    /// The separators between the runs, folded (`'` for apostrophes, ` ` for spaces).
    separators: Vec<char>,
    /// A final `.`/`,` followed by a dash: the decimal separator, zero cents.
    dash_decimal: Option<char>,
}

/// The first number that starts at or after `from`.
pub(super) fn next_token(chars: &[char], from: usize) -> Option<Token> {
    let first = from + chars.get(from..)?.iter().position(char::is_ascii_digit)?;
    Some(scan(chars, first))
}

/// The number whose first digit is at `first`.
fn scan(chars: &[char], first: usize) -> Token {
    let mut end = digits_end(chars, first);
    let mut groups = vec![chars[first..end].iter().collect::<String>()];
    let mut separators = Vec::new();
    let mut dash_decimal = None;
    while let Some(&c) = chars.get(end) {
        let next = chars.get(end + 1).copied();
        let next_is_digit = next.is_some_and(|n| n.is_ascii_digit());
        let continues = match c {
            '.' | ',' if next.is_some_and(is_dash) => {
                dash_decimal = Some(c);
                end = (end + 1..chars.len()).find(|&i| !is_dash(chars[i])).unwrap_or(chars.len());
                break;
            }
            '.' | ',' | '\'' => next_is_digit,
            ' ' => space_group_follows(chars, end, &groups, &separators),
            _ => false,
        };
        if !continues {
            break;
        }
        let start = end + 1;
        end = digits_end(chars, start);
        separators.push(c);
        groups.push(chars[start..end].iter().collect());
    }
    let negative = first >= 1 && chars[first - 1] == '-' && (first < 2 || !chars[first - 2].is_alphanumeric());
    Token { start: if negative { first - 1 } else { first }, end, negative, groups, separators, dash_decimal }
}

/// One past the digit run starting at `start`.
fn digits_end(chars: &[char], start: usize) -> usize {
    chars[start..].iter().position(|c| !c.is_ascii_digit()).map_or(chars.len(), |n| start + n)
}

/// Whether the space at `at` separates thousands: only spaces so far, the run before it a
/// thousands group, and exactly three digits after it.
fn space_group_follows(chars: &[char], at: usize, groups: &[String], separators: &[char]) -> bool {
    let before_fits = match groups {
        [lead] => (1..=3).contains(&lead.len()),
        [.., last] => last.len() == 3,
        [] => false,
    };
    let three_after = (at + 1..at + 4).all(|i| chars.get(i).is_some_and(char::is_ascii_digit))
        && !chars.get(at + 4).is_some_and(char::is_ascii_digit);
    before_fits && three_after && separators.iter().all(|&s| s == ' ')
}

/// Why a number as written is refused.
enum Problem {
    TooManyDigits,
    NotThousands,
    MixedSeparators,
    SameSeparator(char),
    Abbreviated,
}

/// The value of `token` in `chars`, or why not; `text` is the original, for messages.
/// `three_decimals`: a lone separator before three digits is decimal (see the module docs).
pub(super) fn read(chars: &[char], token: &Token, three_decimals: bool, text: &str) -> Result<f64, ParseError> {
    value(chars, token, three_decimals).map_err(|problem| refusal(chars, token, text, problem))
}

fn value(chars: &[char], token: &Token, three_decimals: bool) -> Result<f64, Problem> {
    if abbreviation_after(chars, token.end).is_some() {
        return Err(Problem::Abbreviated);
    }
    let (groups, separators, fraction) = split_decimal(token, three_decimals)?;
    check_thousands(groups, separators)?;
    let integer = groups.concat();
    let integer = integer.trim_start_matches('0');
    let fraction = fraction.trim_end_matches('0');
    let significant =
        if integer.is_empty() { fraction.trim_start_matches('0').len() } else { integer.len() + fraction.len() };
    if significant > MAX_SIGNIFICANT_DIGITS {
        return Err(Problem::TooManyDigits);
    }
    let written = format!("{}.{}", if integer.is_empty() { "0" } else { integer }, fraction);
    let magnitude: f64 = written.parse().map_err(|_| Problem::TooManyDigits)?;
    // `-0` is 0: a sign on nothing is no debt.
    Ok(if token.negative && magnitude != 0.0 { -magnitude } else { magnitude })
}

/// The integer groups, the thousands separators between them, and the fraction digits.
fn split_decimal(token: &Token, three_decimals: bool) -> Result<(&[String], &[char], &str), Problem> {
    let (groups, separators) = (&token.groups[..], &token.separators[..]);
    if let Some(decimal) = token.dash_decimal {
        if separators.contains(&decimal) {
            return Err(Problem::SameSeparator(decimal));
        }
        return Ok((groups, separators, ""));
    }
    let Some((&last, before)) = separators.split_last() else {
        return Ok((groups, separators, ""));
    };
    let decimal = matches!(last, '.' | ',')
        && match before {
            [] => lone_is_decimal(&groups[0], &groups[1], three_decimals),
            _ => !before.contains(&last),
        };
    match (decimal, groups.split_last()) {
        (true, Some((fraction, integer))) => Ok((integer, before, fraction)),
        _ => Ok((groups, separators, "")),
    }
}

/// Rule 4 of the module documentation: a lone `.`/`,` between `integer` and `after`.
fn lone_is_decimal(integer: &str, after: &str, three_decimals: bool) -> bool {
    after.len() != 3 || integer.starts_with('0') || integer.len() > 3 || three_decimals
}

/// Whether `groups` separated by `separators` are thousands groups (or Indian grouping).
fn check_thousands(groups: &[String], separators: &[char]) -> Result<(), Problem> {
    let Some(&separator) = separators.first() else {
        return Ok(());
    };
    if separators.iter().any(|&s| s != separator) {
        return Err(Problem::MixedSeparators);
    }
    let Some((lead, rest)) = groups.split_first() else {
        return Ok(());
    };
    if lead.len() > 3 || lead.starts_with('0') {
        return Err(Problem::NotThousands);
    }
    let western = rest.iter().all(|g| g.len() == 3);
    let indian = separator == ','
        && lead.len() <= 2
        && rest
            .split_last()
            .is_some_and(|(last, middle)| last.len() == 3 && !middle.is_empty() && middle.iter().all(|g| g.len() == 2));
    if western || indian { Ok(()) } else { Err(Problem::NotThousands) }
}

/// The abbreviation glued to the number ending at `end` (`1.5k`), if any.
fn abbreviation_after(chars: &[char], end: usize) -> Option<String> {
    let word: String = chars.get(end..)?.iter().take_while(|c| c.is_alphabetic()).take(4).collect();
    ABBREVIATIONS.contains(&word.as_str()).then_some(word)
}

/// The sentence for a refused number.
fn refusal(chars: &[char], token: &Token, text: &str, problem: Problem) -> ParseError {
    let mut written: String = chars[token.start..token.end].iter().collect();
    if matches!(problem, Problem::Abbreviated) {
        written.push_str(&abbreviation_after(chars, token.end).unwrap_or_default());
    }
    let what = if written == text.trim() { quote(&written) } else { format!("{} in {}", quote(&written), quote(text)) };
    ParseError::new(match problem {
        Problem::TooManyDigits => {
            format!("too many digits in {what}: at most {MAX_SIGNIFICANT_DIGITS} significant digits are read")
        }
        Problem::NotThousands => format!(
            "cannot read {what} as a number: the digit groups between its separators are not \
             thousands (groups of three)"
        ),
        Problem::MixedSeparators => format!("cannot read {what} as a number: it mixes two thousands separators"),
        Problem::SameSeparator(c) => {
            format!("cannot read {what} as a number: it uses \"{c}\" both for thousands and for decimals")
        }
        Problem::Abbreviated => {
            format!("cannot read {what}: abbreviations such as k or M are not read; give the whole number")
        }
    })
}
