//! One render: a fresh browser context, the page loaded, waited for, stepped through, read
//! and photographed, and the context disposed of whatever happened.

use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::network::{CookieParam, Headers, SetExtraHttpHeadersParams};
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams, EventTargetCrashed, EventTargetCreated,
};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::error::CdpError;
use driftwatch_core::{FetchSpec, ScreenshotMode, SessionState, WaitKind};
use futures_util::StreamExt;
use tokio::time::Instant;
use url::Url;

use crate::config::BrowserConfig;
use crate::instance::Instance;

mod load;
mod session;
mod shot;
mod steps;
use load::{load, skip_unseen, wait_after_load, wait_for_text_or_idle};
use shot::screenshot;
use steps::run_steps;

/// How often a wait for an element looks again.
const POLL: Duration = Duration::from_millis(50);
/// How long before the render's deadline waits for elements give up (at most a quarter of
/// the render's time).
const WAIT_MARGIN: Duration = Duration::from_secs(2);
/// How long closing a context may take before the browser is deemed stuck.
const DISPOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// A page to render.
#[derive(Debug, Clone)]
pub struct RenderRequest<'a> {
    /// The page.
    pub url: &'a str,
    /// The watch's request settings: headers, cookies, user agent, wait, steps, screenshot.
    pub spec: &'a FetchSpec,
    /// The watch's selector. Without a `wait` of its own, the render waits until an element
    /// it selects has text, or the network has gone idle (a script may fill it after `load`).
    pub selector: Option<&'a str>,
    /// The whole render: slot, load, wait, steps, reading and the screenshot.
    pub timeout: Duration,
    /// The proxy every request of the render leaves through, behind the guard proxy
    /// (`None`: directly).
    pub proxy: Option<&'a url::Url>,
    /// The account's secrets the steps type, by name, opened.
    pub secrets: &'a std::collections::BTreeMap<String, String>,
    /// The watch's kept session, put into the context before the page loads.
    pub session: Option<&'a SessionState>,
}

/// No secrets: what a render of a watch without `type` steps that name one is given.
pub static NO_SECRETS: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();

impl<'a> RenderRequest<'a> {
    /// A render of `url` as `spec` says, directly (no proxy) and without secrets.
    pub fn new(url: &'a str, spec: &'a FetchSpec, selector: Option<&'a str>, timeout: Duration) -> Self {
        RenderRequest { url, spec, selector, timeout, proxy: None, secrets: &NO_SECRETS, session: None }
    }
}

/// An encoded screenshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screenshot {
    /// The image (WebP).
    pub bytes: Vec<u8>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `webp`.
    pub format: &'static str,
}

/// A rendered page.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The main document's HTTP status, when the browser reports one.
    pub status: Option<u16>,
    /// Where the page ended (after redirects and steps).
    pub final_url: String,
    /// The document as the scripts left it.
    pub html: String,
    /// The screenshot, when the watch keeps one and it was within the cap.
    pub screenshot: Option<Screenshot>,
    /// Something worth saying about the render that did not fail it (a screenshot too large).
    pub note: Option<String>,
    /// With `session.keep`: the context's cookies and the page's local storage after the render.
    pub session: Option<SessionState>,
    /// The steps ran as the watch's login (with `session.keep`).
    pub logged_in_by_steps: bool,
}

