//! The form as fields: every option of a watch as text, filled from a stored watch and read
//! back into the API's input, with the parse helpers of its selects and fields.

use driftwatch_core::WatchOptions;
use driftwatch_store::Watch;
use driftwatch_validate::{FieldError, WatchInput};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::values::ValueFields;
use crate::ui::form::{checked, lines, number, optional, pairs};
use crate::ui::steps::{parse_regions, parse_steps, step_line};

/// The mask presets offered as checkboxes.
pub const MASK_PRESETS: [&str; 5] = ["dates", "times", "numbers", "uuids", "hex_ids"];

/// The form as posted: every field as text, so what was typed comes back on an error.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct WatchForm {
    pub(super) url: String,
    pub(super) name: String,
    pub(super) selector: String,
    /// Comma- or space-separated.
    pub(super) tags: String,
    /// `interval` or `cron`.
    pub(super) schedule: String,
    pub(super) every: String,
    /// `seconds`, `minutes`, `hours`, `days`.
    pub(super) unit: String,
    pub(super) cron: String,
    pub(super) time_zone: String,
    pub(super) paused: Option<String>,
    /// Checked and recorded, nothing delivered.
    pub(super) muted: Option<String>,
    pub(super) fetch_method: String,
    pub(super) fetch_headers: String,
    pub(super) fetch_cookies: String,
    pub(super) fetch_user_agent: String,
    pub(super) fetch_timeout: String,
    pub(super) fetch_body: String,
    /// A proxy URL, the name of one of the account's proxies, or `none`.
    pub(super) fetch_proxy: String,
    /// When blocked: try the browser.
    pub(super) blocked_browser: Option<String>,
    /// When blocked: then this proxy.
    pub(super) blocked_proxy: String,
    pub(super) remove_selectors: String,
    pub(super) keep_links: Option<String>,
    pub(super) json_pointer: String,
    pub(super) ignore_lines: String,
    pub(super) extract_regex: String,
    pub(super) keep_lines_containing: String,
    pub(super) mask_dates: Option<String>,
    pub(super) mask_times: Option<String>,
    pub(super) mask_numbers: Option<String>,
    pub(super) mask_uuids: Option<String>,
    pub(super) mask_hex_ids: Option<String>,
    pub(super) custom_masks: String,
    pub(super) sort_lines: Option<String>,
    pub(super) unique_lines: Option<String>,
    pub(super) trigger_text: String,
    pub(super) block_text: String,
    pub(super) only_added: Option<String>,
    pub(super) only_removed: Option<String>,
    pub(super) min_changed_lines: String,
    pub(super) min_change_percent: String,
    pub(super) known_states: String,
    pub(super) confirm_after_seconds: String,
    /// `http`, `browser` or `auto`.
    pub(super) engine: String,
    /// `load`, `network_idle`, milliseconds or a CSS selector.
    pub(super) wait: String,
    /// One step a line (see [`parse_steps`]).
    pub(super) steps: String,
    /// Keep the site's session from one check to the next.
    pub(super) keep_session: Option<String>,
    /// The CSS selector present only when signed in.
    pub(super) logged_in: String,
    /// `off`, `viewport` or `full_page`.
    pub(super) screenshot: String,
    /// `text`, `text_or_visual` or `visual`.
    pub(super) compare: String,
    pub(super) min_visual_change_percent: String,
    /// One `x,y,width,height` a line.
    pub(super) ignore_regions: String,
    /// Read the page's structured price and availability as `price` and `stock`.
    pub(super) structured_data: Option<String>,
    /// A preset of when to alert (see [`super::values::PRESETS`]).
    pub(super) alert_when: String,
    /// The amount of "the price is below".
    pub(super) price_below: String,
    /// The percent of "the price dropped by at least".
    pub(super) price_drop: String,
    /// Other values, a JSON array of value specs.
    pub(super) values_json: String,
    /// The conditions, a JSON object (used when no preset is chosen).
    pub(super) conditions_json: String,
    /// With conditions: send `change.detected` too for the change that makes them hold
    /// (`alert_on: conditions_and_changes`).
    pub(super) alert_on_changes: Option<String>,
    /// What the page is expected to do (`options.expect`), a JSON object.
    pub(super) expect_json: String,
    /// What matters, for a language model (`options.ai.intent`).
    pub(super) ai_intent: String,
    /// Add a short summary to each alert (`options.ai.summary`).
    pub(super) ai_summary: Option<String>,
    /// `open` or `hold` (`options.ai.on_error`).
    pub(super) ai_on_error: String,
    /// `save`, `preview` or `backtest`.
    pub(super) action: String,
}

impl WatchForm {
    /// The form filled from a stored watch.
    pub(super) fn of(watch: &Watch) -> WatchForm {
        let options: WatchOptions = watch.options();
        let (every, unit) = every_and_unit(watch.interval_seconds);
        let join = |v: &[String]| v.join("\n");
        let presets: Vec<&String> = options.rules.masks.iter().filter(|m| MASK_PRESETS.contains(&m.as_str())).collect();
        let has = |name: &str| checked(presets.iter().any(|m| m.as_str() == name));
        let (fetch, extract, rules, noise) = (&options.fetch, &options.extract, &options.rules, &options.noise);
        let values = ValueFields::of(&options.values, options.conditions.as_ref());
        let (ai_intent, ai_summary, ai_on_error) = super::ai::fields_of(options.ai.as_ref());
        let mut form = WatchForm {
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
            muted: checked(watch.muted),
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
            custom_masks: custom_masks(&rules.masks),
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
            keep_session: checked(fetch.session.as_ref().is_some_and(|s| s.keep)),
            logged_in: fetch.session.as_ref().and_then(|s| s.logged_in.clone()).unwrap_or_default(),
            screenshot: choice_name(&fetch.screenshot),
            compare: choice_name(&noise.compare),
            min_visual_change_percent: noise.min_visual_change_percent.map(|n| n.to_string()).unwrap_or_default(),
            ignore_regions: noise
                .ignore_regions
                .iter()
                .map(|r| format!("{},{},{},{}", r.x, r.y, r.width, r.height))
                .collect::<Vec<_>>()
                .join("\n"),
            structured_data: checked(values.structured_data),
            alert_when: values.alert_when,
            price_below: values.price_below,
            price_drop: values.price_drop,
            values_json: values.values_json,
            conditions_json: values.conditions_json,
            alert_on_changes: checked(values.alert_on_changes),
            expect_json: options.expect.as_ref().and_then(|e| serde_json::to_string(e).ok()).unwrap_or_default(),
            ai_intent,
            ai_summary,
            ai_on_error,
            action: String::new(),
            ..WatchForm::default()
        };
        form.set_proxy_fields(&options);
        form
    }

