//! Adding and editing a watch: every option the API has, grouped so a newcomer can skip all
//! but the first section; errors beside their fields, in the API's words (the same rules of
//! `driftwatch-validate`); a preview that fetches the page now and shows the text that would
//! be compared (and, when the browser renders it, what the browser saw); the next five check
//! times of the schedule.

mod fields;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_store::watches;
use driftwatch_validate::{FieldError, Invalid, WatchInput, WatchPatch};

use self::fields::{WatchForm, form_field};
use crate::AppState;
use crate::ui::error::UiError;
use crate::ui::flash;
use crate::ui::form::Field;
use crate::ui::layout::{Layout, html, render};
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

    /// The section holding an error opens itself.
    fn open(&self, prefix: &str) -> bool {
        let fields: &[&str] = match prefix {
            "fetch" => {
                &["fetch_method", "fetch_headers", "fetch_cookies", "fetch_user_agent", "fetch_timeout", "fetch_body"]
            }
            "extract" => &["remove_selectors", "json_pointer"],
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

    /// The choices of a select: `engine`, `screenshot` or `compare`.
    fn choices(&self, field: &str) -> &'static Choices {
        match field {
            "engine" => &ENGINES,
            "screenshot" => &SCREENSHOTS,
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

fn page(
    state: &AppState,
    viewer: &Viewer,
    watch_id: Option<String>,
    form: WatchForm,
    invalid: Vec<FieldError>,
) -> WatchFormPage {
    let mut errors = HashMap::new();
    for e in invalid {
        let field = form_field(&e.field);
        errors.entry(field).or_insert_with(|| form.message(e));
    }
    let title = if watch_id.is_some() { "Edit watch" } else { "Add a watch" };
    let next_runs = schedule_preview(state, viewer, &form, watch_id.as_deref().unwrap_or("wat_new"));
    WatchFormPage {
        layout: Layout::signed_in(viewer, "watches", title),
        watch_id,
        form,
        errors,
        next_runs,
        preview: None,
    }
}

/// `GET /watches/new`.
pub async fn new(State(state): State<AppState>, viewer: Viewer) -> Result<Response, UiError> {
    Ok(html(&page(&state, &viewer, None, WatchForm::blank(), Vec::new())))
}

/// `GET /watches/{id}/edit`.
pub async fn edit(State(state): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> Result<Response, UiError> {
    let watch = find(&state, &viewer, &id).await?;
    Ok(html(&page(&state, &viewer, Some(watch.id.clone()), WatchForm::of(&watch), Vec::new())))
}

/// Fetches the page as the form describes and shows the text that would be compared, with the
/// screenshot when the options ask for one.
async fn with_preview(state: &AppState, mut page: WatchFormPage, input: &WatchInput) -> WatchFormPage {
    // Without these the preview would read another page, or read it another way.
    if ["url", "selector", "engine", "wait", "steps"].iter().any(|f| page.errors.contains_key(f)) {
        return page;
    }
    let options = input.options.clone().unwrap_or_default();
    let url = input.url.trim().to_owned();
    let result = state.runner.preview(&url, input.selector.as_deref(), &options).await;
    page.preview = Some(result.map(PreviewView::of));
    page
}

/// `POST /watches/new`: preview, or create and open the new watch (its first check, the
/// baseline, runs at once).
pub async fn create(State(state): State<AppState>, post: Post<WatchForm>) -> Result<Response, UiError> {
    let form = post.form;
    let mut errors = Vec::new();
    let input = form.input(&mut errors);
    let result = driftwatch_validate::new_watch(
        input.clone(),
        &state.limits.rules(),
        state.policy,
        post.viewer.account_id(),
        state.clock.now(),
    );
    let watch = match (result, errors.is_empty()) {
        (Ok(watch), true) if form.action != "preview" => watch,
        (result, _) => {
            errors.extend(result.err().map(|Invalid(e)| e).unwrap_or_default());
            let status = if errors.is_empty() { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
            let preview = form.action == "preview";
            let page = page(&state, &post.viewer, None, form, errors);
            let page = if preview { with_preview(&state, page, &input).await } else { page };
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
    let form = post.form;
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
        options: (!same_options).then_some(options),
        tags: input.tags.clone(),
        muted: input.muted,
    };
    let result =
        driftwatch_validate::watch_changes(&current, patch, &state.limits.rules(), state.policy, state.clock.now());
    let changes = match (result, errors.is_empty()) {
        (Ok(changes), true) if form.action != "preview" => changes,
        (result, _) => {
            errors.extend(result.err().map(|Invalid(e)| e).unwrap_or_default());
            let status = if errors.is_empty() { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
            let preview = form.action == "preview";
            let page = page(&state, &post.viewer, Some(id), form, errors);
            let page = if preview { with_preview(&state, page, &input).await } else { page };
            return Ok(render(status, &page));
        }
    };
    crate::ui::watch::apply(&state, &post.viewer, &id, changes).await?;
    tracing::info!(watch.id = %id, "watch updated from the UI");
    flash::set(&state, &post.viewer, "Watch saved.").await?;
    Ok(Redirect::to(&format!("/watches/{id}")).into_response())
}
