//! Fetching pages and turning them into the text that is compared between checks.
//!
//! [`Fetcher`] downloads a page with a timeout, a body-size cap and the private-address guard;
//! [`extract`] turns the body into normalised text: HTML through an optional CSS selector and a
//! block-aware text conversion, JSON canonicalised, plain text as is.

mod extract;
mod fetch;
mod rules;
pub mod walls;

pub use extract::{
    Also, ExtractError, ExtractPath, Extracted, MAX_DEPTH, decoded_body, extract, extract_also, extract_with,
    extract_with_dom, extract_with_path, text_limit, validate_selector,
};
pub use fetch::{FetchError, FetchOptions, Fetched, Fetcher, Page, PageRequest};
pub use rules::{RuleError, Rules};

/// Why [`read_page`] produced no text.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The page could not be fetched.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The server answered 304 Not Modified to an unconditional request.
    #[error("the server answered 304 Not Modified")]
    NotModified,
    /// The page could not be read as text, or the selector matched nothing.
    #[error(transparent)]
    Extract(#[from] ExtractError),
    /// A line rule is invalid.
    #[error(transparent)]
    Rule(#[from] RuleError),
}

/// Fetches `url` now as `options` say and returns the text a watch would compare: after the
/// selector, the extraction options and the line rules. Used to preview a watch before saving
/// it, and by `driftwatch check`.
pub async fn read_page(
    fetcher: &Fetcher,
    url: &str,
    selector: Option<&str>,
    options: &driftwatch_core::WatchOptions,
) -> Result<String, ReadError> {
    Rules::new(&options.rules)?;
    let request = PageRequest { spec: Some(&options.fetch), ..PageRequest::default() };
    let Fetched::Page(page) = fetcher.fetch_with(url, &request, fetcher.options().proxy.as_ref()).await? else {
        return Err(ReadError::NotModified);
    };
    text_of(&page, selector, options)
}

/// The text a watch with `selector` and `options` reads from `page` (fetched, or rendered in a
/// browser): after the selector, the extraction options and the line rules.
pub fn text_of(
    page: &Page,
    selector: Option<&str>,
    options: &driftwatch_core::WatchOptions,
) -> Result<String, ReadError> {
    let rules = Rules::new(&options.rules)?;
    Ok(rules.apply(&extract_with(page, selector, &options.extract)?))
}
