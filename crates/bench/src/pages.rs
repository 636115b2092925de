//! `driftwatch-bench pages`: how long the browser UI's watches page takes to render, with
//! everything beside each watch (last change, the 30-day strip, unseen marks), for a page of
//! 50 watches out of many; measured in-process through the router (no socket), so the figure
//! is the server's own time.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::Request;
use chrono::TimeDelta;
use driftwatch_core::{Clock as _, EventType, IdKind, SystemClock, new_id};
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker, Sender, SenderOptions};
use driftwatch_net::TargetPolicy;
use driftwatch_store::{Event, PoolOptions, Watch, accounts, events, maintenance, users, watches};
use tower::ServiceExt as _;

/// What to measure.
#[derive(Debug, Clone)]
pub struct PagesBench {
    /// Watches in the account.
    pub watches: usize,
    /// Requests per page measured.
    pub requests: usize,
    /// An empty database to use (default: a temporary SQLite file).
    pub database_url: Option<String>,
}

/// Render times of one page, in milliseconds.
#[derive(Debug, Clone)]
pub struct Timing {
    /// What was requested.
    pub what: &'static str,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// Bytes of HTML.
    pub bytes: usize,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct PagesReport {
    /// Watches in the account.
    pub watches: usize,
    /// Change events seeded.
    pub events: usize,
    /// Database backend.
    pub backend: &'static str,
    /// Each page measured.
    pub timings: Vec<Timing>,
    /// CSS + JS a page loads.
    pub asset_bytes: usize,
}

impl std::fmt::Display for PagesReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "watches page on {}: {} watches, {} change events in 30 days, 50 per page",
            self.backend, self.watches, self.events
        )?;
        for t in &self.timings {
            writeln!(f, "{:<28} p50 {:>6.2} ms   p95 {:>6.2} ms   {:>7} bytes", t.what, t.p50_ms, t.p95_ms, t.bytes)?;
        }
        write!(f, "CSS + JS           {} bytes", self.asset_bytes)
    }
}

/// Seeds the account and measures the pages.
pub async fn pages(bench: &PagesBench) -> anyhow::Result<PagesReport> {
    let (store, _dir) =
        crate::open_store(bench.database_url.as_deref(), &PoolOptions { max_size: 8, ..PoolOptions::default() })
            .await?;
    let count = bench.watches.max(50);
    let session_id = driftwatch_core::new_random_key("");
    let sid = session_id.clone();
    let (events_seeded, deep_cursor) = store
        .write(move |c| {
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, "bench", now)?;
            let user = users::create_user(c, &account.id, "bench@example.com", "$argon2id$unused", now)?;
            users::create_session(c, &user.id, &sid, "csrf", now, users::SessionLimits::default())?;
            let mut ids = Vec::with_capacity(count);
            let mut seeded = 0;
            driftwatch_store::transaction(c, |c| {
                for chunk in (0..count).collect::<Vec<_>>().chunks(500) {
                    let batch: Vec<Watch> = chunk
                        .iter()
                        .map(|n| Watch {
                            name: format!("watch {n}"),
                            selector: Some("#price".into()),
                            tags: if n % 3 == 0 { ",bench,".into() } else { String::new() },
                            last_run_at: Some(now),
                            ..Watch::new(&account.id, &format!("https://shop{n}.example/pricing"), now)
                        })
                        .collect();
                    ids.extend(batch.iter().map(|w| w.id.clone()));
                    for watch in &batch {
                        watches::insert_watch(c, watch)?;
                    }
                    // Three changes each, over the last 30 days.
                    let changes: Vec<Event> = batch
                        .iter()
                        .flat_map(|w| {
                            (0..3).map(move |k| Event {
                                id: new_id(IdKind::Event),
                                account_id: w.account_id.clone(),
                                watch_id: Some(w.id.clone()),
                                endpoint_id: None,
                                event_type: EventType::ChangeDetected.as_str().to_owned(),
                                previous_snapshot_id: None,
                                snapshot_id: None,
                                added: 1,
                                removed: 1,
                                payload: "{}".into(),
                                created_at: now - TimeDelta::days(k * 9 + 1),
                            })
                        })
                        .collect();
                    seeded += changes.len();
                    events::insert_events(c, &changes)?;
                }
                Ok::<_, driftwatch_store::StoreError>(())
            })?;
            // The cursor of the last page of 50 (ids sort by creation only across milliseconds).
            ids.sort();
            Ok((seeded, ids[count - 51].clone()))
        })
        .await?;

    // Planner statistics and a visibility map, as a database that has been running has them
    // (autovacuum on PostgreSQL; `ANALYZE` or `PRAGMA optimize` on SQLite).
    store.write(maintenance::vacuum_analyze).await?;

    let worker = DeliveryWorker::new(
        store.clone(),
        Sender::new(SenderOptions { policy: TargetPolicy { allow_private: false }, ..SenderOptions::default() })?,
        Arc::new(SystemClock),
        DeliveryConfig::default(),
    );
    let state = crate::app_state(&store, worker, false)?;
    let router = driftwatch_web::router(state);
    let cookie = format!("dw_session={session_id}");
    let pages: [(&'static str, String); 4] = [
        ("first page", "/".to_owned()),
        ("last page (keyset cursor)", format!("/?cursor={deep_cursor}")),
        ("tag filter", "/?tag=bench".to_owned()),
        ("search", "/?q=shop12".to_owned()),
    ];
    let mut timings = Vec::new();
    for (what, path) in pages {
        let mut samples = Vec::with_capacity(bench.requests);
        let mut bytes = 0;
        for i in 0..bench.requests.max(5) + 3 {
            let request = Request::get(&path).header("cookie", &cookie).body(Body::empty())?;
            let started = Instant::now();
            let response = router.clone().oneshot(request).await?;
            let status = response.status();
            let body = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
            let took = started.elapsed();
            anyhow::ensure!(
                body.windows(7).any(|w| w == b"<tbody "),
                "{what}: not the watches page ({status}): {}",
                String::from_utf8_lossy(&body).chars().take(2000).collect::<String>()
            );
            bytes = body.len();
            if i >= 3 {
                samples.push(took); // the first few warm caches and the pool
            }
        }
        samples.sort();
        let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1000.0;
        timings.push(Timing { what, p50_ms: at(0.5), p95_ms: at(0.95), bytes });
    }
    Ok(PagesReport {
        watches: count,
        events: events_seeded,
        backend: store.backend().as_str(),
        timings,
        asset_bytes: driftwatch_web::ui::asset_bytes(),
    })
}