/// Why a render failed. Each is a failed check.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No browser is configured or it is shutting down.
    #[error("{0}")]
    Unavailable(String),
    /// The URL, or where the page went, is refused.
    #[error("{0}")]
    Target(String),
    /// The render did not finish in time.
    #[error("the browser did not finish within {0:?}")]
    Timeout(Duration),
    /// The page answered with an error status.
    #[error("HTTP {status}")]
    Status {
        /// The status code.
        status: u16,
    },
    /// The page did not load.
    #[error("the page did not load: {0}")]
    Load(String),
    /// The wait for the page could not be satisfied.
    #[error("{0}")]
    Wait(String),
    /// A page step could not be done.
    #[error("step {number} ({action}{target}): {reason}")]
    Step {
        /// 1-based.
        number: usize,
        /// `click`, `type`...
        action: &'static str,
        /// ` #selector` or empty.
        target: String,
        /// What went wrong.
        reason: String,
    },
    /// The login steps ran and the `logged_in` selector still matched nothing.
    #[error("{0}")]
    LoginRequired(String),
    /// The rendered document is larger than the cap.
    #[error("the rendered page is larger than {0} bytes")]
    TooLarge(usize),
    /// The browser failed (crashed, hung, disconnected); it is restarted.
    #[error("browser failed: {0}")]
    Browser(String),
    /// The page's renderer process died (the page ran it out of memory, or something killed
    /// it); the browser itself is fine and the render is tried once more in a fresh context.
    #[error("the page crashed the browser's renderer ({0})")]
    Crashed(String),
}

impl RenderError {
    /// A short name for the kind of failure, stored with the run: `browser`, `step`,
    /// `timeout`, `status`, `target`, `load`, `wait`, `too_large`, `login_required`, `crashed`.
    pub fn kind(&self) -> &'static str {
        match self {
            RenderError::Unavailable(_) | RenderError::Browser(_) => "browser",
            RenderError::Target(_) => "target",
            RenderError::Timeout(_) => "timeout",
            RenderError::Status { .. } => "status",
            RenderError::Load(_) => "load",
            RenderError::Wait(_) => "wait",
            RenderError::Step { .. } => "step",
            RenderError::LoginRequired(_) => "login_required",
            RenderError::TooLarge(_) => "too_large",
            RenderError::Crashed(_) => "crashed",
        }
    }

    /// The HTTP status, when the page answered with an error.
    pub fn status(&self) -> Option<u16> {
        match self {
            RenderError::Status { status } => Some(*status),
            _ => None,
        }
    }
}

/// A DevTools failure: the browser itself is in trouble.
fn browser(e: CdpError) -> RenderError {
    RenderError::Browser(e.to_string())
}

