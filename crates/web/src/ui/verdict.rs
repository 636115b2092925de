//! A language model's verdict on a change, as pages show it: a badge in words ("Important",
//! "Not important, not sent", "Waiting for the model", "Held"...), the model's reason and
//! summary, and why there is none when there is none. The watch page and the Changes page show
//! the same.

use chrono::{DateTime, Utc};
use driftwatch_store::{Verdict, VerdictState};

use super::present::When;

/// A verdict as shown beside its change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictView {
    /// The change event (`evt_...`), for "Send now".
    pub event_id: String,
    /// The badge's style: `ai-important`, `ai-unimportant`, `ai-summary`, `ai-pending`,
    /// `ai-unjudged`, `ai-held` or `ai-released`.
    pub kind: &'static str,
    /// The badge's words.
    pub label: &'static str,
    /// Why the model judged so.
    pub reason: Option<String>,
    /// What changed, in the model's words.
    pub summary: Option<String>,
    /// More about the state: the tries and the last error while waiting, why there is no
    /// verdict otherwise.
    pub detail: Option<String>,
    /// The model that answered (with "from the cache" when it did not have to).
    pub model: Option<String>,
    /// A held change: it can be sent by hand.
    pub held: bool,
}

impl VerdictView {
    /// How `verdict` reads for a viewer in `zone` at `now`.
    pub fn of(verdict: &Verdict, now: DateTime<Utc>, zone: &str) -> VerdictView {
        let error = verdict.error.clone().filter(|e| !e.trim().is_empty());
        let (kind, label, detail) = match (verdict.state(), verdict.important) {
            (VerdictState::Judged, Some(true)) => ("ai-important", "Important", None),
            (VerdictState::Judged, Some(false)) => ("ai-unimportant", "Not important, not sent", None),
            (VerdictState::Judged, None) => ("ai-summary", "Summarised", None),
            (VerdictState::Pending, _) => ("ai-pending", "Waiting for the model", waiting(verdict, error, now, zone)),
            (VerdictState::Unjudged, _) => {
                ("ai-unjudged", "Sent without a verdict", error.map(|e| format!("Why: {e}")))
            }
            (VerdictState::Held, _) => (
                "ai-held",
                "Held, not sent",
                error.map(|e| format!("No verdict: {e}. Nothing is sent until you send it.")),
            ),
            (VerdictState::Released, _) => {
                ("ai-released", "Sent by hand", error.map(|e| format!("It was held without a verdict: {e}")))
            }
        };
        let model = verdict.model.clone().filter(|m| !m.is_empty()).map(|m| match verdict.cached {
            true => format!("{m}, from the cache"),
            false => m,
        });
        let text = |t: &Option<String>| t.clone().filter(|t| !t.trim().is_empty());
        VerdictView {
            event_id: verdict.event_id.clone(),
            kind,
            label,
            reason: text(&verdict.reason),
            summary: text(&verdict.summary_text),
            detail,
            model,
            held: verdict.state() == VerdictState::Held,
        }
    }
}

/// A pending verdict's tries: nothing before the first, else how many failed, the last error
/// and when the next is.
fn waiting(verdict: &Verdict, error: Option<String>, now: DateTime<Utc>, zone: &str) -> Option<String> {
    if verdict.attempts <= 0 {
        return None;
    }
    let tries = format!("Tried {}", driftwatch_core::text::count(verdict.attempts, "time"));
    let next = When::new(verdict.next_attempt_at, now, zone).relative;
    let next = if next == "just now" { "now".to_owned() } else { next };
    Some(match error {
        Some(e) => format!("{tries}; the last failed: {e}. Next try {next}."),
        None => format!("{tries}. Next try {next}."),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(state: VerdictState) -> Verdict {
        let at = chrono::NaiveDate::from_ymd_opt(2026, 12, 7).and_then(|d| d.and_hms_opt(10, 0, 0)).unwrap_or_default();
        Verdict {
            event_id: "evt_1".into(),
            account_id: "acc_1".into(),
            watch_id: "wat_1".into(),
            state: state.as_str().into(),
            intent: Some("price below 50".into()),
            summary: true,
            hold: true,
            attempts: 0,
            next_attempt_at: at,
            deadline_at: at,
            lease_owner: None,
            lease_until: None,
            important: None,
            reason: None,
            summary_text: None,
            model: None,
            tokens: 0,
            cached: false,
            error: None,
            max_attempts: 3,
            created_at: at,
            decided_at: None,
        }
    }

    fn now() -> DateTime<Utc> {
        chrono::NaiveDate::from_ymd_opt(2026, 12, 7).and_then(|d| d.and_hms_opt(9, 58, 0)).unwrap_or_default().and_utc()
    }

    #[test]
    fn each_state_reads_in_words() {
        let judged = |important| Verdict {
            important,
            reason: Some("The price fell to 45 EUR.".into()),
            summary_text: Some("Price 52 → 45 EUR".into()),
            model: Some("qwen2.5:3b".into()),
            cached: important == Some(false),
            ..verdict(VerdictState::Judged)
        };
        let view = VerdictView::of(&judged(Some(true)), now(), "UTC");
        assert_eq!((view.kind, view.label), ("ai-important", "Important"));
        assert_eq!(view.reason.as_deref(), Some("The price fell to 45 EUR."));
        assert_eq!(view.summary.as_deref(), Some("Price 52 → 45 EUR"));
        assert_eq!(view.model.as_deref(), Some("qwen2.5:3b"));
        let view = VerdictView::of(&judged(Some(false)), now(), "UTC");
        assert_eq!((view.kind, view.label), ("ai-unimportant", "Not important, not sent"));
        assert_eq!(view.model.as_deref(), Some("qwen2.5:3b, from the cache"));
        assert_eq!(VerdictView::of(&judged(None), now(), "UTC").kind, "ai-summary");

        let held = Verdict { error: Some("no model is configured".into()), ..verdict(VerdictState::Held) };
        let view = VerdictView::of(&held, now(), "UTC");
        assert!(view.held && view.label.starts_with("Held"));
        assert!(view.detail.as_deref().is_some_and(|d| d.contains("no model is configured")), "{view:?}");
        let released = Verdict { state: "released".into(), ..held.clone() };
        let view = VerdictView::of(&released, now(), "UTC");
        assert!(!view.held && view.label == "Sent by hand");
        let unjudged = Verdict { state: "unjudged".into(), ..held };
        let view = VerdictView::of(&unjudged, now(), "UTC");
        assert_eq!(view.detail.as_deref(), Some("Why: no model is configured"));
    }

    #[test]
    fn a_retried_verdict_says_its_tries_and_the_last_error() {
        let fresh = VerdictView::of(&verdict(VerdictState::Pending), now(), "UTC");
        assert_eq!((fresh.label, fresh.detail), ("Waiting for the model", None));
        let retried =
            Verdict { attempts: 2, error: Some("the model answered 503".into()), ..verdict(VerdictState::Pending) };
        let detail = VerdictView::of(&retried, now(), "UTC").detail.unwrap_or_default();
        assert_eq!(detail, "Tried 2 times; the last failed: the model answered 503. Next try in 2 minutes.");
    }
}
