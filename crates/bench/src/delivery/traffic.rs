//! What a delivery run sends: the endpoints of each kind, the events (real `change.detected`
//! payloads) and their bodies, enqueued in batches through the outbox, and the raw rate of the
//! same requests with no database.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::Context as _;
use axum::body::Bytes;
use axum::http::Request;
use driftwatch_channels::EndpointKind;
use driftwatch_core::{Clock as _, EventType, IdKind, SystemClock, new_id};
use driftwatch_store::render::{EventRef, Recipient, Render as _, WatchFacts};
use driftwatch_store::{Endpoint, Event, outbox};
use futures_util::StreamExt as _;

use super::TELEGRAM_TOKEN;
use super::receiver::receiver;
use crate::cpu_seconds;

/// An endpoint of `kind` at the receiver `base`, the `k`-th of the account's: each kind's URL,
/// settings and (plaintext) secrets, as an operator would enter them for that provider.
pub(super) fn endpoint(
    kind: EndpointKind,
    account_id: &str,
    base: &str,
    k: usize,
    max_in_flight: Option<usize>,
) -> Endpoint {
    let (url, settings, secrets) = match kind {
        EndpointKind::Discord => (format!("{base}/api/webhooks/{}/bench", k + 1), "{}".to_owned(), None),
        EndpointKind::Telegram => (
            base.to_owned(),
            serde_json::json!({"chat_id": k + 1}).to_string(),
            Some(serde_json::json!({"bot_token": TELEGRAM_TOKEN}).to_string()),
        ),
        EndpointKind::Ntfy => {
            (base.to_owned(), serde_json::json!({"topic": format!("bench-{}", k + 1)}).to_string(), None)
        }
        _ => (format!("{base}/hook/{k}"), "{}".to_owned(), None),
    };
    Endpoint {
        kind: kind.as_str().to_owned(),
        description: "bench".into(),
        max_in_flight: max_in_flight.map(|n| n as i32),
        settings,
        secrets,
        ..Endpoint::webhook(account_id, &url, SystemClock.now().naive_utc())
    }
}

/// Event `n`'s payload: a real `change.detected` about the watch `bench#n`.
fn change_payload(n: usize, event_id: &str) -> String {
    let change = driftwatch_diff::diff_texts(
        "Espresso machine\nPrice: 129.00 EUR\nIn stock\n",
        &format!("Espresso machine\nPrice: {n}.00 EUR\nIn stock\n"),
        "snp_a",
        "snp_b",
    );
    driftwatch_alert::change_payload(
        event_id,
        driftwatch_alert::WatchRef {
            id: "wat_bench",
            name: &format!("bench#{n}"),
            url: "https://shop.example/espresso",
        },
        &change,
        driftwatch_alert::SnapshotPair { previous: "snp_a", current: "snp_b" },
        chrono::Utc::now(),
    )
}

/// Event `n` of the account: a `change.detected` with its payload.
fn bench_event(n: usize, account_id: &str, now: chrono::NaiveDateTime) -> Event {
    let id = new_id(IdKind::Event);
    Event {
        payload: change_payload(n, &id),
        id,
        account_id: account_id.to_owned(),
        watch_id: None,
        endpoint_id: None,
        event_type: EventType::ChangeDetected.as_str().into(),
        previous_snapshot_id: None,
        snapshot_id: None,
        added: 1,
        removed: 1,
        created_at: now,
    }
}

/// Enqueues one event per `n` in `events`, to every endpoint of the account, in one transaction
/// (the way a batch of checks queues its changes).
pub(super) fn enqueue_batch(
    c: &mut driftwatch_store::DbConn,
    render: &dyn driftwatch_store::render::Render,
    account_id: &str,
    events: std::ops::Range<usize>,
) -> driftwatch_store::StoreResult<()> {
    driftwatch_store::transaction(c, |c| {
        let now = SystemClock.now().naive_utc();
        let batch: Vec<_> = events.map(|n| bench_event(n, account_id, now)).collect();
        let events: Vec<_> = batch.iter().map(|new| (new, 5, now)).collect();
        outbox::enqueue_many(c, render, &events)?;
        Ok(())
    })
}

