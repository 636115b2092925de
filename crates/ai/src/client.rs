//! The OpenAI-compatible client.

use std::time::Duration;

use crate::wire::Wire;
use crate::{Answer, Ask};

/// Which model answers, where.
#[derive(Clone)]
pub struct ModelConfig {
    /// `http(s)://host[:port]/v1`: `chat/completions` and `models` are joined to it.
    pub base_url: url::Url,
    /// The model's name as the server knows it.
    pub model: String,
    /// Sent as `Authorization: Bearer KEY`, to this origin only.
    pub api_key: Option<String>,
    /// Configured by the operator: the host is allowed even when it is loopback or private.
    /// A base URL an account sets for itself passes the address guard.
    pub trusted: bool,
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfig")
            .field("base_url", &self.base_url.as_str())
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "••••"))
            .field("trusted", &self.trusted)
            .finish()
    }
}

/// How the client behaves.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Where an untrusted base URL may point.
    pub policy: driftwatch_net::TargetPolicy,
    /// The most bytes of one HTTP answer read.
    pub max_body_bytes: usize,
    /// `max_tokens` of a first call; a call cut short (`finish_reason: length`) is asked once
    /// more with four times as many.
    pub max_tokens: u32,
    /// The most characters of diff sent.
    pub diff_budget_chars: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            policy: driftwatch_net::TargetPolicy::default(),
            max_body_bytes: 1 << 20,
            max_tokens: 1024,
            diff_budget_chars: 12_000,
        }
    }
}

/// Tokens used, as the server counted them (zero when it did not say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens of the prompt.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

impl Usage {
    /// Both.
    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// A verdict and what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The verdict.
    pub answer: Answer,
    /// Tokens of every call it took.
    pub usage: Usage,
    /// HTTP calls it took (2 when the first was cut short).
    pub calls: u32,
}

/// Why a call gave no verdict. Every kind is worth retrying later.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The server answered with an error status.
    #[error("the model's server answered {status}{}", detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Status {
        /// The HTTP status.
        status: u16,
        /// Its `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
        /// The start of its error message, when it sent one.
        detail: Option<String>,
    },
    /// No answer within the time allowed.
    #[error("the model did not answer within {} s", .0.as_secs())]
    Timeout(Duration),
    /// The connection failed, or the address guard refused it.
    #[error("the model's server could not be reached: {0}")]
    Transport(String),
    /// The answer could not be read.
    #[error(transparent)]
    Answer(#[from] crate::AnswerError),
    /// The answer was cut short twice (`finish_reason: length`).
    #[error("the model's answer was cut short twice")]
    Truncated,
    /// The body was larger than allowed.
    #[error("the model's server sent more than {0} bytes")]
    TooLarge(usize),
}

