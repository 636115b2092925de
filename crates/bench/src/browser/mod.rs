//! `driftwatch-bench browser`: pages rendered in a real headless Chromium, as browser checks
//! render them (each in a fresh context, disposed afterwards), at a few concurrency levels.
//!
//! Three pages are served on loopback (see [`pages`]): a static article, a page whose body a
//! script builds, and a product page of about 8 KB whose price a script writes after a
//! `fetch()` of JSON, rendered with the watch's selector and the default wait. Every render
//! must hold what only its page's script writes, or it counts as failed (and the run fails).
//! For each concurrency level a fresh browser renders each page with the screenshot off and of the
//! viewport (and of the full page when asked); per row: renders per second, render time,
//! driftwatch's CPU and the browser's per render, and the browser's peak memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use driftwatch_browser::{BrowserConfig, Browsers, RenderError, RenderRequest, Rendered};
use driftwatch_core::{FetchSpec, ScreenshotMode};
use driftwatch_net::TargetPolicy;

mod pages;
pub use pages::PageKind;

/// How long one render may take before it counts as failed.
const RENDER_TIMEOUT: Duration = Duration::from_secs(60);
/// Renders before each measured run, not counted.
const WARM_UP: usize = 3;
/// How often the browser's memory is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// What to measure.
#[derive(Debug, Clone)]
pub struct BrowserBench {
    /// Renders measured per row.
    pub renders: usize,
    /// Renders in flight at once; one set of rows (and a fresh browser) each.
    pub concurrency: Vec<usize>,
    /// Also measure full-page screenshots.
    pub full_page: bool,
    /// Where to look for Chromium: a `PATH` value, read by the caller.
    pub search_path: Option<std::ffi::OsString>,
    /// The pages rendered (all when empty).
    pub pages: Vec<PageKind>,
    /// How long the fetch page's JSON takes to answer.
    pub api_delay: Duration,
    /// Flags added to Chromium's command line.
    pub chromium_args: Vec<String>,
}

/// The figures of one row: one page, one screenshot mode, one concurrency level.
#[derive(Debug, Clone)]
pub struct BrowserRow {
    /// Renders in flight at once.
    pub concurrency: usize,
    /// The page.
    pub page: PageKind,
    /// The screenshot taken.
    pub screenshot: ScreenshotMode,
    /// Renders measured (failures included).
    pub renders: usize,
    /// Renders that failed (an error, or not the expected document or screenshot).
    pub failures: usize,
    /// Renders finished per second, wall clock.
    pub per_second: f64,
    /// Render time of successful renders: p50 and p95, milliseconds.
    pub latency_ms: [f64; 2],
    /// driftwatch's CPU per render, milliseconds (the process less the page server's and the
    /// memory sampler's threads: the DevTools client and the guard proxy).
    pub own_cpu_ms: f64,
    /// The browser's CPU per render, milliseconds (its whole process group, including
    /// processes that ended during the run).
    pub browser_cpu_ms: f64,
    /// The browser's peak memory during the run (PSS of its process group), MB.
    pub peak_mb: f64,
    /// Mean size of the screenshot, bytes (0 when off).
    pub screenshot_bytes: usize,
}

/// The figures of a whole run.
#[derive(Debug, Clone)]
pub struct BrowserReport {
    /// `chromium --version`, when it answers.
    pub chromium: String,
    /// Renders measured per row.
    pub renders: usize,
    /// Bytes of the static, script and fetch pages, as served.
    pub page_bytes: [usize; 3],
    /// How long the fetch page's JSON took to answer.
    pub api_delay: Duration,
    /// Flags added to Chromium's command line.
    pub chromium_args: Vec<String>,
    /// Every row, by concurrency, page and screenshot.
    pub rows: Vec<BrowserRow>,
    /// Per concurrency level: browsers started (1 when it never restarted) and processes in
    /// its group at the end.
    pub browsers: Vec<(usize, u64, usize)>,
}

impl BrowserReport {
    /// Renders that failed, over every row.
    pub fn failures(&self) -> usize {
        self.rows.iter().map(|r| r.failures).sum()
    }
}

