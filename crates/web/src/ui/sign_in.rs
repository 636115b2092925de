//! First-run setup, sign-in and sign-out.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_core::{hash_token, new_random_key};
use driftwatch_store::{User, users};
use serde::Deserialize;

use super::error::UiError;
use super::form::Field;
use super::layout::{Layout, html, render};
use super::session::{AnonPost, PRE_SESSION_COOKIE, Post, SESSION_COOKIE, Viewer, set_cookie};
use crate::AppState;

#[derive(Template)]
#[template(path = "setup.html")]
struct SetupPage {
    layout: Layout,
    code: String,
    account: Field,
    email: Field,
    password: Field,
}

#[derive(Template)]
#[template(path = "sign_in.html")]
struct SignInPage {
    layout: Layout,
    next: String,
    email: Field,
    error: Option<String>,
    set_up: bool,
}

#[derive(Template)]
#[template(path = "signed_out.html")]
struct SignedOutPage {
    layout: Layout,
}

/// A page with a fresh pre-session token: the form carries it, the cookie its hash.
fn with_form_token(layout: Layout, build: impl FnOnce(Layout) -> Response) -> Response {
    let token = new_random_key("");
    let layout = Layout { csrf: token.clone(), ..layout };
    let mut response = build(layout);
    if let Ok(value) = set_cookie(PRE_SESSION_COOKIE, &hash_token(&token), Some(3600), false).parse() {
        response.headers_mut().append(SET_COOKIE, value);
    }
    response
}

/// Query of `GET /setup`.
#[derive(Debug, Deserialize)]
pub struct SetupQuery {
    code: Option<String>,
}

async fn set_up(state: &AppState) -> Result<bool, UiError> {
    Ok(state.store.read(users::any_user).await?)
}

/// `GET /setup?code=`: the first-run form, only with the code `serve` printed.
pub async fn setup_form(State(state): State<AppState>, Query(query): Query<SetupQuery>) -> Result<Response, UiError> {
    if set_up(&state).await? {
        state.setup.clear();
        return Err(UiError::NotFound("setup page: driftwatch is set up already"));
    }
    let code = query.code.unwrap_or_default();
    if !state.setup.matches(&code) {
        return Err(UiError::Forbidden(
            "This setup link is not valid. Open the setup URL that `driftwatch serve` printed when it started.".into(),
        ));
    }
    Ok(with_form_token(Layout::public("Set up driftwatch"), |layout| {
        html(&SetupPage {
            layout,
            code,
            account: Field::of("default"),
            email: Field::default(),
            password: Field::default(),
        })
    }))
}

/// Body of `POST /setup`.
#[derive(Debug, Deserialize)]
pub struct SetupForm {
    #[serde(default)]
    code: String,
    #[serde(default)]
    account: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    password_confirm: String,
}

/// Checks an email address's shape; the error shown beside the field.
pub(super) fn email_error(email: &str) -> Option<String> {
    let email = email.trim();
    let shaped = email.len() <= 254
        && !email.chars().any(char::is_whitespace)
        && email.split_once('@').is_some_and(|(local, domain)| !local.is_empty() && !domain.is_empty());
    (!shaped).then(|| "enter an email address like name@example.com".to_owned())
}

/// Checks a new password and its confirmation.
pub(super) fn password_error(password: &str, confirm: &str) -> Option<String> {
    let chars = password.chars().count();
    if !(driftwatch_core::password::MIN_PASSWORD_CHARS..=1024).contains(&chars) {
        return Some(format!("use at least {} characters", driftwatch_core::password::MIN_PASSWORD_CHARS));
    }
    (password != confirm).then(|| "the two passwords differ".to_owned())
}

/// Hashes a password off the async threads (Argon2id takes tens of milliseconds by design).
pub(super) async fn hash(password: String) -> Result<String, UiError> {
    tokio::task::spawn_blocking(move || driftwatch_core::hash_password(&password))
        .await
        .map_err(|e| UiError::Server(e.to_string()))?
        .map_err(|e| UiError::Server(e.to_string()))
}

