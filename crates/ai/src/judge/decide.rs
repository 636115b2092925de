//! Deciding one claimed verdict: judged, retried later, or out without a verdict.

use std::time::Duration;

use chrono::TimeDelta;
use driftwatch_alert::v1;
use driftwatch_store::verdicts::{self, Claimed, Decision};
use driftwatch_store::{StoreError, VerdictState};

use super::Judge;
use super::ask::{Asked, Outcome};
use crate::Ask;

impl Judge {
    /// Asks about one claimed change and records what follows.
    pub(super) async fn decide_one(&self, job: Claimed, owner: &str) -> Result<(), StoreError> {
        let now = self.now();
        let verdict = &job.verdict;
        if now >= verdict.deadline_at {
            let why = format!(
                "no verdict within {}: {}",
                driftwatch_core::format_duration(self.inner.config.deadline),
                verdict.error.as_deref().unwrap_or("the model did not answer")
            );
            return self.without(&job, owner, None, why).await;
        }
        if !self.inner.config.enabled {
            return self.without(&job, owner, None, "AI is turned off on this server".into()).await;
        }
        let Some(change) = change_of(&job.event.payload) else {
            return self.without(&job, owner, None, "the change's body could not be read".into()).await;
        };
        let ask = Ask {
            intent: verdict.intent.as_deref(),
            watch_name: &change.watch.name,
            url: &change.watch.url,
            unified: &change.diff.unified,
        };
        let left = (verdict.deadline_at - now).to_std().unwrap_or(Duration::ZERO);
        let timeout = self.inner.config.call_timeout.min(left).max(Duration::from_secs(1));
        match self.ask(&verdict.account_id, &ask, timeout).await? {
            Outcome::Answered(asked) => self.judged(&job, owner, asked).await,
            Outcome::Refused(why) => self.without(&job, owner, None, why).await,
            Outcome::Failed(error) => {
                let now = self.now();
                if now >= verdict.deadline_at {
                    let why = format!(
                        "no verdict within {}: {error}",
                        driftwatch_core::format_duration(self.inner.config.deadline)
                    );
                    return self.without(&job, owner, None, why).await;
                }
                let wait = error.retry_after().unwrap_or_else(|| self.backoff(verdict.attempts));
                let next = (now + TimeDelta::from_std(wait).unwrap_or(TimeDelta::minutes(1))).min(verdict.deadline_at);
                let (id, lease, message) = (verdict.event_id.clone(), owner.to_owned(), error.to_string());
                self.inner.store.write(move |c| verdicts::retry_later(c, &id, &lease, next, &message)).await?;
                tracing::info!(event.id = %verdict.event_id, attempts = verdict.attempts + 1, retry_at = %next, error = %error, "verdict to be asked again");
                Ok(())
            }
        }
    }

    /// The wait before try `attempts + 1`: doubling from the first wait up to the longest.
    fn backoff(&self, attempts: i32) -> Duration {
        let config = &self.inner.config;
        let factor = 2u32.saturating_pow(u32::try_from(attempts).unwrap_or(0).min(16));
        config.retry_first.saturating_mul(factor).min(config.retry_max)
    }

    /// Records a verdict: the change is delivered when it is important, or when there is no
    /// intent (a summary only); otherwise it stays recorded and undelivered.
    async fn judged(&self, job: &Claimed, owner: &str, asked: Asked) -> Result<(), StoreError> {
        let intent = job.verdict.intent.is_some();
        let important = intent.then_some(asked.answer.important);
        let ai = v1::Ai {
            important,
            reason: intent.then(|| bounded(&asked.answer.reason)).filter(|r| !r.is_empty()),
            summary: Some(bounded(&asked.answer.summary)).filter(|s| !s.is_empty()),
            model: Some(asked.model.clone()),
            error: None,
        };
        let deliver = important.unwrap_or(true);
        self.inner.config.metrics.verdict(match important {
            Some(true) => "important",
            Some(false) => "unimportant",
            None => "summarised",
        });
        let decision = Decision {
            state: VerdictState::Judged,
            important,
            reason: ai.reason.clone(),
            summary: ai.summary.clone(),
            model: ai.model.clone(),
            tokens: i64::try_from(asked.tokens).unwrap_or(i64::MAX),
            cached: asked.cached,
            error: None,
            payload: driftwatch_alert::with_ai(&job.event.payload, ai),
            deliver,
        };
        tracing::info!(event.id = %job.verdict.event_id, important = ?important, cached = asked.cached, tokens = asked.tokens, "change judged");
        self.record(job, owner, decision).await
    }

    /// The change goes out without a verdict, saying why, or is held when its watch says so.
    async fn without(&self, job: &Claimed, owner: &str, model: Option<String>, why: String) -> Result<(), StoreError> {
        let hold = job.verdict.hold;
        let ai =
            v1::Ai { important: None, reason: None, summary: None, model: model.clone(), error: Some(why.clone()) };
        self.inner.config.metrics.verdict(if hold { "held" } else { "unjudged" });
        tracing::warn!(event.id = %job.verdict.event_id, hold, reason = %why, "change decided without a verdict");
        let decision = Decision {
            state: if hold { VerdictState::Held } else { VerdictState::Unjudged },
            important: None,
            reason: None,
            summary: None,
            model,
            tokens: 0,
            cached: false,
            error: Some(why),
            payload: driftwatch_alert::with_ai(&job.event.payload, ai),
            deliver: !hold,
        };
        self.record(job, owner, decision).await
    }

    async fn record(&self, job: &Claimed, owner: &str, decision: Decision) -> Result<(), StoreError> {
        let render = self.inner.store.render();
        let (id, lease, now) = (job.verdict.event_id.clone(), owner.to_owned(), self.now());
        let queued =
            self.inner.store.write(move |c| verdicts::decide(c, &*render, &id, &lease, &decision, now)).await?;
        match queued {
            Some(n) if n > 0 => (self.inner.on_queued)(),
            Some(_) => {}
            None => tracing::info!(event.id = %job.verdict.event_id, "verdict decided elsewhere; lease lost"),
        }
        Ok(())
    }
}

/// Most characters of a reason or a summary kept: a model that rambles is cut, with an ellipsis.
const MAX_ANSWER_CHARS: usize = 1_000;

/// `text` trimmed and cut to [`MAX_ANSWER_CHARS`].
fn bounded(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MAX_ANSWER_CHARS) {
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
        None => text.to_owned(),
    }
}

/// The change a stored `change.detected` body describes.
fn change_of(payload: &str) -> Option<v1::ChangeDetected> {
    match driftwatch_alert::v1::Payload::parse(payload)? {
        v1::Payload::Change(envelope) => Some(envelope.data),
        _ => None,
    }
}
