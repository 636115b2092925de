//! What `serve` logs, read as JSON the way a log pipeline would: start-up is quiet at info
//! (no library chatter), each delivery attempt writes one audit line naming the delivery, the
//! endpoint, the event, the attempt, its status, duration and outcome, and the request id of
//! the API call that queued the work leads to it.

mod common;

use std::time::Duration;

use common::{account_and_token, endpoint, log_line, serve_logged};
use driftwatch_test_support::Receiver;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_attempt_writes_one_audit_line_and_start_up_is_quiet() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token = account_and_token(dir.path());
    let receiver = Receiver::start(200).await;
    let (mut child, base, lines) = serve_logged(dir.path(), &[("DRIFTWATCH_LOG_FORMAT", "json")]).await;
    let (lines, start_up) = log_line(lines, "\"listening\"").await;
    assert!(start_up.len() <= 6, "start-up is a few lines: {start_up:#?}");
    assert!(!start_up.iter().any(|l| l.contains("tokio_cron_scheduler")), "no library chatter: {start_up:#?}");

    let http = reqwest::Client::new();
    let endpoint_id = endpoint(&http, &base, &token, &receiver.url).await;
    let delivery: serde_json::Value = http
        .post(format!("{base}/api/v1/endpoints/{endpoint_id}/test"))
        .bearer_auth(&token)
        .header("x-request-id", "req-audit-7")
        .send()
        .await
        .expect("queue")
        .json()
        .await
        .expect("json");
    let delivery_id = delivery["id"].as_str().expect("id").to_owned();
    receiver.wait_answered(1, Duration::from_secs(20), "the test event").await;
    let (lines, read) = log_line(lines, "\"delivery attempt\"").await;
    let json = |line: &String| serde_json::from_str::<serde_json::Value>(line).expect("a JSON line");
    let audit = json(read.last().expect("the audit line"));
    let fields = &audit["fields"];
    assert_eq!(audit["level"], "INFO");
    assert_eq!(fields["delivery.id"], delivery_id.as_str());
    assert_eq!(fields["endpoint.id"], endpoint_id.as_str());
    assert_eq!(fields["event.id"], delivery["event_id"]);
    assert_eq!(fields["event_type"], "endpoint.test");
    assert_eq!(fields["attempt"], 1);
    assert_eq!(fields["status"], 200);
    assert_eq!(fields["outcome"], "sent");
    assert!(fields["duration_ms"].is_u64(), "{audit}");
    // The API request that queued it is in the log with the delivery's id.
    let queued = read.iter().map(json).find(|l| l["fields"]["message"] == "test event queued").expect("queued line");
    assert_eq!(queued["fields"]["delivery.id"], delivery_id.as_str());
    assert_eq!(queued["span"]["request_id"], "req-audit-7", "{queued}");

    let _ = child.kill();
    let _ = child.wait();
    let rest: Vec<String> = lines.try_iter().collect();
    assert!(!rest.iter().any(|l| l.contains("\"delivery attempt\"")), "one audit line per attempt: {rest:?}");
}
