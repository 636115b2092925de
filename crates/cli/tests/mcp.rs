//! `driftwatch mcp` on stdio, run by the official MCP Python SDK as a desktop agent runs it
//! (a subprocess with `DRIFTWATCH_URL` and `DRIFTWATCH_TOKEN`), against `driftwatch serve`.

mod common;

use std::path::PathBuf;

use driftwatch_test_support::{McpClient, PageServer, Receiver, eventually};
use serde_json::{Value, json};

fn names(answer: &Value) -> Vec<&str> {
    answer.as_array().map(|names| names.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

#[tokio::test]
async fn a_local_agent_uses_the_tools_over_stdio() {
    let Some(mcp) = McpClient::find() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let token = common::account_and_token(dir.path());
    let reader = common::output(dir.path(), &["token", "create", "--account", "acme", "--read-only"])
        .lines()
        .last()
        .expect("token")
        .to_owned();
    let page = PageServer::start("<p id=stock>Sold out</p>").await;
    let (_server, base) = common::serve(dir.path(), &[("DRIFTWATCH_ALLOW_PRIVATE_TARGETS", "true")]).await;
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_driftwatch"));

    let plan = json!([
        ["list_tools"],
        ["call", "create_watch", {"url": "https://shop.example/kettle", "name": "Kettle", "idempotency_key": "once"}],
        ["call", "create_watch", {"url": "https://shop.example/kettle", "name": "Kettle", "idempotency_key": "once"}],
        ["call", "list_watches", {}],
        ["call", "get_watch", {"id": "wat_nope"}],
    ]);
    let answers = mcp.stdio(&binary, &base, &token, &plan).await;
    assert!(names(&answers[0]).contains(&"create_watch"), "{}", answers[0]);
    let id = answers[1]["structured"]["id"].as_str().expect("created").to_owned();
    assert_eq!(answers[2]["structured"]["id"], id.as_str(), "the key makes the retry answer the same watch");
    assert_eq!(answers[3]["structured"]["items"].as_array().map(Vec::len), Some(1), "{}", answers[3]);
    assert_eq!(answers[4]["is_error"], true, "{}", answers[4]);
    assert_eq!(answers[4]["structured"]["status"], 404, "{}", answers[4]);

    // A read token: the read tools only, and a write is refused by the server all the same.
    let answers = mcp.stdio(&binary, &base, &reader, &json!([["list_tools"], ["call", "get_watch", {"id": id}]])).await;
    let tools = names(&answers[0]);
    assert!(tools.contains(&"get_watch") && !tools.contains(&"create_watch"), "{tools:?}");
    assert_eq!(answers[1]["structured"]["name"], "Kettle", "{}", answers[1]);

    // Push on stdio: the agent listens to a watch of a local page; the page changes and the
    // server checks it; `driftwatch mcp` tells the agent from the changes feed.
    let answers = mcp
        .stdio(&binary, &base, &token, &json!([["call", "create_watch", {"url": page.url, "selector": "#stock"}]]))
        .await;
    let watch_id = answers[0]["structured"]["id"].as_str().expect("created").to_owned();
    let http = reqwest::Client::new();
    let check = || http.post(format!("{base}/api/v1/watches/{watch_id}/check")).bearer_auth(&token).send();
    check().await.expect("baseline").error_for_status().expect("checked");
    let uri = format!("driftwatch://watches/{watch_id}");
    let listening = mcp.subscribe_stdio(&binary, &base, &token, &uri).await;
    page.set("<p id=stock>In stock</p>");
    let run: Value = serde_json::from_slice(&check().await.expect("check").bytes().await.expect("body")).expect("json");
    assert_eq!(run["outcome"], "changed", "{run}");
    let told = listening.update().await;
    assert_eq!(told["uri"], uri.as_str(), "{told}");

    // The diff, and a dead letter redelivered, through the tools on stdio too.
    let receiver = Receiver::start(404).await;
    let endpoint_id = common::endpoint(&http, &base, &token, &receiver.url).await;
    let queued: Value = serde_json::from_slice(
        &http
            .post(format!("{base}/api/v1/endpoints/{endpoint_id}/test"))
            .bearer_auth(&token)
            .send()
            .await
            .expect("test event")
            .bytes()
            .await
            .expect("body"),
    )
    .expect("json");
    let delivery = queued["id"].as_str().expect("delivery id").to_owned();
    eventually("the delivery goes dead (404 is permanent)", || async {
        let seen: Value = serde_json::from_slice(
            &http
                .get(format!("{base}/api/v1/deliveries/{delivery}"))
                .bearer_auth(&token)
                .send()
                .await
                .ok()?
                .bytes()
                .await
                .ok()?,
        )
        .ok()?;
        (seen["status"] == "dead").then_some(())
    })
    .await;
    receiver.set_status(200);
    let answers = mcp
        .stdio(
            &binary,
            &base,
            &token,
            &json!([
                ["call", "get_diff", {"id": watch_id}],
                ["call", "list_dead_letters", {}],
                ["call", "redeliver", {"id": delivery}],
            ]),
        )
        .await;
    let unified = answers[0]["structured"]["unified"].as_str().unwrap_or_default();
    assert!(unified.contains("+In stock") && unified.contains("-Sold out"), "{}", answers[0]);
    assert_eq!(answers[1]["structured"]["items"][0]["id"], delivery.as_str(), "{}", answers[1]);
    assert_eq!(answers[2]["structured"]["status"], "sent", "{}", answers[2]);
}
