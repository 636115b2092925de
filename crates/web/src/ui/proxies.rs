//! The account's proxies: add one (its URL sealed, shown without the password), change its URL,
//! test it against a page, delete it when no watch names it.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_store::proxies;
use serde::Deserialize;

use super::error::UiError;
use super::flash;
use super::form::Field;
use super::layout::{Layout, html, render};
use super::present::When;
use super::session::{Post, Viewer};
use crate::AppState;
use crate::proxies::{DEFAULT_TEST_URL, SaveError};

/// A proxy as listed.
#[derive(Debug, Clone)]
pub struct ProxyRow {
    /// What watches call it.
    pub name: String,
    /// The URL without its password.
    pub shown: String,
    /// Added.
    pub created: When,
    /// The last test: when, whether it went through, and what it said.
    pub tested: Option<(When, bool, String)>,
}

#[derive(Template)]
#[template(path = "proxies.html")]
struct ProxiesPage {
    layout: Layout,
    proxies: Vec<ProxyRow>,
    new_name: Field,
    new_url: Field,
    test_url: String,
}

impl ProxiesPage {
    async fn load(state: &AppState, viewer: &Viewer) -> Result<ProxiesPage, UiError> {
        let account = viewer.account_id().to_owned();
        let list = state.store.read(move |c| proxies::list(c, &account)).await?;
        let (now, zone) = (state.clock.now(), viewer.user.time_zone.as_str());
        let notice = flash::take(state, viewer).await?;
        let proxies = list
            .into_iter()
            .map(|p| {
                let tested = p.tested_at.map(|at| {
                    let said = match (&p.test_error, p.test_status, p.test_ms) {
                        (Some(error), _, _) => error.clone(),
                        (None, Some(status), Some(ms)) => format!("HTTP {status} in {ms} ms"),
                        (None, Some(status), None) => format!("HTTP {status}"),
                        (None, None, _) => "no answer".to_owned(),
                    };
                    (When::new(at, now, zone), p.error_free(), said)
                });
                ProxyRow { created: When::new(p.created_at, now, zone), name: p.name, shown: p.shown, tested }
            })
            .collect();
        Ok(ProxiesPage {
            layout: Layout::signed_in(viewer, "proxies", "Proxies").with_notice(notice),
            proxies,
            new_name: Field::default(),
            new_url: Field::default(),
            test_url: DEFAULT_TEST_URL.to_owned(),
        })
    }
}

/// `GET /proxies`.
pub async fn list(State(state): State<AppState>, viewer: Viewer) -> Result<Response, UiError> {
    Ok(html(&ProxiesPage::load(&state, &viewer).await?))
}

/// Body of `POST /proxies` and `POST /proxies/{name}`.
#[derive(Debug, Deserialize)]
pub struct ProxyForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    url: String,
}

/// `POST /proxies`: adds a proxy; errors are shown beside their field with what was typed
/// (the URL too: it is the user's own, on their own page).
pub async fn create(State(state): State<AppState>, post: Post<ProxyForm>) -> Result<Response, UiError> {
    let form = post.form;
    match crate::proxies::save(&state, post.viewer.account_id(), &form.name, &form.url, false).await {
        Ok(saved) => {
            flash::set(&state, &post.viewer, format!("Proxy “{}” added. Watches can name it now.", saved.name)).await?;
            Ok(Redirect::to("/proxies").into_response())
        }
        Err(e) => {
            let mut page = ProxiesPage::load(&state, &post.viewer).await?;
            page.new_name = Field::of(&form.name);
            page.new_url = Field::of(&form.url);
            match e {
                SaveError::Field(e) if e.field == "url" => page.new_url.error = Some(e.message),
                SaveError::Field(e) => page.new_name.error = Some(e.message),
                SaveError::Store(driftwatch_store::StoreError::Conflict(what)) => {
                    page.new_name.error = Some(format!("{what}; change its URL below, or pick another name"));
                }
                SaveError::Store(e) => return Err(e.into()),
            }
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}

/// `POST /proxies/{name}`: a new URL for the proxy.
pub async fn replace(
    State(state): State<AppState>,
    Path(name): Path<String>,
    post: Post<ProxyForm>,
) -> Result<Response, UiError> {
    let account = post.viewer.account_id().to_owned();
    let wanted = name.clone();
    if state.store.read(move |c| proxies::find(c, &account, &wanted)).await?.is_none() {
        return Err(UiError::NotFound("proxy"));
    }
    let message = match crate::proxies::save(&state, post.viewer.account_id(), &name, &post.form.url, true).await {
        Ok(saved) => format!("Proxy “{}” now goes to {}.", saved.name, saved.shown),
        Err(SaveError::Field(e)) => format!("The URL of “{name}” was not changed: {}", e.message),
        Err(SaveError::Store(e)) => return Err(e.into()),
    };
    flash::set(&state, &post.viewer, message).await?;
    Ok(Redirect::to("/proxies").into_response())
}

/// Body of `POST /proxies/{name}/test`.
#[derive(Debug, Deserialize)]
pub struct TestForm {
    #[serde(default)]
    url: String,
}

/// `POST /proxies/{name}/test`: fetches the page through the proxy; the result stays on the row.
pub async fn test(
    State(state): State<AppState>,
    Path(name): Path<String>,
    post: Post<TestForm>,
) -> Result<Response, UiError> {
    let target = Some(post.form.url.trim()).filter(|u| !u.is_empty()).unwrap_or(DEFAULT_TEST_URL).to_owned();
    let valid = url::Url::parse(&target)
        .map_err(|e| format!("not a URL: {e}"))
        .and_then(|u| driftwatch_net::check_url(&u, state.policy).map_err(|e| e.to_string()));
    if let Err(e) = valid {
        flash::set(&state, &post.viewer, format!("“{name}” was not tested: the test page is {e}")).await?;
        return Ok(Redirect::to("/proxies").into_response());
    }
    let Some(tested) = crate::proxies::test(&state, post.viewer.account_id(), &name, &target).await? else {
        return Err(UiError::NotFound("proxy"));
    };
    let message = match (&tested.test_error, tested.test_status, tested.test_ms) {
        (None, Some(status), Some(ms)) => format!("“{name}” works: {target} answered HTTP {status} in {ms} ms."),
        (Some(error), _, _) => format!("“{name}” failed: {error}"),
        _ => format!("“{name}” got no answer from {target}."),
    };
    flash::set(&state, &post.viewer, message).await?;
    Ok(Redirect::to("/proxies").into_response())
}

/// `POST /proxies/{name}/delete`: deletes a proxy no watch names.
pub async fn delete(
    State(state): State<AppState>,
    Path(name): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let (account, wanted) = (post.viewer.account_id().to_owned(), name.clone());
    let using = state.store.read(move |c| proxies::watches_using(c, &account, &wanted, 5)).await?;
    let message = if using.is_empty() {
        let account = post.viewer.account_id().to_owned();
        let wanted = name.clone();
        if !state.store.write(move |c| proxies::delete(c, &account, &wanted)).await? {
            return Err(UiError::NotFound("proxy"));
        }
        format!("Proxy “{name}” deleted.")
    } else {
        format!("“{name}” was not deleted: watches use it ({}). Point them elsewhere first.", using.join(", "))
    };
    flash::set(&state, &post.viewer, message).await?;
    Ok(Redirect::to("/proxies").into_response())
}