    /// A new watch's form: hourly, active.
    pub(super) fn blank() -> WatchForm {
        WatchForm {
            schedule: "interval".into(),
            every: "1".into(),
            unit: "hours".into(),
            engine: "http".into(),
            screenshot: "off".into(),
            compare: "text".into(),
            alert_when: super::values::ANY.into(),
            ai_on_error: driftwatch_core::AiOnError::default().as_str().into(),
            ..WatchForm::default()
        }
    }

    /// The interval in seconds, or the cron schedule and zone; errors of the form's own fields.
    pub(super) fn schedule(&self, errors: &mut Vec<FieldError>) -> (Option<i64>, Option<String>, Option<String>) {
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
    pub(super) fn options(&self, errors: &mut Vec<FieldError>) -> WatchOptions {
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
        self.proxy_options(&mut options);
        (options.values, options.conditions) = self.value_fields().read(errors);
        options.ai = self.ai_options(errors);
        options.expect = super::values::parse_json(&self.expect_json, '{', "an object").unwrap_or_else(|message| {
            errors.push(FieldError::new("options.expect", message));
            None
        });
        options
    }

    /// The fields of values and conditions.
    pub(super) fn value_fields(&self) -> ValueFields {
        ValueFields {
            structured_data: self.structured_data.is_some(),
            alert_when: self.alert_when.clone(),
            price_below: self.price_below.clone(),
            price_drop: self.price_drop.clone(),
            values_json: self.values_json.clone(),
            conditions_json: self.conditions_json.clone(),
            alert_on_changes: self.alert_on_changes.is_some(),
        }
    }

    /// Whether the form asks to save (not to preview or try on past checks).
    pub(super) fn saves(&self) -> bool {
        !matches!(self.action.as_str(), "preview" | "backtest")
    }

    /// The form field showing an error of validation field `field`: as [`form_field`], but
    /// errors of the conditions stand beside the preset when one is chosen.
    pub(super) fn field_for(&self, field: &str) -> &'static str {
        match form_field(field) {
            "conditions_json" if self.value_fields().preset_chosen() => "alert_when",
            other => other,
        }
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
        let logged_in = optional(&self.logged_in);
        options.fetch.session = (self.keep_session.is_some() || logged_in.is_some())
            .then(|| driftwatch_core::SessionSpec { keep: self.keep_session.is_some(), logged_in });
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
    pub(super) fn message(&self, error: FieldError) -> String {
        if error.field.starts_with("options.values") || error.field.starts_with("options.conditions") {
            return self.value_fields().message(&error.field, error.message);
        }
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

    pub(super) fn input(&self, errors: &mut Vec<FieldError>) -> WatchInput {
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
            muted: Some(self.muted.is_some()),
        }
    }
}

/// Which form field shows an error about a validation field (`options.rules.masks[2]` is
/// shown beside the masks).
pub(super) fn form_field(field: &str) -> &'static str {
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
        "options.fetch.proxy" => "fetch_proxy",
        "options.fetch.when_blocked.proxy" => "blocked_proxy",
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
        b if b.starts_with("options.fetch.session") => "logged_in",
        b if b.starts_with("options.noise.ignore_regions") => "ignore_regions",
        b if b.starts_with("options.fetch.headers") => "fetch_headers",
        b if b.starts_with("options.fetch.cookies") => "fetch_cookies",
        "options.values" => "values_json",
        b if b.starts_with("options.conditions") => "conditions_json",
        "alert_when" => "alert_when",
        "price_below" => "price_below",
        "price_drop" => "price_drop",
        "options.ai.summary" => "ai_summary",
        "options.ai.on_error" => "ai_on_error",
        b if b.starts_with("options.ai") => "ai_intent",
        b if b.starts_with("options.expect") => "expect_json",
        _ => "url",
    }
}

/// A watch's interval as the form's `every` and `unit`: in the largest unit that divides it
/// (hourly when there is none).
fn every_and_unit(interval_seconds: Option<i64>) -> (String, &'static str) {
    match interval_seconds {
        Some(s) if s % 86_400 == 0 => ((s / 86_400).to_string(), "days"),
        Some(s) if s % 3600 == 0 => ((s / 3600).to_string(), "hours"),
        Some(s) if s % 60 == 0 => ((s / 60).to_string(), "minutes"),
        Some(s) => (s.to_string(), "seconds"),
        None => ("1".to_owned(), "hours"),
    }
}

/// The masks that are not presets, one a line.
fn custom_masks(masks: &[String]) -> String {
    masks.iter().filter(|m| !MASK_PRESETS.contains(&m.as_str())).cloned().collect::<Vec<_>>().join("\n")
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
