//! changedetection.io's `url-watches.json` alone (older versions' whole datastore, without
//! the history, which lives in the watches' folders: import the backup zip to bring it): an
//! object with `watching` (uuid → watch) and `settings`, mapped as a backup's watches are.

use serde_json::Value;

use super::Globals;
use crate::{Format, ImportError, Plan};

/// The plan of a `url-watches.json`; any other JSON object is refused, saying what driftwatch
/// reads.
pub(crate) fn read(document: &Value) -> Result<Plan, ImportError> {
    let Some(watching) = document.get("watching").and_then(Value::as_object) else {
        return Err(ImportError::refused(
            "this JSON object is not a file driftwatch imports: give changedetection.io's backup zip or its \
             url-watches.json (an object with `watching`), a Distill export, a driftwatch export (a JSON array, \
             from `driftwatch export`), a urlwatch urls.yaml, or a list of URLs",
        ));
    };
    let globals = Globals::of(document);
    let watches = watching.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    super::backup::plan(Format::ChangedetectionJson, watches, &globals, None)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Route;

    #[test]
    fn url_watches_json_maps_urls_titles_tags_intervals_and_routes() {
        let document = json!({
            "app_guid": "f00d",
            "settings": {
                "application": {
                    "tags": {"t-1": {"title": "prices", "notification_urls": ["mailto://me@example.com"]}},
                    "notification_urls": ["tgram://123:abc/456"],
                    "api_access_token": "never-imported"
                },
                "requests": {"time_between_check": {"weeks": null, "days": null, "hours": 3, "minutes": null, "seconds": null}}
            },
            "watching": {
                "a": {"url": "https://shop.example/", "title": "Shop", "tags": ["t-1"], "paused": true,
                      "include_filters": ["#price", ".stock"], "time_between_check_use_default": true,
                      "time_between_check": {"minutes": 5}, "date_created": 1},
                "b": {"url": "https://news.example/", "title": "", "tag": "news, daily",
                      "time_between_check_use_default": false,
                      "time_between_check": {"minutes": 10}, "include_filters": ["xpath://div[contains(text(), 'x')]"],
                      "date_created": 2}
            }
        });
        let plan = read(&document).expect("recognised");
        let [shop, news] = &plan.watches[..] else { panic!("two watches: {:?}", plan.watches) };
        assert_eq!((shop.watch.url.as_str(), shop.watch.name.as_deref()), ("https://shop.example/", Some("Shop")));
        assert_eq!(shop.watch.tags, ["prices"]);
        assert_eq!(shop.watch.selector.as_deref(), Some("#price, .stock"));
        assert_eq!(shop.watch.interval_seconds, Some(3 * 3600), "the default, as the watch asks");
        assert!(shop.watch.paused);
        assert_eq!((news.watch.name.as_deref(), news.watch.interval_seconds), (None, Some(600)));
        assert_eq!(news.watch.tags, ["news", "daily"]);
        assert_eq!(news.watch.selector, None);
        assert_eq!(plan.problems.len(), 1, "{:?}", plan.problems);
        assert!(plan.problems[0].message.contains("XPath"), "{:?}", plan.problems);
        let routes: Vec<(&str, &Route)> = plan.notifications.iter().map(|n| (n.url.as_str(), &n.route)).collect();
        assert_eq!(
            routes,
            [
                ("mailto://me@example.com", &Route::Some { tags: vec!["prices".into()], watches: vec![] }),
                ("tgram://123:abc/456", &Route::Some { tags: vec![], watches: vec![1] }),
            ]
        );
        assert!(!format!("{plan:?}").contains("never-imported"));
    }

    #[test]
    fn other_json_objects_are_refused_by_what_they_are_not() {
        let error = read(&json!({"url": "https://a.example/"})).expect_err("refused").to_string();
        assert!(error.contains("url-watches.json") && error.contains("driftwatch export"), "{error}");
    }
}
