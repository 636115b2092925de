//! `serve` and its browser: Chromium starts when a watch first renders and no Chromium process
//! outlives `serve`, stopped with SIGTERM or killed with SIGKILL; without a browser, `serve`
//! says so at start-up and in `/readyz`. Skipped with one line without Chromium, unless
//! `DRIFTWATCH_REQUIRE_BROWSER=1` (CI).

mod common;

use std::time::Duration;

use driftwatch_test_support::{PageServer, eventually_within};
use serde_json::json;

/// Processes whose command line mentions `marker` (Chromium's profile lives under it), zombies
/// aside.
fn processes_mentioning(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

/// Whether Chromium is here; says why not (or fails under `DRIFTWATCH_REQUIRE_BROWSER=1`).
fn chromium() -> bool {
    if driftwatch_browser::find_chromium(None, std::env::var_os("PATH").as_deref()).is_some() {
        return true;
    }
    assert!(
        !std::env::var("DRIFTWATCH_REQUIRE_BROWSER").is_ok_and(|v| v == "1"),
        "DRIFTWATCH_REQUIRE_BROWSER=1 but no Chromium on PATH"
    );
    eprintln!("SKIPPED serve's browser test: no Chromium on PATH (Debian: apt-get install chromium)");
    false
}

/// A page only a script fills in.
const SCRIPTED: &str = "<html><body><p id=\"x\"></p><script>x.textContent = 'rendered'</script></body></html>";

/// `serve` in `dir` after one watch rendered in Chromium: the server, and the marker on every
/// Chromium process's command line (the throwaway profile lives under this `TMPDIR`).
async fn serve_after_a_render(dir: &std::path::Path) -> (driftwatch_test_support::KillOnDrop, String) {
    serve_after_a_render_in(dir, "tmp").await
}

/// [`serve_after_a_render`] with `TMPDIR` at `dir/tmp_name`.
async fn serve_after_a_render_in(
    dir: &std::path::Path,
    tmp_name: &str,
) -> (driftwatch_test_support::KillOnDrop, String) {
    let token = common::account_and_token(dir);
    let tmp = dir.join(tmp_name);
    std::fs::create_dir(&tmp).expect("tmp");
    let marker = tmp.to_str().expect("utf-8 path").to_owned();
    let site = PageServer::start(SCRIPTED).await;
    let (child, base) = common::serve(dir, &[("TMPDIR", marker.as_str())]).await;
    assert!(processes_mentioning(&marker).is_empty(), "Chromium starts only when a page needs it");
    let http = reqwest::Client::new();
    let body = json!({"url": site.url, "selector": "#x", "options": {"fetch": {"engine": "browser"}}});
    let run = common::first_run(&http, &base, &token, body).await;
    assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("baseline"), Some("browser")), "{run}");
    let running = processes_mentioning(&marker);
    assert!(running.len() > 1, "Chromium runs as several processes: {running:?}");
    (child, marker)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_chromium_process_outlives_serve() {
    if !chromium() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut child, marker) = serve_after_a_render(dir.path()).await;
    let killed = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || child.wait()).await.expect("join").expect("wait");
    assert!(status.success(), "serve exits cleanly on SIGTERM: {status}");
    let left = processes_mentioning(&marker);
    assert!(left.is_empty(), "Chromium processes outlived serve: {left:?}");
}

/// Chromium's singleton socket lives under TMPDIR; a long TMPDIR (here over 107 bytes with
/// the socket's name) must not keep it from starting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_tmpdir_keeps_nothing_from_rendering() {
    if !chromium() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (_child, marker) = serve_after_a_render_in(dir.path(), &"t".repeat(80)).await;
    assert!(marker.len() + "/org.chromium.Chromium.XXXXXX/SingletonSocket".len() > 107, "{marker}");
}

/// SIGKILL gives `serve` no chance to close its browser: Chromium's watchdog must.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_chromium_process_outlives_a_killed_serve() {
    if !chromium() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut child, marker) = serve_after_a_render(dir.path()).await;
    let killed = std::process::Command::new("kill").args(["-KILL", &child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || child.wait()).await.expect("join").expect("wait");
    assert!(!status.success(), "serve was killed: {status}");
    let marker = marker.as_str();
    eventually_within("every Chromium process gone after serve was killed", Duration::from_secs(20), || async move {
        processes_mentioning(marker).is_empty().then_some(())
    })
    .await;
}

/// Without a browser, watches that render (or may) are named at start-up and in `/readyz`,
/// which stays ready (the node serves everything else) with a degraded line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_without_chromium_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token = common::account_and_token(dir.path());
    let missing = [("DRIFTWATCH_CHROMIUM", "/nonexistent/chromium")];
    let site = PageServer::start(SCRIPTED).await;
    let http = reqwest::Client::new();
    let (first, base) = common::serve(dir.path(), &missing).await;
    let readyz = http.get(format!("{base}/readyz")).send().await.expect("readyz");
    assert_eq!(readyz.status(), 200);
    assert_eq!(readyz.text().await.expect("body"), "ready\n", "no watch needs a browser yet");
    let body = json!({"url": site.url, "selector": "#x", "options": {"fetch": {"engine": "auto"}}});
    let run = common::first_run(&http, &base, &token, body).await;
    assert_eq!(run["outcome"], "failed", "{run}");
    let note = run["note"].as_str().unwrap_or_default();
    assert!(note.contains("no Chromium at /nonexistent/chromium"), "{run}");
    let readyz = http.get(format!("{base}/readyz")).send().await.expect("readyz");
    assert_eq!(readyz.status(), 200, "degraded, still ready");
    let text = readyz.text().await.expect("body");
    assert!(text.starts_with("ready\ndegraded: browser: 1 active watch with engine browser or auto"), "{text}");
    assert!(text.contains("no Chromium at /nonexistent/chromium"), "{text}");
    drop(first);

    let (_second, _, lines) = common::serve_logged(dir.path(), &missing).await;
    let (_, read) = common::log_line(lines, "watches need a browser and none can be found").await;
    let warning = read.last().expect("the line");
    assert!(warning.contains("WARN") && warning.contains("no Chromium at /nonexistent/chromium"), "{warning}");
}
