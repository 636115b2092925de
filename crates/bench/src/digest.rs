//! `driftwatch-bench digest`: an endpoint in digest mode gathers many change events (queued as
//! the checks' batches queue them), then its period is closed as the digest loop closes it:
//! how fast gathering is queued, and how long the one closing transaction takes (the period
//! moved, the payload built, the digest queued, every gathered row marked).

use std::time::{Duration, Instant};

use chrono::TimeDelta;
use driftwatch_alert::EndpointRef;
use driftwatch_core::{Clock as _, EventType, IdKind, SystemClock, new_id};
use driftwatch_store::digests::{self, Closed, Period};
use driftwatch_store::render::PayloadOnly;
use driftwatch_store::{Endpoint, Event, PoolOptions, Store, accounts, endpoints, outbox};

/// What to measure.
#[derive(Debug, Clone)]
pub struct DigestBench {
    /// Events gathered before the period closes.
    pub events: usize,
    /// An empty database to use (default: a temporary SQLite file).
    pub database_url: Option<String>,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct DigestReport {
    /// Backend.
    pub backend: &'static str,
    /// Events gathered.
    pub events: usize,
    /// Queueing them, in batches of 500 as the checks' batches do.
    pub gather: Duration,
    /// The closing transaction.
    pub close: Duration,
    /// Events the digest carries (the rest counted as omitted).
    pub carried: usize,
    /// The digest's body.
    pub body_bytes: usize,
}

impl std::fmt::Display for DigestReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "backend     {}", self.backend)?;
        writeln!(
            f,
            "gather      {} events in {:.2} s ({:.0} events/s)",
            self.events,
            self.gather.as_secs_f64(),
            self.events as f64 / self.gather.as_secs_f64()
        )?;
        write!(
            f,
            "close       {:.0} ms, one transaction: {} events carried, {:.1} KiB digest, {} marked digested",
            self.close.as_secs_f64() * 1e3,
            self.carried,
            self.body_bytes as f64 / 1024.0,
            self.events
        )
    }
}

/// A change event's stored body, about 1 KiB, as the alert crate writes one.
fn change_body(n: usize, at: &str) -> String {
    serde_json::json!({
        "type": "change.detected", "timestamp": at,
        "data": {
            "event_id": format!("evt_bench{n}"),
            "watch": {"id": format!("wat_bench{}", n % 50), "name": format!("Item {}", n % 50), "url": "https://shop.example/item"},
            "diff": {"added": 1, "removed": 1, "hunks": [],
                     "unified": format!("--- a\n+++ b\n@@ -1 +1 @@\n-price {n}.00 EUR, in stock, ships tomorrow\n+price {}.00 EUR, in stock, ships tomorrow\n", n + 1)},
            "snapshots": {"previous": "snp_a", "current": "snp_b"}
        }
    })
    .to_string()
}

/// Gathers `events` change events for one digest endpoint, then closes its period.
pub async fn digest(bench: &DigestBench) -> anyhow::Result<DigestReport> {
    let dir = tempfile::tempdir()?;
    let url =
        bench.database_url.clone().unwrap_or_else(|| format!("sqlite://{}", dir.path().join("bench.db").display()));
    let store = Store::open(&url, &PoolOptions { max_size: 4, ..PoolOptions::default() })?;
    store.migrate().await?;
    let now = SystemClock.now().naive_utc();
    let account = store.write(move |c| accounts::create_account(c, "bench", now)).await?;
    let endpoint = Endpoint {
        delivery: Some(r#"{"mode":"digest","every":"1d"}"#.into()),
        digest_due_at: Some(now + TimeDelta::hours(1)),
        digest_since: Some(now - TimeDelta::days(1)),
        ..Endpoint::webhook(&account.id, "http://127.0.0.1:9/hook", now)
    };
    let stored = endpoint.clone();
    store.write(move |c| endpoints::insert_endpoint(c, &stored)).await?;

    let started = Instant::now();
    let stamp = SystemClock.now().to_rfc3339();
    for first in (0..bench.events).step_by(500) {
        let batch: Vec<Event> = (first..(first + 500).min(bench.events))
            .map(|n| Event {
                id: new_id(IdKind::Event),
                account_id: account.id.clone(),
                watch_id: None,
                endpoint_id: None,
                event_type: EventType::ChangeDetected.as_str().into(),
                previous_snapshot_id: None,
                snapshot_id: None,
                added: 1,
                removed: 1,
                payload: change_body(n, &stamp),
                created_at: now,
            })
            .collect();
        store
            .write(move |c| {
                let items: Vec<(&Event, i32, chrono::NaiveDateTime)> = batch.iter().map(|e| (e, 5, now)).collect();
                driftwatch_store::transaction(c, |c| outbox::enqueue_many(c, &PayloadOnly, &items).map(|_| ()))
            })
            .await?;
    }
    let gather = started.elapsed();

    let due = endpoint.digest_due_at.unwrap_or(now);
    let at = due + TimeDelta::seconds(1);
    let started = Instant::now();
    let closed = store
        .write(move |c| {
            let build = |p: &Period<'_>| {
                let id = new_id(IdKind::Event);
                let bodies: Vec<&str> = p.events.iter().map(|g| g.payload.as_str()).collect();
                let payload = driftwatch_alert::digest_payload(
                    &id,
                    EndpointRef { id: &p.endpoint.id, url: &p.endpoint.url, description: "" },
                    (p.since.and_utc(), p.until.and_utc()),
                    p.count,
                    &bodies,
                    None,
                    at.and_utc(),
                );
                Some(Event::about_endpoint(id, p.endpoint, EventType::Digest, payload, at))
            };
            digests::close(c, &PayloadOnly, &endpoint, due, Some(due + TimeDelta::days(1)), 500, &build, 5, at)
        })
        .await?;
    let close = started.elapsed();
    let Closed::Queued { delivery_id, events } = closed else { anyhow::bail!("the period did not close: {closed:?}") };
    anyhow::ensure!(events == bench.events, "{events} of {} events marked", bench.events);
    let account_id = account.id.clone();
    let body = store
        .read(move |c| driftwatch_store::deliveries::delivery_body(c, &account_id, &delivery_id))
        .await?
        .unwrap_or_default();
    let carried = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["data"]["events"].as_array().map(Vec::len))
        .unwrap_or(0);
    Ok(DigestReport {
        backend: if url.starts_with("postgres") { "postgresql" } else { "sqlite" },
        events: bench.events,
        gather,
        close,
        carried,
        body_bytes: body.len(),
    })
}