impl std::fmt::Display for BrowserReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "browser            {}", self.chromium)?;
        writeln!(
            f,
            "pages              static {} bytes (20 paragraphs, no scripts), js {} bytes (50 products and a total built by a script)",
            self.page_bytes[0], self.page_bytes[1]
        )?;
        writeln!(
            f,
            "                   fetch {} bytes (price written by a script after fetch() of JSON answering in {} ms; selector #price, default wait)",
            self.page_bytes[2],
            self.api_delay.as_millis()
        )?;
        if !self.chromium_args.is_empty() {
            writeln!(f, "chromium flags     {}", self.chromium_args.join(" "))?;
        }
        writeln!(
            f,
            "renders            {} per row after {WARM_UP} warm-up, each in a fresh context; a fresh browser per concurrency level",
            self.renders
        )?;
        writeln!(
            f,
            "{:>3}  {:<6}  {:<10}  {:>9}  {:>8}  {:>8}  {:>12}  {:>12}  {:>9}  {:>9}  {:>8}",
            "C",
            "page",
            "screenshot",
            "renders/s",
            "p50 ms",
            "p95 ms",
            "dw CPU ms/r",
            "br CPU ms/r",
            "peak MB",
            "shot KB",
            "failures"
        )?;
        for r in &self.rows {
            let shot = match r.screenshot {
                ScreenshotMode::Off => "off",
                ScreenshotMode::Viewport => "viewport",
                ScreenshotMode::FullPage => "full_page",
            };
            writeln!(
                f,
                "{:>3}  {:<6}  {:<10}  {:>9.1}  {:>8.0}  {:>8.0}  {:>12.1}  {:>12.1}  {:>9.0}  {:>9.1}  {:>8}",
                r.concurrency,
                r.page.name(),
                shot,
                r.per_second,
                r.latency_ms[0],
                r.latency_ms[1],
                r.own_cpu_ms,
                r.browser_cpu_ms,
                r.peak_mb,
                r.screenshot_bytes as f64 / 1024.0,
                r.failures
            )?;
        }
        for (concurrency, starts, processes) in &self.browsers {
            writeln!(
                f,
                "browser at C={concurrency:<3} {starts} started, {processes} processes in its group at the end"
            )?;
        }
        writeln!(
            f,
            "dw CPU             driftwatch's process (DevTools client, guard proxy), the page server's and memory sampler's threads excluded"
        )?;
        writeln!(f, "br CPU             Chromium's process group, processes that ended during the run included")?;
        write!(f, "peak MB            PSS of Chromium's process group, sampled every {} ms", SAMPLE_EVERY.as_millis())
    }
}

/// `/proc/self/task/<tid>/stat` of the calling thread.
pub(super) fn thread_stat() -> String {
    let tid = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    format!("/proc/self/task/{tid}/stat")
}

/// Seconds of CPU a thread has used, from its `stat` path.
fn thread_cpu(stat: &str) -> f64 {
    crate::stat_cpu_seconds(&std::fs::read_to_string(stat).unwrap_or_default())
}

/// Samples the memory of the process group in `group` every [`SAMPLE_EVERY`] on a thread of its
/// own, keeping the peak, until stopped.
struct MemorySampler {
    group: Arc<AtomicU32>,
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    stat: String,
    thread: std::thread::JoinHandle<()>,
}

