//! Language-model verdicts on changes: whether a change matters for a watch's intent, why, and
//! a summary, from any OpenAI-compatible server (Ollama, llama.cpp's server, vLLM, LM Studio, a
//! cloud API).
//!
//! - [`client`]: `POST {base}/chat/completions` with a JSON schema for the answer and
//!   `temperature: 0`, `GET {base}/models`; bounded answers; the key only to the configured
//!   origin.
//! - [`answer`]: reading what models actually send (fenced JSON, a `<think>` block first).
//! - [`prompt`]: the instructions, the intent word for word, the diff as unified lines trimmed
//!   to what is relevant to the intent within a budget, and the cache key.
//! - [`backtest`]: an intent tried on a watch's past would-be alerts, through the cache and
//!   the budget, a few at a time, bounded in time.

pub mod answer;
pub mod backtest;
pub mod client;
pub mod judge;
pub mod prompt;
pub mod trim;
mod wire;

pub use answer::{Answer, AnswerError};
pub use backtest::{AiBacktest, AiVerdict, judge_all};
pub use client::{Answered, CallError, Client, ClientOptions, ModelConfig, Usage};
pub use judge::{Judge, JudgeConfig, OperatorModel};
pub use prompt::{Ask, PROMPT_VERSION, cache_key};
