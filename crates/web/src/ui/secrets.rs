//! The account's named secrets (what login steps type): add one, replace its value, delete it.
//! Values go in and are never shown back, not even after an error.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_store::logins;
use serde::Deserialize;

use super::error::UiError;
use super::flash;
use super::form::Field;
use super::layout::{Layout, html, render};
use super::present::When;
use super::session::{Post, Viewer};
use crate::AppState;

/// A secret as listed (never its value).
#[derive(Debug, Clone)]
pub struct SecretRow {
    /// Its name.
    pub name: String,
    /// Set first.
    pub created: When,
    /// Value last set.
    pub updated: When,
    /// Why its replacement just failed.
    pub error: Option<String>,
}

#[derive(Template)]
#[template(path = "secrets.html")]
struct SecretsPage {
    layout: Layout,
    secrets: Vec<SecretRow>,
    new_name: Field,
    new_value: Field,
}

impl SecretsPage {
    async fn load(state: &AppState, viewer: &Viewer) -> Result<SecretsPage, UiError> {
        let account = viewer.account_id().to_owned();
        let rows = state.store.read(move |c| logins::list_secrets(c, &account)).await?;
        let (now, zone) = (state.clock.now(), viewer.user.time_zone.as_str());
        let notice = flash::take(state, viewer).await?;
        Ok(SecretsPage {
            layout: Layout::signed_in(viewer, "account", "Secrets").with_notice(notice),
            secrets: rows
                .into_iter()
                .map(|s| SecretRow {
                    created: When::new(s.created_at, now, zone),
                    updated: When::new(s.updated_at, now, zone),
                    name: s.name,
                    error: None,
                })
                .collect(),
            new_name: Field::default(),
            new_value: Field::default(),
        })
    }
}

/// `GET /secrets`.
pub async fn list(State(state): State<AppState>, viewer: Viewer) -> Result<Response, UiError> {
    Ok(html(&SecretsPage::load(&state, &viewer).await?))
}

/// Body of `POST /secrets`.
#[derive(Debug, Deserialize)]
pub struct NewSecret {
    #[serde(default)]
    name: String,
    #[serde(default)]
    value: String,
}

/// `POST /secrets`: adds a secret.
pub async fn create(State(state): State<AppState>, post: Post<NewSecret>) -> Result<Response, UiError> {
    let form = post.form;
    let account = post.viewer.account_id().to_owned();
    let valid = driftwatch_validate::secret(&form.name, &form.value);
    let exists = match &valid {
        Ok((name, _)) => {
            let (account, name) = (account.clone(), name.clone());
            state.store.read(move |c| logins::get_secret(c, &account, &name)).await?.is_some()
        }
        Err(_) => false,
    };
    let (name, value) = match valid {
        Ok(valid) if !exists => valid,
        result => {
            let mut page = SecretsPage::load(&state, &post.viewer).await?;
            let (name_error, value_error) = match result {
                Err(e) => (e.message_for("name"), e.message_for("value")),
                Ok(_) => (Some("a secret with this name exists: replace its value below".to_owned()), None),
            };
            page.new_name = Field { value: form.name, error: name_error };
            // The value is never echoed back, even to its author.
            page.new_value = Field { value: String::new(), error: value_error };
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let (sealed, now) = (state.seal(&value), state.clock.now().naive_utc());
    let shown = name.clone();
    let (secret, _) = state.store.write(move |c| logins::set_secret(c, &account, &name, &sealed, now)).await?;
    tracing::info!(secret.id = %secret.id, "secret created from the UI");
    flash::set(&state, &post.viewer, &format!("Secret “{shown}” saved. Steps type it as {{\"secret\": \"{shown}\"}}."))
        .await?;
    Ok(Redirect::to("/secrets").into_response())
}

/// Body of `POST /secrets/{name}/replace`.
#[derive(Debug, Deserialize)]
pub struct Replacement {
    #[serde(default)]
    value: String,
}

/// `POST /secrets/{name}/replace`: a new value.
pub async fn replace(
    State(state): State<AppState>,
    Path(name): Path<String>,
    post: Post<Replacement>,
) -> Result<Response, UiError> {
    let account = post.viewer.account_id().to_owned();
    let (look, owner) = (name.clone(), account.clone());
    if state.store.read(move |c| logins::get_secret(c, &owner, &look)).await?.is_none() {
        return Err(UiError::NotFound("secret"));
    }
    let (name, value) = match driftwatch_validate::secret(&name, &post.form.value) {
        Ok(valid) => valid,
        Err(e) => {
            let mut page = SecretsPage::load(&state, &post.viewer).await?;
            let why = e.message_for("value").unwrap_or_else(|| e.to_string());
            if let Some(row) = page.secrets.iter_mut().find(|r| r.name == name) {
                row.error = Some(why);
            }
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let (sealed, now) = (state.seal(&value), state.clock.now().naive_utc());
    let shown = name.clone();
    state.store.write(move |c| logins::set_secret(c, &account, &name, &sealed, now)).await?;
    flash::set(&state, &post.viewer, &format!("Secret “{shown}” replaced.")).await?;
    Ok(Redirect::to("/secrets").into_response())
}

/// `POST /secrets/{name}/delete`.
pub async fn delete(
    State(state): State<AppState>,
    Path(name): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let account = post.viewer.account_id().to_owned();
    let shown = name.clone();
    let deleted = state.store.write(move |c| logins::delete_secret(c, &account, &name)).await?;
    if !deleted {
        return Err(UiError::NotFound("secret"));
    }
    flash::set(&state, &post.viewer, &format!("Secret “{shown}” deleted.")).await?;
    Ok(Redirect::to("/secrets").into_response())
}
