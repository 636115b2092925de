//! `driftwatch-bench checks`: how many watches one node keeps up with.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_net::TargetPolicy;
use driftwatch_schedule::{Runner, RunnerConfig};
use driftwatch_scrape::{FetchOptions, Fetcher};
use driftwatch_store::watches::WatchSelection;
use driftwatch_store::{Backend, PoolOptions, Store, Watch, accounts, runs};
use tokio_util::sync::CancellationToken;

/// What to measure.
#[derive(Debug, Clone)]
pub struct ChecksBench {
    /// Watches (each its own page on one local server).
    pub watches: usize,
    /// Checks in flight at once.
    pub concurrency: usize,
    /// Seconds of idle to measure the scheduler's CPU over.
    pub idle_seconds: u64,
    /// An empty database to use (default: a temporary SQLite file).
    pub database_url: Option<String>,
    /// Give every watch two values (a price by selector, the availability from the page's
    /// JSON-LD) and a condition over them.
    pub values: bool,
    /// Give every watch an intent (and a summary) for a language model: a stand-in answers
    /// each verdict after 60 s, and the verdict loop runs beside the runner.
    pub ai: bool,
}

/// How long the stand-in model takes to answer, with `--ai`.
const MODEL_ANSWERS_IN: Duration = Duration::from_secs(60);

/// The options of a watch with two values and a condition, for `--values`.
fn values_options(ai: bool) -> String {
    use driftwatch_core::values::{Conditions, Match, Op, Rule, StructuredField, ValueKind, ValueSpec};
    let options = driftwatch_core::WatchOptions {
        values: vec![
            ValueSpec {
                name: "price".into(),
                kind: ValueKind::Money,
                selector: Some("#price".into()),
                ..ValueSpec::default()
            },
            ValueSpec {
                name: "stock".into(),
                kind: ValueKind::Availability,
                structured: Some(StructuredField::Availability),
                ..ValueSpec::default()
            },
        ],
        conditions: Some(Conditions::of(
            Match::All,
            vec![Rule { subject: "price".into(), op: Op::Lt, operand: 1000.into() }],
        )),
        ai: ai_options(ai),
        ..driftwatch_core::WatchOptions::default()
    };
    serde_json::to_string(&options).unwrap_or_default()
}

/// An intent and a summary, with `--ai`.
fn ai_options(ai: bool) -> Option<driftwatch_core::AiOptions> {
    ai.then(|| driftwatch_core::AiOptions {
        intent: Some("Alert me when the price drops below 5 EUR".into()),
        summary: true,
        ..driftwatch_core::AiOptions::default()
    })
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct ChecksReport {
    /// Watches.
    pub watches: usize,
    /// Page size served.
    pub page_bytes: usize,
    /// First checks (baselines) per second.
    pub baseline_per_second: f64,
    /// Checks per second when every page changed (diff, snapshot and event written).
    pub change_per_second: f64,
    /// driftwatch's CPU per baseline check, in microseconds (the process less the page
    /// server's thread).
    pub baseline_cpu_us: f64,
    /// driftwatch's CPU per check with a change, in microseconds (the process less the page
    /// server's thread).
    pub change_cpu_us: f64,
    /// The page server's CPU per page served, in microseconds (its own thread).
    pub server_cpu_us: f64,
    /// PostgreSQL's CPU per check with a change, in microseconds (`None` on SQLite, which runs
    /// inside driftwatch and is counted in its CPU).
    pub database_cpu_us: Option<f64>,
    /// Peak resident memory of the process, in MiB.
    pub peak_rss_mib: f64,
    /// Process CPU while idle with every watch scheduled, in percent of one core.
    pub idle_cpu_percent: f64,
    /// With `--ai`: verdicts waiting when the changed checks were done, and model calls in
    /// flight then.
    pub ai: Option<(i64, usize)>,
}

impl std::fmt::Display for ChecksReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "watches            {} (pages of {} bytes, one #price selector each)",
            self.watches, self.page_bytes
        )?;
        writeln!(f, "baseline checks    {:.0}/s", self.baseline_per_second)?;
        writeln!(f, "checks w/ change   {:.0}/s (fetch, extract, diff, snapshot, event)", self.change_per_second)?;
        writeln!(
            f,
            "CPU per check      {:.0} us baseline, {:.0} us with a change (driftwatch alone: the page server's thread excluded)",
            self.baseline_cpu_us, self.change_cpu_us
        )?;
        if let Some(db) = self.database_cpu_us {
            writeln!(f, "database CPU       {db:.0} us per check with a change (PostgreSQL processes)")?;
        }
        writeln!(f, "page server CPU    {:.0} us per page served (its own thread)", self.server_cpu_us)?;
        writeln!(f, "peak RSS           {:.1} MiB (whole process: server, pages, database)", self.peak_rss_mib)?;
        if let Some((waiting, asked)) = self.ai {
            writeln!(
                f,
                "AI                 every watch has an intent; the model answers in {} s: {waiting} changes waiting for a verdict, {asked} calls made when the checks were done",
                MODEL_ANSWERS_IN.as_secs()
            )?;
        }
        write!(
            f,
            "idle CPU           {:.2}% of one core with {} watches scheduled",
            self.idle_cpu_percent, self.watches
        )
    }
}

