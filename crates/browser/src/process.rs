//! A local Chromium: found, started headless in a process group of its own, measured, and
//! killed as a whole group, so no renderer or zygote outlives it, not even when driftwatch is
//! killed with SIGKILL: a watchdog (`/bin/sh` reading a pipe only this process holds) kills the
//! group when the pipe ends, which is when this process ends, however it ends.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The names Chromium goes by on `PATH`, in the order tried.
const NAMES: [&str; 4] = ["chromium", "chromium-browser", "google-chrome-stable", "google-chrome"];

/// How long a starting Chromium may take to print its DevTools address.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Chromium's executable: `configured` when given, else the first of the usual names in the
/// directories of `search_path` (a `PATH` value, which the caller reads: this crate does not
/// read the environment).
pub fn find_chromium(configured: Option<&Path>, search_path: Option<&OsStr>) -> Option<PathBuf> {
    if let Some(path) = configured {
        return path.is_file().then(|| path.to_owned());
    }
    let dirs: Vec<PathBuf> = std::env::split_paths(search_path?).collect();
    NAMES.iter().flat_map(|name| dirs.iter().map(move |dir| dir.join(name))).find(|p| p.is_file())
}

/// What the watchdog runs: wait for its standard input to end, then kill process group `$0`.
const WATCHDOG: &str = "read -r line; kill -9 \"-$0\"";

/// A running Chromium. Dropping it kills its whole process group.
pub(crate) struct Process {
    child: Child,
    /// The group of the browser and every process it started (the browser leads it).
    group: Option<u32>,
    /// The DevTools WebSocket address.
    pub ws_url: String,
    _profile: tempfile::TempDir,
    /// Kills the group once its standard input (held here) ends. Killed first when dropped
    /// (`kill_on_drop`, then its pipe closes), so it never outlives the group it guards.
    _watchdog: Option<Child>,
}

/// The longest TMPDIR Chromium is left with: its singleton socket,
/// `$TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket`, adds 46 bytes and a Unix socket's
/// path has at most 107.
const MAX_CHROMIUM_TMPDIR: usize = 107 - 46;

