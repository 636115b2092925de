//! Adding and editing a watch: every option the API has, grouped so a newcomer can skip all
//! but the first section; errors beside their fields, in the API's words (the same rules of
//! `driftwatch-validate`); a preview that fetches the page now and shows the text that would
//! be compared (and, when the browser renders it, what the browser saw); the next five check
//! times of the schedule.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_core::WatchOptions;
use driftwatch_store::{Watch, watches};
use driftwatch_validate::{FieldError, Invalid, WatchInput, WatchPatch};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::error::UiError;
use super::flash;
use super::form::{Field, checked, lines, number, optional, pairs};
use super::layout::{Layout, html, render};
use super::session::{Post, Viewer};
use super::steps::{parse_regions, parse_steps, step_line};
use super::watch::find;
use crate::AppState;

/// The mask presets offered as checkboxes.
pub const MASK_PRESETS: [&str; 5] = ["dates", "times", "numbers", "uuids", "hex_ids"];

/// The form as posted: every field as text, so what was typed comes back on an error.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct WatchForm {
    url: String,
    name: String,
    selector: String,
    /// Comma- or space-separated.
    tags: String,
    /// `interval` or `cron`.
    schedule: String,
    every: String,
    /// `seconds`, `minutes`, `hours`, `days`.
    unit: String,
    cron: String,
    time_zone: String,
    paused: Option<String>,
    fetch_method: String,
    fetch_headers: String,
    fetch_cookies: String,
    fetch_user_agent: String,
    fetch_timeout: String,
    fetch_body: String,
    remove_selectors: String,
    keep_links: Option<String>,
    json_pointer: String,
    ignore_lines: String,
    extract_regex: String,
    keep_lines_containing: String,
    mask_dates: Option<String>,
    mask_times: Option<String>,
    mask_numbers: Option<String>,
    mask_uuids: Option<String>,
    mask_hex_ids: Option<String>,
    custom_masks: String,
    sort_lines: Option<String>,
    unique_lines: Option<String>,
    trigger_text: String,
    block_text: String,
    only_added: Option<String>,
    only_removed: Option<String>,
    min_changed_lines: String,
    min_change_percent: String,
    known_states: String,
    confirm_after_seconds: String,
    /// `http`, `browser` or `auto`.
    engine: String,
    /// `load`, `network_idle`, milliseconds or a CSS selector.
    wait: String,
    /// One step a line (see [`parse_steps`]).
    steps: String,
    /// `off`, `viewport` or `full_page`.
    screenshot: String,
    /// `text`, `text_or_visual` or `visual`.
    compare: String,
    min_visual_change_percent: String,
    /// One `x,y,width,height` a line.
    ignore_regions: String,
    /// `save` or `preview`.
    action: String,
}

