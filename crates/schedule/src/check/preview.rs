//! A preview: a page read as a watch would read it, saving nothing.

use driftwatch_store::Watch;

use super::PageText;
use crate::access::Access;
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

/// Why a preview has no text, and the field of the watch's settings it is about: the failed
/// step (`options.fetch.steps[1]`), the wait, the selector, or else the page's `url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewError {
    /// The field, named as validation names it.
    pub field: String,
    /// What went wrong.
    pub message: String,
}

impl PreviewError {
    fn of(message: String, kind: &str, failed_step: Option<usize>) -> PreviewError {
        let field = match (kind, failed_step) {
            ("step", Some(i)) => format!("options.fetch.steps[{i}]"),
            ("step", None) => "options.fetch.steps".to_owned(),
            ("wait", _) => "options.fetch.wait".to_owned(),
            ("selector_missing", _) => "selector".to_owned(),
            _ => "url".to_owned(),
        };
        PreviewError { field, message }
    }
}

impl std::fmt::Display for PreviewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PreviewError {}

impl PageReader {
    /// Reads `url` now as a watch with `selector` and `options` would (its engine included)
    /// and returns what it would compare, saving nothing. The error says why there is no text
    /// and which setting it is about.
    pub async fn preview(
        &self,
        url: &str,
        selector: Option<&str>,
        options: &driftwatch_core::WatchOptions,
        access: &Access,
    ) -> Result<Preview, PreviewError> {
        let mut watch = Watch::new("", url, self.now());
        watch.selector = selector.map(str::to_owned);
        let Some(read) = self.read(&watch, options, access, false, None).await else {
            return Err(PreviewError::of("the preview was cancelled".into(), "", None));
        };
        match read.text {
            PageText::Text(text, readings) => {
                let value_note = readings.as_ref().and_then(driftwatch_values::Readings::note);
                // An auto watch's first render: said as what this read did, for a preview keeps nothing.
                let switched = matches!(read.browser_since, Some(Some(_))).then(|| {
                    "auto: over HTTP the page is an empty shell, so it was rendered in the browser".to_owned()
                });
                let note = super::join_notes(super::join_notes(switched, read.note), value_note);
                let values = readings.map(|r| r.values);
                Ok(Preview { text, values, engine: read.engine, screenshot: read.screenshot, note })
            }
            PageText::NotModified => Err(PreviewError::of("the server answered 304 Not Modified".into(), "", None)),
            PageText::Failed { error, kind } => Err(PreviewError::of(error, kind, read.failed_step)),
            PageText::Blocked(wall) => Err(PreviewError::of(
                format!("{wall}: the page was not shown (try options.fetch.when_blocked, or a proxy)"),
                "blocked",
                None,
            )),
        }
    }
}

impl Runner {
    /// [`PageReader::preview`] with this runner's reader (the preview of a watch before it is
    /// created or changed), with the account's proxy and secrets as a check would use them.
    pub async fn preview(
        &self,
        account_id: &str,
        url: &str,
        selector: Option<&str>,
        options: &driftwatch_core::WatchOptions,
    ) -> Result<Preview, PreviewError> {
        let access = self
            .access(account_id, options)
            .await
            .map_err(|(message, _)| PreviewError { field: "options.fetch".into(), message })?;
        self.reader().preview(url, selector, options, &access).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_preview_names_the_setting_it_is_about() {
        let field = |kind: &str, step: Option<usize>| PreviewError::of(String::new(), kind, step).field;
        assert_eq!(field("step", Some(1)), "options.fetch.steps[1]", "the second step, as validation names it");
        assert_eq!(field("wait", None), "options.fetch.wait");
        assert_eq!(field("selector_missing", None), "selector");
        assert_eq!(field("timeout", None), "url");
        assert_eq!(field("status", None), "url");
    }
}
