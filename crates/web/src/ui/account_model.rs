//! The account page's language model: which model judges this account's changes (its own, the
//! server's, or none), a form to set the account's own (base URL, model, API key, daily token
//! budget; the key is sealed and never shown again), removing the stored key, going back to
//! the server's model, and the tokens spent today.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_store::verdicts::{self, AccountModel};
use driftwatch_validate::{Invalid, ModelInput};
use serde::Deserialize;

use super::account::AccountPage;
use super::error::UiError;
use super::flash;
use super::form::{Field, number};
use super::layout::render;
use super::session::Post;
use crate::AppState;

/// Which model judges an account's changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelInUse {
    /// AI is turned off on this server: changes go out without a verdict.
    Off,
    /// The account's own model, by name.
    Own(String),
    /// The operator's model, by name.
    Server(String),
    /// None is configured: changes go out without a verdict (or are held).
    Missing,
}

impl ModelInUse {
    /// The model `own` settings leave this account with on this server.
    pub fn of(state: &AppState, own: &AccountModel) -> ModelInUse {
        let config = state.judge.config();
        if !config.enabled {
            return ModelInUse::Off;
        }
        match (&own.base_url, &own.model, &config.operator) {
            (Some(_), Some(model), _) => ModelInUse::Own(model.clone()),
            (_, _, Some(operator)) => ModelInUse::Server(operator.model.clone()),
            _ => ModelInUse::Missing,
        }
    }

    /// Whether changes get no verdict, whatever a watch asks.
    pub fn none(&self) -> bool {
        matches!(self, ModelInUse::Off | ModelInUse::Missing)
    }

    /// What it means, in a sentence.
    pub fn sentence(&self) -> String {
        match self {
            ModelInUse::Off => "AI is turned off on this server: changes go out at once, without a verdict.".into(),
            ModelInUse::Own(model) => format!("Your account's own model, {model}, judges your changes."),
            ModelInUse::Server(model) => format!("The server's model, {model}, judges your changes."),
            ModelInUse::Missing => "No model is configured, for your account nor by the server's operator: changes \
                                    go out without a verdict (or are held, when the watch says so)."
                .into(),
        }
    }
}

/// The "Language model" section of the account page.
#[derive(Debug, Clone, Default)]
pub struct ModelSection {
    /// Which model is in use, in a sentence.
    pub in_use: String,
    /// No model judges this account's changes.
    pub none: bool,
    /// The account has its own model.
    pub own: bool,
    /// Its base URL.
    pub base_url: Field,
    /// Its model's name.
    pub model: Field,
    /// Only the error: a key is never shown.
    pub api_key: Field,
    /// Its daily token budget.
    pub daily_tokens: Field,
    /// A key is stored.
    pub has_key: bool,
    /// Tokens spent today (UTC), with the budget that applies.
    pub spent: String,
}

impl ModelSection {
    /// The section for `own` settings, with `spent` tokens used today.
    pub fn of(state: &AppState, own: &AccountModel, spent: i64) -> ModelSection {
        let in_use = ModelInUse::of(state, own);
        let own_model = matches!(in_use, ModelInUse::Own(_));
        let budget = match &in_use {
            ModelInUse::Own(_) => own.daily_tokens.filter(|t| *t > 0),
            _ => i64::try_from(state.judge.config().daily_tokens).ok().filter(|t| *t > 0),
        };
        let spent = match budget {
            Some(budget) => format!("{} of {} tokens a day", grouped(spent), grouped(budget)),
            None => format!("{} tokens, with no daily limit", grouped(spent)),
        };
        ModelSection {
            in_use: in_use.sentence(),
            none: in_use.none(),
            own: own_model,
            base_url: Field::of(own.base_url.as_deref().unwrap_or_default()),
            model: Field::of(own.model.as_deref().unwrap_or_default()),
            api_key: Field::default(),
            daily_tokens: Field::of(&own.daily_tokens.map(|t| t.to_string()).unwrap_or_default()),
            has_key: own.api_key.is_some(),
            spent,
        }
    }
}

/// `1234567` as `1,234,567`.
fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// `account_id`'s own model settings and its tokens spent today.
pub fn load(
    c: &mut driftwatch_store::DbConn,
    account_id: &str,
    day: &str,
) -> driftwatch_store::StoreResult<(AccountModel, i64)> {
    Ok((verdicts::account_model(c, account_id)?, verdicts::spent(c, account_id, day)?))
}