impl Process {
    /// Starts Chromium headless with a throwaway profile and every background service off;
    /// `proxy` carries the browser's own traffic (loopback included: `<-loopback>`; pages'
    /// traffic goes through the proxy of each render's context); `extra` flags come last.
    pub(crate) async fn start(
        executable: &Path,
        proxy: &str,
        window: (u32, u32),
        extra: &[String],
    ) -> std::io::Result<Process> {
        let profile = tempfile::Builder::new().prefix("driftwatch-chromium-").tempdir()?;
        let mut command = Command::new(executable);
        command
            .args([
                "--headless=new",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-background-timer-throttling",
                "--disable-renderer-backgrounding",
                "--disable-backgrounding-occluded-windows",
                "--disable-breakpad",
                "--disable-component-update",
                "--disable-default-apps",
                "--disable-domain-reliability",
                "--disable-extensions",
                "--disable-sync",
                "--disable-client-side-phishing-detection",
                "--disable-component-extensions-with-background-pages",
                "--disable-field-trial-config",
                "--disable-search-engine-choice-screen",
                "--no-service-autorun",
                "--disable-features=Translate,MediaRouter,DialMediaRouteProvider,OptimizationHints,OptimizationHintsFetching,OptimizationGuideModelDownloading,OptimizationTargetPrediction,InterestFeedContentSuggestions,AutofillServerCommunication,CertificateTransparencyComponentUpdater",
                "--no-first-run",
                "--no-default-browser-check",
                "--no-pings",
                "--metrics-recording-only",
                "--mute-audio",
                "--hide-scrollbars",
                "--password-store=basic",
                "--use-mock-keychain",
                // WebRTC may not use UDP outside the proxy: the guard sees every connection.
                "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
                "--proxy-bypass-list=<-loopback>",
            ])
            .arg(format!("--proxy-server={proxy}"))
            .arg(format!("--window-size={},{}", window.0, window.1))
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        // The profile was made in the temporary directory Chromium would inherit.
        if profile.path().parent().is_some_and(|tmp| tmp.as_os_str().len() > MAX_CHROMIUM_TMPDIR) {
            // Chromium puts its singleton socket under TMPDIR and exits at start when that
            // socket's path is longer than a Unix socket's 107 bytes; the profile stays put.
            command.env("TMPDIR", "/tmp");
        }
        if running_as_root() {
            // Chromium refuses to start as root with its sandbox on.
            command.arg("--no-sandbox");
        }
        let mut child = command.spawn()?;
        let group = child.id();
        let stderr = child.stderr.take().ok_or_else(|| std::io::Error::other("no stderr"))?;
        let mut lines = BufReader::new(stderr).lines();
        let mut seen = Vec::new();
        let ws_url = tokio::time::timeout(START_TIMEOUT, async {
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    return Ok(url.trim().to_owned());
                }
                if seen.len() < 20 {
                    seen.push(line);
                }
            }
            Err(std::io::Error::other(format!("Chromium exited while starting: {}", seen.join(" | "))))
        })
        .await
        .map_err(|_| std::io::Error::other(format!("Chromium did not start within {START_TIMEOUT:?}")))??;
        // Keep reading, or Chromium blocks once the pipe is full.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "driftwatch::chromium", "{line}");
            }
        });
        let watchdog = group.and_then(watchdog);
        let process = Process { child, group, ws_url, _profile: profile, _watchdog: watchdog };
        tracing::info!(pid = ?process.group, executable = %executable.display(), "Chromium started");
        Ok(process)
    }

    /// The browser's process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.group
    }

    /// Whether the browser process has exited.
    pub(crate) fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `grace` for the browser to exit by itself (after `Browser.close`), then
    /// kills the group.
    pub(crate) async fn stop(mut self, grace: Duration) {
        let _ = tokio::time::timeout(grace, self.child.wait()).await;
        self.kill();
        let _ = self.child.wait().await;
        // SIGKILL is delivered, not yet acted on: wait (briefly) until every process of the
        // group is gone (or a zombie its parent has yet to reap), so none outlives the caller.
        if let Some(group) = self.group {
            for _ in 0..200 {
                if group_members(group).iter().all(|pid| stat_fields(*pid).is_none_or(|f| f.0 == 'Z')) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }

    /// Kills every process of the group now.
    pub(crate) fn kill(&mut self) {
        if let Some(pid) = self.group.and_then(|g| rustix::process::Pid::from_raw(g as i32)) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.child.start_kill();
    }

    /// Proportional memory (PSS, so pages shared between Chromium's processes count once) of
    /// every process in the group, in bytes. Linux only; `None` elsewhere.
    pub(crate) fn memory(&self) -> Option<u64> {
        self.group.map(tree_memory)
    }
}

/// Starts the watchdog of process group `group`: a shell in a group of its own (a terminal's
/// Ctrl-C does not reach it) that kills `group` when its standard input ends. Without a shell
/// Chromium still runs; it only loses this guard, and the log says so.
fn watchdog(group: u32) -> Option<Child> {
    let started = Command::new("/bin/sh")
        .args(["-c", WATCHDOG, &group.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .process_group(0)
        .spawn();
    match started {
        Ok(child) => Some(child),
        Err(e) => {
            tracing::warn!(error = %e, "no watchdog for Chromium: it would outlive a killed driftwatch");
            None
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sum of the PSS of every process in process group `group` (0 when `/proc` says nothing).
pub fn tree_memory(group: u32) -> u64 {
    group_members(group).iter().filter_map(|pid| pss(*pid)).sum()
}

/// Every process whose process group is `group`.
pub fn group_members(group: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| process_group(*pid) == Some(group))
        .collect()
}

/// CPU time (user + system) used so far by every process in `group`, in clock ticks
/// (normally 100 a second).
pub fn group_cpu_ticks(group: u32) -> u64 {
    group_members(group).iter().filter_map(|pid| stat_fields(*pid).map(|f| f.2)).sum()
}

/// The process group of `pid`, from `/proc/<pid>/stat`.
fn process_group(pid: u32) -> Option<u32> {
    stat_fields(pid).map(|f| f.1)
}

/// (state, process group, utime + stime) of `/proc/<pid>/stat`.
fn stat_fields(pid: u32) -> Option<(char, u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields start after the last `)`.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let state = fields.first()?.chars().next()?;
    let group = fields.get(2)?.parse().ok()?;
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((state, group, ticks))
}

/// A process's PSS in bytes, from `/proc/<pid>/smaps_rollup`.
fn pss(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let line = rollup.lines().find(|l| l.starts_with("Pss:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Whether this process runs as root (Chromium's sandbox will not start then).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}
