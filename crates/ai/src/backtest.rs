//! The backtest of an intent: the would-be alerts of a watch's stored history, each judged
//! against an intent before it is saved, so its owner sees how many alerts it would have
//! raised and what it would cost.
//!
//! Every question goes through [`Judge::ask`]: the cache answers what was asked before (a
//! second backtest of the same intent is free) and the account's daily budget applies. A few
//! questions run at once, and the whole is bounded: what is not answered by the deadline is
//! listed as not tried.

use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt as _;
use serde::Serialize;

use crate::judge::{Asked, Outcome};
use crate::{Ask, Judge};

/// Questions in flight at once.
pub const CONCURRENCY: usize = 3;

/// How long a whole backtest of an intent may take by default.
pub const DEADLINE: Duration = Duration::from_secs(240);

/// What an intent would have made of a watch's would-be alerts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct AiBacktest {
    /// The intent tried, word for word.
    pub intent: String,
    /// The model asked (`null` when none is configured).
    pub model: Option<String>,
    /// Would-be alerts judged (the listed ones: the newest, at most 50).
    pub changes: usize,
    /// How many of them the model found important: the alerts this intent would have raised.
    pub alerts: usize,
    /// How many it found not important.
    pub not_important: usize,
    /// How many got no verdict (no model, budget spent, the model failed).
    pub failed: usize,
    /// How many were not asked before the backtest's time was up.
    pub not_tried: usize,
    /// Tokens these verdicts cost, counting cached ones at what they cost when first asked.
    pub tokens: u64,
    /// How many verdicts came from the cache (free now).
    pub cached: usize,
    /// The outcome in a sentence: "With this intent: 3 alerts instead of 41, about 52,000
    /// tokens."
    pub summary: String,
    /// One verdict per would-be alert, in the order given (newest first).
    pub verdicts: Vec<AiVerdict>,
}

/// The verdict on one would-be alert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct AiVerdict {
    /// The snapshot of the change.
    pub snapshot_id: String,
    /// When it was taken.
    pub at: DateTime<Utc>,
    /// Whether it matters for the intent (`null`: no verdict; see `error`).
    pub important: Option<bool>,
    /// Why, in the model's words (empty without a verdict).
    pub reason: String,
    /// What changed, in the model's words (empty without a verdict).
    pub summary: String,
    /// Whether the verdict came from the cache.
    pub cached: bool,
    /// Why there is no verdict.
    pub error: Option<String>,
}

/// One would-be alert to judge: its snapshot id, when it was taken, its unified diff.
pub type Change = (String, DateTime<Utc>, String);

/// Judges each of `changes` (newest first, as a backtest lists them) against `intent` for the
/// account's watch named `watch_name` at `url`, [`CONCURRENCY`] at a time through
/// [`Judge::ask`], all within `deadline`.
pub async fn judge_all(
    judge: &Judge,
    account_id: &str,
    watch_name: &str,
    url: &str,
    intent: &str,
    changes: &[Change],
    deadline: Duration,
) -> AiBacktest {
    let mut found = AiBacktest { intent: intent.to_owned(), changes: changes.len(), ..AiBacktest::default() };
    let model = match judge.model_of(account_id).await {
        Ok(Ok(config)) => config.model,
        Ok(Err(why)) => return found.without_model(changes, &why),
        Err(e) => {
            tracing::error!(error = %e, "reading the account's model failed");
            return found.without_model(changes, "the database failed; try again");
        }
    };
    found.model = Some(model);
    let until = tokio::time::Instant::now() + deadline;
    let call_timeout = judge.config().call_timeout;
    let mut outcomes: Vec<Option<Result<Outcome, String>>> = changes.iter().map(|_| None).collect();
    let mut asks = futures_util::stream::iter(0..changes.len())
        .map(|i| async move {
            let unified = changes.get(i).map_or("", |(_, _, unified)| unified.as_str());
            let ask = Ask { intent: Some(intent), watch_name, url, unified };
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            let timeout = call_timeout.min(left).max(Duration::from_secs(1));
            let outcome = judge.ask(account_id, &ask, timeout).await.map_err(|e| {
                tracing::error!(error = %e, "a backtest's question failed in the database");
                "the database failed; try again".to_owned()
            });
            (i, outcome)
        })
        .buffer_unordered(CONCURRENCY);
    // Past the deadline the questions still in flight are dropped, and with them their calls.
    while let Ok(Some((i, outcome))) = tokio::time::timeout_at(until, asks.next()).await {
        if let Some(slot) = outcomes.get_mut(i) {
            *slot = Some(outcome);
        }
    }
    for ((snapshot_id, at, _), outcome) in changes.iter().zip(outcomes) {
        found.add(snapshot_id, *at, outcome, deadline);
    }
    found.summary = found.sentence();
    tracing::info!(
        changes = found.changes,
        alerts = found.alerts,
        failed = found.failed,
        not_tried = found.not_tried,
        cached = found.cached,
        tokens = found.tokens,
        "intent backtested"
    );
    found
}

impl AiBacktest {
    /// Every change without a verdict, for `why`.
    fn without_model(mut self, changes: &[Change], why: &str) -> AiBacktest {
        self.failed = changes.len();
        self.verdicts =
            changes.iter().map(|(snapshot_id, at, _)| AiVerdict::failed(snapshot_id, *at, why.to_owned())).collect();
        self.summary = format!("Not judged: {why}.");
        self
    }

