//! One question to the model on behalf of an account: the cache first, then the account's
//! daily budget, then the model. The verdict loop and the backtest both ask through here.

use std::time::{Duration, Instant};

use driftwatch_store::verdicts;
use driftwatch_store::{CachedVerdict, StoreError};

use super::{Judge, day_of, model_for};
use crate::{Answer, Ask, CallError, Client};

/// How a question ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A verdict, from the model or the cache.
    Answered(Asked),
    /// Not asked: no model is configured, or the account's daily budget is spent. Says why.
    Refused(String),
    /// The model was asked and gave no verdict.
    Failed(CallError),
}

/// A verdict and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The verdict.
    pub answer: Answer,
    /// The model that gave it.
    pub model: String,
    /// Tokens it cost now (0 from the cache).
    pub tokens: u64,
    /// Tokens it cost when the model was asked (the same as `tokens` unless cached).
    pub cost: u64,
    /// Whether it came from the cache.
    pub cached: bool,
}

impl Judge {
    /// Asks for a verdict on `ask` for `account_id`, within `timeout`: a cached verdict on the
    /// same question to the same model is the answer; otherwise, unless the account's daily
    /// budget is spent, the model is asked and its answer counted and remembered.
    pub async fn ask(&self, account_id: &str, ask: &Ask<'_>, timeout: Duration) -> Result<Outcome, StoreError> {
        let inner = &self.inner;
        let account = account_id.to_owned();
        let own = inner.store.read(move |c| verdicts::account_model(c, &account)).await?;
        let (config, budget) =
            match model_for(inner.config.operator.as_ref(), &own, inner.keyring.as_ref(), inner.config.daily_tokens) {
                Ok(found) => found,
                Err(why) => return Ok(Outcome::Refused(why)),
            };
        let model = config.model.clone();
        let key = crate::cache_key(&model, ask);
        let lookup = key.clone();
        if let Some(hit) = inner.store.read(move |c| verdicts::cached(c, &lookup)).await? {
            let answer = Answer { important: hit.important, reason: hit.reason, summary: hit.summary };
            let cost = u64::try_from(hit.tokens).unwrap_or(0);
            return Ok(Outcome::Answered(Asked { answer, model: hit.model, tokens: 0, cost, cached: true }));
        }
        let day = day_of(self.now());
        if let Some(budget) = budget {
            let (account, today) = (account_id.to_owned(), day.clone());
            let spent = inner.store.read(move |c| verdicts::spent(c, &account, &today)).await?;
            if u64::try_from(spent).unwrap_or(0) >= budget {
                return Ok(Outcome::Refused(format!(
                    "the account's daily budget of {budget} tokens is spent ({spent} used today, UTC)"
                )));
            }
        }
        let client = match self.client(config) {
            Ok(client) => client,
            Err(e) => return Ok(Outcome::Refused(e.to_string())),
        };
        let started = Instant::now();
        let answered = client.judge(ask, timeout).await;
        let elapsed = started.elapsed();
        let answered = match answered {
            Ok(answered) => answered,
            Err(e) => {
                inner.config.metrics.model_call(error_kind(&e), elapsed, 0);
                tracing::info!(model = %model, error = %e, elapsed_ms = elapsed.as_millis() as u64, "the model gave no verdict");
                return Ok(Outcome::Failed(e));
            }
        };
        let tokens = answered.usage.total();
        inner.config.metrics.model_call("ok", elapsed, tokens);
        tracing::debug!(model = %model, tokens, calls = answered.calls, elapsed_ms = elapsed.as_millis() as u64, "the model answered");
        let remembered = CachedVerdict {
            key,
            model: model.clone(),
            important: answered.answer.important,
            reason: answered.answer.reason.clone(),
            summary: answered.answer.summary.clone(),
            tokens: i64::try_from(tokens).unwrap_or(i64::MAX),
            created_at: self.now(),
        };
        let (account, calls) = (account_id.to_owned(), i64::from(answered.calls));
        inner
            .store
            .write(move |c| {
                verdicts::remember(c, &remembered)?;
                verdicts::spend(c, &account, &day, remembered.tokens, calls)
            })
            .await?;
        Ok(Outcome::Answered(Asked { answer: answered.answer, model, tokens, cost: tokens, cached: false }))
    }
}

/// Most model clients kept (one per server, model and key in use).
const CLIENTS_KEPT: usize = 64;

impl Judge {
    /// The client of `config`, built once: building one loads the TLS roots, which costs
    /// milliseconds of CPU, far more than a check; a client is a handle to a shared pool.
    fn client(&self, config: crate::ModelConfig) -> Result<Client, CallError> {
        let key = format!(
            "{}\u{0}{}\u{0}{}\u{0}{}",
            config.base_url,
            config.model,
            config.trusted,
            config.api_key.as_deref().unwrap_or_default()
        );
        let mut clients = self.inner.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = Client::new(config, self.inner.config.client.clone())?;
        if clients.len() >= CLIENTS_KEPT {
            clients.clear();
        }
        clients.insert(key, client.clone());
        Ok(client)
    }
}

/// The metric label of a failed call.
fn error_kind(e: &CallError) -> &'static str {
    match e {
        CallError::Status { .. } => "status",
        CallError::Timeout(_) => "timeout",
        CallError::Transport(_) => "transport",
        CallError::Answer(_) => "answer",
        CallError::Truncated => "truncated",
        CallError::TooLarge(_) => "too_large",
    }
}
