//! The stand-in as a client meets it.

use std::time::Duration;

use serde_json::{Value, json};

use super::{ModelServer, Reply};

const WAIT: Duration = Duration::from_secs(5);

/// Status, headers and body (JSON, `Null` when not) of a chat completion request.
async fn chat(server: &ModelServer, model: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let body = json!({
        "model": model,
        "messages": [
            {"role": "system", "content": "Judge."},
            {"role": "user", "content": "Intent: price drops"},
            {"role": "user", "content": [{"type": "text", "text": "+Price: 45"}]},
        ],
    });
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .post(format!("{}/chat/completions", server.base_url()))
        .bearer_auth("sk-test")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("send");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("body");
    (status, headers, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn content(body: &Value) -> &str {
    body["choices"][0]["message"]["content"].as_str().expect("content")
}

#[tokio::test]
async fn answers_queued_replies_in_order_then_the_rule_then_the_default() {
    let server = ModelServer::start().await;
    server.push(Reply::verdict_with_usage(true, "It dropped.", "67 to 45.", (7, 3)));
    server.push(Reply::verdict(true, "r", "s").fenced().think());
    server.push(Reply::Truncated);
    server.set_rule(|req| req.user_text().contains("never").then_some(Reply::Empty));
    server.set_default(Reply::content("not json"));

    let (status, _, first) = chat(&server, "qwen3:8b").await;
    assert_eq!(status, 200);
    assert_eq!(first["object"], "chat.completion");
    assert_eq!(first["model"], "qwen3:8b");
    assert_eq!(first["choices"][0]["finish_reason"], "stop");
    assert_eq!(first["usage"], json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}));
    let verdict: Value = serde_json::from_str(content(&first)).expect("JSON content");
    assert_eq!(verdict, json!({"important": true, "reason": "It dropped.", "summary": "67 to 45."}));

    let (_, _, second) = chat(&server, "m").await;
    let text = content(&second);
    assert!(text.starts_with("<think>\n") && text.contains("</think>\n\n```json\n{"), "{text}");
    assert!(text.ends_with("}\n```"), "{text}");

    let (_, _, third) = chat(&server, "m").await;
    assert_eq!(third["choices"][0]["finish_reason"], "length");
    assert!(serde_json::from_str::<Value>(content(&third)).is_err());

    let (_, _, fourth) = chat(&server, "m").await;
    assert_eq!(content(&fourth), "not json", "the rule passed, so the default answered");

    server.set_rule(|req| req.user_text().contains("+Price").then_some(Reply::Empty));
    let (_, _, fifth) = chat(&server, "m").await;
    assert_eq!(content(&fifth), "");

    let requests = server.wait_requests(5, WAIT).await;
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].authorization(), Some("Bearer sk-test"));
    assert_eq!(requests[0].model(), "qwen3:8b");
    assert_eq!(requests[0].system_text(), "Judge.");
    assert_eq!(requests[0].user_text(), "Intent: price drops\n\n+Price: 45");
}

#[tokio::test]
async fn failures_answer_as_openai_does() {
    let server = ModelServer::start().await;
    let other = ModelServer::start().await;
    server.push(Reply::RateLimited { retry_after_secs: 7 });
    server.push(Reply::ServerError);
    server.push(Reply::Status(400, r#"{"error":{"message":"bad response_format"}}"#.into()));
    server.push(Reply::Redirect(format!("{}/chat/completions", other.base_url())));
    server.push(Reply::Huge(300_000));

    let (status, headers, body) = chat(&server, "m").await;
    assert_eq!((status, headers.get("retry-after").and_then(|v| v.to_str().ok())), (429, Some("7")));
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    let (status, _, body) = chat(&server, "m").await;
    assert_eq!(status, 500);
    assert_eq!(body["error"]["type"], "server_error");
    let (status, _, body) = chat(&server, "m").await;
    assert_eq!((status, body["error"]["message"].as_str()), (400, Some("bad response_format")));
    let (status, headers, _) = chat(&server, "m").await;
    assert_eq!(status, 307);
    let location = headers.get("location").and_then(|v| v.to_str().ok());
    assert_eq!(location, Some(format!("{}/chat/completions", other.base_url()).as_str()));
    assert!(other.requests().is_empty());

    let response = reqwest::get(format!("{}/chat/completions", server.base_url())).await.expect("send");
    assert_eq!(response.status().as_u16(), 404, "only POST asks for a completion");
    let (status, _, body) = chat(&server, "m").await;
    assert_eq!(status, 200, "the 404 did not take the queued huge reply");
    assert_eq!(serde_json::to_vec(&body).expect("json").len(), 300_000);
    let text = content(&body);
    assert!(text.len() > 299_000 && text.bytes().all(|b| b == b'a'), "{}", text.len());
}

#[tokio::test]
async fn stalls_until_released_and_lists_models() {
    let server = ModelServer::start().await;
    server.set_models(&["llama3.2:3b", "qwen3:8b"]);
    let response = reqwest::get(format!("{}/models", server.base_url())).await.expect("send");
    let models: Value = serde_json::from_slice(&response.bytes().await.expect("body")).expect("json");
    let ids: Vec<&str> = models["data"].as_array().expect("data").iter().filter_map(|m| m["id"].as_str()).collect();
    assert_eq!(ids, ["llama3.2:3b", "qwen3:8b"]);

    server.push(Reply::Stall);
    server.set_default(Reply::verdict(true, "released", "s"));
    let stalled = tokio::spawn({
        let server = server.clone();
        async move { chat(&server, "m").await }
    });
    server.wait_requests(2, WAIT).await;
    assert!(!stalled.is_finished());
    server.release();
    let (status, _, body) = tokio::time::timeout(WAIT, stalled).await.expect("released").expect("task");
    assert_eq!(status, 200);
    assert!(content(&body).contains("released"));
    server.push(Reply::Stall);
    let (_, _, body) =
        tokio::time::timeout(WAIT, chat(&server, "m")).await.expect("a stall after release answers at once");
    assert!(content(&body).contains("released"));
}
