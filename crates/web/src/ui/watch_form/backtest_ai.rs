//! The AI part of "Try on past checks": what the intent would have made of each would-be
//! alert (`web/templates/backtest_ai.html`).

use driftwatch_ai::AiBacktest;

use crate::ui::present::When;

/// What the intent would have done, as the form shows it.
pub(super) struct AiView {
    /// The outcome in a sentence.
    pub summary: String,
    /// The model asked, when one is configured.
    pub model: Option<String>,
    /// One row per would-be alert, newest first.
    pub rows: Vec<AiRow>,
}

/// One would-be alert's verdict.
pub(super) struct AiRow {
    pub at: When,
    /// `alert`, `quiet` or `no verdict`.
    pub verdict: &'static str,
    /// The badge's class suffix.
    pub badge: &'static str,
    /// Why (the model's reason, or why there is no verdict).
    pub reason: String,
    /// What changed, in the model's words.
    pub summary: String,
    /// Whether the verdict came from the cache.
    pub cached: bool,
}

impl AiView {
    pub(super) fn of(found: AiBacktest, now: chrono::DateTime<chrono::Utc>, zone: &str) -> AiView {
        let rows = found
            .verdicts
            .into_iter()
            .map(|v| {
                let (verdict, badge) = match v.important {
                    Some(true) => ("alert", "ok"),
                    Some(false) => ("quiet", "muted"),
                    None => ("no verdict", "dlv-failed"),
                };
                AiRow {
                    at: When::new(v.at.naive_utc(), now, zone),
                    verdict,
                    badge,
                    reason: v.error.unwrap_or(v.reason),
                    summary: v.summary,
                    cached: v.cached,
                }
            })
            .collect();
        AiView { summary: found.summary, model: found.model, rows }
    }
}

#[cfg(test)]
mod tests {
    use askama::Template;
    use chrono::{DateTime, Utc};
    use driftwatch_ai::{AiBacktest, AiVerdict};

    use super::AiView;

    /// The partial alone, as `watch_form.html` includes it.
    #[derive(Template)]
    #[template(path = "backtest_ai.html")]
    struct Partial {
        ai: AiView,
    }

    #[test]
    fn the_partial_shows_the_sentence_then_each_verdict_escaped() {
        let at = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).expect("a time");
        let verdict = |important: Option<bool>, reason: &str, error: Option<&str>| AiVerdict {
            snapshot_id: "snp_1".into(),
            at,
            important,
            reason: reason.into(),
            summary: "The price changed.".into(),
            cached: important == Some(false),
            error: error.map(str::to_owned),
        };
        let found = AiBacktest {
            model: Some("judge-1".into()),
            summary: "With this intent: 1 alert instead of 3, about 1,200 tokens.".into(),
            verdicts: vec![
                verdict(Some(true), "The price fell <below> 50.", None),
                verdict(Some(false), "Only the stock changed.", None),
                verdict(None, "", Some("the model did not answer within 5 s")),
            ],
            ..AiBacktest::default()
        };
        let html = Partial { ai: AiView::of(found, at, "UTC") }.render().expect("renders");
        let summary = html.find("1 alert instead of 3").expect("the sentence");
        let table = html.find("<table").expect("the table");
        assert!(summary < table, "the sentence comes first");
        assert!(html.contains("(judge-1)"), "{html}");
        assert!(html.contains(r#"<span class="badge badge-ok">alert</span>"#), "{html}");
        assert!(html.contains(r#"<span class="badge badge-muted">quiet</span> <span class="muted">cached</span>"#));
        assert!(html.contains(r#"<span class="badge badge-dlv-failed">no verdict</span>"#), "{html}");
        assert!(html.contains("the model did not answer within 5 s"), "an error stands in for the reason");
        let escaped = html.contains("&lt;below&gt;") || html.contains("&#60;below&#62;");
        assert!(escaped && !html.contains("<below>"), "the model's words are escaped: {html}");
        assert_eq!(html.matches("<tr>").count(), 4, "a head row and one row per verdict");
    }
}