fn page(n: usize, version: u64) -> String {
    let mut html = String::with_capacity(21_000);
    html.push_str("<html><head><title>Shop</title><style>.x{color:red}</style>");
    // A shop page states its product as structured data, as most do.
    html.push_str(&format!(
        "<script type=\"application/ld+json\">{{\"@context\":\"https://schema.org\",\"@type\":\"Product\",\
         \"name\":\"Item {n}\",\"offers\":{{\"@type\":\"Offer\",\"price\":\"{}\",\"priceCurrency\":\"EUR\",\
         \"availability\":\"https://schema.org/InStock\"}}}}</script>",
        10 + version
    ));
    html.push_str("</head><body><nav>Home | Shop</nav>");
    for i in 0..280 {
        html.push_str(&format!("<div class=\"item\"><h3>Item {i}</h3><p>Text for item {i} of page {n}.</p></div>"));
    }
    html.push_str(&format!("<div id=\"price\">Price: {} EUR</div></body></html>", 10 + version));
    html
}

use crate::{cpu_seconds, postgres_cpu_seconds};

fn peak_rss_mib() -> f64 {
    crate::status_mib("VmHWM")
}

async fn wait_for_runs(store: &Store, n: i64) -> anyhow::Result<()> {
    loop {
        let done = store.read(runs::count_all).await?;
        if done >= n {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The page server, on a thread of its own so its CPU can be told apart from driftwatch's.
/// Pages are rendered once per version; serving one is a copy.
pub(crate) struct PageServer {
    pub(crate) addr: std::net::SocketAddr,
    /// `/proc/self/task/<tid>/stat` of the server's thread.
    stat: String,
}

impl PageServer {
    pub(crate) fn start(count: usize, version: Arc<AtomicU64>) -> anyhow::Result<PageServer> {
        let pages: Arc<[Vec<axum::body::Bytes>; 2]> =
            Arc::new([0, 1].map(|v| (0..count).map(|n| axum::body::Bytes::from(page(n, v))).collect::<Vec<_>>()));
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new().name("page-server".into()).spawn(move || {
            let tid = std::fs::read_link("/proc/thread-self")
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_default();
            let _ = tx.send(tid);
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            runtime.block_on(async move {
                let app = axum::Router::new().route(
                    "/p/{n}",
                    axum::routing::get(move |axum::extract::Path(n): axum::extract::Path<usize>| {
                        let version = (version.load(Ordering::Relaxed) as usize).min(1);
                        let body = pages[version].get(n).cloned().unwrap_or_default();
                        async move { ([("content-type", "text/html; charset=utf-8")], body) }
                    }),
                );
                if let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) {
                    let _ = axum::serve(listener, app).await;
                }
            });
        })?;
        let tid = rx.recv()?;
        Ok(PageServer { addr, stat: format!("/proc/self/task/{tid}/stat") })
    }

    /// Seconds of CPU the server's thread has used.
    fn cpu_seconds(&self) -> f64 {
        crate::stat_cpu_seconds(&std::fs::read_to_string(&self.stat).unwrap_or_default())
    }
}

/// The real runner, allowed onto loopback, with `concurrency` checks in flight and no per-host
/// politeness (every page is on one local server).
pub(crate) fn local_runner(store: &Store, concurrency: usize) -> anyhow::Result<Runner> {
    local_runner_with(store, concurrency, None)
}

/// [`local_runner`], its changes waiting for `judge`'s verdicts when given.
fn local_runner_with(store: &Store, concurrency: usize, judge: Option<driftwatch_ai::Judge>) -> anyhow::Result<Runner> {
    let fetcher =
        Fetcher::new(FetchOptions { policy: TargetPolicy { allow_private: true }, ..FetchOptions::default() })?;
    Ok(Runner::new(
        store.clone(),
        fetcher,
        Arc::new(SystemClock),
        RunnerConfig {
            concurrency: concurrency.max(1),
            per_host_concurrency: concurrency.max(1),
            per_account_concurrency: concurrency.max(1),
            per_host_gap: Duration::ZERO,
            node_id: "bench".into(),
            ai_deadline: judge.is_some().then_some(Duration::from_secs(600)),
            ..RunnerConfig::default()
        },
        move || {
            if let Some(judge) = &judge {
                judge.wake();
            }
        },
    ))
}

/// With `--ai`: the stand-in model (every answer 60 s late) and the verdict loop asking it.
async fn model_and_judge(
    store: &Store,
) -> anyhow::Result<(driftwatch_test_support::llm::ModelServer, driftwatch_ai::Judge)> {
    use driftwatch_test_support::llm::{ModelServer, Reply};
    let model = ModelServer::start().await;
    let verdict = Reply::verdict(false, "The price did not drop below 5 EUR.", "The price rose by one euro.");
    model.set_default(Reply::Delay(MODEL_ANSWERS_IN, Box::new(verdict)));
    let config = driftwatch_ai::JudgeConfig {
        operator: Some(driftwatch_ai::OperatorModel {
            base_url: url::Url::parse(&model.base_url())?,
            model: "bench".into(),
            api_key: None,
        }),
        call_timeout: MODEL_ANSWERS_IN * 2,
        node_id: "bench".into(),
        ..driftwatch_ai::JudgeConfig::default()
    };
    let judge = driftwatch_ai::Judge::new(store.clone(), Arc::new(SystemClock), None, config, Arc::new(|| {}));
    Ok((model, judge))
}

/// Runs the benchmark on a temporary SQLite file, or on the empty database given.
pub async fn checks(bench: &ChecksBench) -> anyhow::Result<ChecksReport> {
    let count = bench.watches.max(1);
    let version = Arc::new(AtomicU64::new(0));
    let server = PageServer::start(count, Arc::clone(&version))?;
    let addr = server.addr;

    let dir = tempfile::tempdir()?;
    let url =
        bench.database_url.clone().unwrap_or_else(|| format!("sqlite://{}", dir.path().join("bench.db").display()));
    let store = Store::open(&url, &PoolOptions { max_size: 8, ..PoolOptions::default() })?;
    store.migrate().await?;
    let options = if bench.values {
        values_options(bench.ai)
    } else {
        let ai = driftwatch_core::WatchOptions { ai: ai_options(bench.ai), ..Default::default() };
        serde_json::to_string(&ai)?
    };
    let (account_id, ids) = store
        .write(move |c| {
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, "bench", now)?;
            let ids = driftwatch_store::transaction(c, |c| {
                (0..count)
                    .map(|n| {
                        let watch = Watch {
                            name: format!("page {n}"),
                            selector: Some("#price".into()),
                            options: options.clone(),
                            ..Watch::new(&account.id, &format!("http://{addr}/p/{n}"), now)
                        };
                        driftwatch_store::watches::insert_watch(c, &watch).map(|()| watch.id)
                    })
                    .collect::<Result<Vec<_>, _>>()
            })?;
            Ok((account.id, ids))
        })
        .await?;

    let shutdown = CancellationToken::new();
    let ai = match bench.ai {
        true => Some(model_and_judge(&store).await?),
        false => None,
    };
    let judging = ai.as_ref().map(|(_, judge)| tokio::spawn(judge.clone().run(shutdown.clone())));
    let runner = local_runner_with(&store, bench.concurrency, ai.as_ref().map(|(_, judge)| judge.clone()))?;
    let running = tokio::spawn(runner.clone().run(shutdown.clone()));

    let started = Instant::now();
    let cpu_before = (cpu_seconds(), server.cpu_seconds());
    wait_for_runs(&store, count as i64).await?;
    let baseline = started.elapsed();
    let baseline_cpu = (cpu_seconds() - cpu_before.0, server.cpu_seconds() - cpu_before.1);

    version.store(1, Ordering::Relaxed);
    let now = SystemClock.now().naive_utc();
    let every = WatchSelection::Ids(ids);
    store.write(move |c| driftwatch_store::watches::bulk_check_now(c, &account_id, &every, now)).await?;
    let started = Instant::now();
    let cpu_before = (cpu_seconds(), server.cpu_seconds(), postgres_cpu_seconds());
    runner.wake();
    wait_for_runs(&store, 2 * count as i64).await?;
    let changed = started.elapsed();
    let change_cpu = (cpu_seconds() - cpu_before.0, server.cpu_seconds() - cpu_before.1);
    let database_cpu = postgres_cpu_seconds() - cpu_before.2;
    let ai_figures = match &ai {
        Some((model, _)) => {
            Some((store.read(driftwatch_store::verdicts::pending_count).await?, model.requests().len()))
        }
        None => None,
    };

    // Idle: every watch is due in an hour; the scheduler should sleep.
    let cpu = cpu_seconds();
    let idle = Instant::now();
    tokio::time::sleep(Duration::from_secs(bench.idle_seconds.max(1))).await;
    let idle_cpu = (cpu_seconds() - cpu) / idle.elapsed().as_secs_f64() * 100.0;

    shutdown.cancel();
    let _ = running.await;
    if let Some(judging) = judging {
        // Stalled calls are given back, not waited for.
        let _ = judging.await;
    }
    Ok(ChecksReport {
        watches: count,
        page_bytes: page(0, 0).len(),
        baseline_per_second: count as f64 / baseline.as_secs_f64(),
        change_per_second: count as f64 / changed.as_secs_f64(),
        baseline_cpu_us: (baseline_cpu.0 - baseline_cpu.1) * 1e6 / count as f64,
        change_cpu_us: (change_cpu.0 - change_cpu.1) * 1e6 / count as f64,
        server_cpu_us: change_cpu.1 * 1e6 / count as f64,
        database_cpu_us: (store.backend() == Backend::Postgres).then(|| database_cpu * 1e6 / count as f64),
        peak_rss_mib: peak_rss_mib(),
        idle_cpu_percent: idle_cpu,
        ai: ai_figures,
    })
}
