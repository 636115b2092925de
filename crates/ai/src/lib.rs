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

pub mod answer;
pub mod client;
pub mod judge;
pub mod prompt;
pub mod trim;
mod wire;

pub use answer::{Answer, AnswerError};
pub use client::{Answered, CallError, Client, ClientOptions, ModelConfig, Usage};
pub use judge::{Judge, JudgeConfig, OperatorModel};
pub use prompt::{Ask, PROMPT_VERSION, cache_key};
