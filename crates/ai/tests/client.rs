//! The client against a real OpenAI-compatible stand-in on loopback.

use std::time::Duration;

use driftwatch_ai::{Answer, AnswerError, Ask, CallError, Client, ClientOptions, ModelConfig, Usage};
use driftwatch_test_support::llm::{DEFAULT_USAGE, ModelServer, Reply};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(10);
const DIFF: &str = "--- a\n+++ b\n@@ -1,2 +1,2 @@\n Kettle 1.7 l\n-Price: 67 EUR\n+Price: 45 EUR\n";

fn ask() -> Ask<'static> {
    Ask {
        intent: Some("Tell me when the price drops below 50 EUR"),
        watch_name: "Kettle",
        url: "https://shop.example/k",
        unified: DIFF,
    }
}

fn config(base: &str, key: Option<&str>) -> ModelConfig {
    ModelConfig {
        base_url: url::Url::parse(base).expect("base URL"),
        model: "qwen3:8b".to_owned(),
        api_key: key.map(str::to_owned),
        trusted: true,
    }
}

fn client(server: &ModelServer, key: Option<&str>) -> Client {
    Client::new(config(&server.base_url(), key), ClientOptions::default()).expect("client")
}

fn dropped() -> Reply {
    Reply::verdict_with_usage(true, "The price fell below 50.", "Price: 67 → 45 EUR.", (300, 40))
}

fn dropped_answer() -> Answer {
    Answer { important: true, reason: "The price fell below 50.".into(), summary: "Price: 67 → 45 EUR.".into() }
}

#[tokio::test]
async fn a_valid_answer_takes_one_call_and_the_request_is_as_asked() {
    let server = ModelServer::start().await;
    server.push(dropped());
    let answered = client(&server, None).judge(&ask(), WAIT).await.expect("a verdict");
    assert_eq!(answered.answer, dropped_answer());
    assert_eq!(answered.usage, Usage { prompt_tokens: 300, completion_tokens: 40 });
    assert_eq!(answered.calls, 1);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(request.authorization(), None, "no key, no Authorization");
    assert_eq!(request.body["model"], "qwen3:8b");
    assert_eq!(request.body["temperature"], 0);
    assert_eq!(request.body["stream"], false);
    assert_eq!(request.body["max_tokens"], 1024);
    assert_eq!(request.body["response_format"], driftwatch_ai::prompt::response_format());
    assert_eq!(request.body["response_format"]["json_schema"]["name"], "verdict");
    assert!(request.system_text().contains("Judge ONLY against the owner's intent"));
    let user = request.user_text();
    assert!(user.contains("Tell me when the price drops below 50 EUR"), "{user}");
    assert!(user.contains("-Price: 67 EUR\n+Price: 45 EUR"), "{user}");
}

#[tokio::test]
async fn the_key_is_sent_as_a_bearer_token_when_set() {
    let server = ModelServer::start().await;
    client(&server, Some("sk-secret")).judge(&ask(), WAIT).await.expect("a verdict");
    client(&server, Some("sk-secret")).models(WAIT).await.expect("models");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.authorization() == Some("Bearer sk-secret")));
}

