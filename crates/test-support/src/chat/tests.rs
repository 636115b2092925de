//! The server as a client meets it: steering, recording, waiting, each provider's answers.

use std::time::Duration;

use serde_json::{Value, json};

use super::{ChatServer, Mode, Provider};

const WAIT: Duration = Duration::from_secs(5);
const DISCORD: &str = "/api/webhooks/123456789/hook-token";
const TELEGRAM: &str = "/bot123456:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQr/sendMessage";
const MATRIX: &str = "/_matrix/client/v3/rooms/%21room%3Aexample.org/send/m.room.message/txn-1";

/// What came back: status, `Retry-After`, body as JSON (`Null` if none).
struct Answer {
    status: u16,
    retry_after: Option<String>,
    json: Value,
}

async fn send(method: &str, url: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Answer {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = reqwest::Client::new().request(method, url).body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("send");
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().expect("text").to_owned());
    let bytes = response.bytes().await.expect("body");
    Answer { status, retry_after, json: serde_json::from_slice(&bytes).unwrap_or(Value::Null) }
}

async fn post_json(server: &ChatServer, path: &str, body: &Value) -> Answer {
    let json = [("content-type", "application/json")];
    send("POST", &server.url(path), &json, serde_json::to_vec(body).expect("json")).await
}

async fn matrix_send(server: &ChatServer, path: &str, body: &Value) -> Answer {
    let headers = [("authorization", "Bearer secret"), ("content-type", "application/json")];
    send("PUT", &server.url(path), &headers, serde_json::to_vec(body).expect("json")).await
}

#[tokio::test]
async fn rate_limits_answer_each_providers_own_shape() {
    let server = ChatServer::start().await;
    server.set_mode(Mode::RateLimited { retry_after_secs: 1.5 });

    let discord = post_json(&server, DISCORD, &json!({"content": "hi"})).await;
    assert_eq!(discord.status, 429);
    assert_eq!(discord.json, json!({"message": "You are being rate limited.", "retry_after": 1.5, "global": false}));
    assert_eq!(discord.retry_after.as_deref(), Some("2"));

    let telegram = post_json(&server, TELEGRAM, &json!({"chat_id": 1, "text": "hi"})).await;
    assert_eq!(telegram.status, 429);
    assert_eq!(telegram.json["parameters"]["retry_after"], 2);
    assert_eq!(telegram.json["description"], "Too Many Requests: retry after 2");
    assert_eq!(telegram.retry_after, None, "Telegram says it in the body only");

    let matrix = matrix_send(&server, MATRIX, &json!({"msgtype": "m.text", "body": "hi"})).await;
    assert_eq!(matrix.status, 429);
    assert_eq!(
        matrix.json,
        json!({"errcode": "M_LIMIT_EXCEEDED", "error": "Too many requests", "retry_after_ms": 1500})
    );

    server.set_retry_after_header(Some(false));
    let discord = post_json(&server, DISCORD, &json!({"content": "hi"})).await;
    assert_eq!((discord.status, discord.retry_after), (429, None));
    assert_eq!(discord.json["retry_after"], 1.5);
    assert!(server.accepted(Provider::Discord).is_empty());
    server.assert_no_rejections();
}

#[tokio::test]
async fn fail_next_fails_then_delivers() {
    let server = ChatServer::start().await;
    server.fail_next(2, Mode::Status(500));
    let body = json!({"content": "retry me"});
    assert_eq!(post_json(&server, DISCORD, &body).await.status, 500);
    let second = post_json(&server, DISCORD, &body).await;
    assert_eq!((second.status, second.json["code"].clone()), (500, json!(0)));
    assert_eq!(post_json(&server, DISCORD, &body).await.status, 204);
    let delivered = server.wait_for(Provider::Discord, 1, WAIT).await;
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].json.as_ref().expect("json")["content"], "retry me");
    let statuses: Vec<u16> = server.received().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [500, 500, 204]);
}

#[tokio::test]
async fn matrix_transactions_are_idempotent() {
    let server = ChatServer::start().await;
    server.expect_matrix_token("secret");
    let event = json!({"msgtype": "m.notice", "body": "changed"});
    server.fail_next(1, Mode::Status(502));
    assert_eq!(matrix_send(&server, MATRIX, &event).await.status, 502);
    let first = matrix_send(&server, MATRIX, &event).await;
    let again = matrix_send(&server, MATRIX, &event).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.json["event_id"], again.json["event_id"]);
    assert!(first.json["event_id"].as_str().expect("id").starts_with('$'));
    assert_eq!(server.accepted(Provider::Matrix).len(), 1);
    assert_eq!(server.matrix_duplicates(), 1);
    let other = MATRIX.replace("txn-1", "txn-2");
    let second = matrix_send(&server, &other, &event).await;
    assert_ne!(second.json["event_id"], first.json["event_id"]);
    assert_eq!(server.wait_for(Provider::Matrix, 2, WAIT).await.len(), 2);

    let wrong = send("PUT", &server.url(MATRIX), &[("authorization", "Bearer nope")], b"{}".to_vec()).await;
    assert_eq!((wrong.status, wrong.json["errcode"].clone()), (401, json!("M_UNKNOWN_TOKEN")));
}

