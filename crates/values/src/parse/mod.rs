//! Text to typed values: money, numbers, availability and yes/no, read from what a page shows.
//!
//! Each reader takes the text a selector or query found (already narrowed by the watch's regex,
//! if it has one) and returns the value, or a [`ParseError`] whose message is a sentence for a
//! user quoting (a bounded prefix of) the text. No reader panics, whatever the input.
//!
//! - [`money`]: an amount and its currency, in the formats of many locales. The separator rules
//!   are in `number.rs`, the currency symbols in `currency.rs`, which amount of several is read
//!   in `money.rs`.
//! - [`number`]: the same digits without a currency (`12,5 %` is 12.5).
//! - [`availability`]: schema.org values and shop words in six languages, see `availability.rs`.
//! - [`boolean`]: yes/no words in a few languages.

mod availability;
mod boolean;
mod currency;
mod money;
mod number;
#[cfg(test)]
mod tests;

pub use availability::{Availability, availability};
pub use boolean::boolean;
pub use currency::is_iso_4217;
pub use money::{Money, money};
pub use number::number;

/// Why a text could not be read as a value. Its message (also its `Display`) is a sentence for a
/// user that quotes a bounded prefix of the text, e.g. `no amount in "Call for price"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// The sentence.
    pub message: String,
}

impl ParseError {
    fn new(message: impl Into<String>) -> ParseError {
        ParseError { message: message.into() }
    }
}

/// How many characters of a text a message quotes.
const QUOTED_CHARS: usize = 60;

/// `text` in double quotes for a message: whitespace runs made one space, cut to
/// [`QUOTED_CHARS`] characters with `…` when longer.
fn quote(text: &str) -> String {
    // Only the start is shown, so only the start is looked at (the text may be huge).
    let head: String = text.chars().take(QUOTED_CHARS * 4).collect();
    let collapsed = head.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: String = collapsed.chars().take(QUOTED_CHARS).collect();
    let whole = head.len() == text.len() && cut.len() == collapsed.len();
    if !whole {
        cut.push('…');
    }
    format!("\"{cut}\"")
}