/// The body the channels renderer makes of `event` for `to` (what the outbox stores).
fn render(channels: &driftwatch_channels::Channels, to: &Endpoint, event: &Event) -> Result<Vec<u8>, String> {
    let recipient = Recipient {
        id: &to.id,
        kind: &to.kind,
        settings: &to.settings,
        title_template: to.title_template.as_deref(),
        body_template: to.body_template.as_deref(),
    };
    let event = EventRef { id: &event.id, event_type: &event.event_type, payload: &event.payload };
    channels.body(&recipient, event, WatchFacts::default())
}

/// The request the sender makes of event `n` for endpoint `k` of `kind` at `base`: the body
/// rendered by the channels renderer, method, URL and headers by `outgoing::request`, and for a
/// webhook the signature headers (placeholders: the stand-in checks their presence).
pub(super) fn sample_request(kind: EndpointKind, n: usize, k: usize, base: &str) -> anyhow::Result<Request<Bytes>> {
    use axum::http::{HeaderName, HeaderValue};
    let to = endpoint(kind, "acc_bench", base, k, None);
    let event = bench_event(n, "acc_bench", SystemClock.now().naive_utc());
    let body = render(&driftwatch_channels::Channels::new(None), &to, &event).map_err(anyhow::Error::msg)?;
    let settings = driftwatch_channels::Settings::parse(&to.settings);
    let secrets = driftwatch_channels::Secrets::parse(to.secrets.as_deref().unwrap_or(""));
    let out = driftwatch_channels::outgoing::request(kind, &to.url, &settings, &secrets, "dlv_bench", &body)
        .map_err(anyhow::Error::msg)?;
    let mut request = Request::builder().method(out.method).uri(out.url.as_str());
    let headers = request.headers_mut().context("a request the sender would not make")?;
    headers.insert("content-type", HeaderValue::from_str(&out.content_type)?);
    if out.signed {
        headers.insert("webhook-id", HeaderValue::from_static("dlv_bench"));
        headers.insert("webhook-timestamp", HeaderValue::from_static("1700000000"));
        headers.insert("webhook-signature", HeaderValue::from_static("v1,c2lnbmF0dXJl"));
    }
    for (name, value) in &out.headers {
        headers.insert(HeaderName::from_bytes(name.as_bytes())?, HeaderValue::from_str(value)?);
    }
    Ok(request.body(Bytes::from(out.body.into_owned()))?)
}

/// The raw rate: the same client and the same kind's request (rendered, signed for webhooks),
/// straight at a receiver. Returns the rate, the CPU per request and the mean body size.
pub(super) async fn raw(kind: EndpointKind, count: usize, concurrency: usize) -> anyhow::Result<(f64, f64, usize)> {
    let raw = receiver(kind, count, 1).await?;
    let sender = crate::sender()?;
    let channels = driftwatch_channels::Channels::new(None);
    let target = endpoint(kind, "acc_bench", &raw.url, 0, Some(concurrency));
    let bytes = AtomicUsize::new(0);
    let started = Instant::now();
    let cpu = cpu_seconds();
    let ok = futures_util::stream::iter(0..count)
        .map(|n| {
            let (sender, target, channels, bytes) = (&sender, &target, &channels, &bytes);
            async move {
                let event = bench_event(n, "acc_bench", SystemClock.now().naive_utc());
                let body = render(channels, target, &event)?;
                bytes.fetch_add(body.len(), Ordering::Relaxed);
                let id = new_id(IdKind::Delivery);
                Ok::<_, String>(
                    sender.send(target, &id, "change.detected", 1, &body, SystemClock.now().timestamp()).await,
                )
            }
        })
        .buffer_unordered(concurrency)
        .filter(|r| {
            std::future::ready(
                matches!(r, Ok(sent) if matches!(sent.outcome, driftwatch_delivery::Outcome::Status(200..=299))),
            )
        })
        .count()
        .await;
    let elapsed = started.elapsed();
    let cpu = cpu_seconds() - cpu;
    raw.shared.ensure_none_refused()?;
    anyhow::ensure!(ok == count, "the raw run got {ok} of {count} 2xx answers");
    Ok((count as f64 / elapsed.as_secs_f64(), cpu * 1e6 / count as f64, bytes.into_inner() / count.max(1)))
}
