//! changedetection.io: its backup zip (`backup`), its `url-watches.json` alone (`datastore`),
//! and what both share: the global settings ([`Globals`]) and one watch's `watch.json` mapped
//! onto a driftwatch watch (`watch`, with `filters`, `steps` and `restock`).
//!
//! What a backup holds (0.60.x; older ones keep everything in `url-watches.json`):
//! `changedetection.json` (settings: default interval and fetcher, global notification URLs,
//! global ignore text and removed elements; also cd's own API token, never read), a folder per
//! group with `tag.json` (title, notification URLs), and a folder per watch with `watch.json`,
//! its history index `history.txt` (or `history-<processor>.txt`: lines of `unix_seconds,file`,
//! oldest first) and the snapshot files it names (`<md5>.txt`, or brotli's `<md5>.txt.br`).

use std::collections::BTreeMap;

use serde_json::Value;

pub(crate) mod backup;
pub(crate) mod datastore;
mod filters;
mod restock;
mod steps;
mod watch;

/// What the settings say for every watch.
#[derive(Debug, Default)]
pub(crate) struct Globals {
    /// `settings.requests.time_between_check`, in seconds.
    default_interval: Option<i64>,
    /// `settings.application.fetch_backend` (`html_requests`, `html_webdriver`).
    default_fetcher: Option<String>,
    /// `settings.application.global_ignore_text`.
    ignore_text: Vec<String>,
    /// `settings.application.global_subtractive_selectors`.
    subtractive_selectors: Vec<String>,
    /// Groups by uuid.
    tags: BTreeMap<String, Group>,
    /// `settings.application.notification_urls`.
    notification_urls: Vec<String>,
}

/// A group (cd's "tag"): its title as a driftwatch tag, and its notification URLs.
#[derive(Debug, Default, Clone)]
pub(crate) struct Group {
    title: String,
    notification_urls: Vec<String>,
}

impl Globals {
    /// The globals of a settings document (`changedetection.json` or `url-watches.json`).
    pub(crate) fn of(document: &Value) -> Globals {
        let settings = document.get("settings");
        let application = settings.and_then(|s| s.get("application"));
        let mut globals = Globals {
            default_interval: settings
                .and_then(|s| s.get("requests"))
                .and_then(|r| seconds(r.get("time_between_check"))),
            default_fetcher: application
                .and_then(|a| a.get("fetch_backend"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            ignore_text: strings(application.and_then(|a| a.get("global_ignore_text"))),
            subtractive_selectors: strings(application.and_then(|a| a.get("global_subtractive_selectors"))),
            tags: BTreeMap::new(),
            notification_urls: strings(application.and_then(|a| a.get("notification_urls"))),
        };
        if let Some(tags) = application.and_then(|a| a.get("tags")).and_then(Value::as_object) {
            for (uuid, tag) in tags {
                globals.add_group(uuid, tag);
            }
        }
        globals
    }

    /// Adds (or replaces) the group `uuid` from its `tag.json` or settings entry.
    pub(crate) fn add_group(&mut self, uuid: &str, tag: &Value) {
        let title = tag.get("title").and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
        self.tags.insert(
            uuid.to_owned(),
            Group {
                title: crate::tag_name(title.unwrap_or(uuid)),
                notification_urls: strings(tag.get("notification_urls")),
            },
        );
    }
}

/// The strings of a JSON array (others skipped), trimmed, without empty ones.
pub(crate) fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|all| {
            all.iter().filter_map(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
        })
        .unwrap_or_default()
}

/// The seconds of a `time_between_check` (`{"weeks": …, "days": …, "hours": …, "minutes": …,
/// "seconds": …}`, each possibly null or a string); `None` when it adds up to nothing.
pub(crate) fn seconds(value: Option<&Value>) -> Option<i64> {
    let value = value?;
    let number = |v: &Value| v.as_i64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())).unwrap_or(0);
    let total = [("weeks", 604_800), ("days", 86_400), ("hours", 3_600), ("minutes", 60), ("seconds", 1)]
        .iter()
        .map(|(unit, each)| value.get(unit).map_or(0, number).saturating_mul(*each))
        .fold(0i64, i64::saturating_add);
    (total > 0).then_some(total)
}

/// One of cd's filters (CSS, or XPath that CSS can say) as a CSS selector; why not, when it
/// cannot be.
pub(crate) fn filters_include(filter: &str) -> Result<String, String> {
    match filters::include(filter) {
        filters::Include::Css(css) => Ok(css),
        filters::Include::JsonPointer(_) => Err("a JSON filter is not a selector".into()),
        filters::Include::Unmapped(why) => Err(why),
    }
}
