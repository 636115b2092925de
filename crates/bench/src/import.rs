//! `driftwatch-bench import`: a changedetection.io backup of many watches with long histories
//! (made as cd makes one), read and imported as `driftwatch import` does: how long reading the
//! zip and the one transaction take, and how many snapshots a second that is.

use std::time::{Duration, Instant};

use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_import::ReadLimits;
use driftwatch_store::{PoolOptions, Store, accounts};
use driftwatch_test_support::{CdBackup, CdSnapshot};
use serde_json::json;

/// What to measure.
#[derive(Debug, Clone)]
pub struct ImportBench {
    /// Watches in the backup.
    pub watches: usize,
    /// Snapshots in each watch's history (every other one brotli-compressed, as cd stores
    /// the larger ones).
    pub snapshots: usize,
    /// An empty database to use (default: a temporary SQLite file).
    pub database_url: Option<String>,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct ImportReport {
    /// Backend.
    pub backend: &'static str,
    /// The zip's size.
    pub zip_bytes: usize,
    /// Reading it into a plan (every JSON member and history index).
    pub read: Duration,
    /// The import's one transaction (every snapshot read, decompressed and written).
    pub apply: Duration,
    /// Watches and snapshots written.
    pub watches: usize,
    /// Snapshots written.
    pub snapshots: usize,
}

impl std::fmt::Display for ImportReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "backend     {}", self.backend)?;
        writeln!(
            f,
            "backup      {} watches, {} snapshots, {:.1} MiB zip",
            self.watches,
            self.snapshots,
            self.zip_bytes as f64 / 1048576.0
        )?;
        writeln!(f, "read        {:.0} ms", self.read.as_secs_f64() * 1e3)?;
        write!(
            f,
            "import      {:.2} s ({:.0} snapshots/s), one transaction",
            self.apply.as_secs_f64(),
            self.snapshots as f64 / self.apply.as_secs_f64()
        )
    }
}

/// Builds the backup, then reads and imports it into a fresh account.
pub async fn import(bench: &ImportBench) -> anyhow::Result<ImportReport> {
    let settings = json!({"settings": {"application": {"notification_urls": ["json://127.0.0.1:9/hook"]},
        "requests": {"time_between_check": {"hours": 3}}}});
    let mut backup = CdBackup::new(settings);
    let page: String = (0..40).map(|l| format!("line {l} of a page that changes a little every day\n")).collect();
    for w in 0..bench.watches {
        let history: Vec<CdSnapshot> = (0..bench.snapshots)
            .map(|s| {
                let text = format!("{page}price {w}.{s}\n");
                let at = 1_700_000_000 + (s as i64) * 86_400;
                if s % 2 == 0 { CdSnapshot::text(at, &text) } else { CdSnapshot::brotli(at, &text) }
            })
            .collect();
        let uuid = format!("{w:08x}-0000-4000-8000-000000000000");
        let watch = json!({"url": format!("https://shop{w}.example/item"), "title": format!("Item {w}"),
            "include_filters": ["#price"], "date_created": w});
        backup = backup.watch(&uuid, watch, &history);
    }
    let zip = backup.zip();
    let dir = tempfile::tempdir()?;
    let url =
        bench.database_url.clone().unwrap_or_else(|| format!("sqlite://{}", dir.path().join("bench.db").display()));
    let store = Store::open(&url, &PoolOptions { max_size: 4, ..PoolOptions::default() })?;
    store.migrate().await?;
    let now = SystemClock.now();
    let account = store.write(move |c| accounts::create_account(c, "bench", now.naive_utc())).await?;

    let (zip_bytes, started) = (zip.len(), Instant::now());
    let plan = tokio::task::spawn_blocking(move || driftwatch_import::read(zip, &ReadLimits::default())).await??;
    let read = started.elapsed();
    let started = Instant::now();
    let report = store
        .write(move |c| {
            let rules = driftwatch_validate::Limits::default();
            let target = driftwatch_import::Target {
                account_id: &account.id,
                limits: &rules,
                policy: driftwatch_net::TargetPolicy { allow_private: true },
                now,
                keyring: None,
                max_text_bytes: 1 << 20,
            };
            Ok(driftwatch_import::apply(c, plan, &target))
        })
        .await??;
    let apply = started.elapsed();
    Ok(ImportReport {
        backend: if url.starts_with("postgres") { "postgresql" } else { "sqlite" },
        zip_bytes,
        read,
        apply,
        watches: report.watches_created,
        snapshots: report.snapshots,
    })
}
