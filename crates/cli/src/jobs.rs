//! Periodic jobs (tokio-cron-scheduler): the safety-net sweep and retention.

use anyhow::Context as _;
use chrono::TimeDelta;
use std::sync::Arc;

use driftwatch_core::Clock;
use driftwatch_delivery::DeliveryWorker;
use driftwatch_schedule::Runner;
use driftwatch_store::{Store, deliveries, watches};
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

    let ages =
        [settings.retain_sent.0, settings.retain_dead.0, settings.retain_attempts.0, settings.retain_snapshots.0];
    let keep_snapshots = settings.keep_snapshots;
    let retention = Job::new_async(settings.retention_cron.as_str(), move |_, _| {
        let (store, clock) = (store.clone(), Arc::clone(&clock));
        Box::pin(async move {
            let now = clock.now().naive_utc();
            let [sent, dead, attempts, snapshots] =
                ages.map(|age| now - TimeDelta::from_std(age).unwrap_or(TimeDelta::days(30)));
            let purged = store
                .write(move |c| {
                    let (bodies, attempts) = deliveries::purge(c, sent, dead, attempts, now)?;
                    let snapshots = watches::purge_snapshots(c, keep_snapshots, snapshots)?;
                    driftwatch_store::idempotency::purge(c, now - TimeDelta::hours(24))?;
                    let limits = driftwatch_store::users::SessionLimits::default();
                    let sessions = driftwatch_store::users::purge_sessions(c, now, limits)?;
                    Ok((bodies, attempts, snapshots, sessions))
                })
                .await;
            match purged {
                Ok((bodies, attempts, snapshots, sessions)) => {
                    tracing::info!(bodies, attempts, snapshots, sessions, "retention purged old data");
                }
                Err(e) => tracing::error!(error = %e, "retention failed"),
            }
        })
    })
    .with_context(|| format!("DRIFTWATCH_RETENTION_CRON `{}`", settings.retention_cron))?;
    scheduler.add(retention).await.context("adding the retention job")?;
    scheduler.start().await.context("starting the job scheduler")?;
    Ok(scheduler)
}
