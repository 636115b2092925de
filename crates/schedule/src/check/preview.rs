//! A preview: a page read as a watch would read it, saving nothing.

use driftwatch_store::Watch;

use super::PageText;
use crate::reader::PageReader;
use crate::runner::Runner;

/// What a preview found: what a watch would compare (its text and values), and how it was read.
#[derive(Debug, Clone)]
pub struct Preview {
    /// The text after the selector, extraction options and line rules, cut at the text cap.
    pub text: String,
    /// The values read, for a watch with values (`None` without); the note says why any
    /// could not be.
    pub values: Option<driftwatch_values::Values>,
    /// What loaded the page: `http` or `browser`.
    pub engine: &'static str,
    /// The screenshot, when the options ask for one.
    pub screenshot: Option<driftwatch_browser::Screenshot>,
    /// Worth saying about the read (an `auto` watch's choice, a screenshot not kept, values
    /// that could not be read).
    pub note: Option<String>,
}

impl PageReader {
    /// Reads `url` now as a watch with `selector` and `options` would (its engine included)
    /// and returns what it would compare, saving nothing. The error says why there is no text.
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
            PageText::Text(text, readings) => {
                let value_note = readings.as_ref().and_then(driftwatch_values::Readings::note);
                let note = match (read.note, value_note) {
                    (Some(a), Some(b)) => Some(format!("{a}; {b}")),
                    (a, b) => a.or(b),
                };
                let values = readings.map(|r| r.values);
                Ok(Preview { text, values, engine: read.engine, screenshot: read.screenshot, note })
            }
            PageText::NotModified => Err("the server answered 304 Not Modified".into()),
            PageText::Failed { error, .. } => Err(error),
        }
    }
}

impl Runner {
    /// [`PageReader::preview`] with this runner's reader (the preview of a watch before it is
    /// created or changed).
    pub async fn preview(
        &self,
        url: &str,
        selector: Option<&str>,
        options: &driftwatch_core::WatchOptions,
    ) -> Result<Preview, String> {
        self.reader().preview(url, selector, options).await
    }
}
