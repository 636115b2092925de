//! Periodic jobs (tokio-cron-scheduler): the safety-net sweep and retention.

use anyhow::Context as _;
use chrono::TimeDelta;
use std::sync::Arc;

use driftwatch_core::Clock;
use driftwatch_delivery::DeliveryWorker;
use driftwatch_schedule::Runner;
use driftwatch_store::Store;
use tokio_cron_scheduler::{Job, JobScheduler};

use crate::Settings;

/// Starts the scheduler with the sweep (wakes both loops, in case a wake-up was missed or work
/// arrived from another node) and the retention job.
pub(crate) async fn start(
    settings: &Settings,
    store: Store,
    runner: Runner,
    worker: DeliveryWorker,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<JobScheduler> {
    let scheduler = JobScheduler::new().await.context("starting the job scheduler")?;
    let sweep = Job::new_async(settings.sweep_cron.as_str(), move |_, _| {
        let (runner, worker) = (runner.clone(), worker.clone());
        Box::pin(async move {
            runner.wake();
            worker.wake();
            worker.wake_recoveries();
        })
    })
    .with_context(|| format!("DRIFTWATCH_SWEEP_CRON `{}`", settings.sweep_cron))?;
    scheduler.add(sweep).await.context("adding the sweep job")?;

    let settings_for_job = settings.clone();
    let retention = Job::new_async(settings.retention_cron.as_str(), move |_, _| {
        let (store, clock, settings) = (store.clone(), Arc::clone(&clock), settings_for_job.clone());
        Box::pin(async move {
            let now = clock.now().naive_utc();
            let policy = retention_policy(&settings, now);
            let started = std::time::Instant::now();
            match driftwatch_store::retention::purge(&store, &policy).await {
                Ok(p) => tracing::info!(
                    runs = p.runs,
                    events = p.events,
                    bodies = p.bodies,
                    attempts = p.attempts,
                    snapshots = p.snapshots,
                    idempotency_keys = p.idempotency_keys,
                    batches = p.batches,
                    ms = started.elapsed().as_millis() as u64,
                    "retention purged old data"
                ),
                Err(e) => tracing::error!(error = %e, "retention failed"),
            }
            let limits = driftwatch_store::users::SessionLimits::default();
            if let Err(e) = store.write(move |c| driftwatch_store::users::purge_sessions(c, now, limits)).await {
                tracing::error!(error = %e, "sweeping expired sessions failed");
            }
        })
    })
    .with_context(|| format!("DRIFTWATCH_RETENTION_CRON `{}`", settings.retention_cron))?;
    scheduler.add(retention).await.context("adding the retention job")?;
    scheduler.start().await.context("starting the job scheduler")?;
    Ok(scheduler)
}

/// The retention policy of `settings` at `now`.
pub(crate) fn retention_policy(
    settings: &Settings,
    now: chrono::NaiveDateTime,
) -> driftwatch_store::retention::Retention {
    // An age too long to subtract keeps everything.
    let before = |age: crate::HumanDuration| {
        TimeDelta::from_std(age.0)
            .ok()
            .and_then(|age| now.checked_sub_signed(age))
            .unwrap_or(chrono::NaiveDateTime::MIN)
    };
    driftwatch_store::retention::Retention {
        keep_runs: settings.keep_runs,
        runs_before: before(settings.retain_runs),
        events_before: before(settings.retain_events),
        sent_bodies_before: before(settings.retain_sent),
        dead_bodies_before: before(settings.retain_dead),
        attempts_before: before(settings.retain_attempts),
        keep_snapshots: settings.keep_snapshots,
        snapshots_before: before(settings.retain_snapshots),
        idempotency_before: now - TimeDelta::hours(24),
        batch: driftwatch_store::retention::BATCH,
        now,
    }
}
