//! Typed values read from pages, and the conditions over them. Pure: no IO, no database.
//!
//! - [`read`]: a watch's value specs checked and compiled ([`Reader`]), and read from a page.
//! - [`parse`]: text to a typed value (money in many locales, numbers, availability).
//! - [`structured`]: schema.org `Product`/`Offer` from JSON-LD and microdata.
//! - [`json`]: JSON Pointer, JSONPath (RFC 9535) and jq, bounded.
//! - [`conditions`]: whether a watch's conditions hold, and why, in words.
//! - [`presets`]: the common conditions by name, expanded into rules at save.
//! - [`typed`]: a value as read, and how two readings compare.

pub mod conditions;
mod document;
pub mod json;
pub mod parse;
pub mod presets;
pub mod read;
pub mod structured;
pub mod typed;

pub use conditions::{Facts, Verdict, evaluate};
pub use read::{Reader, Readings};
pub use typed::{Typed, ValueChange, Values, changes};

/// A field at fault and why, named within what was checked (`values[0].regex`,
/// `rules[1].operand`); callers put their own prefix before it.
pub use driftwatch_core::FieldError;
