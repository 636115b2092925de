//! A kept session in a render: the watch's cookies and local storage put into the fresh
//! context before the page loads, the login steps run only when the `logged_in` test fails,
//! and the context's cookies and the page's local storage read back after a good render.
//!
//! The context is still disposed of after the render: what outlives it is the state handed
//! back to the caller, which seals it.

use std::collections::BTreeMap;
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::network::{CookieParam, CookieSameSite, TimeSinceEpoch};
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, RemoveScriptToEvaluateOnNewDocumentParams, ScriptIdentifier,
};
use chromiumoxide::cdp::browser_protocol::storage::{GetCookiesParams, SetCookiesParams};
use driftwatch_core::session::{MAX_LOCAL_STORAGE_BYTES, MAX_SESSION_COOKIES};
use driftwatch_core::{SessionCookie, SessionState, Step};
use tokio::time::Instant;

use super::{RenderError, browser, eval_in, js_str, run_steps, wait_for_selector};
use crate::instance::Instance;

/// How long the `logged_in` selector may take to appear after the login steps.
const SIGNED_IN_WAIT: Duration = Duration::from_secs(10);

/// Puts `state`'s cookies into `context` and its local storage into each of its origins'
/// first document; returns the script to remove once the page has loaded.
pub(super) async fn restore(
    instance: &Instance,
    page: &Page,
    context: &BrowserContextId,
    state: &SessionState,
) -> Result<Option<ScriptIdentifier>, RenderError> {
    let cookies: Vec<CookieParam> = state.cookies.iter().filter_map(cookie_param).collect();
    if !cookies.is_empty() {
        let params = SetCookiesParams { cookies: cookies.clone(), browser_context_id: Some(context.clone()) };
        if instance.browser.execute(params).await.is_err() {
            // One cookie the browser refuses (an imported file's odd domain) refuses them all:
            // set them one by one, leaving out those it refuses.
            let mut refused = 0;
            for cookie in cookies {
                let one = SetCookiesParams { cookies: vec![cookie], browser_context_id: Some(context.clone()) };
                refused += usize::from(instance.browser.execute(one).await.is_err());
            }
            tracing::debug!(refused, "the browser refused some of the kept session's cookies");
        }
    }
    if state.local_storage.is_empty() {
        return Ok(None);
    }
    let all = serde_json::to_string(&state.local_storage).map_err(|e| RenderError::Browser(e.to_string()))?;
    let script = format!(
        "(() => {{ const all = {all}; const mine = all[location.origin]; if (!mine) return; \
         try {{ for (const [k, v] of Object.entries(mine)) localStorage.setItem(k, v); }} catch (e) {{}} }})()"
    );
    let added = page.execute(AddScriptToEvaluateOnNewDocumentParams::new(script)).await.map_err(browser)?;
    Ok(Some(added.result.identifier.clone()))
}

/// Removes the local storage script: later documents (the login's) keep what they write.
pub(super) async fn forget_script(page: &Page, script: Option<ScriptIdentifier>) -> Result<(), RenderError> {
    if let Some(script) = script {
        page.execute(RemoveScriptToEvaluateOnNewDocumentParams::new(script)).await.map_err(browser)?;
    }
    Ok(())
}

/// A kept cookie as the browser takes it (`None` for one it cannot take).
fn cookie_param(cookie: &SessionCookie) -> Option<CookieParam> {
    let mut param = CookieParam::builder()
        .name(&cookie.name)
        .value(&cookie.value)
        .domain(&cookie.domain)
        .path(if cookie.path.is_empty() { "/" } else { &cookie.path })
        .secure(cookie.secure)
        .http_only(cookie.http_only)
        .build()
        .ok()?;
    param.expires = cookie.expires.map(TimeSinceEpoch::new);
    param.same_site = cookie.same_site.as_deref().and_then(|s| s.parse::<CookieSameSite>().ok());
    Some(param)
}

/// The watch's steps, or its login: with a `logged_in` selector that already matches, the
/// steps are skipped; otherwise they run and then the selector must match (within
/// [`SIGNED_IN_WAIT`]) or the render is [`RenderError::LoginRequired`]. Returns whether the
/// steps ran.
pub(super) async fn steps_or_login(
    page: &Page,
    steps: &[Step],
    logged_in: Option<&str>,
    secrets: &BTreeMap<String, String>,
    give_up: Instant,
) -> Result<bool, RenderError> {
    let Some(selector) = logged_in.filter(|s| !s.trim().is_empty()) else {
        run_steps(page, steps, secrets, give_up).await?;
        return Ok(!steps.is_empty());
    };
    let probe = format!("document.querySelector({}) !== null", js_str(selector));
    if eval_in(page, &probe).await.is_ok_and(|v| v == serde_json::Value::Bool(true)) {
        return Ok(false);
    }
    run_steps(page, steps, secrets, give_up).await?;
    let until = give_up.min(Instant::now() + SIGNED_IN_WAIT);
    wait_for_selector(page, selector, until).await.map_err(|_| {
        RenderError::LoginRequired(format!(
            "not signed in: {selector} matched nothing after the login steps (check the credentials and the steps)"
        ))
    })?;
    Ok(true)
}

/// The context's cookies and the page's local storage, as the next render starts from them.
pub(super) async fn collect(
    instance: &Instance,
    page: &Page,
    context: &BrowserContextId,
) -> Result<SessionState, RenderError> {
    let params = GetCookiesParams { browser_context_id: Some(context.clone()) };
    let got = instance.browser.execute(params).await.map_err(browser)?;
    let mut cookies: Vec<SessionCookie> = got
        .result
        .cookies
        .iter()
        .map(|c| SessionCookie {
            name: c.name.clone(),
            value: c.value.clone(),
            domain: c.domain.clone(),
            path: c.path.clone(),
            secure: c.secure,
            http_only: c.http_only,
            expires: (!c.session && c.expires > 0.0).then_some(c.expires),
            same_site: c.same_site.as_ref().map(|s| s.as_ref().to_owned()),
        })
        .collect();
    cookies.truncate(MAX_SESSION_COOKIES);
    let mut local_storage = BTreeMap::new();
    let read = "JSON.stringify([location.origin, Object.fromEntries(Object.entries(localStorage))])";
    if let Ok(serde_json::Value::String(json)) = eval_in(page, read).await
        && json.len() <= MAX_LOCAL_STORAGE_BYTES
        && let Ok((origin, items)) = serde_json::from_str::<(String, BTreeMap<String, String>)>(&json)
        && origin.starts_with("http")
        && !items.is_empty()
    {
        local_storage.insert(origin, items);
    }
    Ok(SessionState { cookies, local_storage })
}
