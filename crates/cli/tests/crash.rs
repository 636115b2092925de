//! A `driftwatch serve` process killed with SIGKILL while over a thousand deliveries are queued or in flight
//! loses none of them: after a restart every delivery ends `sent` and the receiver has seen
//! every `webhook-id` (duplicates are allowed by at-least-once delivery, and counted).

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{Queued, serve, wait_all_sent};

const DELIVERIES: usize = 1_200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_loses_no_delivery() {
    let Queued { dir, token, receiver, mut child, http, queued, .. } =
        Queued::start(Duration::from_millis(150), &[], DELIVERIES).await;

    // Kill it mid-flight: some deliveries are done, some in flight, most still queued.
    receiver.open_gate();
    receiver.wait_answered(40, Duration::from_secs(120), "deliveries flow").await;
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let before_restart = receiver.answered().len();
    assert!(before_restart < DELIVERIES, "the kill happened mid-flight ({before_restart} seen)");

    let (child, base) = serve(dir.path(), &[]).await;
    receiver.wait_answered(DELIVERIES, Duration::from_secs(300), "every delivery arrives after the restart").await;
    let received = receiver.answered();
    let unique: HashSet<&String> = received.iter().collect();
    assert!(queued.iter().all(|id| unique.contains(id)), "the receiver saw every queued delivery");

    let sent_ids = wait_all_sent(&http, &base, &token, DELIVERIES).await;
    assert_eq!(sent_ids, queued, "every queued delivery ends sent");
    assert_eq!(unique.len(), DELIVERIES);
    eprintln!(
        "crash test: {DELIVERIES} deliveries, {before_restart} received before SIGKILL, {} received in all, {} duplicates",
        received.len(),
        received.len() - unique.len()
    );
    drop(child);
}
