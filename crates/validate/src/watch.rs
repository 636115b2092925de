//! Watches: the URL, name, selector, schedule and options of a new watch or of a change.

use chrono::{DateTime, Utc};
use driftwatch_core::values::Conditions;
use driftwatch_core::{Timing, TimingError};
use driftwatch_core::{WatchOptions, WatchState};
use driftwatch_net::TargetPolicy;
use driftwatch_store::Watch;
use driftwatch_store::watches::WatchChanges;

use crate::{Errors, FieldError, Invalid, Limits};

mod browser;

use browser::valid_browser_options;

const MAX_NAME: usize = 200;
const MAX_URL: usize = 2048;
const MAX_INTERVAL: i64 = 366 * 86_400;

/// What a target URL looks like; the API's schemas of `url` fields say the same (a test holds
/// them together), so the server accepts exactly what its document describes.
pub const URL_PATTERN: &str = r"^\s*[Hh][Tt][Tt][Pp][Ss]?://[^/?#\s]+([/?#][\s\S]*)?$";

/// A URL the server will request on the owner's behalf: http(s), with a host, not private
/// unless `policy` allows it. Returns it normalised.
pub fn valid_target(field: &str, raw: &str, policy: TargetPolicy) -> Result<String, FieldError> {
    if raw.chars().count() > MAX_URL {
        return Err(FieldError::new(field, format!("longer than {MAX_URL} characters")));
    }
    let shape = driftwatch_core::compiled_regex(URL_PATTERN).map_err(|e| FieldError::new(field, e.to_string()))?;
    if !shape.is_match(raw) {
        return Err(FieldError::new(field, "must be an http:// or https:// URL with a host"));
    }
    let url = url::Url::parse(raw.trim()).map_err(|e| FieldError::new(field, format!("not a valid URL: {e}")))?;
    driftwatch_net::check_url(&url, policy).map_err(|e| FieldError::new(field, e.to_string()))?;
    Ok(url.to_string())
}

/// An intent is words for a model: at most [`driftwatch_core::MAX_INTENT_CHARS`] characters, no
/// control characters but line breaks and tabs.
fn valid_ai(ai: &driftwatch_core::AiOptions) -> Result<(), FieldError> {
    let Some(intent) = ai.intent.as_deref() else { return Ok(()) };
    let field = "options.ai.intent";
    let count = intent.chars().count();
    if count > driftwatch_core::MAX_INTENT_CHARS {
        return Err(FieldError::new(
            field,
            format!("is {count} characters long; an intent may have at most {}", driftwatch_core::MAX_INTENT_CHARS),
        ));
    }
    if intent.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')) {
        return Err(FieldError::new(field, "must not contain control characters"));
    }
    Ok(())
}

fn valid_name(name: &str) -> Result<String, FieldError> {
    if name.chars().count() > MAX_NAME {
        return Err(FieldError::new("name", format!("longer than {MAX_NAME} characters")));
    }
    let name = name.trim();
    if name.is_empty() {
        return Err(FieldError::new("name", "must not be empty"));
    }
    Ok(name.to_owned())
}

/// Most tags on one watch.
const MAX_TAGS: usize = 20;

/// Tags normalised: trimmed, lower case, sorted, once each; 1 to 40 letters, digits, `-`, `_`,
/// `.` or `:` each, at most 20.
pub fn valid_tags(tags: &[String]) -> Result<Vec<String>, FieldError> {
    let mut normalised: Vec<String> = tags.iter().map(|t| t.trim().to_lowercase()).filter(|t| !t.is_empty()).collect();
    normalised.sort();
    normalised.dedup();
    if normalised.len() > MAX_TAGS {
        return Err(FieldError::new("tags", format!("at most {MAX_TAGS} tags")));
    }
    if let Some(bad) = normalised.iter().find(|t| {
        t.chars().count() > 40 || !t.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    }) {
        return Err(FieldError::new(
            "tags",
            format!("`{bad}`: a tag is up to 40 letters, digits, `-`, `_`, `.` or `:`"),
        ));
    }
    Ok(normalised)
}

fn valid_selector(selector: Option<String>) -> Result<Option<String>, FieldError> {
    let selector = selector.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    if let Some(selector) = &selector {
        driftwatch_scrape::validate_selector(selector).map_err(|e| FieldError::new("selector", e.to_string()))?;
    }
    Ok(selector)
}