#[tokio::test]
async fn fenced_and_thought_answers_take_one_call_each() {
    let server = ModelServer::start().await;
    server.push(dropped().fenced());
    server.push(dropped().think());
    server.push(dropped().fenced().think());
    let client = client(&server, None);
    for what in ["fenced", "think", "think then fenced"] {
        let answered = client.judge(&ask(), WAIT).await.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!((answered.answer, answered.calls), (dropped_answer(), 1), "{what}");
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_truncated_answer_is_asked_again_with_more_tokens() {
    let server = ModelServer::start().await;
    server.push(Reply::Truncated);
    server.push(dropped());
    let answered = client(&server, None).judge(&ask(), WAIT).await.expect("a verdict");
    assert_eq!(answered.answer, dropped_answer());
    assert_eq!(answered.calls, 2);
    assert_eq!(answered.usage, Usage { prompt_tokens: DEFAULT_USAGE.0 + 300, completion_tokens: DEFAULT_USAGE.1 + 40 });
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["max_tokens"], 1024);
    assert_eq!(requests[1].body["max_tokens"], 4096);
}

#[tokio::test]
async fn truncated_twice_is_an_error() {
    let server = ModelServer::start().await;
    server.push(Reply::Truncated);
    server.push(Reply::Truncated);
    server.push(dropped());
    let err = client(&server, None).judge(&ask(), WAIT).await.expect_err("truncated");
    assert_eq!(err, CallError::Truncated);
    assert_eq!(server.requests().len(), 2, "no third call");
}

#[tokio::test]
async fn empty_and_garbage_answers_are_answer_errors() {
    let server = ModelServer::start().await;
    server.push(Reply::Empty);
    server.push(Reply::content("The price dropped, I think."));
    server.push(Reply::NoUsage(Box::new(Reply::content(r#"{"important": "yes"}"#))));
    let client = client(&server, None);
    assert_eq!(client.judge(&ask(), WAIT).await, Err(CallError::Answer(AnswerError::Empty)));
    let garbage = client.judge(&ask(), WAIT).await;
    assert!(matches!(garbage, Err(CallError::Answer(AnswerError::Garbage(_)))), "{garbage:?}");
    let answered = client.judge(&ask(), WAIT).await.expect("a loose verdict");
    assert!(answered.answer.important);
    assert_eq!(answered.usage, Usage::default(), "no usage counts as zero");
}

#[tokio::test]
async fn error_statuses_carry_retry_after_and_the_message() {
    let server = ModelServer::start().await;
    server.push(Reply::RateLimited { retry_after_secs: 17 });
    server.push(Reply::ServerError);
    let client = client(&server, None);
    let limited = client.judge(&ask(), WAIT).await.expect_err("429");
    assert!(
        matches!(&limited, CallError::Status { status: 429, detail: Some(d), .. } if d.contains("Rate limit")),
        "{limited:?}"
    );
    assert_eq!(limited.retry_after(), Some(Duration::from_secs(17)));
    let failed = client.judge(&ask(), WAIT).await.expect_err("500");
    assert!(
        matches!(&failed, CallError::Status { status: 500, retry_after: None, detail: Some(d) } if d.contains("server had an error")),
        "{failed:?}"
    );
    assert_eq!(server.requests().len(), 2, "each status is one call");
}

#[tokio::test]
async fn a_refused_schema_is_asked_again_for_any_json_object() {
    let server = ModelServer::start().await;
    let refusal = json!({"error": {"message": "Unsupported value: 'response_format.type' json_schema", "type": "invalid_request_error"}});
    server.push(Reply::Status(400, refusal.to_string()));
    server.push(dropped());
    let answered = client(&server, None).judge(&ask(), WAIT).await.expect("a verdict");
    assert_eq!((answered.answer, answered.calls), (dropped_answer(), 2));
    let requests = server.requests();
    assert_eq!(requests[1].body["response_format"], json!({"type": "json_object"}));

    server.push(Reply::Status(400, json!({"error": {"message": "context too long"}}).to_string()));
    let err = client(&server, None).judge(&ask(), WAIT).await.expect_err("400");
    assert!(matches!(err, CallError::Status { status: 400, .. }), "{err:?}");
    assert_eq!(server.requests().len(), 3, "another 400 is not asked again");
}

#[tokio::test]
async fn a_stalled_server_times_out() {
    let server = ModelServer::start().await;
    server.push(Reply::Stall);
    let err = client(&server, None).judge(&ask(), Duration::from_millis(300)).await.expect_err("stalled");
    assert_eq!(err, CallError::Timeout(Duration::from_millis(300)));
    server.release();
}

#[tokio::test]
async fn a_huge_body_is_too_large() {
    let server = ModelServer::start().await;
    let options = ClientOptions { max_body_bytes: 64 << 10, ..ClientOptions::default() };
    let client = Client::new(config(&server.base_url(), None), options).expect("client");
    server.push(Reply::Huge(1 << 20));
    assert_eq!(client.judge(&ask(), WAIT).await, Err(CallError::TooLarge(64 << 10)), "streamed, no length");
    server.push(Reply::Status(200, format!("\"{}\"", "x".repeat(100_000))));
    assert_eq!(client.judge(&ask(), WAIT).await, Err(CallError::TooLarge(64 << 10)), "a declared length");
    server.push(Reply::Huge(60 << 10));
    let under = client.judge(&ask(), WAIT).await;
    assert!(matches!(under, Err(CallError::Answer(AnswerError::Garbage(_)))), "read whole: {under:?}");
}

#[tokio::test]
async fn without_an_intent_only_the_summary_is_asked_for_and_kept() {
    let server = ModelServer::start().await;
    server.push(dropped());
    let summary_only = Ask { intent: None, ..ask() };
    let answered = client(&server, None).judge(&summary_only, WAIT).await.expect("a summary");
    let expected = Answer { important: false, reason: String::new(), summary: "Price: 67 → 45 EUR.".into() };
    assert_eq!(answered.answer, expected);
    let request = &server.requests()[0];
    assert!(request.system_text().contains("Always answer important: false"));
    assert!(!request.user_text().contains("intent"));
}

#[tokio::test]
async fn redirects_are_followed_only_within_the_origin() {
    let server = ModelServer::start().await;
    let elsewhere = ModelServer::start().await;
    server.push(Reply::Redirect(format!("{}/v2/chat/completions", server.origin())));
    server.push(dropped());
    let client = client(&server, Some("sk-secret"));
    let answered = client.judge(&ask(), WAIT).await.expect("same-origin redirect followed");
    assert_eq!(answered.answer, dropped_answer());
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!((requests[1].method.as_str(), requests[1].path.as_str()), ("POST", "/v2/chat/completions"));
    assert_eq!(requests[1].body["model"], "qwen3:8b", "a 307 keeps the body");
    assert_eq!(requests[1].authorization(), Some("Bearer sk-secret"));

    server.push(Reply::Redirect(format!("{}/chat/completions", elsewhere.base_url())));
    let err = client.judge(&ask(), WAIT).await.expect_err("cross-origin redirect refused");
    let CallError::Transport(message) = &err else { panic!("{err:?}") };
    assert!(message.contains("redirected to another host"), "{message}");
    assert!(message.contains(&elsewhere.addr().port().to_string()), "{message}");
    assert!(elsewhere.requests().is_empty(), "the other host received nothing");
}

#[tokio::test]
async fn at_most_three_redirects_are_followed() {
    let server = ModelServer::start().await;
    for hop in 1..=4 {
        server.push(Reply::Redirect(format!("{}/hop{hop}/chat/completions", server.origin())));
    }
    let err = client(&server, Some("  ")).judge(&ask(), WAIT).await.expect_err("too many redirects");
    assert!(matches!(&err, CallError::Transport(m) if m.contains("more than 3")), "{err:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "the first request and three hops");
    assert!(requests.iter().all(|r| r.authorization().is_none()), "a blank key is no key");
}

#[tokio::test]
async fn models_are_listed_sorted() {
    let server = ModelServer::start().await;
    server.set_models(&["qwen3:8b", "llama3.2:3b", "qwen3:8b"]);
    let models = client(&server, None).models(WAIT).await.expect("models");
    assert_eq!(models, ["llama3.2:3b", "qwen3:8b"]);
    let requests = server.requests();
    assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("GET", "/v1/models"));
}

#[tokio::test]
async fn an_untrusted_loopback_server_is_refused_before_any_request() {
    let server = ModelServer::start().await;
    let untrusted = ModelConfig { trusted: false, ..config(&server.base_url(), Some("sk-secret")) };
    let client = Client::new(untrusted, ClientOptions::default()).expect("client");
    let err = client.judge(&ask(), WAIT).await.expect_err("refused");
    assert!(matches!(&err, CallError::Transport(m) if m.contains("127.0.0.1")), "{err:?}");
    assert!(server.requests().is_empty());
}
