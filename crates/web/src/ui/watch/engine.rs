//! What loads a watch's page, as its page says it: the browser, or `auto` and which engine it
//! uses now, and why this node has no browser when it has none.

use chrono::{DateTime, Utc};
use driftwatch_core::{Engine, WatchOptions};
use driftwatch_store::Watch;

use crate::ui::present::When;

/// What loads the page, for a watch that does not simply use HTTP.
#[derive(Debug, Clone)]
pub struct EngineView {
    /// What the page says.
    pub text: &'static str,
    /// Since when an `auto` watch has rendered in the browser.
    pub since: Option<When>,
    /// Why this node has no browser, when it has none: the watch's renders fail until it does.
    pub missing: Option<String>,
}

/// What loads the page (nothing to say for HTTP): for `auto`, the engine its next check uses;
/// `missing` is why this node has no browser, when it has none.
pub(super) fn engine_view(
    watch: &Watch,
    options: &WatchOptions,
    now: DateTime<Utc>,
    zone: &str,
    missing: Option<String>,
) -> Option<EngineView> {
    let (text, since) = match (options.fetch.engine, watch.engine_in_use(options, now.naive_utc()), &missing) {
        (Engine::Http, ..) => return None,
        (Engine::Browser, _, None) => ("Rendered in the browser", None),
        (Engine::Browser, _, Some(_)) => ("Renders in the browser, and this node has none", None),
        (Engine::Auto, Engine::Browser, None) => {
            ("Auto: rendered in the browser since", watch.browser_since.map(|t| When::new(t, now, zone)))
        }
        (Engine::Auto, _, None) => ("Auto: read over HTTP; the browser takes over when the page needs scripts", None),
        (Engine::Auto, ..) => {
            ("Auto: read over HTTP; a page that needs scripts fails, as this node has no browser", None)
        }
    };
    Some(EngineView { text, since, missing })
}

/// What stands between a watch and its page, when its health says so: a bot wall, or a session
/// its login steps could not get back. `error` is the newest run's, which says what gave the
/// wall away or why signing in failed.
#[derive(Debug, Clone)]
pub struct TroubleView {
    /// `blocked` or `login_required`.
    pub kind: &'static str,
    /// The newest run's error.
    pub error: String,
}

/// The trouble of a watch whose health is `blocked` or `login_required`.
pub(super) fn trouble_view(watch: &Watch, newest: Option<&driftwatch_store::Run>) -> Option<TroubleView> {
    let kind = match watch.health.as_str() {
        "blocked" => "blocked",
        "login_required" => "login_required",
        _ => return None,
    };
    let error = newest.and_then(|r| r.error.clone()).unwrap_or_default();
    Some(TroubleView { kind, error })
}
