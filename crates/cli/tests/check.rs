//! `driftwatch check`: a page read once as a scheduled check reads it (engine, rules, values
//! and the text cap), printed.

use std::process::Command;

use serde_json::{Value, json};

mod common;

/// `driftwatch check` in `dir` with `args`, on top of `env`; its standard output.
fn run(dir: &std::path::Path, args: &[&str]) -> String {
    run_with(dir, args, &[])
}

fn run_with(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let output = common::driftwatch(dir).args(args).envs(env.iter().copied()).output().expect("run driftwatch");
    assert!(output.status.success(), "driftwatch {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8")
}

/// What `driftwatch check` prints is what the server's preview (`POST /api/v1/preview`, the
/// scheduled check's reader) answers for the same watch: the text cut at the same cap, and the
/// same values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_prints_what_the_servers_preview_reads() {
    let lines: String = (0..200).map(|i| format!("<p>Line {i} of the catalogue</p>")).collect();
    let page = format!("<html><body><span id=price content=\"12.50\">12,50 EUR</span>{lines}</body></html>");
    let app = axum::Router::new().route(
        "/page",
        axum::routing::get(move || {
            let page = page.clone();
            async move { ([("content-type", "text/html")], page) }
        }),
    );
    let url = format!("http://{}/page", driftwatch_test_support::serve(app).await);
    let options = json!({"values": [
        {"name": "price", "type": "money", "selector": "#price", "attribute": "content", "currency": "EUR"}
    ]});
    let dir = tempfile::tempdir().expect("temp dir");
    let cap = [("DRIFTWATCH_MAX_TEXT_BYTES", "2048")];
    let token = common::account_and_token(dir.path());
    let (_server, base) = common::serve(dir.path(), &cap).await;
    let preview: Value = reqwest::Client::new()
        .post(format!("{base}/api/v1/preview"))
        .bearer_auth(&token)
        .json(&json!({"url": url, "options": options}))
        .send()
        .await
        .expect("preview")
        .error_for_status()
        .expect("previewed")
        .json()
        .await
        .expect("json");
    let text = preview["text"].as_str().expect("text").to_owned();
    assert!(text.ends_with("[driftwatch: the text was cut at 2048 bytes]\n"), "{text}");
    assert_eq!(preview["values"], json!({"price": 12.5}), "{preview}");
    let (path, options) = (dir.path().to_owned(), options.to_string());
    let printed = tokio::task::spawn_blocking(move || run_with(&path, &["check", &url, "--options", &options], &cap))
        .await
        .expect("join");
    assert_eq!(printed, format!("{text}values: {}\n", preview["values"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_renders_in_the_browser_when_the_options_say_so() {
    if driftwatch_browser::find_chromium(None, std::env::var_os("PATH").as_deref()).is_none() {
        assert!(!std::env::var("DRIFTWATCH_REQUIRE_BROWSER").is_ok_and(|v| v == "1"), "no Chromium on PATH");
        eprintln!("SKIPPED check --options engine browser: no Chromium on PATH");
        return;
    }
    let app = axum::Router::new().route(
        "/page",
        axum::routing::get(|| async {
            (
                [("content-type", "text/html")],
                "<div id=app></div><script>app.innerHTML = '<p id=p>Price 42</p>'</script>",
            )
        }),
    );
    let url = format!("http://{}/page", driftwatch_test_support::serve(app).await);
    let dir = tempfile::tempdir().expect("temp dir");
    let text = tokio::task::spawn_blocking(move || {
        let options = r#"{"fetch": {"engine": "browser"}}"#;
        run(dir.path(), &["check", &url, "--selector", "#p", "--options", options])
    })
    .await
    .expect("join");
    assert_eq!(text, "Price 42\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_prints_the_text_and_its_diff() {
    let app = axum::Router::new().route(
        "/page",
        axum::routing::get(|| async {
            (
                [("content-type", "text/html")],
                "<h1>Shop</h1><ul id=p><li>Pears 3</li><li>Plums 4</li></ul><footer>12:01</footer>",
            )
        }),
    );
    let url = format!("http://{}/page", driftwatch_test_support::serve(app).await);
    let dir = tempfile::tempdir().expect("temp dir");
    let check = |args: Vec<String>| {
        let dir = dir.path().to_owned();
        tokio::task::spawn_blocking(move || {
            let mut all = vec!["check".to_owned()];
            all.extend(args);
            let refs: Vec<&str> = all.iter().map(String::as_str).collect();
            run(&dir, &refs)
        })
    };
    let rules = r#"{"rules": {"masks": ["numbers"]}}"#.to_owned();
    let text =
        check(vec![url.clone(), "--selector".into(), "#p".into(), "--options".into(), rules]).await.expect("join");
    assert_eq!(text, "Pears <n>\nPlums <n>\n");

    std::fs::write(dir.path().join("old.txt"), "Pears 3\nApples 1\n").expect("write");
    let diff = check(vec![
        url.clone(),
        "--selector".into(),
        "#p".into(),
        "--diff-against".into(),
        dir.path().join("old.txt").display().to_string(),
    ])
    .await
    .expect("join");
    assert!(diff.contains("-Apples 1") && diff.contains("+Plums 4"), "{diff}");

    let refused = Command::new(env!("CARGO_BIN_EXE_driftwatch"))
        .args(["check", &url])
        .env_remove("DRIFTWATCH_ALLOW_PRIVATE_TARGETS")
        .output()
        .expect("run");
    assert!(!refused.status.success(), "loopback is refused unless allowed");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("private"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