impl MemorySampler {
    fn start(group: u32) -> anyhow::Result<MemorySampler> {
        let (group, peak, stop) =
            (Arc::new(AtomicU32::new(group)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new().name("bench-memory".into()).spawn({
            let (group, peak, stop) = (Arc::clone(&group), Arc::clone(&peak), Arc::clone(&stop));
            move || {
                let _ = tx.send(thread_stat());
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(driftwatch_browser::tree_memory(group.load(Ordering::Relaxed)), Ordering::Relaxed);
                    std::thread::sleep(SAMPLE_EVERY);
                }
            }
        })?;
        Ok(MemorySampler { group, peak, stop, stat: rx.recv()?, thread })
    }

    /// Seconds of CPU the sampler has used.
    fn cpu(&self) -> f64 {
        thread_cpu(&self.stat)
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

/// Clock ticks of CPU used by process group `group`: its live processes' own
/// ([`driftwatch_browser::group_cpu_ticks`]) and what they have collected from children that
/// ended (renderers of disposed contexts), which the live count alone loses.
fn browser_ticks(group: u32) -> u64 {
    let reaped: u64 = driftwatch_browser::group_members(group)
        .iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .map(|stat| {
            // cutime and cstime: the 14th and 15th fields after the command name.
            let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
            fields.get(13..15).map_or(0, |f| f.iter().filter_map(|v| v.parse::<u64>().ok()).sum())
        })
        .sum();
    driftwatch_browser::group_cpu_ticks(group) + reaped
}

/// Whether a render gave the page expected; why not when it did not.
fn verify(page: PageKind, screenshot: ScreenshotMode, result: Result<Rendered, RenderError>) -> Result<usize, String> {
    let rendered = result.map_err(|e| format!("{} ({})", e, e.kind()))?;
    if !rendered.html.contains(page.marker()) {
        return Err(format!(
            "the rendered document lacks {:?}: {}",
            page.marker(),
            rendered.html.chars().take(300).collect::<String>()
        ));
    }
    match (screenshot, &rendered.screenshot) {
        (ScreenshotMode::Off, _) => Ok(0),
        (_, Some(shot)) if !shot.bytes.is_empty() => Ok(shot.bytes.len()),
        (_, _) => Err(format!("no screenshot: {}", rendered.note.unwrap_or_default())),
    }
}

/// What a run of renders gave: each render's time, or why it failed; screenshot bytes.
struct Outcome {
    took: Vec<Duration>,
    failures: usize,
    screenshot_bytes: usize,
}

/// `count` renders of `url`, `concurrency` tasks each taking the next until all are done.
async fn run(
    browsers: &Browsers,
    url: &str,
    page: PageKind,
    spec: &FetchSpec,
    count: usize,
    concurrency: usize,
) -> anyhow::Result<Outcome> {
    let next = Arc::new(AtomicUsize::new(0));
    let (url, spec) = (Arc::new(url.to_owned()), Arc::new(spec.clone()));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (browsers, url, spec, next) = (browsers.clone(), Arc::clone(&url), Arc::clone(&spec), Arc::clone(&next));
        tasks.spawn(async move {
            let mut results = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < count {
                let started = Instant::now();
                let result = browsers.render(RenderRequest::new(&url, &spec, page.selector(), RENDER_TIMEOUT)).await;
                results.push(verify(page, spec.screenshot, result).map(|bytes| (started.elapsed(), bytes)));
            }
            results
        });
    }
    let mut outcome = Outcome { took: Vec::with_capacity(count), failures: 0, screenshot_bytes: 0 };
    while let Some(results) = tasks.join_next().await {
        for result in results? {
            match result {
                Ok((took, bytes)) => {
                    outcome.took.push(took);
                    outcome.screenshot_bytes += bytes;
                }
                Err(why) => {
                    outcome.failures += 1;
                    eprintln!("render of the {} page failed: {why}", page.name());
                }
            }
        }
    }
    Ok(outcome)
}

/// `chromium --version`, or what is known without it.
fn chromium_version(search_path: Option<&std::ffi::OsStr>) -> String {
    let Some(path) = driftwatch_browser::find_chromium(None, search_path) else {
        return "no Chromium on PATH".to_owned();
    };
    let version = std::process::Command::new(&path)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "version unknown".to_owned());
    format!("{version} ({})", path.display())
}

/// Runs the benchmark.
pub async fn browser(bench: &BrowserBench) -> anyhow::Result<BrowserReport> {
    let bodies = pages::Bodies::new();
    let page_bytes = bodies.pages.clone().map(|p| p.len());
    let (base, server_stat) = pages::page_server(&bodies, bench.api_delay)?;
    let kinds = if bench.pages.is_empty() { PageKind::ALL.to_vec() } else { bench.pages.clone() };
    let mut screenshots = vec![ScreenshotMode::Off, ScreenshotMode::Viewport];
    if bench.full_page {
        screenshots.push(ScreenshotMode::FullPage);
    }
    let renders = bench.renders.max(1);
    let mut rows = Vec::new();
    let mut browsers_seen = Vec::new();
    for &concurrency in &bench.concurrency {
        let concurrency = concurrency.max(1);
        let browsers = Browsers::new(BrowserConfig {
            policy: TargetPolicy { allow_private: true },
            concurrency,
            // One browser for the whole level: its CPU and memory are measured by process group.
            recycle_after: u32::MAX,
            search_path: bench.search_path.clone(),
            extra_args: bench.chromium_args.clone(),
            ..BrowserConfig::default()
        });
        anyhow::ensure!(browsers.available(), "{}", browsers.unavailable_reason());
        let mut sampler: Option<MemorySampler> = None;
        let level = async {
            for &page in &kinds {
                for &screenshot in &screenshots {
                    let url = format!("{base}{}", page.path());
                    let spec = FetchSpec { screenshot, ..FetchSpec::default() };
                    let warm = run(&browsers, &url, page, &spec, WARM_UP, 1).await?;
                    anyhow::ensure!(
                        warm.failures < WARM_UP,
                        "every warm-up render of the {} page failed; see above",
                        page.name()
                    );
                    let pid = browsers.stats().await.pid.ok_or_else(|| anyhow::anyhow!("no local browser runs"))?;
                    let sampler = match &mut sampler {
                        Some(s) => s,
                        None => sampler.insert(MemorySampler::start(pid)?),
                    };
                    sampler.group.store(pid, Ordering::Relaxed);
                    sampler.peak.store(driftwatch_browser::tree_memory(pid), Ordering::Relaxed);

                    let (own, server, sampled, browser) =
                        (crate::cpu_seconds(), thread_cpu(&server_stat), sampler.cpu(), browser_ticks(pid));
                    let started = Instant::now();
                    let outcome = run(&browsers, &url, page, &spec, renders, concurrency).await?;
                    let elapsed = started.elapsed();
                    let browser = browser_ticks(pid).saturating_sub(browser);
                    let own =
                        crate::cpu_seconds() - own - (thread_cpu(&server_stat) - server) - (sampler.cpu() - sampled);
                    let peak = sampler.peak.load(Ordering::Relaxed).max(driftwatch_browser::tree_memory(pid));
                    if browsers.stats().await.pid != Some(pid) {
                        eprintln!("the browser restarted during a run: its CPU and memory figures are incomplete");
                    }

                    let mut took = outcome.took;
                    took.sort();
                    let at = |q: f64| {
                        took.get(((took.len() as f64 - 1.0) * q).round() as usize)
                            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
                    };
                    rows.push(BrowserRow {
                        concurrency,
                        page,
                        screenshot,
                        renders,
                        failures: outcome.failures,
                        per_second: renders as f64 / elapsed.as_secs_f64(),
                        latency_ms: [at(0.5), at(0.95)],
                        own_cpu_ms: own.max(0.0) * 1000.0 / renders as f64,
                        browser_cpu_ms: browser as f64 * 10.0 / renders as f64,
                        peak_mb: peak as f64 / 1e6,
                        screenshot_bytes: outcome.screenshot_bytes / took.len().max(1),
                    });
                }
            }
            anyhow::Ok(())
        }
        .await;
        let stats = browsers.stats().await;
        let processes = stats.pid.map_or(0, |pid| driftwatch_browser::group_members(pid).len());
        browsers_seen.push((concurrency, stats.starts, processes));
        if let Some(sampler) = sampler {
            sampler.stop();
        }
        browsers.shutdown(Duration::from_secs(5)).await;
        level?;
    }
    Ok(BrowserReport {
        chromium: chromium_version(bench.search_path.as_deref()),
        renders,
        page_bytes,
        api_delay: bench.api_delay,
        chromium_args: bench.chromium_args.clone(),
        rows,
        browsers: browsers_seen,
    })
}
