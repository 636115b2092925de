//! The account page: its users (add one), your password and display time zone, the Atom feed
//! key, the language model that judges changes ([`super::account_model`]), the quiet hours of
//! its endpoints ([`super::account_quiet`]), and signing out everywhere.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_store::users;
use serde::Deserialize;

use super::account_model::ModelSection;
use super::error::UiError;
use super::flash;
use super::form::Field;
use super::layout::{Layout, html, render};
use super::present::When;
use super::session::{Post, Viewer};
use super::sign_in::{email_error, hash, password_error};
use crate::AppState;

/// A user as listed.
#[derive(Debug, Clone)]
pub struct UserRow {
    /// Email.
    pub email: String,
    /// Joined.
    pub since: When,
    /// The viewer.
    pub me: bool,
}

#[derive(Template)]
#[template(path = "account.html")]
pub(super) struct AccountPage {
    layout: Layout,
    users: Vec<UserRow>,
    time_zone: Field,
    new_email: Field,
    new_password: Field,
    current_password: Field,
    changed_password: Field,
    has_feed: bool,
    feed_url: Option<String>,
    /// The account's name.
    name: String,
    /// The language model that judges its changes.
    pub(super) model: ModelSection,
    /// The quiet hours of endpoints that set none.
    pub(super) quiet: super::account_quiet::QuietSection,
}

impl AccountPage {
    /// The page as it stands, with the viewer's pending notice.
    pub(super) async fn load(state: &AppState, viewer: &Viewer) -> Result<AccountPage, UiError> {
        let account = viewer.account_id().to_owned();
        let now = state.clock.now();
        let day = driftwatch_ai::judge::day_of(now.naive_utc());
        let (list, has_feed, found, (own, spent), quiet) = state
            .store
            .read(move |c| {
                let found = driftwatch_store::accounts::get_account(c, &account)?;
                let model = super::account_model::load(c, &account, &day)?;
                let quiet = driftwatch_store::accounts::quiet_hours(c, &account)?;
                Ok((users::list_users(c, &account)?, users::has_feed_key(c, &account)?, found, model, quiet))
            })
            .await?;
        let zone = viewer.user.time_zone.as_str();
        let notice = flash::take(state, viewer).await?;
        Ok(AccountPage {
            layout: Layout::signed_in(viewer, "account", "Account").with_notice(notice),
            users: list
                .into_iter()
                .map(|u| UserRow {
                    me: u.id == viewer.user.id,
                    since: When::new(u.created_at, now, zone),
                    email: u.email,
                })
                .collect(),
            time_zone: Field { value: viewer.user.time_zone.clone(), error: None },
            new_email: Field::default(),
            new_password: Field::default(),
            current_password: Field::default(),
            changed_password: Field::default(),
            has_feed,
            feed_url: None,
            name: found.map(|a| a.name).unwrap_or_default(),
            model: ModelSection::of(state, &own, spent),
            quiet: super::account_quiet::QuietSection::of(quiet.as_deref(), zone),
        })
    }
}

/// `GET /account`.
pub async fn show(State(state): State<AppState>, viewer: Viewer) -> Result<Response, UiError> {
    Ok(html(&AccountPage::load(&state, &viewer).await?))
}

/// Body of `POST /account/time-zone`.
#[derive(Debug, Deserialize)]
pub struct TimeZoneForm {
    #[serde(default)]
    time_zone: String,
}

/// `POST /account/time-zone`.
pub async fn set_time_zone(State(state): State<AppState>, post: Post<TimeZoneForm>) -> Result<Response, UiError> {
    let zone = post.form.time_zone.trim().to_owned();
    if zone.parse::<chrono_tz::Tz>().is_err() {
        let mut page = AccountPage::load(&state, &post.viewer).await?;
        page.time_zone = Field { value: zone, error: Some("not an IANA time zone (like Europe/Paris or UTC)".into()) };
        return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
    }
    let (user, now) = (post.viewer.user.id.clone(), state.clock.now().naive_utc());
    let stored = zone.clone();
    state.store.write(move |c| users::set_time_zone(c, &user, &stored, now)).await?;
    flash::set(&state, &post.viewer, format!("Times now show in {zone}.")).await?;
    Ok(Redirect::to("/account").into_response())
}

