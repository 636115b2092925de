//! `/account/model` and `/account/models`: the language model an account's verdicts ask, its
//! own or the operator's, and the models its server offers.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use driftwatch_store::verdicts::{self, AccountModel};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::Json;

/// How long listing a server's models may take.
const MODELS_TIMEOUT: Duration = Duration::from_secs(10);

/// Whose model an account's verdicts ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ModelSource)]
pub enum Uses {
    /// The account's own (`base_url` and `model` are set).
    Account,
    /// The operator's (the account has none of its own).
    Operator,
    /// None: neither the account nor the operator configured one; changes get no verdict.
    None,
}

/// The account's own model, never its key.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AccountModel)]
pub struct ModelView {
    /// The account's own server (`http(s)://host[:port]/v1`), if set.
    base_url: Option<String>,
    /// The account's own model, if set.
    model: Option<String>,
    /// Whether a key is stored for it (the key itself is never shown).
    api_key_set: bool,
    /// Tokens its verdicts may spend a UTC day on its own model (null: no limit of its own).
    daily_tokens: Option<i64>,
    /// Whose model verdicts ask now.
    uses: Uses,
    /// The operator's model's name, if the operator configured one.
    operator_model: Option<String>,
}

/// Body of `PUT /account/model`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetAccountModel {
    /// The server's OpenAI-compatible base URL (`http(s)://host[:port]/v1`). A loopback or
    /// private address needs the operator's leave (`DRIFTWATCH_ALLOW_PRIVATE_TARGETS`).
    #[schema(pattern = "^\\s*[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]+([/?#][\\s\\S]*)?$", min_length = 1, max_length = 2048)]
    base_url: String,
    /// The model's name as the server knows it.
    #[schema(min_length = 1, max_length = 200)]
    model: String,
    /// A new key (sent as `Authorization: Bearer`, to this server only); `null` removes the
    /// stored one; left out (or empty), the stored one is kept.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    #[schema(max_length = 4096)]
    api_key: Option<Option<String>>,
    /// Tokens a UTC day (0 or left out: no limit of its own).
    #[schema(minimum = 0)]
    daily_tokens: Option<i64>,
}

/// The models a server offers.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ModelList)]
pub struct ModelList {
    /// Whose server was asked: the account's own, else the operator's.
    uses: Uses,
    /// The model verdicts ask now.
    model: String,
    /// The models the server offers, sorted.
    models: Vec<String>,
}

/// The account's own language model (never its key), and whose model its verdicts ask.
#[utoipa::path(
    get,
    path = "/account/model",
    operation_id = "get_account_model",
    tag = "account",
    responses((status = 200, description = "The account's model settings.", body = ModelView))
)]
pub async fn get(State(state): State<AppState>, caller: Caller) -> Result<axum::Json<ModelView>, ApiError> {
    let own = state.store.read(move |c| verdicts::account_model(c, &caller.account_id)).await?;
    Ok(axum::Json(view(&state, own)))
}

/// Sets the account's own model: its verdicts ask it instead of the operator's. The base URL
/// passes the address guard; the key is stored encrypted and never shown again.
#[utoipa::path(
    put,
    path = "/account/model",
    operation_id = "set_account_model",
    tag = "account",
    request_body = SetAccountModel,
    responses((status = 200, description = "The account's model settings.", body = ModelView))
)]
pub async fn set(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<SetAccountModel>,
) -> Result<axum::Json<ModelView>, ApiError> {
    let input = driftwatch_validate::ModelInput {
        base_url: body.base_url,
        model: body.model,
        api_key: body.api_key.clone().flatten(),
        daily_tokens: body.daily_tokens,
    };
    let valid = driftwatch_validate::account_model(&input, state.policy)?;
    // A new key is sealed here; `null` removes the stored one; otherwise it stays.
    let new_key = match (&body.api_key, &valid.api_key) {
        (_, Some(key)) => Some(Some(state.seal(key))),
        (Some(None), None) => Some(None),
        _ => None,
    };
    let account = caller.account_id;
    let stored = state
        .store
        .write(move |c| {
            let kept = verdicts::account_model(c, &account)?.api_key;
            let model = AccountModel {
                base_url: Some(valid.base_url),
                model: Some(valid.model),
                api_key: new_key.unwrap_or(kept),
                daily_tokens: valid.daily_tokens,
            };
            verdicts::set_account_model(c, &account, &model)?;
            Ok(model)
        })
        .await?;
    tracing::info!(
        model = stored.model.as_deref().unwrap_or_default(),
        key = stored.api_key.is_some(),
        "account model set"
    );
    Ok(axum::Json(view(&state, stored)))
}

/// Forgets the account's own model (its key too): its verdicts ask the operator's again.
#[utoipa::path(
    delete,
    path = "/account/model",
    operation_id = "delete_account_model",
    tag = "account",
    responses((status = 204, description = "Forgotten."))
)]
pub async fn delete(State(state): State<AppState>, caller: Caller) -> Result<StatusCode, ApiError> {
    state.store.write(move |c| verdicts::set_account_model(c, &caller.account_id, &AccountModel::default())).await?;
    tracing::info!("account model removed");
    Ok(StatusCode::NO_CONTENT)
}

/// The models the server of the account's model offers (the operator's when the account has
/// none of its own), as that server lists them. A server that cannot be reached, or answers
/// with an error, is a 502 saying what it said; no model configured at all is a 409.
#[utoipa::path(
    get,
    path = "/account/models",
    operation_id = "list_account_models",
    tag = "account",
    responses(
        (status = 200, description = "The models offered.", body = ModelList),
        (status = 409, description = "No model is configured, neither the account's own nor the operator's.",
         body = ApiError, content_type = "application/problem+json"),
        (status = 502, description = "The model's server failed or answered with an error; `detail` says what it said.",
         body = ApiError, content_type = "application/problem+json")
    )
)]
pub async fn models(State(state): State<AppState>, caller: Caller) -> Result<axum::Json<ModelList>, ApiError> {
    let account = caller.account_id.clone();
    let own = state.store.read(move |c| verdicts::account_model(c, &account)).await?;
    let uses = uses(&state, &own);
    let config = state.judge.model_of(&caller.account_id).await?.map_err(ApiError::conflict)?;
    let model = config.model.clone();
    let client = driftwatch_ai::Client::new(config, state.judge.config().client.clone())
        .map_err(|e| ApiError::bad_gateway(e.to_string()))?;
    let models = client.models(MODELS_TIMEOUT).await.map_err(|e| {
        tracing::info!(error = %e, "listing the model server's models failed");
        ApiError::bad_gateway(e.to_string())
    })?;
    Ok(axum::Json(ModelList { uses, model, models }))
}

/// Whose model `own`'s account asks.
fn uses(state: &AppState, own: &AccountModel) -> Uses {
    if own.base_url.is_some() && own.model.is_some() {
        Uses::Account
    } else if state.judge.config().operator.is_some() {
        Uses::Operator
    } else {
        Uses::None
    }
}

fn view(state: &AppState, own: AccountModel) -> ModelView {
    ModelView {
        uses: uses(state, &own),
        operator_model: state.judge.config().operator.as_ref().map(|o| o.model.clone()),
        api_key_set: own.api_key.is_some(),
        base_url: own.base_url,
        model: own.model,
        daily_tokens: own.daily_tokens,
    }
}
