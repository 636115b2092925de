//! One changedetection.io watch (`watch.json`, or an entry of `watching`) mapped onto a
//! driftwatch watch, with every field that has no equivalent said.

use driftwatch_core::{AiOptions, Engine, Wait};
use serde_json::Value;

use super::{Globals, filters, restock, seconds, steps, strings};
use crate::{PlannedWatch, PortableWatch, Problem};

/// A watch mapped: the watch, the groups it belongs to (uuids, in its order), and the
/// notification URLs it has of its own.
pub(crate) struct Mapped {
    pub(crate) planned: PlannedWatch,
    pub(crate) groups: Vec<String>,
    pub(crate) own_notifications: Vec<String>,
}

/// Maps the watch `uuid`; `None` (with a problem) when it has no URL. `processor_config` is
/// the watch's `restock_diff.json`, when the backup has one.
pub(crate) fn map(
    uuid: &str,
    watch: &Value,
    globals: &Globals,
    processor_config: Option<&Value>,
    problems: &mut Vec<Problem>,
) -> Option<Mapped> {
    let text = |key: &str| watch.get(key).and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
    let flag = |key: &str| watch.get(key).and_then(Value::as_bool).unwrap_or(false);
    let Some(url) = text("url") else {
        problems.push(Problem { subject: format!("watch {uuid}"), message: "it has no URL; skipped".into() });
        return None;
    };
    let label = text("title").unwrap_or(url).to_owned();
    let mut note = |message: String| problems.push(Problem { subject: label.clone(), message });
    let mut portable = PortableWatch::at(url);
    portable.name = text("title").map(str::to_owned);
    portable.paused = flag("paused");
    portable.muted = flag("notification_muted");

    let groups: Vec<String> = strings(watch.get("tags"));
    portable.tags = groups.iter().filter_map(|uuid| globals.tags.get(uuid)).map(|g| g.title.clone()).collect();
    if let Some(old) = text("tag") {
        portable.tags.extend(old.split(',').map(crate::tag_name).filter(|t| !t.is_empty()));
    }
    for missing in groups.iter().filter(|uuid| !globals.tags.contains_key(*uuid)) {
        note(format!("its group {missing} is not in the backup; left out"));
    }
    portable.tags.dedup();

    let own_interval = match watch.get("time_between_check_use_default").and_then(Value::as_bool) {
        Some(false) => seconds(watch.get("time_between_check")),
        // Older versions have no flag: their own interval counts when it is set.
        None => seconds(watch.get("time_between_check")),
        Some(true) => None,
    };
    portable.interval_seconds = own_interval.or(globals.default_interval);

    let options = &mut portable.options;
    let mut selectors = Vec::new();
    for filter in strings(watch.get("include_filters")) {
        match filters::include(&filter) {
            filters::Include::Css(css) => selectors.push(css),
            filters::Include::JsonPointer(pointer) if options.extract.json_pointer.is_none() => {
                options.extract.json_pointer = Some(pointer);
            }
            filters::Include::JsonPointer(_) => {
                note(format!("filter `{filter}`: only one JSON filter is kept; left out"))
            }
            filters::Include::Unmapped(why) => note(format!("filter `{filter}`: {why}; left out")),
        }
    }
    if !selectors.is_empty() {
        // Several include filters select the union of their elements, as a selector list does.
        portable.selector = Some(selectors.join(", "));
    }
    let removed =
        strings(watch.get("subtractive_selectors")).into_iter().chain(globals.subtractive_selectors.iter().cloned());
    for filter in removed {
        match filters::include(&filter) {
            filters::Include::Css(css) => options.extract.remove_selectors.push(css),
            _ => note(format!("removed element `{filter}`: not a CSS selector driftwatch can use; left out")),
        }
    }
    options.extract.remove_selectors.dedup();

    for ignored in strings(watch.get("ignore_text")).iter().chain(&globals.ignore_text) {
        match filters::line_regex(ignored) {
            Some(regex) => options.rules.ignore_lines.push(regex),
            None => note(format!("ignore text `{ignored}`: not a valid regex; left out")),
        }
    }
    options.noise.trigger_text = strings(watch.get("trigger_text"));
    options.noise.block_text = strings(watch.get("text_should_not_be_present"));
    let extracts: Vec<String> =
        strings(watch.get("extract_text")).iter().filter_map(|e| filters::line_regex(e)).collect();
    if !extracts.is_empty() {
        options.rules.extract_regex = Some(extracts.iter().map(|e| format!("(?:{e})")).collect::<Vec<_>>().join("|"));
    }
    options.rules.keep_lines_containing = strings(watch.get("extract_lines_containing"));
    options.rules.sort_lines = flag("sort_text_alphabetically");
    options.rules.unique_lines = flag("remove_duplicate_lines");

    let said = |key: &str| watch.get(key).and_then(Value::as_bool).unwrap_or(true);
    match (said("filter_text_added"), said("filter_text_removed"), said("filter_text_replaced")) {
        (true, false, false) => options.noise.only_added = true,
        (false, true, false) => options.noise.only_removed = true,
        (true, true, true) | (true, true, false) => {}
        _ => note(
            "its added/removed/replaced line filter has no exact driftwatch equivalent; every change alerts".into(),
        ),
    }

    fetch(watch, globals, &mut portable, &mut note);
    if let Some(intent) = text("llm_intent") {
        portable.options.ai = Some(AiOptions { intent: Some(intent.to_owned()), ..AiOptions::default() });
    }
    match text("processor").unwrap_or("text_json_diff") {
        "text_json_diff" => {}
        "restock_diff" => restock::map(watch, processor_config, &mut portable.options, &mut note),
        other => note(format!("its `{other}` processor has no driftwatch equivalent; watched as text")),
    }
    unmapped(watch, &mut note);

    let own_notifications = strings(watch.get("notification_urls"));
    Some(Mapped { planned: PlannedWatch { label, watch: portable, history: Vec::new() }, groups, own_notifications })
}