#[tokio::test]
async fn hang_holds_until_released_and_drop_closes() {
    let server = ChatServer::start().await;
    server.fail_next(1, Mode::Hang);
    let url = server.url(TELEGRAM);
    let held = tokio::spawn(async move {
        let body = serde_json::to_vec(&json!({"chat_id": 7, "text": "late"})).expect("json");
        send("POST", &url, &[("content-type", "application/json")], body).await
    });
    server.wait_hanging(1, WAIT).await;
    assert!(server.received().is_empty());
    server.release();
    let answer = held.await.expect("task");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json["result"]["text"], "late");
    assert_eq!(server.hanging(), 0);

    server.set_mode(Mode::Hang);
    let url = server.url("/hook/x");
    let client = tokio::spawn(async move { reqwest::Client::new().post(url).send().await });
    server.wait_hanging(1, WAIT).await;
    drop(server);
    let outcome = tokio::time::timeout(WAIT, client).await.expect("closed, not hung").expect("task");
    assert!(outcome.is_err(), "the connection closes without an answer");
}

#[tokio::test]
async fn invalid_requests_get_the_providers_400_and_are_recorded() {
    let server = ChatServer::start().await;
    let telegram =
        post_json(&server, TELEGRAM, &json!({"chat_id": 1, "text": "<div>x</div>", "parse_mode": "HTML"})).await;
    assert_eq!(
        (telegram.status, telegram.json["ok"].clone(), telegram.json["error_code"].clone()),
        (400, json!(false), json!(400))
    );
    assert!(telegram.json["description"].as_str().expect("text").starts_with("Bad Request: can't parse entities"));
    let discord = post_json(&server, DISCORD, &json!({"embeds": [{"title": "t".repeat(257)}]})).await;
    assert_eq!((discord.status, discord.json["code"].clone()), (400, json!(50035)));
    let unknown = post_json(&server, "/nowhere", &json!({})).await;
    assert_eq!(unknown.status, 404);
    let rejected = server.rejected();
    assert_eq!(rejected.len(), 3);
    assert_eq!(rejected[0].provider, Provider::Telegram);
    assert!(rejected[1].rejected.as_deref().expect("reason").contains("embeds[0].title"));
    assert_eq!(rejected[2].provider, Provider::Unknown);
}

#[tokio::test]
async fn each_provider_answers_success_its_way() {
    let server = ChatServer::start().await;
    server.expect_ntfy_token("tk_ntfy");
    server.expect_gotify_token("app-token");

    let ntfy_body = json!({"topic": "drift", "message": "m", "priority": 4, "tags": ["warning"]});
    let json_type = ("content-type", "application/json");
    let ntfy = send(
        "POST",
        &server.url("/"),
        &[("authorization", "Bearer tk_ntfy"), json_type],
        serde_json::to_vec(&ntfy_body).expect("json"),
    )
    .await;
    assert_eq!(
        (ntfy.status, ntfy.json["event"].clone(), ntfy.json["topic"].clone()),
        (200, json!("message"), json!("drift"))
    );
    let unauthorized = post_json(&server, "/", &ntfy_body).await;
    assert_eq!((unauthorized.status, unauthorized.json["http"].clone()), (401, json!(401)));

    let gotify_url = server.url("/message?token=app-token");
    let gotify = send("POST", &gotify_url, &[json_type], br#"{"message":"m","title":"t","priority":8}"#.to_vec()).await;
    assert_eq!(
        (gotify.status, gotify.json["priority"].clone(), gotify.json["appid"].clone()),
        (200, json!(8), json!(1))
    );
    assert!(gotify.json["id"].is_u64() && gotify.json["date"].is_string());

    let key = "azGDORePK8gMaC0QOYAMyEEuzJnyUi";
    let form = format!("token={key}&user={key}&message=hello&title=t");
    let pushover = send(
        "POST",
        &server.url("/1/messages.json"),
        &[("content-type", "application/x-www-form-urlencoded")],
        form.into_bytes(),
    )
    .await;
    assert_eq!(pushover.json["status"], 1);
    assert!(pushover.json["request"].is_string());
    let bad = post_json(&server, "/1/messages.json", &json!({"token": key, "user": key})).await;
    assert_eq!((bad.status, bad.json["status"].clone()), (400, json!(0)));
    assert!(bad.json["errors"][0].as_str().expect("error").contains("blank"));

    let card = json!({"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive",
        "content": {"type": "AdaptiveCard", "version": "1.5", "body": [{"type": "TextBlock", "text": "hi"}]}}]});
    assert_eq!(post_json(&server, "/teams/flow", &card).await.status, 202);

    server.fail_next(1, Mode::Status(503));
    assert_eq!(send("PUT", &server.url("/hook/a/b?x=1"), &[], b"raw".to_vec()).await.status, 503);
    assert_eq!(send("DELETE", &server.url("/hook/a"), &[("x-test", "1")], Vec::new()).await.status, 200);
    let hooks = server.wait_for(Provider::Generic, 1, WAIT).await;
    assert_eq!((hooks[0].method.as_str(), hooks[0].header("x-test")), ("DELETE", "1"));
    let first = &server.received()[server.received().len() - 2];
    assert_eq!((first.path.as_str(), first.query.as_str(), first.body.as_slice()), ("/hook/a/b", "x=1", &b"raw"[..]));

    for provider in [Provider::Ntfy, Provider::Gotify, Provider::Pushover, Provider::Teams] {
        assert_eq!(server.accepted(provider).len(), 1, "{provider:?}");
    }
    assert_eq!(server.rejected().len(), 2);
}

#[tokio::test]
#[should_panic(expected = "timed out after")]
async fn wait_for_names_what_it_missed() {
    let server = ChatServer::start().await;
    post_json(&server, DISCORD, &json!({})).await;
    server.wait_for(Provider::Discord, 1, Duration::from_millis(200)).await;
}