/// `POST /setup`: creates the account and its first user, signs them in; works once.
pub async fn setup(State(state): State<AppState>, post: AnonPost<SetupForm>) -> Result<Response, UiError> {
    let form = post.form;
    if set_up(&state).await? {
        state.setup.clear();
        return Err(UiError::NotFound("setup page: driftwatch is set up already"));
    }
    if !state.setup.matches(&form.code) {
        return Err(UiError::Forbidden("This setup link is not valid.".into()));
    }
    let account_name = form.account.trim().to_owned();
    let mut page = SetupPage {
        layout: Layout::public("Set up driftwatch"),
        code: form.code.clone(),
        account: Field::of(&account_name),
        email: Field::of(form.email.trim()),
        password: Field::default(),
    };
    if account_name.is_empty() || account_name.chars().count() > 100 {
        page.account.error = Some("name the account (1 to 100 characters)".into());
    }
    page.email.error = email_error(&form.email);
    page.password.error = password_error(&form.password, &form.password_confirm);
    if page.account.error.is_some() || page.email.error.is_some() || page.password.error.is_some() {
        return Ok(with_form_token(page.layout.clone(), |layout| {
            render(StatusCode::UNPROCESSABLE_ENTITY, &SetupPage { layout, ..page })
        }));
    }
    let password_hash = hash(form.password).await?;
    if !state.setup.take(&form.code) {
        return Err(UiError::Forbidden("This setup link has been used.".into()));
    }
    let (email, now) = (page.email.value.clone(), state.clock.now().naive_utc());
    let user =
        state.store.write(move |c| users::create_first_user(c, &account_name, &email, &password_hash, now)).await?;
    tracing::info!(user.id = %user.id, account.id = %user.account_id, "first user set up");
    start_session(&state, &user, "/").await
}

/// Query of `GET /sign-in`.
#[derive(Debug, Deserialize)]
pub struct SignInQuery {
    next: Option<String>,
}

/// Where sign-in may send the browser: a path on this site, or the home page.
///
/// Only printable ASCII is kept (a valid `Location`, already percent-encoded): browsers drop
/// tabs and newlines from URLs, so `/\t/evil.example` would become the scheme-relative
/// `//evil.example`, and a backslash reads as a slash. So no control characters, no spaces, no
/// backslashes, and no `//` at the start: anything else goes home.
fn local_path(next: Option<&str>) -> String {
    next.filter(|n| {
        n.starts_with('/')
            && !n.starts_with("//")
            && n.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
            && n.parse::<axum::http::uri::PathAndQuery>().is_ok()
    })
    .unwrap_or("/")
    .to_owned()
}

/// `GET /sign-in`.
pub async fn form(
    State(state): State<AppState>,
    viewer: Option<Viewer>,
    Query(query): Query<SignInQuery>,
) -> Result<Response, UiError> {
    if viewer.is_some() {
        return Ok(Redirect::to(&local_path(query.next.as_deref())).into_response());
    }
    let set_up = set_up(&state).await?;
    let next = local_path(query.next.as_deref());
    Ok(with_form_token(Layout::public("Sign in"), |layout| {
        html(&SignInPage { layout, next, email: Field::default(), error: None, set_up })
    }))
}

