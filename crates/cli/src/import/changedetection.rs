//! changedetection.io's `url-watches.json` (its datastore, in every backup zip): an object with
//! `watching` (uuid → watch), `settings` and `app_guid`. What maps onto a driftwatch watch is
//! taken (URL, title, tags, interval, paused, CSS include filters), the global Apprise URLs
//! become endpoints, and the rest is said per watch.

use serde_json::{Map, Value};

use super::{Imported, PortableWatch};

/// The watches and notification URLs of a `url-watches.json`; any other JSON object is refused,
/// saying what driftwatch reads.
pub(super) fn parse(document: &Value) -> anyhow::Result<Imported> {
    let Some(watching) = document.get("watching").and_then(Value::as_object) else {
        anyhow::bail!(
            "this JSON object is not a file driftwatch imports: give changedetection.io's url-watches.json (an \
             object with `watching`), a driftwatch export (a JSON array, from `driftwatch export`), a urlwatch \
             urls.yaml, or a list of URLs"
        )
    };
    let settings = document.get("settings");
    let application = settings.and_then(|s| s.get("application"));
    let tag_titles = application.and_then(|a| a.get("tags")).and_then(Value::as_object);
    let default_interval = settings.and_then(|s| s.get("requests")).and_then(|r| seconds(r.get("time_between_check")));
    let mut imported = Imported::default();
    for (uuid, watch) in watching {
        let Some(url) = watch.get("url").and_then(Value::as_str) else {
            imported.problems.push(format!("watch {uuid}: it has no URL; skipped"));
            continue;
        };
        let text = |key: &str| watch.get(key).and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
        let label = text("title").unwrap_or(url).to_owned();
        let mut portable = PortableWatch::at(url);
        portable.name = text("title").map(str::to_owned);
        portable.paused = watch.get("paused").and_then(Value::as_bool).unwrap_or(false);
        portable.tags = tags(watch, tag_titles);
        let own_interval = match watch.get("time_between_check_use_default").and_then(Value::as_bool) {
            Some(true) => None,
            _ => seconds(watch.get("time_between_check")),
        };
        portable.interval_seconds = own_interval.or(default_interval);
        let filters: Vec<&str> = watch
            .get("include_filters")
            .and_then(Value::as_array)
            .map(|all| all.iter().filter_map(Value::as_str).map(str::trim).filter(|f| !f.is_empty()).collect())
            .unwrap_or_default();
        let (css, xpath): (Vec<&str>, Vec<&str>) =
            filters.into_iter().partition(|f| !(f.starts_with("xpath") || f.starts_with('/')));
        if !css.is_empty() {
            // Several include filters select the union of their elements, as a selector list does.
            portable.selector = Some(css.join(", "));
        }
        if !xpath.is_empty() {
            imported.problems.push(format!("{label}: XPath filters have no driftwatch equivalent; left out"));
        }
        if watch.get("processor").and_then(Value::as_str).is_some_and(|p| p != "text_json_diff") {
            imported.problems.push(format!("{label}: its restock or price detection is not imported; watched as text"));
        }
        if watch.get("notification_urls").and_then(Value::as_array).is_some_and(|urls| !urls.is_empty()) {
            imported.problems.push(format!(
                "{label}: notification URLs of one watch are not imported (the global ones become endpoints)"
            ));
        }
        imported.watches.push(portable);
    }
    let notifications = application.and_then(|a| a.get("notification_urls")).and_then(Value::as_array);
    imported.notifications = notifications.into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect();
    Ok(imported)
}

/// A watch's tags: titles from the uuids in `tags` (newer versions), or the comma-separated
/// `tag` (older ones).
fn tags(watch: &Value, titles: Option<&Map<String, Value>>) -> Vec<String> {
    let mut tags: Vec<String> = match watch.get("tags").and_then(Value::as_array) {
        Some(uuids) => uuids
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|uuid| titles?.get(uuid)?.get("title")?.as_str())
            .map(str::to_owned)
            .collect(),
        None => Vec::new(),
    };
    if let Some(old) = watch.get("tag").and_then(Value::as_str) {
        tags.extend(old.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned));
    }
    tags
}

/// The seconds of a `time_between_check` (`{"weeks": …, "days": …, "hours": …, "minutes": …,
/// "seconds": …}`, each possibly null); `None` when it adds up to nothing.
fn seconds(value: Option<&Value>) -> Option<i64> {
    let value = value?;
    let total = [("weeks", 604_800), ("days", 86_400), ("hours", 3_600), ("minutes", 60), ("seconds", 1)]
        .iter()
        .map(|(unit, each)| value.get(unit).and_then(Value::as_i64).unwrap_or(0).saturating_mul(*each))
        .fold(0i64, i64::saturating_add);
    (total > 0).then_some(total)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn url_watches_json_maps_urls_titles_tags_and_intervals() {
        let document = json!({
            "app_guid": "f00d",
            "settings": {
                "application": {
                    "tags": {"t-1": {"title": "prices"}},
                    "notification_urls": ["tgram://123:abc/456"]
                },
                "requests": {"time_between_check": {"weeks": null, "days": null, "hours": 3, "minutes": null, "seconds": null}}
            },
            "watching": {
                "a": {"url": "https://shop.example/", "title": "Shop", "tags": ["t-1"], "paused": true,
                      "include_filters": ["#price", ".stock"], "time_between_check_use_default": true,
                      "time_between_check": {"minutes": 5}},
                "b": {"url": "https://news.example/", "title": "", "tag": "news, daily",
                      "time_between_check": {"minutes": 10}, "include_filters": ["xpath://div"],
                      "notification_urls": ["mailto://x"]}
            }
        });
        let imported = parse(&document).expect("recognised");
        let [shop, news] = &imported.watches[..] else { panic!("two watches: {:?}", imported.watches) };
        assert_eq!((shop.url.as_str(), shop.name.as_deref()), ("https://shop.example/", Some("Shop")));
        assert_eq!(shop.tags, ["prices"]);
        assert_eq!(shop.selector.as_deref(), Some("#price, .stock"));
        assert_eq!(shop.interval_seconds, Some(3 * 3600), "the default, as the watch asks");
        assert!(shop.paused);
        assert_eq!((news.name.as_deref(), news.interval_seconds), (None, Some(600)));
        assert_eq!(news.tags, ["news", "daily"]);
        assert_eq!(news.selector, None);
        assert_eq!(imported.problems.len(), 2, "{:?}", imported.problems);
        assert_eq!(imported.notifications, ["tgram://123:abc/456"]);
    }

    #[test]
    fn other_json_objects_are_refused_by_what_they_are_not() {
        let error = parse(&json!({"url": "https://a.example/"})).expect_err("refused").to_string();
        assert!(error.contains("url-watches.json") && error.contains("driftwatch export"), "{error}");
    }
}