/// Checks watch options as a create or update would (fields named `options.…`), returning
/// their stored form (JSON).
pub fn valid_options(options: &WatchOptions, limits: &Limits) -> Result<String, FieldError> {
    let saved = options_as_saved(options, limits)?;
    serde_json::to_string(&saved).map_err(|e| FieldError::new("options", e.to_string()))
}

/// Checks fetch, extraction, line and noise options (header names, selectors parse, regexes
/// compile, ranges) and returns them as a save stores them: a conditions preset expanded into
/// the rules it stands for (and the value it may add). What tries options without saving them
/// (a backtest) takes them from here, so it judges exactly what a save would keep.
pub fn options_as_saved(options: &WatchOptions, limits: &Limits) -> Result<WatchOptions, FieldError> {
    let fetch = &options.fetch;
    valid_browser_options(options, limits)?;
    if let Some(method) = &fetch.method
        && !["GET", "POST", "PUT", "PATCH"].contains(&method.to_ascii_uppercase().as_str())
    {
        return Err(FieldError::new("options.fetch.method", "must be GET, POST, PUT or PATCH"));
    }
    for (name, value) in &fetch.headers {
        let field = format!("options.fetch.headers.{name}");
        http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| FieldError::new(&field, "not a valid header name"))?;
        http::HeaderValue::from_str(value).map_err(|_| FieldError::new(&field, "not a valid header value"))?;
    }
    for (name, value) in &fetch.cookies {
        if name.is_empty() || name.contains([';', '=', ' ']) || value.contains([';', '\r', '\n']) {
            return Err(FieldError::new(format!("options.fetch.cookies.{name}"), "not a valid cookie"));
        }
    }
    if let Some(agent) = &fetch.user_agent {
        http::HeaderValue::from_str(agent)
            .map_err(|_| FieldError::new("options.fetch.user_agent", "not a valid header value"))?;
    }
    let proxies = [
        ("options.fetch.proxy", fetch.proxy.as_deref()),
        ("options.fetch.when_blocked.proxy", fetch.when_blocked.as_ref().and_then(|w| w.proxy.as_deref())),
    ];
    for (field, value) in proxies {
        if let Some(value) = value {
            crate::names::valid_proxy_value(value).map_err(|e| FieldError::new(field, e))?;
        }
    }
    if options.noise.confirm_after_seconds.is_some_and(|t| !(1..=60).contains(&t)) {
        return Err(FieldError::new("options.noise.confirm_after_seconds", "must be between 1 and 60"));
    }
    if let Some(ai) = &options.ai {
        valid_ai(ai)?;
    }
    if fetch.timeout_seconds.is_some_and(|t| !(1..=300).contains(&t)) {
        return Err(FieldError::new("options.fetch.timeout_seconds", "must be between 1 and 300"));
    }
    for (i, selector) in options.extract.remove_selectors.iter().enumerate() {
        driftwatch_scrape::validate_selector(selector)
            .map_err(|e| FieldError::new(format!("options.extract.remove_selectors[{i}]"), e.to_string()))?;
    }
    if let Some(pointer) = options.extract.json_pointer.as_deref()
        && !pointer.is_empty()
        && !pointer.starts_with('/')
    {
        return Err(FieldError::new("options.extract.json_pointer", "a JSON Pointer starts with `/`"));
    }
    driftwatch_scrape::Rules::new(&options.rules)
        .map_err(|e| FieldError::new(format!("options.{}", e.field), e.message))?;
    driftwatch_alert::Noise::new(&options.noise)
        .map_err(|e| FieldError::new(format!("options.{}", e.field), e.message))?;
    let within = |e: FieldError, prefix: &str| e.within(prefix);
    // A preset is saved as the rules it stands for (and may add the value it is about).
    let mut options = std::borrow::Cow::Borrowed(options);
    if options.conditions.as_ref().is_some_and(Conditions::names_a_preset) {
        let expanded = options.to_mut();
        if let Some(conditions) = expanded.conditions.as_mut() {
            driftwatch_values::presets::expand(conditions, &mut expanded.values)
                .map_err(|e| within(e, "options.conditions"))?;
        }
    }
    driftwatch_values::Reader::new(&options.values).map_err(|e| within(e, "options"))?;
    if let Some(conditions) = &options.conditions {
        driftwatch_values::conditions::check(conditions, &options.values)
            .map_err(|e| within(e, "options.conditions"))?;
    }
    Ok(options.into_owned())
}

