//! API tokens: create one (its secret shown once), list them with their prefix and last use,
//! revoke one.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_store::{ApiToken, Page, accounts};
use serde::Deserialize;

use super::error::UiError;
use super::flash;
use super::form::Field;
use super::layout::{Layout, html, render};
use super::present::When;
use super::session::{Post, Viewer};
use crate::AppState;

/// A token as listed.
#[derive(Debug, Clone)]
pub struct TokenRow {
    /// `tok_...`.
    pub id: String,
    /// Its label.
    pub name: String,
    /// The first characters of the secret.
    pub prefix: String,
    /// `read write`.
    pub scopes: String,
    /// Created.
    pub created: When,
    /// Last used.
    pub used: Option<When>,
    /// Revoked.
    pub revoked: Option<When>,
}

#[derive(Template)]
#[template(path = "tokens.html")]
struct TokensPage {
    layout: Layout,
    tokens: Vec<TokenRow>,
    token_name: Field,
    write: bool,
    created: Option<(String, String)>,
}

impl TokensPage {
    async fn load(state: &AppState, viewer: &Viewer) -> Result<TokensPage, UiError> {
        let account = viewer.account_id().to_owned();
        let list: Vec<ApiToken> =
            state.store.read(move |c| accounts::list_tokens(c, &account, &Page { after: None, limit: 200 })).await?;
        let now = state.clock.now();
        let zone = viewer.user.time_zone.as_str();
        let (notice, reveal) = flash::take_with_reveal(state, viewer).await?;
        Ok(TokensPage {
            layout: Layout::signed_in(viewer, "tokens", "API tokens").with_notice(notice),
            tokens: list
                .into_iter()
                .map(|t| TokenRow {
                    created: When::new(t.created_at, now, zone),
                    used: t.last_used_at.map(|u| When::new(u, now, zone)),
                    revoked: t.revoked_at.map(|r| When::new(r, now, zone)),
                    id: t.id,
                    name: t.name,
                    prefix: t.prefix,
                    scopes: t.scopes,
                })
                .collect(),
            token_name: Field::default(),
            write: true,
            created: reveal.filter(|r| r.of.starts_with("tok_")).map(|r| (r.label, r.value)),
        })
    }
}

/// `GET /tokens`.
pub async fn list(State(state): State<AppState>, viewer: Viewer) -> Result<Response, UiError> {
    Ok(html(&TokensPage::load(&state, &viewer).await?))
}

/// Body of `POST /tokens`.
#[derive(Debug, Deserialize)]
pub struct NewToken {
    #[serde(default)]
    name: String,
    /// Present when the token may write.
    #[serde(default)]
    write: Option<String>,
}

/// `POST /tokens`: creates a token and shows its secret this once.
pub async fn create(State(state): State<AppState>, post: Post<NewToken>) -> Result<Response, UiError> {
    let form = post.form;
    let scopes: Vec<String> =
        if form.write.is_some() { vec!["read".into(), "write".into()] } else { vec!["read".into()] };
    let mut page = TokensPage::load(&state, &post.viewer).await?;
    let (name, scopes) = match driftwatch_validate::token(&form.name, Some(scopes)) {
        Ok(valid) => valid,
        Err(e) => {
            page.token_name = Field { value: form.name, error: e.message_for("name") };
            page.write = form.write.is_some();
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let (account, now) = (post.viewer.account_id().to_owned(), state.clock.now().naive_utc());
    let (token, plaintext) =
        state.store.write(move |c| accounts::create_token(c, &account, &name, &scopes, now)).await?;
    tracing::info!(token.id = %token.id, token.prefix = %token.prefix, "token created from the UI");
    // Post/Redirect/Get: a reload cannot make a second token; the new one is shown this once.
    let reveal = flash::Reveal { of: token.id, value: plaintext, label: token.name };
    flash::set_reveal(&state, &post.viewer, "Token created. Copy it now: it is not shown again.", reveal).await?;
    Ok(Redirect::to("/tokens").into_response())
}

/// `POST /tokens/{id}/revoke`.
pub async fn revoke(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let (account, now) = (post.viewer.account_id().to_owned(), state.clock.now().naive_utc());
    let revoked = state.store.write(move |c| accounts::revoke_token(c, &account, &id, now)).await?;
    if !revoked {
        return Err(UiError::NotFound("token"));
    }
    flash::set(&state, &post.viewer, "Token revoked: it no longer works.").await?;
    Ok(Redirect::to("/tokens").into_response())
}
