//! The OpenAI-compatible client.

use std::time::Duration;

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
}

impl Client {
    /// A client for `config`; fails when the base URL is not http(s).
    pub fn new(config: ModelConfig, options: ClientOptions) -> Result<Client, CallError> {
        Ok(Client { config, options })
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// Asks for a verdict on one change, within `timeout` for the whole of it.
    pub async fn judge(&self, ask: &Ask<'_>, timeout: Duration) -> Result<Answered, CallError> {
        let _ = (ask, &self.options);
        Err(CallError::Timeout(timeout))
    }

    /// The models the server offers (`GET {base}/models`), sorted.
    pub async fn models(&self, timeout: Duration) -> Result<Vec<String>, CallError> {
        Err(CallError::Timeout(timeout))
    }
}
