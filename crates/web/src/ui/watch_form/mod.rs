//! Adding and editing a watch: every option the API has, grouped so a newcomer can skip all
//! but the first section; errors beside their fields, in the API's words (the same rules of
//! `driftwatch-validate`); a preview that fetches the page now and shows the text that would
//! be compared (and, when the browser renders it, what the browser saw); the next five check
//! times of the schedule; values and conditions, with a quick path for tracking a price, and
//! a try of them on the watch's past checks (nothing saved); an intent for a language model.

mod ai;
mod fields;
mod proxy;
#[cfg(test)]
mod tests;
mod values;
// The AI part of a backtest.
mod backtest_ai;

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_core::WatchOptions;
use driftwatch_store::{Watch, watches};
use driftwatch_validate::{FieldError, Invalid, WatchInput, WatchPatch};

use self::fields::WatchForm;
use crate::AppState;
use crate::ui::error::UiError;
use crate::ui::flash;
use crate::ui::form::Field;
use crate::ui::layout::{Layout, html, render};
use crate::ui::present::When;
use crate::ui::session::{Post, Viewer};
use crate::ui::watch::find;

#[derive(Template)]
#[template(path = "watch_form.html")]
struct WatchFormPage {
    layout: Layout,
    /// `None` for a new watch.
    watch_id: Option<String>,
    form: WatchForm,
    errors: HashMap<&'static str, String>,
    next_runs: Result<Vec<String>, String>,
    preview: Option<Result<PreviewView, String>>,
    backtest: Option<BacktestView>,
    /// The model that would judge this watch's changes.
    model: crate::ui::account_model::ModelInUse,
}

/// What a preview shows: the text, what read the page, and the screenshot inline (a preview's
/// screenshot is not stored, so it travels in the page as a `data:` URL).
struct PreviewView {
    text: String,
    /// `http` or `browser`.
    engine: &'static str,
    note: Option<String>,
    screenshot: Option<InlineImage>,
}

/// An image embedded in the page.
struct InlineImage {
    /// `data:image/webp;base64,...`.
    src: String,
    width: u32,
    height: u32,
}

impl PreviewView {
    fn of(preview: driftwatch_schedule::Preview) -> PreviewView {
        use base64::Engine as _;
        let screenshot = preview.screenshot.map(|shot| InlineImage {
            src: format!(
                "data:image/{};base64,{}",
                shot.format,
                base64::engine::general_purpose::STANDARD.encode(&shot.bytes)
            ),
            width: shot.width,
            height: shot.height,
        });
        PreviewView { text: preview.text, engine: preview.engine, note: preview.note, screenshot }
    }
}

/// What trying the form's settings on the watch's past checks found.
struct BacktestView {
    /// Snapshots tried.
    snapshots: usize,
    /// Changes between them.
    changes: usize,
    /// Alerts these settings would have raised.
    would_alert: usize,
    /// Alerts the watch raised over the same snapshots.
    alerted: usize,
    /// The would-be alerts, newest first (at most [`driftwatch_schedule::backtest::MAX_LISTED`]).
    alerts: Vec<WouldAlertView>,
    /// The changes kept quiet, newest first (at most [`driftwatch_schedule::backtest::MAX_LISTED`]).
    quiet: Vec<QuietView>,
    /// What stored snapshots cannot tell, as text and `code` parts.
    caveats: Vec<Vec<(bool, String)>>,
    /// With an intent: what the model made of each would-be alert.
    ai: Option<backtest_ai::AiView>,
}

/// A change that would have alerted.
struct WouldAlertView {
    at: When,
    added: usize,
    removed: usize,
    reasons: Vec<String>,
    /// The diff's lines with their kind (`add`, `del`, `hunk`, `ctx`).
    diff: Vec<(&'static str, String)>,
}

/// A change kept quiet, and why.
struct QuietView {
    at: When,
    reason: String,
}

impl BacktestView {
    fn of(
        mut found: driftwatch_schedule::backtest::Backtest,
        now: chrono::DateTime<chrono::Utc>,
        zone: &str,
    ) -> BacktestView {
        let ai = found.ai.take().map(|ai| backtest_ai::AiView::of(ai, now, zone));
        let when = |at: chrono::DateTime<chrono::Utc>| When::new(at.naive_utc(), now, zone);
        BacktestView {
            snapshots: found.snapshots,
            changes: found.changes,
            would_alert: found.would_alert,
            alerted: found.alerted,
            alerts: found
                .alerts
                .into_iter()
                .map(|a| WouldAlertView {
                    at: when(a.at),
                    added: a.added,
                    removed: a.removed,
                    reasons: a.reasons,
                    diff: diff_lines(&a.diff),
                })
                .collect(),
            quiet: found.quiet.into_iter().map(|q| QuietView { at: when(q.at), reason: q.reason }).collect(),
            caveats: found.caveats.iter().map(|c| code_spans(c)).collect(),
            ai,
        }
    }