impl WatchForm {
    /// The form filled from a stored watch.
    fn of(watch: &Watch) -> WatchForm {
        let options: WatchOptions = watch.options();
        let (every, unit) = match watch.interval_seconds {
            Some(s) if s % 86_400 == 0 => ((s / 86_400).to_string(), "days"),
            Some(s) if s % 3600 == 0 => ((s / 3600).to_string(), "hours"),
            Some(s) if s % 60 == 0 => ((s / 60).to_string(), "minutes"),
            Some(s) => (s.to_string(), "seconds"),
            None => ("1".to_owned(), "hours"),
        };
        let join = |v: &[String]| v.join("\n");
        let presets: Vec<&String> = options.rules.masks.iter().filter(|m| MASK_PRESETS.contains(&m.as_str())).collect();
        let has = |name: &str| checked(presets.iter().any(|m| m.as_str() == name));
        let (fetch, extract, rules, noise) = (&options.fetch, &options.extract, &options.rules, &options.noise);
        WatchForm {
            url: watch.url.clone(),
            name: watch.name.clone(),
            selector: watch.selector.clone().unwrap_or_default(),
            tags: watch.tag_list().join(", "),
            schedule: if watch.cron.is_some() { "cron" } else { "interval" }.to_owned(),
            every,
            unit: unit.to_owned(),
            cron: watch.cron.clone().unwrap_or_default(),
            time_zone: watch.time_zone.clone().unwrap_or_default(),
            paused: None,
            fetch_method: fetch.method.clone().unwrap_or_default(),
            fetch_headers: fetch.headers.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join("\n"),
            fetch_cookies: fetch.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("\n"),
            fetch_user_agent: fetch.user_agent.clone().unwrap_or_default(),
            fetch_timeout: fetch.timeout_seconds.map(|t| t.to_string()).unwrap_or_default(),
            fetch_body: fetch.body.clone().unwrap_or_default(),
            remove_selectors: join(&extract.remove_selectors),
            keep_links: checked(extract.keep_links),
            json_pointer: extract.json_pointer.clone().unwrap_or_default(),
            ignore_lines: join(&rules.ignore_lines),
            extract_regex: rules.extract_regex.clone().unwrap_or_default(),
            keep_lines_containing: join(&rules.keep_lines_containing),
            mask_dates: has("dates"),
            mask_times: has("times"),
            mask_numbers: has("numbers"),
            mask_uuids: has("uuids"),
            mask_hex_ids: has("hex_ids"),
            custom_masks: rules
                .masks
                .iter()
                .filter(|m| !MASK_PRESETS.contains(&m.as_str()))
                .cloned()
                .collect::<Vec<_>>()
                .join("\n"),
            sort_lines: checked(rules.sort_lines),
            unique_lines: checked(rules.unique_lines),
            trigger_text: join(&noise.trigger_text),
            block_text: join(&noise.block_text),
            only_added: checked(noise.only_added),
            only_removed: checked(noise.only_removed),
            min_changed_lines: noise.min_changed_lines.map(|n| n.to_string()).unwrap_or_default(),
            min_change_percent: noise.min_change_percent.map(|n| n.to_string()).unwrap_or_default(),
            known_states: noise.known_states.map(|n| n.to_string()).unwrap_or_default(),
            confirm_after_seconds: noise.confirm_after_seconds.map(|n| n.to_string()).unwrap_or_default(),
            engine: fetch.engine.as_str().to_owned(),
            wait: fetch.wait.as_ref().map(ToString::to_string).unwrap_or_default(),
            steps: fetch.steps.iter().map(step_line).collect::<Vec<_>>().join("\n"),
            screenshot: choice_name(&fetch.screenshot),
            compare: choice_name(&noise.compare),
            min_visual_change_percent: noise.min_visual_change_percent.map(|n| n.to_string()).unwrap_or_default(),
            ignore_regions: noise
                .ignore_regions
                .iter()
                .map(|r| format!("{},{},{},{}", r.x, r.y, r.width, r.height))
                .collect::<Vec<_>>()
                .join("\n"),
            action: String::new(),
        }
    }

    /// A new watch's form: hourly, active.
    fn blank() -> WatchForm {
        WatchForm {
            schedule: "interval".into(),
            every: "1".into(),
            unit: "hours".into(),
            engine: "http".into(),
            screenshot: "off".into(),
            compare: "text".into(),
            ..WatchForm::default()
        }
    }

    /// The interval in seconds, or the cron schedule and zone; errors of the form's own fields.
    fn schedule(&self, errors: &mut Vec<FieldError>) -> (Option<i64>, Option<String>, Option<String>) {
        if self.schedule == "cron" {
            return (None, optional(&self.cron).or_else(|| Some(String::new())), optional(&self.time_zone));
        }
        let factor = match self.unit.as_str() {
            "seconds" => 1,
            "hours" => 3600,
            "days" => 86_400,
            _ => 60,
        };
        let every: Option<i64> = number("interval_seconds", &self.every, errors);
        (every.map(|n| n.saturating_mul(factor)), None, None)
    }

    /// The options the form describes.
    fn options(&self, errors: &mut Vec<FieldError>) -> WatchOptions {
        let mut options = WatchOptions::default();
        options.fetch.method = optional(&self.fetch_method);
        options.fetch.headers = pairs("options.fetch.headers", &self.fetch_headers, ':', errors);
        options.fetch.cookies = pairs("options.fetch.cookies", &self.fetch_cookies, '=', errors);
        options.fetch.user_agent = optional(&self.fetch_user_agent);
        options.fetch.timeout_seconds = number("options.fetch.timeout_seconds", &self.fetch_timeout, errors);
        options.fetch.body = optional(&self.fetch_body);
        options.extract.remove_selectors = lines(&self.remove_selectors);
        options.extract.keep_links = self.keep_links.is_some();
        options.extract.json_pointer = optional(&self.json_pointer);
        options.rules.ignore_lines = lines(&self.ignore_lines);
        options.rules.extract_regex = optional(&self.extract_regex);
        options.rules.keep_lines_containing = lines(&self.keep_lines_containing);
        let presets = [&self.mask_dates, &self.mask_times, &self.mask_numbers, &self.mask_uuids, &self.mask_hex_ids];
        options.rules.masks = MASK_PRESETS
            .iter()
            .zip(presets)
            .filter(|(_, on)| on.is_some())
            .map(|(name, _)| (*name).to_owned())
            .chain(lines(&self.custom_masks))
            .collect();
        options.rules.sort_lines = self.sort_lines.is_some();
        options.rules.unique_lines = self.unique_lines.is_some();
        options.noise.trigger_text = lines(&self.trigger_text);
        options.noise.block_text = lines(&self.block_text);
        options.noise.only_added = self.only_added.is_some();
        options.noise.only_removed = self.only_removed.is_some();
        options.noise.min_changed_lines = number("options.noise.min_changed_lines", &self.min_changed_lines, errors);
        options.noise.min_change_percent = number("options.noise.min_change_percent", &self.min_change_percent, errors);
        options.noise.known_states = number("options.noise.known_states", &self.known_states, errors);
        options.noise.confirm_after_seconds =
            number("options.noise.confirm_after_seconds", &self.confirm_after_seconds, errors);
        self.browser_options(&mut options, errors);
        options
    }