impl CallError {
    /// How long the server asked to wait, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            CallError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A client of one model on one server.
#[derive(Debug, Clone)]
pub struct Client {
    config: ModelConfig,
    options: ClientOptions,
    http: reqwest::Client,
    chat_url: url::Url,
    models_url: url::Url,
}

impl Client {
    /// A client for `config`; fails when the base URL is not http(s).
    pub fn new(config: ModelConfig, options: ClientOptions) -> Result<Client, CallError> {
        let base = &config.base_url;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none_or(str::is_empty) {
            return Err(CallError::Transport(format!(
                "the model's base URL must be http:// or https:// with a host (got `{}:`)",
                base.scheme()
            )));
        }
        let net = driftwatch_net::ClientOptions {
            policy: policy(&config, &options),
            connect_timeout: CONNECT_TIMEOUT,
            // `judge` and `models` bound each whole exchange; this is a backstop.
            timeout: BACKSTOP_TIMEOUT,
            user_agent: format!("driftwatch/{} (model client)", env!("CARGO_PKG_VERSION")),
            redirects: driftwatch_net::Redirects::None,
            proxy: None,
        };
        let http = driftwatch_net::client_builder(&net)
            .and_then(reqwest::ClientBuilder::build)
            .map_err(|e| CallError::Transport(format!("cannot build the HTTP client: {e}")))?;
        let chat_url = endpoint(base, "chat/completions")?;
        let models_url = endpoint(base, "models")?;
        Ok(Client { config, options, http, chat_url, models_url })
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// Asks for a verdict on one change, within `timeout` for the whole of it.
    ///
    /// One call, and once more when the server refuses the JSON schema (a 400 naming
    /// `response_format` or `json_schema`: asked again for any JSON object) or cuts the answer
    /// short (asked again with four times `max_tokens`; cut short twice is
    /// [`CallError::Truncated`]). Without an intent the verdict is never important and has no
    /// reason, whatever the model said.
    pub async fn judge(&self, ask: &Ask<'_>, timeout: Duration) -> Result<Answered, CallError> {
        let result = tokio::time::timeout(timeout, self.judge_calls(ask)).await;
        let result = result.unwrap_or(Err(CallError::Timeout(timeout)));
        if let Err(e) = &result {
            // The kind only: an unreadable answer's message quotes the model's text.
            tracing::debug!(model = %self.config.model, error = error_kind(e), "no verdict from the model");
        }
        result
    }

    async fn judge_calls(&self, ask: &Ask<'_>) -> Result<Answered, CallError> {
        let messages = crate::prompt::messages(ask, self.options.diff_budget_chars);
        let mut format = crate::prompt::response_format();
        let mut max_tokens = self.options.max_tokens;
        let mut usage = Usage::default();
        let (mut calls, mut downgraded, mut extended) = (0u32, false, false);
        loop {
            calls += 1;
            let body = serde_json::json!({
                "model": self.config.model,
                "messages": messages,
                "temperature": 0,
                "max_tokens": max_tokens,
                "response_format": format,
                "stream": false,
            });
            let started = std::time::Instant::now();
            let exchange = self.wire().send(reqwest::Method::POST, self.chat_url.clone(), Some(&body)).await?;
            if !exchange.ok() {
                self.log_call(exchange.status, started, Usage::default());
                if !downgraded && exchange.refuses_format() {
                    downgraded = true;
                    format = crate::prompt::json_object_format();
                    continue;
                }
                return Err(exchange.into_error());
            }
            let completion = Completion::read(&exchange.body)?;
            self.log_call(exchange.status, started, completion.usage);
            usage.prompt_tokens = usage.prompt_tokens.saturating_add(completion.usage.prompt_tokens);
            usage.completion_tokens = usage.completion_tokens.saturating_add(completion.usage.completion_tokens);
            if completion.finish_reason == "length" {
                if extended {
                    return Err(CallError::Truncated);
                }
                extended = true;
                max_tokens = max_tokens.saturating_mul(4);
                continue;
            }
            let mut answer = crate::answer::parse_content(&completion.content)?;
            if ask.intent.is_none() {
                // Summary only: there is nothing to be important for.
                answer.important = false;
                answer.reason.clear();
            }
            return Ok(Answered { answer, usage, calls });
        }
    }

    /// The models the server offers (`GET {base}/models`), sorted.
    ///
    /// Deduplicated, at most [`MAX_MODELS`].
    pub async fn models(&self, timeout: Duration) -> Result<Vec<String>, CallError> {
        let call = async {
            let started = std::time::Instant::now();
            let exchange = self.wire().send(reqwest::Method::GET, self.models_url.clone(), None).await?;
            self.log_call(exchange.status, started, Usage::default());
            if !exchange.ok() {
                return Err(exchange.into_error());
            }
            model_names(&exchange.body)
        };
        tokio::time::timeout(timeout, call).await.unwrap_or(Err(CallError::Timeout(timeout)))
    }

    fn wire(&self) -> Wire<'_> {
        Wire {
            http: &self.http,
            base: &self.config.base_url,
            // An empty key field means none.
            key: self.config.api_key.as_deref().filter(|key| !key.trim().is_empty()),
            policy: policy(&self.config, &self.options),
            max_body: self.options.max_body_bytes,
        }
    }

    fn log_call(&self, status: u16, started: std::time::Instant, usage: Usage) {
        tracing::debug!(
            model = %self.config.model,
            status,
            duration_ms = started.elapsed().as_millis() as u64,
            prompt_tokens = usage.prompt_tokens,
            completion_tokens = usage.completion_tokens,
            "model call"
        );
    }
}

/// What went wrong, in a word, for the logs.
fn error_kind(error: &CallError) -> &'static str {
    match error {
        CallError::Status { .. } => "status",
        CallError::Timeout(_) => "timeout",
        CallError::Transport(_) => "transport",
        CallError::Answer(crate::AnswerError::Empty) => "empty",
        CallError::Answer(crate::AnswerError::Garbage(_)) => "garbage",
        CallError::Truncated => "truncated",
        CallError::TooLarge(_) => "too_large",
    }
}

/// The most model names [`Client::models`] returns.
pub const MAX_MODELS: usize = 500;
/// Time to connect to the model's server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// The HTTP client's own limit on one request, behind the caller's timeout.
const BACKSTOP_TIMEOUT: Duration = Duration::from_secs(3600);

