//! The digest loop: closes each endpoint's digest period when it ends, on whichever node gets
//! there first (the close is a compare-and-set on the period, so a period is closed once), and
//! holds deliveries that fall due in quiet hours until those end.

use std::time::Duration;

use chrono::NaiveDateTime;
use driftwatch_alert::EndpointRef;
use driftwatch_core::{DeliveryMode, EventType, IdKind, new_id};
use driftwatch_store::digests::{self, Closed, Period};
use driftwatch_store::{Event, StoreError};
use tokio_util::sync::CancellationToken;

use crate::DeliveryWorker;

/// Summarises a digest's period for an account: `title` names the digest, `text` says what
/// happened in it, event by event. `None` when there is no model, no budget, or no answer in
/// time: the digest then goes without a summary.
pub trait Summarize: Send + Sync + 'static {
    /// The summary, or `None`.
    fn summarize<'a>(
        &'a self,
        account_id: &'a str,
        title: &'a str,
        text: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + Send + 'a>>;
}

/// Most characters of one event in the text a model summarises.
const SUMMARY_EVENT_CHARS: usize = 2_000;
/// Most characters of the whole text a model summarises.
const SUMMARY_CHARS: usize = 24_000;

/// Most events a digest reads to carry (the rest are counted as omitted).
const DIGEST_CAP: usize = 500;

/// Most periods closed in one pass before looking again.
const PER_PASS: i64 = 32;

impl DeliveryWorker {
    /// Closes digest periods as they end, until `shutdown`.
    pub(crate) async fn run_digests(self, shutdown: CancellationToken) {
        let poll = self.inner.config.poll_interval;
        while !shutdown.is_cancelled() {
            let wait = match self.close_due_digests().await {
                Ok(closed) if closed as i64 >= PER_PASS => Duration::ZERO,
                Ok(_) => {
                    let now = self.now();
                    let next = self.inner.store.read(digests::next_due).await.ok().flatten();
                    next.map_or(poll, |at| (at - now).to_std().unwrap_or(Duration::ZERO)).min(poll)
                }
                Err(e) => {
                    tracing::error!(error = %e, "closing digests failed");
                    poll
                }
            };
            tokio::select! {
                () = tokio::time::sleep(wait.max(Duration::from_millis(5))) => {}
                () = shutdown.cancelled() => {}
            }
        }
    }

    /// Wires in what summarises digests (the language model), once.
    pub fn set_summarizer(&self, summarizer: std::sync::Arc<dyn Summarize>) {
        let _ = self.inner.summarizer.set(summarizer);
    }

    /// A model's summary of what `endpoint` gathered up to `due`, when one is wired in and
    /// anything was gathered.
    async fn summary(&self, endpoint: &driftwatch_store::Endpoint, due: NaiveDateTime) -> Option<String> {
        let summarizer = self.inner.summarizer.get()?.clone();
        let id = endpoint.id.clone();
        let gathered = self.inner.store.read(move |c| digests::peek(c, &id, due, DIGEST_CAP)).await.ok()?;
        if gathered.is_empty() {
            return None;
        }
        let text = summary_text(&gathered);
        let title = format!("driftwatch digest of {} events", gathered.len());
        summarizer.summarize(&endpoint.account_id, &title, &text).await
    }

    /// Closes the digest periods that have ended; returns how many endpoints it looked at.
    pub async fn close_due_digests(&self) -> Result<usize, StoreError> {
        let now = self.now();
        let due = self.inner.store.read(move |c| digests::due(c, now, PER_PASS)).await?;
        let looked = due.len();
        for endpoint in due {
            let Some(at) = endpoint.digest_due_at else { continue };
            let mode = endpoint.delivery.as_deref().and_then(|json| DeliveryMode::parse(json).ok());
            let digesting = mode.as_ref().and_then(|m| m.check(now.and_utc()).ok().flatten());
            let next = digesting.as_ref().and_then(|d| d.period.following(at.and_utc(), now.and_utc()));
            let send_empty = digesting.as_ref().is_some_and(|d| d.send_empty);
            let summary =
                if digesting.as_ref().is_some_and(|d| d.summary) { self.summary(&endpoint, at).await } else { None };
            let render = self.inner.store.render();
            let max_attempts = endpoint.max_attempts.unwrap_or(self.inner.config.retry.max_attempts as i32);
            let id = endpoint.id.clone();
            let closed = self
                .inner
                .store
                .write(move |c| {
                    let build = |p: &Period<'_>| digest_event(p, send_empty, summary.clone(), now);
                    digests::close(
                        c,
                        &*render,
                        &endpoint,
                        at,
                        next.map(|t| t.naive_utc()),
                        DIGEST_CAP,
                        &build,
                        max_attempts,
                        now,
                    )
                })
                .await?;
            match closed {
                Closed::Queued { delivery_id, events } => {
                    tracing::info!(endpoint.id = %id, delivery.id = %delivery_id, events, "digest queued");
                    self.wake();
                }
                Closed::Empty => tracing::debug!(endpoint.id = %id, "digest period closed with nothing to send"),
                Closed::Moved => tracing::debug!(endpoint.id = %id, "digest period already closed"),
            }
        }
        Ok(looked)
    }
}

/// The digest event of a period, or `None` for an empty one that asked for no note.
fn digest_event(period: &Period<'_>, send_empty: bool, summary: Option<String>, now: NaiveDateTime) -> Option<Event> {
    if period.count == 0 && !send_empty {
        return None;
    }
    let id = new_id(IdKind::Event);
    let endpoint = period.endpoint;
    let bodies: Vec<&str> = period.events.iter().map(|g| g.payload.as_str()).collect();
    let payload = driftwatch_alert::digest_payload(
        &id,
        EndpointRef { id: &endpoint.id, url: &endpoint.url, description: &endpoint.description },
        (period.since.and_utc(), period.until.and_utc()),
        period.count,
        &bodies,
        summary,
        now.and_utc(),
    );
    Some(Event::about_endpoint(id, endpoint, EventType::Digest, payload, now))
}

/// What a model reads to summarise a period: per event, its watch, its type and what changed
/// (the diff's changed lines, cut), oldest first, within [`SUMMARY_CHARS`].
fn summary_text(gathered: &[digests::Gathered]) -> String {
    use driftwatch_alert::v1::Payload;
    let mut text = String::new();
    for g in gathered {
        let part = match Payload::parse(&g.payload) {
            Some(Payload::Change(e)) => {
                let changed: Vec<&str> = e
                    .data
                    .diff
                    .unified
                    .lines()
                    .filter(|l| {
                        (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++") && !l.starts_with("---")
                    })
                    .collect();
                format!("## {} ({}) changed\n{}\n", e.data.watch.name, e.data.watch.url, changed.join("\n"))
            }
            Some(Payload::Condition(e)) => {
                format!("## {}: {}\n{}\n", e.data.watch.name, g.event_type, e.data.reasons.join("; "))
            }
            Some(Payload::Check(e)) => format!("## {}: {}\n", e.data.watch.name, g.event_type),
            Some(Payload::Expectation(e)) => {
                format!("## {}: {} ({})\n", e.data.watch.name, g.event_type, e.data.expectation.rule)
            }
            _ => format!("## {}\n", g.event_type),
        };
        text.extend(part.chars().take(SUMMARY_EVENT_CHARS));
        if text.chars().count() >= SUMMARY_CHARS {
            break;
        }
    }
    text
}