    /// The browser's settings and the visual comparison, into `options`.
    fn browser_options(&self, options: &mut WatchOptions, errors: &mut Vec<FieldError>) {
        options.fetch.engine = choice("options.fetch.engine", &self.engine, errors);
        options.fetch.wait = wait(&self.wait, errors);
        options.fetch.steps = match parse_steps(&self.steps) {
            Ok(steps) => steps,
            Err(message) => {
                errors.push(FieldError::new("options.fetch.steps", message));
                Vec::new()
            }
        };
        options.fetch.screenshot = choice("options.fetch.screenshot", &self.screenshot, errors);
        options.noise.compare = choice("options.noise.compare", &self.compare, errors);
        options.noise.min_visual_change_percent =
            number("options.noise.min_visual_change_percent", &self.min_visual_change_percent, errors);
        options.noise.ignore_regions = match parse_regions(&self.ignore_regions) {
            Ok(regions) => regions,
            Err(message) => {
                errors.push(FieldError::new("options.noise.ignore_regions", message));
                Vec::new()
            }
        };
    }

    /// The error of a validation field, saying which line of a textarea it is about
    /// (`options.fetch.steps[2].selector` is the third step).
    fn message(&self, error: FieldError) -> String {
        let lines = match error.field.split_once('[') {
            Some(("options.fetch.steps", _)) => &self.steps,
            Some(("options.noise.ignore_regions", _)) => &self.ignore_regions,
            _ => return error.message,
        };
        let index = error.field.split(['[', ']']).nth(1).and_then(|i| i.parse::<usize>().ok());
        let line = index
            .and_then(|i| lines.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).nth(i).map(|(n, _)| n + 1));
        match line {
            Some(line) => format!("line {line}: {}", error.message),
            None => error.message,
        }
    }

    fn input(&self, errors: &mut Vec<FieldError>) -> WatchInput {
        let (interval_seconds, cron, time_zone) = self.schedule(errors);
        WatchInput {
            url: self.url.clone(),
            name: optional(&self.name),
            selector: optional(&self.selector),
            interval_seconds,
            cron,
            time_zone,
            paused: Some(self.paused.is_some()),
            options: Some(self.options(errors)),
            tags: Some(self.tags.split([',', ' ']).map(str::to_owned).filter(|t| !t.trim().is_empty()).collect()),
        }
    }
}

/// Which form field shows an error about a validation field (`options.rules.masks[2]` is
/// shown beside the masks).
fn form_field(field: &str) -> &'static str {
    let base = field.split(['[']).next().unwrap_or(field);
    match base {
        "url" => "url",
        "name" => "name",
        "selector" => "selector",
        "tags" => "tags",
        "interval_seconds" => "every",
        "cron" => "cron",
        "time_zone" => "time_zone",
        "options.fetch.method" => "fetch_method",
        "options.fetch.user_agent" => "fetch_user_agent",
        "options.fetch.timeout_seconds" => "fetch_timeout",
        "options.fetch.body" => "fetch_body",
        "options.extract.remove_selectors" => "remove_selectors",
        "options.extract.json_pointer" => "json_pointer",
        "options.rules.ignore_lines" => "ignore_lines",
        "options.rules.extract_regex" => "extract_regex",
        "options.rules.keep_lines_containing" => "keep_lines_containing",
        "options.rules.masks" => "custom_masks",
        "options.noise.trigger_text" => "trigger_text",
        "options.noise.block_text" => "block_text",
        "options.noise.min_changed_lines" => "min_changed_lines",
        "options.noise.min_change_percent" => "min_change_percent",
        "options.noise.known_states" => "known_states",
        "options.noise.confirm_after_seconds" => "confirm_after_seconds",
        "options.fetch.engine" => "engine",
        "options.fetch.wait" => "wait",
        "options.fetch.screenshot" => "screenshot",
        "options.noise.compare" => "compare",
        "options.noise.min_visual_change_percent" => "min_visual_change_percent",
        b if b.starts_with("options.fetch.steps") => "steps",
        b if b.starts_with("options.noise.ignore_regions") => "ignore_regions",
        b if b.starts_with("options.fetch.headers") => "fetch_headers",
        b if b.starts_with("options.fetch.cookies") => "fetch_cookies",
        _ => "url",
    }
}

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
    super::watch::apply(&state, &post.viewer, &id, changes).await?;
    tracing::info!(watch.id = %id, "watch updated from the UI");
    flash::set(&state, &post.viewer, "Watch saved.").await?;
    Ok(Redirect::to(&format!("/watches/{id}")).into_response())
}