/// Body of `POST /account/model`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ModelForm {
    base_url: String,
    model: String,
    api_key: String,
    daily_tokens: String,
}

/// `POST /account/model`: validates and stores the account's own model (a new key sealed; an
/// empty key field keeps the stored one), or shows the errors beside the fields.
pub async fn save(State(state): State<AppState>, post: Post<ModelForm>) -> Result<Response, UiError> {
    let form = post.form;
    let mut errors = Vec::new();
    let daily_tokens = number::<i64>("daily_tokens", &form.daily_tokens, &mut errors);
    let input = ModelInput {
        base_url: form.base_url.clone(),
        model: form.model.clone(),
        api_key: Some(form.api_key.clone()),
        daily_tokens,
    };
    let valid = driftwatch_validate::account_model(&input, state.policy);
    let valid = match (valid, errors.is_empty()) {
        (Ok(valid), true) => valid,
        (result, _) => {
            errors.extend(result.err().map(|Invalid(e)| e).unwrap_or_default());
            let mut page = AccountPage::load(&state, &post.viewer).await?;
            let section = &mut page.model;
            section.base_url = Field::of(&form.base_url);
            section.model = Field::of(&form.model);
            section.daily_tokens = Field::of(&form.daily_tokens);
            for e in errors {
                let field = match e.field.as_str() {
                    "base_url" => &mut section.base_url,
                    "model" => &mut section.model,
                    "api_key" => &mut section.api_key,
                    _ => &mut section.daily_tokens,
                };
                field.error.get_or_insert(e.message);
            }
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let account = post.viewer.account_id().to_owned();
    let sealed = valid.api_key.as_deref().map(|k| state.seal(k));
    let new_key = sealed.is_some();
    let model = valid.model.clone();
    state
        .store
        .write(move |c| {
            let stored = verdicts::account_model(c, &account)?;
            let settings = AccountModel {
                base_url: Some(valid.base_url),
                model: Some(valid.model),
                api_key: sealed.or(stored.api_key),
                daily_tokens: valid.daily_tokens,
            };
            verdicts::set_account_model(c, &account, &settings)
        })
        .await?;
    tracing::info!(account.id = %post.viewer.account_id(), new_key, "account model set from the UI");
    flash::set(&state, &post.viewer, format!("Saved: {model} now judges your changes.")).await?;
    Ok(Redirect::to("/account#model").into_response())
}

/// `POST /account/model/remove-key`: forgets the stored key (the model stays).
pub async fn remove_key(State(state): State<AppState>, post: Post<Vec<(String, String)>>) -> Result<Response, UiError> {
    let account = post.viewer.account_id().to_owned();
    state
        .store
        .write(move |c| {
            let stored = verdicts::account_model(c, &account)?;
            verdicts::set_account_model(c, &account, &AccountModel { api_key: None, ..stored })
        })
        .await?;
    tracing::info!(account.id = %post.viewer.account_id(), "account model key removed from the UI");
    flash::set(&state, &post.viewer, "The stored key is removed; the model is now asked without one.").await?;
    Ok(Redirect::to("/account#model").into_response())
}

/// `POST /account/model/clear`: forgets the account's own model, key included; the server's
/// model (if any) judges its changes again.
pub async fn clear(State(state): State<AppState>, post: Post<Vec<(String, String)>>) -> Result<Response, UiError> {
    let account = post.viewer.account_id().to_owned();
    state.store.write(move |c| verdicts::set_account_model(c, &account, &AccountModel::default())).await?;
    tracing::info!(account.id = %post.viewer.account_id(), "account model cleared from the UI");
    let own = AccountModel::default();
    let message = format!("Your own model is forgotten. {}", ModelInUse::of(&state, &own).sentence());
    flash::set(&state, &post.viewer, message).await?;
    Ok(Redirect::to("/account#model").into_response())
}

#[cfg(test)]
mod tests {
    #[test]
    fn token_counts_are_grouped_by_thousands() {
        assert_eq!(super::grouped(0), "0");
        assert_eq!(super::grouped(999), "999");
        assert_eq!(super::grouped(1234), "1,234");
        assert_eq!(super::grouped(1_000_000), "1,000,000");
        assert_eq!(super::grouped(-12_345), "-12,345");
    }
}
