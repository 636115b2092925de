//! Graceful drain of `driftwatch serve`: on SIGTERM it stops claiming, lets the deliveries in
//! flight finish and be recorded, and exits 0 within `DRIFTWATCH_SHUTDOWN_GRACE`; after a
//! restart every delivery arrives and none twice. The grace bounds a drain stuck on a hanging
//! receiver, and a second signal exits at once.

mod common;

use std::collections::HashSet;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use common::{Queued, account_and_token, endpoint, log_line, queue_tests, serve, serve_logged, wait_all_sent};
use driftwatch_test_support::{KillOnDrop, Receiver};

const DELIVERIES: usize = 400;

fn signal(child: &KillOnDrop, name: &str) {
    let status = std::process::Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status();
    assert!(status.expect("kill runs").success(), "kill -{name}");
}

/// Waits at most `limit` for the child to exit; past it, kills it and fails.
async fn exit_within(mut child: KillOnDrop, limit: Duration) -> (ExitStatus, Duration) {
    let started = Instant::now();
    let pid = child.id().to_string();
    let waited = tokio::task::spawn_blocking(move || child.wait());
    let Ok(status) = tokio::time::timeout(limit, waited).await else {
        // The waiting thread holds the child; kill it by pid so the test leaves nothing behind.
        let _ = std::process::Command::new("kill").args(["-KILL", &pid]).status();
        panic!("the process did not exit within {limit:?}");
    };
    (status.expect("join").expect("wait"), started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_work_in_flight_and_loses_nothing() {
    let grace = [("DRIFTWATCH_SHUTDOWN_GRACE", "20s")];
    let Queued { dir, token, receiver, child, http, queued, .. } =
        Queued::start(Duration::from_millis(400), &grace, DELIVERIES).await;

    // Let deliveries flow, then ask it to stop with a full set in flight (32 at a time, each
    // held 400 ms by the receiver) and most still queued.
    receiver.open_gate();
    receiver.wait_answered(64, Duration::from_secs(120), "deliveries flow").await;
    receiver.wait_in_flight(8, Duration::from_secs(10)).await;
    signal(&child, "TERM");
    let at_signal = receiver.answered().len();
    let in_flight = receiver.received().len() - at_signal;
    let (status, took) = exit_within(child, Duration::from_secs(25)).await;
    assert!(status.success(), "a drain that finishes exits 0: {status:?}");
    let at_exit = receiver.answered().len();
    assert!(
        at_exit >= at_signal + in_flight,
        "every delivery in flight at the signal was answered before the exit ({at_signal} + {in_flight} -> {at_exit})"
    );
    assert!(at_exit < DELIVERIES, "it stopped claiming: {at_exit} of {DELIVERIES} were sent before exit");
    eprintln!(
        "drain: exited 0 in {took:?}; {at_signal} answered and {in_flight} in flight at SIGTERM, {at_exit} answered at exit"
    );

    // Everything sent before the exit was recorded: after a restart the rest arrive, and no
    // delivery arrives twice.
    let (mut child, base) = serve(dir.path(), &grace).await;
    receiver.wait_answered(DELIVERIES, Duration::from_secs(300), "every delivery arrives after the restart").await;
    let sent = wait_all_sent(&http, &base, &token, DELIVERIES).await;
    assert_eq!(sent, queued);
    let received = receiver.answered();
    let unique: HashSet<&String> = received.iter().collect();
    assert_eq!(unique.len(), DELIVERIES);
    assert_eq!(received.len(), DELIVERIES, "no delivery was sent twice");
    signal(&child, "TERM");
    let _ = child.wait();
}

/// A receiver that never answers in time: the drain cannot finish. The grace bounds it (exit
/// non-zero, saying so), and a second signal ends it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grace_bounds_a_stuck_drain_and_a_second_signal_exits_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token = account_and_token(dir.path());
    let receiver = Receiver::start(200).await;
    receiver.set_delay(Duration::from_secs(3600));
    let http = reqwest::Client::new();

    // The grace runs out.
    let (child, base, lines) = serve_logged(dir.path(), &[("DRIFTWATCH_SHUTDOWN_GRACE", "1s")]).await;
    let endpoint_id = endpoint(&http, &base, &token, &receiver.url).await;
    queue_tests(&http, &base, &token, &endpoint_id, 4).await;
    // The four attempts are in flight once the receiver holds them.
    receiver.wait_for_within(4, Duration::from_secs(30)).await;
    signal(&child, "TERM");
    let (status, took) = exit_within(child, Duration::from_secs(10)).await;
    assert!(!status.success(), "a drain cut short by the grace is not a clean exit: {status:?}");
    assert!(took >= Duration::from_millis(900), "it waited for the grace: {took:?}");
    drop(lines);

    // A second signal: no waiting for the grace (60 s). The drain is stuck on an attempt the
    // receiver holds (the first node's deliveries are still leased to it), so only the second
    // signal can end it; without one in flight the drain could finish before that signal.
    let (child, base, lines) = serve_logged(dir.path(), &[("DRIFTWATCH_SHUTDOWN_GRACE", "60s")]).await;
    queue_tests(&http, &base, &token, &endpoint_id, 1).await;
    receiver.wait_for_within(5, Duration::from_secs(30)).await;
    signal(&child, "TERM");
    let _lines = log_line(lines, "shutting down").await.0;
    signal(&child, "TERM");
    let (status, took) = exit_within(child, Duration::from_secs(10)).await;
    assert_eq!(status.code(), Some(130), "the second signal exits at once: {status:?} after {took:?}");
}
