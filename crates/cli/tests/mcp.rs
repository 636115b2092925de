//! `driftwatch mcp` on stdio, run by the official MCP Python SDK as a desktop agent runs it
//! (a subprocess with `DRIFTWATCH_URL` and `DRIFTWATCH_TOKEN`), against `driftwatch serve`.

mod common;

use std::path::PathBuf;

use driftwatch_test_support::McpClient;
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
    let (_server, base) = common::serve(dir.path(), &[]).await;
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
}