    /// The changes kept quiet, listed or not.
    fn quiet_total(&self) -> usize {
        self.changes.saturating_sub(self.would_alert)
    }
}

/// Text with `code` in backticks as parts: `(true, "price")` is code.
fn code_spans(text: &str) -> Vec<(bool, String)> {
    let parts: Vec<&str> = text.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return vec![(false, text.to_owned())]; // a backtick unpaired: plain text
    }
    parts.iter().enumerate().filter(|(_, p)| !p.is_empty()).map(|(i, p)| (i % 2 == 1, (*p).to_owned())).collect()
}

/// A unified diff's lines by kind, without its `---`/`+++` headers (snapshot ids).
fn diff_lines(unified: &str) -> Vec<(&'static str, String)> {
    unified
        .lines()
        .filter(|l| !l.starts_with("--- ") && !l.starts_with("+++ "))
        .map(|l| {
            let kind = match l.as_bytes().first() {
                Some(b'+') => "add",
                Some(b'-') => "del",
                Some(b'@') => "hunk",
                _ => "ctx",
            };
            (kind, l.to_owned())
        })
        .collect()
}

/// Whether a validation field is about the options (what a backtest tries).
fn is_option(field: &str) -> bool {
    field.starts_with("options") || ["alert_when", "price_below", "price_drop"].contains(&field)
}

/// A select's choices: value, label and what it does (shown under the select).
type Choices = [(&'static str, &'static str, &'static str)];

/// The engines offered.
const ENGINES: [(&str, &str, &str); 3] = [
    ("http", "HTTP", "a plain request; scripts do not run."),
    ("browser", "Browser", "Chromium renders the page and runs its scripts."),
    ("auto", "Auto", "HTTP first; the browser when the page needs scripts."),
];
/// The screenshot modes offered.
const SCREENSHOTS: [(&str, &str, &str); 3] = [
    ("off", "Off", ""),
    ("viewport", "Window", "what a 1280×900 window shows."),
    ("full_page", "Full page", "the whole page, cut when very long."),
];
/// What a check can compare.
const COMPARES: [(&str, &str, &str); 3] = [
    ("text", "Text", "a change of the text alerts."),
    ("text_or_visual", "Text or look", "the text, or how the page looks when its text is the same."),
    ("visual", "Look only", "only how the page looks; text changes are kept quietly."),
];

impl WatchFormPage {
    /// The error shown beside `field`.
    fn error(&self, field: &str) -> Option<&str> {
        self.errors.get(field).map(String::as_str)
    }

    /// A text field with its value and error.
    fn f(&self, field: &'static str, value: &str) -> Field {
        Field { value: value.to_owned(), error: self.error(field).map(str::to_owned) }
    }

    /// The section holding an error opens itself; values and conditions also when set or
    /// just tried.
    fn open(&self, prefix: &str) -> bool {
        let fields: &[&str] = match prefix {
            "values" => {
                if self.backtest.is_some() || self.form.value_fields().is_set() {
                    return true;
                }
                &["structured_data", "alert_when", "price_below", "price_drop", "values_json", "conditions_json"]
            }
            "fetch" => &[
                "fetch_method",
                "fetch_headers",
                "fetch_cookies",
                "fetch_user_agent",
                "fetch_timeout",
                "fetch_body",
                "fetch_proxy",
                "blocked_proxy",
            ],
            "extract" => &["remove_selectors", "json_pointer"],
            "ai" => {
                if self.form.ai_set() {
                    return true;
                }
                &["ai_intent", "ai_summary", "ai_on_error"]
            }
            "rules" => &["ignore_lines", "extract_regex", "keep_lines_containing", "custom_masks"],
            "browser" => {
                &["engine", "wait", "steps", "screenshot", "compare", "min_visual_change_percent", "ignore_regions"]
            }
            _ => &[
                "trigger_text",
                "block_text",
                "min_changed_lines",
                "min_change_percent",
                "known_states",
                "confirm_after_seconds",
            ],
        };
        fields.iter().any(|f| self.errors.contains_key(f))
    }

    /// `1 alert`, `2 alerts`.
    fn count(&self, n: &usize, word: &str) -> String {
        crate::ui::present::count(n, word)
    }

    /// The presets of "Alert when…": value and label.
    fn presets(&self) -> &'static [(&'static str, &'static str)] {
        &values::PRESETS
    }

    /// Intents that work well, shown as examples.
    fn example_intents(&self) -> &'static [&'static str] {
        &ai::EXAMPLE_INTENTS
    }

    /// The choices of a select: `engine`, `screenshot`, `ai_on_error` or `compare`.
    fn choices(&self, field: &str) -> &'static Choices {
        match field {
            "engine" => &ENGINES,
            "screenshot" => &SCREENSHOTS,
            "ai_on_error" => &ai::ON_ERROR,
            _ => &COMPARES,
        }
    }
}

