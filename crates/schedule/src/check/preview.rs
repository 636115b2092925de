//! A preview: a page read as a watch would read it, saving nothing.

use driftwatch_store::Watch;

use super::PageText;
use crate::runner::Runner;

/// What a preview found: the text a watch would compare, and how it was read.
#[derive(Debug, Clone)]
pub struct Preview {
    /// The text after the selector, extraction options and line rules.
    pub text: String,
    /// What loaded the page: `http` or `browser`.
    pub engine: &'static str,
    /// The screenshot, when the options ask for one.
    pub screenshot: Option<driftwatch_browser::Screenshot>,
    /// Worth saying about the read (an `auto` watch's choice, a screenshot not kept).
    pub note: Option<String>,
}

impl Runner {
    /// Reads `url` now as a watch with `selector` and `options` would (its engine included)
    /// and returns what it would compare, saving nothing (the preview of a watch before it is
    /// created or changed). The error says why there is no text.
    pub async fn preview(
        &self,
        url: &str,
        selector: Option<&str>,
        options: &driftwatch_core::WatchOptions,
    ) -> Result<Preview, String> {
        let mut watch = Watch::new("", url, self.now());
        watch.selector = selector.map(str::to_owned);
        let Some(read) = self.read(&watch, options, false, None).await else {
            return Err("the preview was cancelled".into());
        };
        match read.text {
            PageText::Text(text, _) => {
                Ok(Preview { text, engine: read.engine, screenshot: read.screenshot, note: read.note })
            }
            PageText::NotModified => Err("the server answered 304 Not Modified".into()),
            PageText::Failed { error, .. } => Err(error),
        }
    }
}