    /// Counts one change's outcome (`None`: not asked in time) and lists its verdict.
    fn add(&mut self, snapshot_id: &str, at: DateTime<Utc>, outcome: Option<Result<Outcome, String>>, limit: Duration) {
        let verdict = match outcome {
            Some(Ok(Outcome::Answered(asked))) => self.answered(snapshot_id, at, asked),
            Some(Ok(Outcome::Refused(why))) => {
                self.failed += 1;
                AiVerdict::failed(snapshot_id, at, why)
            }
            Some(Ok(Outcome::Failed(error))) => {
                self.failed += 1;
                AiVerdict::failed(snapshot_id, at, error.to_string())
            }
            Some(Err(why)) => {
                self.failed += 1;
                AiVerdict::failed(snapshot_id, at, why)
            }
            None => {
                self.not_tried += 1;
                let why = format!("not tried: the backtest's {} were up", driftwatch_core::format_duration(limit));
                AiVerdict::failed(snapshot_id, at, why)
            }
        };
        self.verdicts.push(verdict);
    }

    fn answered(&mut self, snapshot_id: &str, at: DateTime<Utc>, asked: Asked) -> AiVerdict {
        if asked.answer.important {
            self.alerts += 1;
        } else {
            self.not_important += 1;
        }
        self.tokens = self.tokens.saturating_add(asked.cost);
        self.cached += usize::from(asked.cached);
        AiVerdict {
            snapshot_id: snapshot_id.to_owned(),
            at,
            important: Some(asked.answer.important),
            reason: asked.answer.reason,
            summary: asked.answer.summary,
            cached: asked.cached,
            error: None,
        }
    }

    /// The outcome in a sentence (or three).
    fn sentence(&self) -> String {
        if self.changes == 0 {
            return "With this intent: nothing to judge, no change would have alerted.".to_owned();
        }
        let mut said = format!(
            "With this intent: {} instead of {}, about {} tokens.",
            count(self.alerts, "alert", "alerts"),
            self.changes,
            thousands(about(self.tokens))
        );
        if self.failed > 0 {
            let first = self.verdicts.iter().filter_map(|v| v.error.as_deref()).find(|e| !e.starts_with("not tried"));
            said.push_str(&format!(
                " {} could not be judged{}.",
                count(self.failed, "change", "changes"),
                first.map(|e| format!(" ({e})")).unwrap_or_default()
            ));
        }
        if self.not_tried > 0 {
            said.push_str(&format!(" {} not tried in time.", count(self.not_tried, "was", "were")));
        }
        said
    }
}

impl AiVerdict {
    fn failed(snapshot_id: &str, at: DateTime<Utc>, why: String) -> AiVerdict {
        AiVerdict {
            snapshot_id: snapshot_id.to_owned(),
            at,
            important: None,
            reason: String::new(),
            summary: String::new(),
            cached: false,
            error: Some(why),
        }
    }
}

/// `1 alert`, `3 alerts`; for a verb, `1 was`, `2 were`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `n` rounded to two significant digits from 1,000 up (an estimate should not look exact).
fn about(n: u64) -> u64 {
    if n < 1_000 {
        return n;
    }
    let mut unit = 1u64;
    while n / unit >= 100 {
        unit = unit.saturating_mul(10);
    }
    (n.saturating_add(unit / 2) / unit).saturating_mul(unit)
}

/// `52000` as `52,000`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_rounded_and_grouped() {
        assert_eq!(thousands(about(51_837)), "52,000");
        assert_eq!(thousands(about(1_234)), "1,200");
        assert_eq!(thousands(about(999)), "999");
        assert_eq!(thousands(about(1_250_000)), "1,300,000");
        assert_eq!(thousands(0), "0");
    }

    #[test]
    fn the_sentence_counts_alerts_and_what_failed() {
        let mut found = AiBacktest { changes: 41, alerts: 3, tokens: 51_837, ..AiBacktest::default() };
        assert_eq!(found.sentence(), "With this intent: 3 alerts instead of 41, about 52,000 tokens.");
        found.alerts = 1;
        found.failed = 1;
        found.not_tried = 2;
        let at = DateTime::<Utc>::UNIX_EPOCH;
        found.verdicts = vec![
            AiVerdict::failed("snp_1", at, "not tried: the backtest's 4m were up".into()),
            AiVerdict::failed("snp_2", at, "the model did not answer within 5 s".into()),
        ];
        assert_eq!(
            found.sentence(),
            "With this intent: 1 alert instead of 41, about 52,000 tokens. 1 change could not be judged \
             (the model did not answer within 5 s). 2 were not tried in time."
        );
    }

    #[test]
    fn without_a_model_every_change_says_why() {
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let changes = vec![("snp_1".to_owned(), at, "+a".to_owned()), ("snp_2".to_owned(), at, "+b".to_owned())];
        let found =
            AiBacktest { changes: 2, ..AiBacktest::default() }.without_model(&changes, "no model is configured");
        assert_eq!(found.summary, "Not judged: no model is configured.");
        assert_eq!(found.failed, 2);
        assert!(found.verdicts.iter().all(|v| v.error.as_deref() == Some("no model is configured")));
    }
}