/// Renders `request` in a fresh context of `instance` whose requests all pass the guard proxy
/// at `guard` (the node's, or one chained to the watch's proxy), within `deadline`; the context is
/// disposed of afterwards whatever happened (if it cannot be, the browser is restarted).
pub(crate) async fn render(
    instance: &Instance,
    config: &BrowserConfig,
    request: &RenderRequest<'_>,
    guard: &str,
    deadline: Instant,
) -> Result<Rendered, RenderError> {
    let url = Url::parse(request.url).map_err(|e| RenderError::Target(format!("invalid URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(RenderError::Target(format!("{} pages are not rendered", url.scheme())));
    }
    // The proxy refuses it too; this says why in the run instead of a browser error page.
    let exempt = url
        .host_str()
        .and_then(|h| h.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>().ok())
        .zip(url.port_or_known_default())
        .is_some_and(|(ip, port)| config.exempt.contains(&std::net::SocketAddr::new(ip, port)));
    if !exempt {
        driftwatch_net::vet_url(&url, config.policy, false).await.map_err(|e| RenderError::Target(e.to_string()))?;
    }
    let params = CreateBrowserContextParams {
        dispose_on_detach: Some(true),
        proxy_server: Some(guard.to_owned()),
        proxy_bypass_list: Some("<-loopback>".into()),
        origins_with_universal_network_access: None,
    };
    let context = tokio::time::timeout_at(deadline, instance.browser.create_browser_context(params))
        .await
        .map_err(|_| RenderError::Browser("the browser did not open a context in time".into()))?
        .map_err(browser)?;
    // Waits for elements give up a little before the deadline, so a missing element is
    // reported as such (naming the step) rather than as a render that ran out of time.
    let give_up = deadline.checked_sub(WAIT_MARGIN.min(request.timeout / 4)).unwrap_or(deadline);
    let work = tokio::time::timeout_at(deadline, in_context(instance, config, request, &url, context.clone(), give_up));
    let rendered = tokio::select! {
        done = work => done.unwrap_or(Err(RenderError::Timeout(request.timeout))),
        () = instance.gone.cancelled() => {
            return Err(RenderError::Browser("the browser stopped (it crashed, ran out of memory or was killed)".into()));
        }
    };
    match tokio::time::timeout(DISPOSE_TIMEOUT, instance.browser.dispose_browser_context(context)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => instance.break_down(&format!("closing a context failed: {e}")),
        Err(_) => instance.break_down("closing a context timed out"),
    }
    rendered
}

async fn in_context(
    instance: &Instance,
    config: &BrowserConfig,
    request: &RenderRequest<'_>,
    url: &Url,
    context: chromiumoxide::cdp::browser_protocol::browser::BrowserContextId,
    give_up: Instant,
) -> Result<Rendered, RenderError> {
    // A renderer that dies mid-render answers nothing more: without this the render would
    // wait out its whole time and be reported as slow. Crashes name only a target, so the
    // targets opened in this render's context are noted as they are created.
    let mut created = instance.browser.event_listener::<EventTargetCreated>().await.map_err(browser)?;
    let mut crashes = instance.browser.event_listener::<EventTargetCrashed>().await.map_err(browser)?;
    let ours = context.clone();
    let crashed = async move {
        let mut targets = Vec::new();
        loop {
            tokio::select! {
                // A target's creation is always heard before its crash.
                biased;
                Some(new) = created.next() => {
                    if new.target_info.browser_context_id.as_ref() == Some(&ours) {
                        targets.push(new.target_info.target_id.clone());
                    }
                }
                Some(crash) = crashes.next() => {
                    if targets.contains(&crash.target_id) {
                        return RenderError::Crashed(format!("{}, code {}", crash.status, crash.error_code));
                    }
                }
                else => return std::future::pending().await,
            }
        }
    };
    let work = async {
        let page = open_page(instance, request.spec, url, context.clone()).await?;
        on_page(instance, config, request, url, &page, context, give_up).await
    };
    tokio::select! {
        done = work => done,
        crash = crashed => Err(crash),
    }
}

/// The render's work once its page is open.
async fn on_page(
    instance: &Instance,
    config: &BrowserConfig,
    request: &RenderRequest<'_>,
    url: &Url,
    page: &Page,
    context: chromiumoxide::cdp::browser_protocol::browser::BrowserContextId,
    give_up: Instant,
) -> Result<Rendered, RenderError> {
    let spec = request.spec;
    let kept = spec.session.as_ref().filter(|s| s.keep);
    let script = match (kept, request.session) {
        (Some(_), Some(state)) => session::restore(instance, page, &context, state).await?,
        _ => None,
    };
    let wait = spec.wait.as_ref().map_or(WaitKind::Load, |w| w.kind());
    // No wait of the watch's own: its selector's text (or the network going quiet) is what
    // says that the scripts are done.
    let filled = request.selector.filter(|s| spec.wait.is_none() && !s.trim().is_empty());
    let listen = filled.is_some() || matches!(wait, WaitKind::NetworkIdle);
    if matches!(spec.screenshot, ScreenshotMode::Off) {
        skip_unseen(page).await?;
    }
    let (status, loader, lifecycle) = load(page, url, listen).await?;
    match filled {
        Some(selector) => wait_for_text_or_idle(page, selector, loader, lifecycle, give_up).await?,
        None => wait_after_load(page, wait, loader, lifecycle, give_up).await?,
    }
    session::forget_script(page, script).await?;
    let logged_in = kept.and_then(|s| s.logged_in.as_deref());
    let steps_ran = session::steps_or_login(page, &spec.steps, logged_in, request.secrets, give_up).await?;
    let mut rendered = capture(page, config, spec.screenshot, status).await?;
    if kept.is_some() {
        rendered.session = Some(session::collect(instance, page, &context).await?);
        rendered.logged_in_by_steps = steps_ran;
    }
    Ok(rendered)
}

/// A blank page in `context` with the watch's user agent, headers and cookies for `url`.
async fn open_page(
    instance: &Instance,
    spec: &FetchSpec,
    url: &Url,
    context: chromiumoxide::cdp::browser_protocol::browser::BrowserContextId,
) -> Result<Page, RenderError> {
    let target = CreateTargetParams::builder()
        .url("about:blank")
        .browser_context_id(context)
        .build()
        .map_err(RenderError::Browser)?;
    let page = instance.browser.new_page(target).await.map_err(browser)?;
    let agent = match &spec.user_agent {
        Some(agent) => Some(agent.clone()),
        None => instance.user_agent(&page).await,
    };
    if let Some(agent) = agent {
        page.set_user_agent(agent).await.map_err(browser)?;
    }
    if !spec.headers.is_empty() {
        let headers = serde_json::to_value(&spec.headers).map_err(|e| RenderError::Browser(e.to_string()))?;
        page.execute(SetExtraHttpHeadersParams::new(Headers::new(headers))).await.map_err(browser)?;
    }
    if !spec.cookies.is_empty() {
        let cookies = spec
            .cookies
            .iter()
            .map(|(name, value)| CookieParam::builder().name(name).value(value).url(url.as_str()).build())
            .collect::<Result<Vec<_>, _>>()
            .map_err(RenderError::Browser)?;
        page.set_cookies(cookies).await.map_err(browser)?;
    }
    Ok(page)
}

/// Reads where the page ended, its document and, when the watch keeps one, its screenshot.
async fn capture(
    page: &Page,
    config: &BrowserConfig,
    mode: ScreenshotMode,
    status: Option<u16>,
) -> Result<Rendered, RenderError> {
    let final_url = page.url().await.map_err(browser)?.unwrap_or_default();
    if !(final_url.starts_with("http://") || final_url.starts_with("https://")) {
        let scheme = final_url.split(':').next().unwrap_or_default();
        return Err(RenderError::Target(format!("the page went to a {scheme}: address, which is not rendered")));
    }
    let html = page.content().await.map_err(browser)?;
    if html.len() > config.max_html_bytes {
        return Err(RenderError::TooLarge(config.max_html_bytes));
    }
    let (screenshot, note) = match mode {
        ScreenshotMode::Off => (None, None),
        mode => match screenshot(page, config, mode).await? {
            shot if shot.bytes.len() > config.max_screenshot_bytes => (
                None,
                Some(format!(
                    "the screenshot ({} bytes) is larger than the cap of {} bytes and was not kept",
                    shot.bytes.len(),
                    config.max_screenshot_bytes
                )),
            ),
            shot => (Some(shot), None),
        },
    };
    Ok(Rendered { status, final_url, html, screenshot, note, session: None, logged_in_by_steps: false })
}

/// Evaluates `js` in the page and returns its value; a script exception is a message.
async fn eval(page: &Page, js: &str) -> Result<serde_json::Value, RenderError> {
    eval_in(page, js).await.map_err(RenderError::Browser)
}

async fn eval_in(page: &Page, js: &str) -> Result<serde_json::Value, String> {
    let params = EvaluateParams::builder()
        .expression(js)
        .await_promise(true)
        .return_by_value(true)
        .build()
        .map_err(|e| e.to_string())?;
    let result = page.evaluate_expression(params).await.map_err(|e| match e {
        CdpError::JavascriptException(details) => {
            details.exception.as_ref().and_then(|e| e.description.clone()).unwrap_or(details.text.clone())
        }
        other => other.to_string(),
    })?;
    Ok(result.value().cloned().unwrap_or(serde_json::Value::Null))
}

/// A JavaScript string literal of `text`.
fn js_str(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// Waits until an element matches `selector`, giving up at `give_up`.
async fn wait_for_selector(page: &Page, selector: &str, give_up: Instant) -> Result<(), String> {
    let probe = format!("document.querySelector({}) !== null", js_str(selector));
    let started = Instant::now();
    loop {
        if eval_in(page, &probe).await? == serde_json::Value::Bool(true) {
            return Ok(());
        }
        if Instant::now() + POLL >= give_up {
            return Err(format!("no element matched within {:.1}s", started.elapsed().as_secs_f64()));
        }
        tokio::time::sleep(POLL).await;
    }
}