fn schedule_preview(
    state: &AppState,
    viewer: &Viewer,
    form: &WatchForm,
    watch_id: &str,
) -> Result<Vec<String>, String> {
    let mut errors = Vec::new();
    let (interval, cron, zone) = form.schedule(&mut errors);
    if let Some(e) = errors.first() {
        return Err(e.message.clone());
    }
    let tz: chrono_tz::Tz = viewer.user.time_zone.parse().unwrap_or(chrono_tz::Tz::UTC);
    driftwatch_validate::next_runs(
        &state.limits.rules(),
        interval,
        cron.as_deref(),
        zone.as_deref(),
        watch_id,
        5,
        state.clock.now(),
    )
    .map(|runs| runs.iter().map(|t| t.with_timezone(&tz).format("%a %Y-%m-%d %H:%M:%S %Z").to_string()).collect())
    .map_err(|e| e.message)
}

async fn page(
    state: &AppState,
    viewer: &Viewer,
    watch_id: Option<String>,
    form: WatchForm,
    invalid: Vec<FieldError>,
) -> Result<WatchFormPage, UiError> {
    let mut errors = HashMap::new();
    for e in invalid {
        let field = form.field_for(&e.field);
        errors.entry(field).or_insert_with(|| form.message(e));
    }
    let title = if watch_id.is_some() { "Edit watch" } else { "Add a watch" };
    let next_runs = schedule_preview(state, viewer, &form, watch_id.as_deref().unwrap_or("wat_new"));
    let model = ai::model_in_use(state, viewer).await?;
    Ok(WatchFormPage {
        layout: Layout::signed_in(viewer, "watches", title),
        watch_id,
        form,
        errors,
        next_runs,
        preview: None,
        backtest: None,
        model,
    })
}

/// `GET /watches/new`.
pub async fn new(State(state): State<AppState>, viewer: Viewer) -> Result<Response, UiError> {
    Ok(html(&page(&state, &viewer, None, WatchForm::blank(), Vec::new()).await?))
}

