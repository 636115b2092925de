//! A page as the values read it: its body, where it states structured data, and its bounded
//! DOM, each read at most once and only when a spec needs it. All three come from
//! `driftwatch_html`, the reader the page text is extracted by.

use std::cell::OnceCell;

use driftwatch_html::TooDeep;
use driftwatch_html::scripts::Scripts;
use scraper::Html;

use crate::structured::{self, Offer};

/// One page, read lazily.
pub(crate) struct Document<'a> {
    body: &'a str,
    scripts: OnceCell<Scripts>,
    dom: OnceCell<Result<Html, TooDeep>>,
}

impl<'a> Document<'a> {
    /// The page `body`, with its `scripts` when a caller's own pass found them already.
    pub(crate) fn new(body: &'a str, scripts: Option<Scripts>) -> Self {
        let known = OnceCell::new();
        if let Some(scripts) = scripts {
            let _ = known.set(scripts);
        }
        Document { body, scripts: known, dom: OnceCell::new() }
    }

    /// The bounded DOM ([`driftwatch_html::parse`]), built on first use.
    pub(crate) fn dom(&self) -> Result<&Html, TooDeep> {
        self.dom.get_or_init(|| driftwatch_html::parse(self.body)).as_ref().map_err(|e| *e)
    }

    /// Where the page states structured data: a streaming pass, else the DOM (which later
    /// readers then share), else what the streaming pass read before it gave up.
    pub(crate) fn scripts(&self) -> &Scripts {
        self.scripts.get_or_init(|| {
            Scripts::streamed(self.body).unwrap_or_else(|partial| match self.dom() {
                Ok(document) => Scripts::of(document),
                Err(_) => partial,
            })
        })
    }

    /// The offer a `structured` value reads (see [`structured::first_offer`]).
    pub(crate) fn first_offer(&self) -> Option<Offer> {
        structured::first_offer_in(self.scripts(), || self.dom().ok())
    }
}