/// Checks a schedule against the limits; returns it parsed.
fn valid_timing(
    limits: &Limits,
    interval: Option<i64>,
    cron: Option<&str>,
    zone: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Timing, FieldError> {
    let min = limits.min_interval_seconds;
    if let Some(seconds) = interval
        && !(min..=MAX_INTERVAL).contains(&seconds)
    {
        return Err(FieldError::new("interval_seconds", format!("must be between {min} and {MAX_INTERVAL} seconds")));
    }
    if zone.is_some() && cron.is_none() {
        return Err(FieldError::new("time_zone", "only applies to a cron schedule"));
    }
    let timing = Timing::parse(interval, cron, zone)
        .map_err(|TimingError { field, message }| FieldError::new(field, message))?;
    if let Timing::Cron { .. } = timing {
        let first = timing.next_after(now, "wat_probe");
        let second = timing.next_after(first, "wat_probe");
        if (second - first).num_seconds() < min - 1 {
            return Err(FieldError::new("cron", format!("fires more often than every {min} seconds")));
        }
    }
    Ok(timing)
}

/// The next `n` times a schedule fires after `now` (for a watch with id `watch_id`: intervals
/// carry a per-watch offset), or why the schedule is invalid.
pub fn next_runs(
    limits: &Limits,
    interval: Option<i64>,
    cron: Option<&str>,
    zone: Option<&str>,
    watch_id: &str,
    n: usize,
    now: DateTime<Utc>,
) -> Result<Vec<DateTime<Utc>>, FieldError> {
    let timing = valid_timing(limits, interval, cron, zone, now)?;
    let mut runs = Vec::with_capacity(n);
    let mut at = now;
    for _ in 0..n {
        at = timing.next_after(at, watch_id);
        runs.push(at);
    }
    Ok(runs)
}

/// A new watch as asked for; absent fields take their defaults.
#[derive(Debug, Clone, Default)]
pub struct WatchInput {
    /// The page.
    pub url: String,
    /// A name; the URL when absent or blank.
    pub name: Option<String>,
    /// A CSS selector; the whole page when absent or blank.
    pub selector: Option<String>,
    /// Every this many seconds.
    pub interval_seconds: Option<i64>,
    /// A cron expression instead.
    pub cron: Option<String>,
    /// The cron expression's time zone.
    pub time_zone: Option<String>,
    /// Created paused.
    pub paused: Option<bool>,
    /// Fetch, extraction, line and noise options.
    pub options: Option<WatchOptions>,
    /// Tags.
    pub tags: Option<Vec<String>>,
    /// Checked and recorded, but no deliveries queued.
    pub muted: Option<bool>,
}

fn blank_to_none(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Builds the watch `input` asks for, owned by `account_id`, or says every field at fault.
pub fn new_watch(
    input: WatchInput,
    limits: &Limits,
    policy: TargetPolicy,
    account_id: &str,
    now: DateTime<Utc>,
) -> Result<Watch, Invalid> {
    let mut errors = Errors::default();
    let url = errors.take(valid_target("url", &input.url, policy));
    let name = match input.name.as_deref().filter(|n| !n.trim().is_empty()) {
        Some(name) => errors.take(valid_name(name)),
        None if input.name.as_ref().is_some_and(|n| n.chars().count() > MAX_NAME) => {
            errors.take::<String>(Err(FieldError::new("name", format!("longer than {MAX_NAME} characters"))))
        }
        None => url.as_ref().map(|u| u.chars().take(MAX_NAME).collect()),
    };
    let selector = errors.take(valid_selector(input.selector));
    let cron = blank_to_none(input.cron);
    let interval = match (&cron, input.interval_seconds) {
        (None, None) => Some(limits.default_interval_seconds),
        (_, given) => given,
    };
    let time_zone = blank_to_none(input.time_zone);
    let timing = errors.take(valid_timing(limits, interval, cron.as_deref(), time_zone.as_deref(), now));
    let input_options = input.options.unwrap_or_default();
    let expect_due_at = timing.and_then(|t| errors.take(crate::expect::valid_expect(&input_options, &t, now)));
    let options = errors.take(valid_options(&input_options, limits));
    let tags = errors.take(valid_tags(&input.tags.unwrap_or_default()));
    errors.finish()?;
    let (Some(url), Some(name), Some(selector), Some(options), Some(tags)) = (url, name, selector, options, tags)
    else {
        return Err(Invalid(vec![FieldError::new("url", "invalid")]));
    };
    let paused = input.paused.unwrap_or(false);
    Ok(Watch {
        name,
        selector,
        interval_seconds: interval,
        cron,
        time_zone,
        state: if paused { WatchState::Paused } else { WatchState::Active }.as_str().to_owned(),
        options,
        tags: driftwatch_store::stored_tags(&tags),
        muted: input.muted.unwrap_or(false),
        expect_due_at: expect_due_at.flatten().map(|t| t.naive_utc()),
        ..Watch::new(account_id, &url, now.naive_utc())
    })
}

/// A change to a watch: only the fields given change; `Some(None)` clears.
#[derive(Debug, Clone, Default)]
pub struct WatchPatch {
    /// A new page.
    pub url: Option<String>,
    /// A new name.
    pub name: Option<String>,
    /// A new selector, or none for the whole page.
    pub selector: Option<Option<String>>,
    /// A new interval (replaces a cron schedule).
    pub interval_seconds: Option<Option<i64>>,
    /// A new cron schedule (replaces an interval).
    pub cron: Option<Option<String>>,
    /// The cron schedule's time zone.
    pub time_zone: Option<Option<String>>,
    /// New options, replacing all of them.
    pub options: Option<WatchOptions>,
    /// New tags, replacing all of them.
    pub tags: Option<Vec<String>>,
    /// Muted or not.
    pub muted: Option<bool>,
}

/// The changes `patch` makes to `current`, or every field at fault. A new URL, selector or
/// options starts a new baseline: the next check fetches in full, soon, and records the
/// result as the baseline instead of alerting.
pub fn watch_changes(
    current: &Watch,
    patch: WatchPatch,
    limits: &Limits,
    policy: TargetPolicy,
    now: DateTime<Utc>,
) -> Result<WatchChanges, Invalid> {
    let mut errors = Errors::default();
    let mut changes = WatchChanges { updated_at: Some(now.naive_utc()), muted: patch.muted, ..WatchChanges::default() };
    if let Some(url) = &patch.url {
        changes.url = errors.take(valid_target("url", url, policy));
    }
    if let Some(name) = &patch.name {
        changes.name = errors.take(valid_name(name));
    }
    if let Some(selector) = patch.selector {
        changes.selector = errors.take(valid_selector(selector));
    }
    let schedule_given = patch.interval_seconds.is_some() || patch.cron.is_some() || patch.time_zone.is_some();
    let mut new_timing = None;
    if schedule_given {
        // Setting one kind of schedule replaces the other.
        let (interval, cron) = match (patch.interval_seconds, patch.cron) {
            (Some(interval), None) => (interval, None),
            (None, Some(cron)) => (None, blank_to_none(cron)),
            (Some(interval), Some(cron)) => (interval, blank_to_none(cron)),
            (None, None) => (current.interval_seconds, current.cron.clone()),
        };
        let interval =
            if interval.is_none() && cron.is_none() { Some(limits.default_interval_seconds) } else { interval };
        let zone = match patch.time_zone {
            Some(zone) => blank_to_none(zone),
            None if cron.is_some() => current.time_zone.clone(),
            None => None,
        };
        if let Some(timing) = errors.take(valid_timing(limits, interval, cron.as_deref(), zone.as_deref(), now)) {
            changes.interval_seconds = Some(interval);
            changes.cron = Some(cron);
            changes.time_zone = Some(zone);
            changes.next_run_at = Some(timing.next_after(now, &current.id).naive_utc());
            new_timing = Some(timing);
        }
    }
    let current_options = current.options();
    let options = patch.options.as_ref().unwrap_or(&current_options);
    if let Some(options) = &patch.options {
        changes.options = errors.take(valid_options(options, limits));
    }
    // An expectation is read against the schedule: checked when either changes.
    if schedule_given == new_timing.is_some() && (schedule_given || patch.options.is_some()) {
        let timing = new_timing.unwrap_or_else(|| current.timing());
        let due = errors.take(crate::expect::valid_expect(options, &timing, now));
        crate::expect::rearm(&mut changes, options.expect != current_options.expect, due.flatten());
    }
    if let Some(tags) = &patch.tags {
        changes.tags = errors.take(valid_tags(tags)).map(|t| driftwatch_store::stored_tags(&t));
    }
    errors.finish()?;
    if changes.url.is_some() || changes.selector.is_some() || changes.options.is_some() {
        changes.next_run_at = Some(now.naive_utc());
        changes.etag = Some(None);
        changes.last_modified = Some(None);
        changes.rebaseline = Some(true);
    }
    let conditions_changed = patch.options.as_ref().is_some_and(|o| o.conditions != current_options.conditions);
    if conditions_changed || changes.url.is_some() {
        changes.conditions_met = Some(None);
    }
    Ok(changes)
}

/// Pausing or resuming a watch: resuming checks at once, then the schedule takes over.
pub fn state_change(to: WatchState, now: DateTime<Utc>) -> WatchChanges {
    WatchChanges {
        state: Some(to.as_str().to_owned()),
        next_run_at: (to == WatchState::Active).then_some(now.naive_utc()),
        updated_at: Some(now.naive_utc()),
        ..WatchChanges::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z").expect("time").with_timezone(&Utc)
    }

    fn check(input: WatchInput, expected: Result<(), &[(&str, &str)]>) {
        let got = new_watch(input, &Limits::default(), TargetPolicy { allow_private: false }, "acc_1", now());
        match (got, expected) {
            (Ok(_), Ok(())) => {}
            (Err(Invalid(errors)), Err(want)) => {
                let got: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.message.as_str())).collect();
                assert_eq!(got.len(), want.len(), "{got:?}");
                for ((field, message), (want_field, want_part)) in got.iter().zip(want) {
                    assert_eq!(field, want_field);
                    assert!(message.contains(want_part), "{field}: {message:?} lacks {want_part:?}");
                }
            }
            (got, want) => panic!("got {got:?}, want {want:?}"),
        }
    }

    fn input(url: &str) -> WatchInput {
        WatchInput { url: url.into(), ..WatchInput::default() }
    }

    #[test]
    fn watches_are_checked_field_by_field_and_report_every_error() {
        check(input("https://example.com/pricing"), Ok(()));
        check(input("ftp://example.com"), Err(&[("url", "http:// or https://")]));
        check(input("http://127.0.0.1/"), Err(&[("url", "")]));
        check(WatchInput { selector: Some("div[".into()), ..input("https://example.com") }, Err(&[("selector", "")]));
        check(
            WatchInput { interval_seconds: Some(5), ..input("https://example.com") },
            Err(&[("interval_seconds", "between 30")]),
        );
        check(
            WatchInput { time_zone: Some("UTC".into()), ..input("https://example.com") },
            Err(&[("time_zone", "cron")]),
        );
        check(
            WatchInput { cron: Some("* * * * * *".into()), ..input("https://example.com") },
            Err(&[("cron", "more often")]),
        );
        check(
            WatchInput { name: Some("x".repeat(201)), selector: Some("div[".into()), ..input("nope") },
            Err(&[("url", ""), ("name", "longer than 200"), ("selector", "")]),
        );
        let mut options = WatchOptions::default();
        options.rules.masks = vec!["(".into()];
        check(
            WatchInput { options: Some(options), ..input("https://example.com") },
            Err(&[("options.rules.masks[0]", "")]),
        );
    }

    #[test]
    fn a_new_watch_takes_defaults_and_a_change_of_what_is_read_rebaselines() {
        let limits = Limits::default();
        let policy = TargetPolicy { allow_private: false };
        let watch = new_watch(input("https://example.com/a"), &limits, policy, "acc_1", now()).expect("valid");
        assert_eq!(watch.name, "https://example.com/a");
        assert_eq!(watch.interval_seconds, Some(3600));
        assert_eq!(watch.state, "active");
        let rename = WatchPatch { name: Some("A".into()), ..WatchPatch::default() };
        let changes = watch_changes(&watch, rename, &limits, policy, now()).expect("valid");
        assert_eq!(changes.rebaseline, None);
        let reselect = WatchPatch { selector: Some(Some("#main".into())), ..WatchPatch::default() };
        let changes = watch_changes(&watch, reselect, &limits, policy, now()).expect("valid");
        assert_eq!(changes.rebaseline, Some(true));
        let runs =
            next_runs(&limits, None, Some("0 9 * * MON-FRI"), Some("Europe/Paris"), "wat_1", 5, now()).expect("valid");
        assert_eq!(runs.len(), 5);
        assert!(runs.windows(2).all(|w| w[0] < w[1]));
    }
}