/// `GET /watches/{id}/edit`.
pub async fn edit(State(state): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> Result<Response, UiError> {
    let watch = find(&state, &viewer, &id).await?;
    let form = WatchForm::of(&watch).shown(&state);
    Ok(html(&page(&state, &viewer, Some(watch.id.clone()), form, Vec::new()).await?))
}

/// Fetches the page as the form describes and shows the text that would be compared, with the
/// screenshot when the options ask for one.
async fn with_preview(
    state: &AppState,
    account_id: &str,
    mut page: WatchFormPage,
    input: &WatchInput,
) -> WatchFormPage {
    // Without these the preview would read another page, or read it another way.
    if ["url", "selector", "engine", "wait", "steps"].iter().any(|f| page.errors.contains_key(f)) {
        return page;
    }
    let options = input.options.clone().unwrap_or_default();
    let url = input.url.trim().to_owned();
    let result = state.runner.preview(account_id, &url, input.selector.as_deref(), &options).await;
    // A failed step, wait or selector is also said beside its field.
    if let Err(e) = &result
        && e.field != "url"
    {
        let message = page.form.message(FieldError::new(&e.field, &e.message));
        page.errors.entry(fields::form_field(&e.field)).or_insert(message);
    }
    page.preview = Some(result.map(PreviewView::of).map_err(|e| e.message));
    page
}

/// Runs `proposed` over the watch's stored snapshots and shows what it would have done.
async fn with_backtest(
    state: &AppState,
    viewer: &Viewer,
    mut page: WatchFormPage,
    current: &Watch,
    proposed: WatchOptions,
) -> Result<WatchFormPage, UiError> {
    let found = crate::backtest::run(state, viewer.account_id(), current, proposed, None).await?;
    page.backtest = Some(BacktestView::of(found, state.clock.now(), &viewer.user.time_zone));
    Ok(page)
}

/// `POST /watches/new`: preview, or create and open the new watch (its first check, the
/// baseline, runs at once).
pub async fn create(State(state): State<AppState>, post: Post<WatchForm>) -> Result<Response, UiError> {
    let form = post.form;
    let mut errors = Vec::new();
    let input = form.input(&mut errors);
    let mut result = driftwatch_validate::new_watch(
        input.clone(),
        &state.limits.rules(),
        state.policy,
        post.viewer.account_id(),
        state.clock.now(),
    );
    if let Ok(watch) = &mut result {
        let fetch = watch.options().fetch;
        let unknown = crate::logins::steps_name_kept_secrets(&state, post.viewer.account_id(), &fetch).await?;
        errors.extend(unknown.err().map(|Invalid(e)| e).unwrap_or_default());
        errors.extend(crate::proxies::settle_options(&state, post.viewer.account_id(), &mut watch.options).await.err());
    }
    let watch = match (result, errors.is_empty()) {
        (Ok(watch), true) if form.saves() => watch,
        (result, _) => {
            errors.extend(result.err().map(|Invalid(e)| e).unwrap_or_default());
            let status = if errors.is_empty() { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
            let preview = form.action == "preview";
            let page = page(&state, &post.viewer, None, form, errors).await?;
            let page = if preview { with_preview(&state, post.viewer.account_id(), page, &input).await } else { page };
            return Ok(render(status, &page));
        }
    };
    let stored = watch.clone();
    state.store.write(move |c| watches::insert_watch(c, &stored)).await?;
    tracing::info!(watch.id = %watch.id, account.id = %watch.account_id, "watch created from the UI");
    state.runner.wake();
    flash::set(&state, &post.viewer, "Watch added. Its first check records the baseline.").await?;
    Ok(Redirect::to(&format!("/watches/{}", watch.id)).into_response())
}

/// `POST /watches/{id}/edit`: preview, or save what changed (a new URL, selector or options
/// starts a new baseline).
pub async fn update(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<WatchForm>,
) -> Result<Response, UiError> {
    let current = find(&state, &post.viewer, &id).await?;
    let form = post.form.with_sealed(&state, &current);
    let mut errors = Vec::new();
    let input = form.input(&mut errors);
    let options = input.options.clone().unwrap_or_default();
    let same_options = serde_json::to_string(&options).ok().as_deref() == Some(current.options.as_str());
    let (interval, cron, zone) = (input.interval_seconds, input.cron.clone(), input.time_zone.clone());
    let schedule_changed = interval != current.interval_seconds || cron != current.cron || zone != current.time_zone;
    let patch = WatchPatch {
        url: (input.url.trim() != current.url).then(|| input.url.clone()),
        name: Some(input.name.clone().unwrap_or_else(|| input.url.trim().to_owned())),
        selector: (input.selector != current.selector).then(|| input.selector.clone()),
        interval_seconds: schedule_changed.then_some(interval),
        cron: schedule_changed.then(|| cron.clone()),
        time_zone: schedule_changed.then(|| zone.clone()),
        options: (!same_options).then(|| options.clone()),
        tags: input.tags.clone(),
        muted: input.muted,
    };
    let mut result =
        driftwatch_validate::watch_changes(&current, patch, &state.limits.rules(), state.policy, state.clock.now());
    if let Ok(changes) = &mut result {
        let new = changes.options.as_deref();
        let unknown = crate::logins::options_name_kept_secrets(&state, post.viewer.account_id(), new).await?;
        errors.extend(unknown.err().map(|Invalid(e)| e).unwrap_or_default());
        if let Some(options) = changes.options.as_mut() {
            errors.extend(crate::proxies::settle_options(&state, post.viewer.account_id(), options).await.err());
        }
    }
    let changes = match (result, errors.is_empty()) {
        (Ok(changes), true) if form.saves() => changes,
        (result, _) => {
            errors.extend(result.err().map(|Invalid(e)| e).unwrap_or_default());
            let action = form.action.clone();
            // Tried only with options a save would take (the rest of the form may wait).
            let tried = match action.as_str() {
                "backtest" => match driftwatch_validate::options_as_saved(&options, &state.limits.rules()) {
                    Ok(saved) => (!errors.iter().any(|e| is_option(&e.field))).then_some(saved),
                    Err(e) => {
                        errors.push(e);
                        None
                    }
                },
                _ => None,
            };
            let status = if errors.is_empty() { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
            let page = page(&state, &post.viewer, Some(id), form.shown(&state), errors).await?;
            let page = match action.as_str() {
                "preview" => with_preview(&state, post.viewer.account_id(), page, &input).await,
                _ => match tried {
                    Some(saved) => with_backtest(&state, &post.viewer, page, &current, saved).await?,
                    None => page,
                },
            };
            return Ok(render(status, &page));
        }
    };
    crate::ui::watch::apply(&state, &post.viewer, &id, changes).await?;
    tracing::info!(watch.id = %id, "watch updated from the UI");
    flash::set(&state, &post.viewer, "Watch saved.").await?;
    Ok(Redirect::to(&format!("/watches/{id}")).into_response())
}
