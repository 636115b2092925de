//! `driftwatch-bench retention`: purging a million old runs while checks run, and what it costs
//! the writes that happen meanwhile.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_store::retention::{Retention, purge};
use driftwatch_store::{Backend, PoolOptions, Run, Store, Watch, accounts, maintenance, runs};
use tokio_util::sync::CancellationToken;

use crate::checks::{PageServer, local_runner};

/// What to measure.
#[derive(Debug, Clone)]
pub struct RetentionBench {
    /// Old runs to seed (all past the retention age), spread over the watches.
    pub runs: usize,
    /// Watches, checked every second by the real runner during the purge.
    pub watches: usize,
    /// An empty database to use (default: a temporary SQLite file).
    pub database_url: Option<String>,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct RetentionReport {
    /// Backend.
    pub backend: &'static str,
    /// Old runs seeded, and watches.
    pub seeded: usize,
    /// Watches.
    pub watches: usize,
    /// Runs the purge deleted.
    pub deleted: usize,
    /// Transactions it took.
    pub batches: usize,
    /// How long it took.
    pub purge: Duration,
    /// Checks recorded while it ran.
    pub checks_during: i64,
    /// Latency of a one-row write (a run, as a check records) every 10 ms: p50, p99, max,
    /// before the purge.
    pub before: [Duration; 3],
    /// The same during the purge.
    pub during: [Duration; 3],
}

impl std::fmt::Display for RetentionReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        writeln!(f, "backend            {}", self.backend)?;
        writeln!(f, "seeded             {} old runs over {} watches (keep 100 each)", self.seeded, self.watches)?;
        writeln!(
            f,
            "purge              {} runs deleted in {:.1} s ({:.0}/s), {} transactions",
            self.deleted,
            self.purge.as_secs_f64(),
            self.deleted as f64 / self.purge.as_secs_f64(),
            self.batches
        )?;
        writeln!(
            f,
            "checks meanwhile   {} recorded ({:.0}/s)",
            self.checks_during,
            self.checks_during as f64 / self.purge.as_secs_f64()
        )?;
        writeln!(
            f,
            "write latency      before: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            ms(self.before[0]),
            ms(self.before[1]),
            ms(self.before[2])
        )?;
        write!(
            f,
            "                   during: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (the longest stall a check's write saw)",
            ms(self.during[0]),
            ms(self.during[1]),
            ms(self.during[2])
        )
    }
}

/// p50, p99 and max of `samples`.
fn percentiles(mut samples: Vec<Duration>) -> [Duration; 3] {
    if samples.is_empty() {
        return [Duration::ZERO; 3];
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    [at(0.5), at(0.99), at(1.0)]
}

fn old_run(watch_id: &str, at_millis: u64, started_at: chrono::NaiveDateTime) -> Run {
    Run {
        id: format!("run_{}", ulid::Ulid::from_parts(at_millis, rand::random()).to_string().to_ascii_lowercase()),
        watch_id: watch_id.to_owned(),
        started_at,
        finished_at: started_at,
        outcome: "unchanged".into(),
        http_status: Some(200),
        duration_ms: 3,
        bytes: 20_000,
        error: None,
        note: None,
        snapshot_id: None,
        event_id: None,
        engine: Some("http".into()),
        error_kind: None,
    }
}

/// Every 10 ms, writes (and removes) one run row, recording how long each write took.
async fn probe(store: Store, watch_id: String, stop: CancellationToken) -> Vec<Duration> {
    let mut latencies = Vec::new();
    while !stop.is_cancelled() {
        let now = SystemClock.now().naive_utc();
        let row = Run { id: driftwatch_core::new_id(driftwatch_core::IdKind::Run), ..old_run(&watch_id, 0, now) };
        let started = Instant::now();
        let written = store
            .write(move |c| {
                runs::insert_runs(c, std::slice::from_ref(&row))?;
                runs::delete_run(c, &row.id)
            })
            .await;
        if written.is_ok() {
            latencies.push(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    latencies
}

/// Runs the benchmark on a temporary SQLite file, or on the empty database given.
pub async fn retention(bench: &RetentionBench) -> anyhow::Result<RetentionReport> {
    let count = bench.watches.max(1);
    let server = PageServer::start(count, Arc::new(AtomicU64::new(0)))?;
    let addr = server.addr;
    let dir = tempfile::tempdir()?;
    let url =
        bench.database_url.clone().unwrap_or_else(|| format!("sqlite://{}", dir.path().join("bench.db").display()));
    let store = Store::open(&url, &PoolOptions { max_size: 8, ..PoolOptions::default() })?;
    store.migrate().await?;

    // Watches checked every second, and the old runs (60 days old) seeded in transactions of
    // 20,000.
    let now = SystemClock.now();
    let watch_ids: Vec<String> = store
        .write(move |c| {
            let account = accounts::create_account(c, "bench", now.naive_utc())?;
            driftwatch_store::transaction(c, |c| {
                (0..count)
                    .map(|n| {
                        let watch = Watch {
                            name: format!("page {n}"),
                            selector: Some("#price".into()),
                            interval_seconds: Some(1),
                            ..Watch::new(&account.id, &format!("http://{addr}/p/{n}"), now.naive_utc())
                        };
                        driftwatch_store::watches::insert_watch(c, &watch).map(|()| watch.id)
                    })
                    .collect()
            })
        })
        .await?;
    let old = now - chrono::TimeDelta::days(60);
    let old_millis = old.timestamp_millis() as u64;
    let seeded = bench.runs;
    let ids = Arc::new(watch_ids);
    for start in (0..seeded).step_by(20_000) {
        let ids = Arc::clone(&ids);
        let rows: Vec<Run> = (start..(start + 20_000).min(seeded))
            .map(|i| old_run(&ids[i % ids.len()], old_millis + i as u64, old.naive_utc()))
            .collect();
        store.write(move |c| driftwatch_store::transaction(c, |c| runs::insert_runs(c, &rows))).await?;
    }
    if store.backend() == Backend::Postgres {
        store.read(maintenance::analyze_runs).await?;
    }

    let runner = local_runner(&store, 64)?;
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(runner.run(shutdown.clone()));

    // Before: three seconds of checks and probe writes, no purge.
    let stop = CancellationToken::new();
    let probing = tokio::spawn(probe(store.clone(), ids[0].clone(), stop.clone()));
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.cancel();
    let before = percentiles(probing.await?);

    let total = |store: &Store| {
        let store = store.clone();
        async move { store.read(runs::count_all).await }
    };
    let runs_before = total(&store).await?;
    let stop = CancellationToken::new();
    let probing = tokio::spawn(probe(store.clone(), ids[0].clone(), stop.clone()));
    let now = SystemClock.now().naive_utc();
    let policy =
        Retention { keep_runs: 100, runs_before: now - chrono::TimeDelta::days(30), ..Retention::keep_everything(now) };
    let started = Instant::now();
    let purged = purge(&store, &policy).await?;
    let took = started.elapsed();
    stop.cancel();
    let during = percentiles(probing.await?);
    let runs_after = total(&store).await?;
    shutdown.cancel();
    let _ = running.await;

    Ok(RetentionReport {
        backend: store.backend().as_str(),
        seeded,
        watches: count,
        deleted: purged.runs,
        batches: purged.batches,
        purge: took,
        // Runs now = runs before - deleted + those recorded meanwhile.
        checks_during: runs_after - runs_before + purged.runs as i64,
        before,
        during,
    })
}
