//! `serve` and its browser: Chromium starts when a watch first renders and no Chromium process
//! outlives `serve` once it is stopped with SIGTERM. Skipped with one line without Chromium,
//! unless `DRIFTWATCH_REQUIRE_BROWSER=1` (CI).

mod common;

use driftwatch_test_support::PageServer;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_chromium_process_outlives_serve() {
    if driftwatch_browser::find_chromium(None, std::env::var_os("PATH").as_deref()).is_none() {
        assert!(
            !std::env::var("DRIFTWATCH_REQUIRE_BROWSER").is_ok_and(|v| v == "1"),
            "DRIFTWATCH_REQUIRE_BROWSER=1 but no Chromium on PATH"
        );
        eprintln!("SKIPPED serve's browser test: no Chromium on PATH (Debian: apt-get install chromium)");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let token = common::account_and_token(dir.path());
    // Chromium's throwaway profile goes under this process's temporary directory: a marker
    // on every Chromium process's command line.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("tmp");
    let marker = tmp.to_str().expect("utf-8 path").to_owned();
    let site =
        PageServer::start("<html><body><p id=\"x\"></p><script>x.textContent = 'rendered'</script></body></html>")
            .await;
    let (mut child, base) = common::serve(dir.path(), &[("TMPDIR", marker.as_str())]).await;
    assert!(processes_mentioning(&marker).is_empty(), "Chromium starts only when a page needs it");

    let http = reqwest::Client::new();
    let body = json!({"url": site.url, "selector": "#x", "options": {"fetch": {"engine": "browser"}}});
    let run = common::first_run(&http, &base, &token, body).await;
    assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("baseline"), Some("browser")), "{run}");
    let running = processes_mentioning(&marker);
    assert!(running.len() > 1, "Chromium runs as several processes: {running:?}");

    let killed = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || child.wait()).await.expect("join").expect("wait");
    assert!(status.success(), "serve exits cleanly on SIGTERM: {status}");
    let left = processes_mentioning(&marker);
    assert!(left.is_empty(), "Chromium processes outlived serve: {left:?}");
}