/// An option named as the API names it (`full_page`, `text_or_visual`), for a select.
fn choice_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// A select's value as its option: the default when empty.
fn choice<T: DeserializeOwned + Default>(field: &str, text: &str, errors: &mut Vec<FieldError>) -> T {
    let text = text.trim();
    if text.is_empty() {
        return T::default();
    }
    serde_json::from_value(serde_json::Value::String(text.to_owned())).unwrap_or_else(|_| {
        errors.push(FieldError::new(field, "choose one of the options"));
        T::default()
    })
}

/// What the browser waits for: milliseconds when the text is a number, else the text.
fn wait(text: &str, errors: &mut Vec<FieldError>) -> Option<driftwatch_core::Wait> {
    use driftwatch_core::Wait;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Wait::Text(text.to_owned()));
    }
    match text.parse() {
        Ok(ms) => Some(Wait::Delay(ms)),
        Err(_) => {
            errors.push(FieldError::new("options.fetch.wait", "at most 60000 milliseconds"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use driftwatch_core::{Compare, Engine, Region, ScreenshotMode, Step, Wait};

    use super::*;

    #[test]
    fn a_stored_watch_reads_back_unchanged_through_the_form() {
        let mut options = WatchOptions::default();
        options.fetch.engine = Engine::Auto;
        options.fetch.wait = Some(Wait::Text("#app .ready".into()));
        options.fetch.screenshot = ScreenshotMode::FullPage;
        options.fetch.steps = vec![
            Step::Click { selector: "button.accept".into() },
            Step::Type { selector: "form input[name=q]".into(), text: " padded \"text\" ".into() },
            Step::Select { selector: "#size".into(), value: String::new() },
            Step::Press { key: "Enter".into() },
            Step::Scroll { selector: Some("footer a".into()) },
            Step::WaitFor { selector: Some("\"odd".into()), ms: None },
            Step::WaitFor { selector: None, ms: Some(250) },
        ];
        options.noise.compare = Compare::TextOrVisual;
        options.noise.min_visual_change_percent = Some(2.5);
        options.noise.ignore_regions = vec![Region { x: 0, y: 0, width: 1280, height: 90 }];
        for wait in [Some(Wait::Delay(1500)), Some(Wait::Text("network_idle".into())), None] {
            options.fetch.wait = wait;
            let mut watch = Watch::new("acc_1", "https://example.com/", chrono::NaiveDateTime::default());
            watch.options = serde_json::to_string(&options).expect("json");
            let mut errors = Vec::new();
            assert_eq!(WatchForm::of(&watch).options(&mut errors), options);
            assert!(errors.is_empty(), "{errors:?}");
        }
        let mut errors = Vec::new();
        assert_eq!(WatchForm::blank().options(&mut errors), WatchOptions::default());
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn validation_errors_of_a_step_or_region_name_its_line() {
        let form = WatchForm {
            steps: "click #a\n\nclick a:::b".into(),
            ignore_regions: "\n1,1,0,4".into(),
            ..WatchForm::blank()
        };
        let step = FieldError::new("options.fetch.steps[1].selector", "not a selector");
        assert_eq!((form_field(&step.field), form.message(step)), ("steps", "line 3: not a selector".to_owned()));
        let region = FieldError::new("options.noise.ignore_regions[0]", "width and height must be above 0");
        assert_eq!(form.message(region), "line 2: width and height must be above 0");
        assert_eq!(
            parse_regions("1,2,3").unwrap_err(),
            "line 1: write x,y,width,height in whole pixels, like 0,0,1280,90"
        );
        assert_eq!(form_field("options.fetch.engine"), "engine");
    }
}
