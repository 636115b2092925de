//! Outbound proxies: never taken from the environment, and names vetted behind an explicit one.
//!
//! A forward proxy on loopback records what it is asked for and answers every request with a
//! page, as a real proxy reaching an internal host would. Private targets are refused (the
//! default), so only the proxy's own address is private on purpose.

mod common;

use std::sync::{Arc, Mutex};

use serde_json::json;

/// A forward proxy: records each request's method and absolute URI, answers a page.
async fn forward_proxy() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let log = Arc::clone(&log);
        async move {
            log.lock().expect("lock").push(format!("{} {}", request.method(), request.uri()));
            ([("content-type", "text/html")], "<html><body><p id=\"secret\">instance credentials</p></body></html>")
        }
    });
    let addr = driftwatch_test_support::serve(app).await;
    (format!("http://{addr}"), seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_is_a_setting_and_names_are_vetted_behind_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token = common::account_and_token(dir.path());
    let (proxy, seen) = forward_proxy().await;
    let http = reqwest::Client::builder().no_proxy().build().expect("client");

    // The environment's proxy is not used: the name is resolved here (it does not resolve)
    // instead of being handed to the proxy, which would fetch an internal host.
    let env_proxy = [
        ("DRIFTWATCH_ALLOW_PRIVATE_TARGETS", "false"),
        ("HTTP_PROXY", proxy.as_str()),
        ("http_proxy", proxy.as_str()),
        ("ALL_PROXY", proxy.as_str()),
    ];
    let (mut child, base) = common::serve(dir.path(), &env_proxy).await;
    let run =
        common::first_run(&http, &base, &token, json!({"url": "http://metadata.invalid/computeMetadata/v1/"})).await;
    assert_eq!(run["outcome"], "failed", "{run}");
    assert!(seen.lock().expect("lock").is_empty(), "the environment's proxy was used: {seen:?}");
    child.kill().expect("kill");
    let _ = child.wait();

    // An explicit proxy carries requests, but a name that cannot be vetted here is refused
    // before the proxy sees it; a public address goes through the proxy.
    let explicit = [("DRIFTWATCH_ALLOW_PRIVATE_TARGETS", "false"), ("DRIFTWATCH_OUTBOUND_PROXY", proxy.as_str())];
    let (mut child, base) = common::serve(dir.path(), &explicit).await;
    let run =
        common::first_run(&http, &base, &token, json!({"url": "http://metadata.invalid/computeMetadata/v1/"})).await;
    assert_eq!(run["outcome"], "failed", "{run}");
    assert!(run["error"].as_str().is_some_and(|e| e.contains("cannot vet metadata.invalid")), "{run}");
    assert!(seen.lock().expect("lock").is_empty(), "an unvetted name reached the proxy: {seen:?}");

    let run = common::first_run(&http, &base, &token, json!({"url": "http://93.184.216.34/pricing"})).await;
    assert_eq!(run["outcome"], "baseline", "{run}");
    assert_eq!(*seen.lock().expect("lock"), vec!["GET http://93.184.216.34/pricing".to_owned()]);
    child.kill().expect("kill");
    let _ = child.wait();
}
