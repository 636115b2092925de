//! Fetching pages and turning them into the text that is compared between checks.
//!
//! [`Fetcher`] downloads a page with a timeout, a body-size cap and the private-address guard;
//! [`extract`] turns the body into normalised text: HTML through an optional CSS selector and a
//! block-aware text conversion, JSON canonicalised, plain text as is.

mod extract;
mod fetch;
mod rules;

pub use extract::{ExtractError, extract, extract_with, validate_selector};
pub use fetch::{FetchError, FetchOptions, Fetched, Fetcher, Page, PageRequest};
pub use rules::{RuleError, Rules};