/// Body of `POST /account/password`.
#[derive(Debug, Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    current: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    password_confirm: String,
}

/// `POST /account/password`: needs the current password; ends the user's other sessions.
pub async fn set_password(State(state): State<AppState>, post: Post<PasswordForm>) -> Result<Response, UiError> {
    let form = post.form;
    let stored = post.viewer.user.password_hash.clone();
    let current = form.current.clone();
    let matches = tokio::task::spawn_blocking(move || driftwatch_core::verify_password(&current, &stored))
        .await
        .map_err(|e| UiError::Server(e.to_string()))?;
    let mut page = AccountPage::load(&state, &post.viewer).await?;
    if !matches {
        page.current_password.error = Some("this is not your current password".into());
    }
    page.changed_password.error = password_error(&form.password, &form.password_confirm);
    if page.current_password.error.is_some() || page.changed_password.error.is_some() {
        return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
    }
    let password_hash = hash(form.password).await?;
    let (user, keep, now) =
        (post.viewer.user.id.clone(), post.viewer.session.id_hash.clone(), state.clock.now().naive_utc());
    state.store.write(move |c| users::set_password(c, &user, &password_hash, Some(&keep), now)).await?;
    tracing::info!(user.id = %post.viewer.user.id, "password changed");
    flash::set(&state, &post.viewer, "Password changed; your other sessions were signed out.").await?;
    Ok(Redirect::to("/account").into_response())
}

/// Body of `POST /account/users`.
#[derive(Debug, Deserialize)]
pub struct NewUserForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    password_confirm: String,
}

/// `POST /account/users`: adds a user to this account.
pub async fn add_user(State(state): State<AppState>, post: Post<NewUserForm>) -> Result<Response, UiError> {
    let form = post.form;
    let mut page = AccountPage::load(&state, &post.viewer).await?;
    page.new_email = Field { value: form.email.trim().to_owned(), error: email_error(&form.email) };
    page.new_password.error = password_error(&form.password, &form.password_confirm);
    if page.new_email.error.is_none() && page.new_password.error.is_none() {
        let password_hash = hash(form.password).await?;
        let (account, email, now) =
            (post.viewer.account_id().to_owned(), page.new_email.value.clone(), state.clock.now().naive_utc());
        match state.store.write(move |c| users::create_user(c, &account, &email, &password_hash, now)).await {
            Ok(user) => {
                tracing::info!(user.id = %user.id, account.id = %user.account_id, "user added");
                flash::set(&state, &post.viewer, format!("{} can now sign in.", user.email)).await?;
                return Ok(Redirect::to("/account").into_response());
            }
            Err(driftwatch_store::StoreError::Conflict(_)) => {
                page.new_email.error = Some("a user with this email exists".into());
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
}

/// Body of `POST /account/feed-key`.
#[derive(Debug, Deserialize)]
pub struct FeedKeyForm {
    #[serde(default)]
    action: String,
}

/// `POST /account/feed-key`: makes a new feed key (the old URL stops working) and shows the
/// feed URL once; `action=off` removes it.
pub async fn feed_key(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    post: Post<FeedKeyForm>,
) -> Result<Response, UiError> {
    let account = post.viewer.account_id().to_owned();
    if post.form.action == "off" {
        state.store.write(move |c| users::set_feed_key(c, &account, None)).await?;
        flash::set(&state, &post.viewer, "The feed is off; its URL no longer works.").await?;
        return Ok(Redirect::to("/account").into_response());
    }
    let key = driftwatch_core::new_random_key("dwf_");
    let stored = key.clone();
    state.store.write(move |c| users::set_feed_key(c, &account, Some(&stored))).await?;
    let base = super::present::public_base(&state, &headers);
    let mut page = AccountPage::load(&state, &post.viewer).await?;
    page.has_feed = true;
    page.feed_url = Some(format!("{base}/feeds/{key}"));
    Ok(html(&page))
}