/// Where the client may connect: anywhere for an operator's (trusted) server.
fn policy(config: &ModelConfig, options: &ClientOptions) -> driftwatch_net::TargetPolicy {
    if config.trusted { driftwatch_net::TargetPolicy { allow_private: true } } else { options.policy }
}

/// `path` under the base URL, its path kept (`http://h/v1` and `http://h/v1/` both give
/// `http://h/v1/{path}`).
fn endpoint(base: &url::Url, path: &str) -> Result<url::Url, CallError> {
    let mut dir = base.clone();
    dir.set_query(None);
    dir.set_fragment(None);
    if !dir.path().ends_with('/') {
        let with_slash = format!("{}/", dir.path());
        dir.set_path(&with_slash);
    }
    dir.join(path).map_err(|e| CallError::Transport(format!("the model's base URL cannot take `{path}`: {e}")))
}

/// What a chat completion says.
struct Completion {
    content: String,
    finish_reason: String,
    usage: Usage,
}

impl Completion {
    fn read(body: &[u8]) -> Result<Completion, CallError> {
        let garbage = |what: &str| CallError::Answer(crate::AnswerError::Garbage(what.to_owned()));
        let json: serde_json::Value =
            serde_json::from_slice(body).map_err(|_| garbage("the server's answer is not JSON"))?;
        let choice = json["choices"].get(0).ok_or_else(|| garbage("the server's answer has no choices"))?;
        let content = match &choice["message"]["content"] {
            serde_json::Value::String(text) => text.clone(),
            serde_json::Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
            _ => String::new(),
        };
        let count = |name: &str| json["usage"][name].as_u64().unwrap_or(0);
        Ok(Completion {
            content,
            finish_reason: choice["finish_reason"].as_str().unwrap_or("").to_owned(),
            usage: Usage { prompt_tokens: count("prompt_tokens"), completion_tokens: count("completion_tokens") },
        })
    }
}

/// `data[].id` of a model list, sorted, deduplicated, at most [`MAX_MODELS`].
fn model_names(body: &[u8]) -> Result<Vec<String>, CallError> {
    let json: serde_json::Value = serde_json::from_slice(body).map_err(|_| {
        CallError::Answer(crate::AnswerError::Garbage("the server's model list is not JSON".to_owned()))
    })?;
    let data = json["data"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut names: Vec<String> =
        data.iter().filter_map(|m| m["id"].as_str()).filter(|id| !id.is_empty()).map(str::to_owned).collect();
    names.sort();
    names.dedup();
    names.truncate(MAX_MODELS);
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_keep_the_base_path() {
        let url = |s: &str| url::Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        for base in ["http://h:11434/v1", "http://h:11434/v1/", "http://h:11434/v1?x=1"] {
            assert_eq!(
                endpoint(&url(base), "chat/completions").ok().map(String::from).as_deref(),
                Some("http://h:11434/v1/chat/completions")
            );
        }
        assert_eq!(endpoint(&url("https://h"), "models").ok().map(String::from).as_deref(), Some("https://h/models"));
    }

    #[test]
    fn only_http_and_https_base_urls_make_a_client() {
        let config = |base: &str| ModelConfig {
            base_url: url::Url::parse(base).unwrap_or_else(|e| panic!("{base}: {e}")),
            model: "m".into(),
            api_key: None,
            trusted: false,
        };
        for bad in ["ftp://h/v1", "file:///v1", "unix:/run/ollama.sock"] {
            let err = Client::new(config(bad), ClientOptions::default()).expect_err(bad);
            assert!(matches!(&err, CallError::Transport(m) if m.contains("http:// or https://")), "{err}");
        }
        assert!(Client::new(config("https://api.example/v1"), ClientOptions::default()).is_ok());
    }

    #[test]
    fn model_lists_are_sorted_deduplicated_and_bounded() {
        let body = serde_json::json!({"data": [{"id": "b"}, {"id": "a"}, {"id": "b"}, {"id": ""}, {"x": 1}]});
        assert_eq!(model_names(body.to_string().as_bytes()).ok(), Some(vec!["a".to_owned(), "b".to_owned()]));
        let many: Vec<serde_json::Value> = (0..600).map(|i| serde_json::json!({"id": format!("m{i:03}")})).collect();
        let names = model_names(serde_json::json!({"data": many}).to_string().as_bytes()).unwrap_or_default();
        assert_eq!((names.len(), names[0].as_str()), (MAX_MODELS, "m000"));
        assert!(model_names(b"<html>").is_err());
    }
}