impl axum::extract::OptionalFromRequestParts<AppState> for Viewer {
    type Rejection = UiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Option<Viewer>, UiError> {
        match <Viewer as axum::extract::FromRequestParts<AppState>>::from_request_parts(parts, state).await {
            Ok(viewer) => Ok(Some(viewer)),
            Err(UiError::SignIn { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Body of `POST /sign-in`.
#[derive(Debug, Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: String,
}

/// An Argon2id hash of a random password nobody knows: unknown emails are checked against it,
/// so they take as long as a wrong password.
fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| driftwatch_core::hash_password(&new_random_key("")).unwrap_or_default())
}

/// `POST /sign-in`: the same message for an unknown email and a wrong password; failures are
/// throttled per email and per address.
pub async fn sign_in(State(state): State<AppState>, post: AnonPost<SignInForm>) -> Result<Response, UiError> {
    let form = post.form;
    let next = local_path(Some(&form.next));
    if let Some(wait) = state.throttle.retry_after(&form.email, post.client) {
        tracing::warn!(client = ?post.client, "sign-in throttled");
        return Err(UiError::TooMany(wait.as_secs().max(1)));
    }
    let email = form.email.trim().to_lowercase();
    let lookup = email.clone();
    let user = state.store.read(move |c| users::find_user_by_email(c, &lookup)).await?;
    let stored = user.as_ref().map(|u| u.password_hash.clone());
    let password = form.password;
    let matches = tokio::task::spawn_blocking(move || {
        let stored = stored.unwrap_or_else(|| decoy_hash().to_owned());
        driftwatch_core::verify_password(&password, &stored)
    })
    .await
    .map_err(|e| UiError::Server(e.to_string()))?;
    match user.filter(|_| matches) {
        Some(user) => {
            state.throttle.succeeded(&email);
            tracing::info!(user.id = %user.id, "signed in");
            start_session(&state, &user, &next).await
        }
        None => {
            state.throttle.failed(&email, post.client);
            tracing::info!(client = ?post.client, "sign-in refused");
            let set_up = set_up(&state).await?;
            Ok(with_form_token(Layout::public("Sign in"), |layout| {
                render(
                    StatusCode::UNAUTHORIZED,
                    &SignInPage {
                        layout,
                        next,
                        email: Field::of(form.email.trim()),
                        error: Some("Wrong email or password.".into()),
                        set_up,
                    },
                )
            }))
        }
    }
}

/// A new session (a new id: never one the browser brought) and a redirect to `next`.
async fn start_session(state: &AppState, user: &User, next: &str) -> Result<Response, UiError> {
    let id = new_random_key("");
    let (user_id, session_id, csrf) = (user.id.clone(), id.clone(), new_random_key(""));
    let now = state.clock.now().naive_utc();
    let limits = state.ui.session_limits;
    state.store.write(move |c| users::create_session(c, &user_id, &session_id, &csrf, now, limits)).await?;
    let max_age = limits.absolute.num_seconds();
    let mut headers = HeaderMap::new();
    let cookie = set_cookie(SESSION_COOKIE, &id, Some(max_age), state.ui.secure_cookies());
    headers.append(SET_COOKIE, cookie.parse().map_err(|_| UiError::Server("cookie".into()))?);
    let clear = set_cookie(PRE_SESSION_COOKIE, "", Some(0), state.ui.secure_cookies());
    headers.append(SET_COOKIE, clear.parse().map_err(|_| UiError::Server("cookie".into()))?);
    Ok((headers, Redirect::to(next)).into_response())
}

fn signed_out_response(state: &AppState) -> Response {
    let clear = set_cookie(SESSION_COOKIE, "", Some(0), state.ui.secure_cookies());
    ([(SET_COOKIE, clear)], Redirect::to("/signed-out")).into_response()
}

/// `POST /sign-out`: ends this session.
pub async fn sign_out(State(state): State<AppState>, post: Post<Vec<(String, String)>>) -> Result<Response, UiError> {
    let id_hash = post.viewer.session.id_hash.clone();
    state.store.write(move |c| users::delete_session(c, &id_hash)).await?;
    Ok(signed_out_response(&state))
}

/// `POST /sign-out-everywhere`: ends every session of the user.
pub async fn sign_out_everywhere(
    State(state): State<AppState>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let user_id = post.viewer.user.id.clone();
    let ended = state.store.write(move |c| users::delete_user_sessions(c, &user_id)).await?;
    tracing::info!(user.id = %post.viewer.user.id, ended, "signed out everywhere");
    Ok(signed_out_response(&state))
}

/// `GET /signed-out`.
pub async fn signed_out() -> Response {
    html(&SignedOutPage { layout: Layout::public("Signed out") })
}

#[cfg(test)]
mod tests {
    use super::local_path;

    #[test]
    fn only_paths_on_this_site_follow_sign_in() {
        for ok in ["/", "/watches/wat_1?view=side", "/deliveries?status=dead&cursor=dlv_1", "/a%20b"] {
            assert_eq!(local_path(Some(ok)), ok);
        }
        for bad in [
            "//evil.example",
            "/\t/evil.example",
            "/\n/x",
            "/\r\n/x",
            "/\\evil.example",
            "/x\\y",
            "https://evil.example/",
            "evil.example",
            "/ /evil",
            "/\u{3000}/evil",
            "/\u{7f}",
            "",
        ] {
            assert_eq!(local_path(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(local_path(None), "/");
    }
}
