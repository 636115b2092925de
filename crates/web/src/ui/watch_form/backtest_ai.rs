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