/// The request: method, headers, body, fetcher, delay, steps.
fn fetch(watch: &Value, globals: &Globals, portable: &mut PortableWatch, note: &mut impl FnMut(String)) {
    let fetch = &mut portable.options.fetch;
    if let Some(method) = watch.get("method").and_then(Value::as_str).filter(|m| !m.eq_ignore_ascii_case("GET")) {
        fetch.method = Some(method.to_ascii_uppercase());
    }
    if let Some(body) = watch.get("body").and_then(Value::as_str).filter(|b| !b.is_empty()) {
        fetch.body = Some(body.to_owned());
    }
    if let Some(headers) = watch.get("headers").and_then(Value::as_object) {
        for (name, value) in headers {
            match value.as_str() {
                Some(value) => {
                    fetch.headers.insert(name.clone(), value.to_owned());
                }
                None => note(format!("header `{name}` has no text value; left out")),
            }
        }
    }
    let backend = match watch.get("fetch_backend").and_then(Value::as_str) {
        None | Some("system") => globals.default_fetcher.as_deref().unwrap_or("html_requests"),
        Some(own) => own,
    };
    fetch.engine = match backend {
        "html_requests" | "requests" => Engine::Http,
        "html_webdriver" | "playwright" | "puppeteer" | "webdriver" => Engine::Browser,
        other if other.starts_with("extra_browser_") => {
            note(format!("its browser `{other}` is an extra browser of cd's; checked with driftwatch's Chromium"));
            Engine::Browser
        }
        other => {
            note(format!("its fetcher `{other}` is unknown; checked over HTTP"));
            Engine::Http
        }
    };
    let delay = watch.get("webdriver_delay").and_then(|d| d.as_f64().or_else(|| d.as_str()?.parse().ok()));
    if let Some(delay) = delay.filter(|d| *d > 0.0 && fetch.engine == Engine::Browser) {
        fetch.wait = Some(Wait::Delay((delay * 1000.0).clamp(0.0, 60_000.0) as u32));
    }
    let cd_steps = watch.get("browser_steps").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mapped = steps::map(cd_steps, note);
    if !mapped.is_empty() {
        if fetch.engine == Engine::Http {
            note("its browser steps need the browser: it is checked with Chromium".into());
            fetch.engine = Engine::Browser;
        }
        fetch.steps = mapped;
    }
}

/// Fields set away from cd's defaults that driftwatch does not carry, said by name.
fn unmapped(watch: &Value, note: &mut impl FnMut(String)) {
    let set = |key: &str| match watch.get(key) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(_) => true,
    };
    if set("proxy") {
        note(
            "its proxy is one of cd's named proxies: add it on driftwatch's Proxies page and choose it on the watch"
                .into(),
        );
    }
    if watch.get("time_schedule_limit").and_then(|t| t.get("enabled")).and_then(Value::as_bool) == Some(true) {
        note(
            "its weekly check hours are not imported: it is checked around the clock (a cron schedule can say when)"
                .into(),
        );
    }
    if set("conditions") {
        note("its conditions (cd's rule builder) are not imported: add values and conditions on the watch".into());
    }
    if set("notification_title") || set("notification_body") {
        note("its own notification title/body are not imported: set message templates on the endpoint".into());
    }
    if set("check_unique_lines") {
        note(
            "\"only new lines\" (check_unique_lines) is not imported; `known_states` on the watch is the nearest"
                .into(),
        );
    }
    if set("ignore_status_codes") {
        note("\"ignore status codes\" is not imported: an error status fails the check".into());
    }
}
