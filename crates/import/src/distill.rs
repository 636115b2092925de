//! Distill's JSON export: `{"client": ..., "data": [monitor, ...]}`, each monitor with `name`,
//! `uri`, `config` (its selections: frames of CSS or XPath `includes` and `excludes`; a JSON
//! object or a string holding one), `schedule` (`{"type": "INTERVAL", "params": {"interval":
//! seconds}}`, likewise) and `tags`.

use serde_json::Value;

use crate::changedetection::filters_include as include;
use crate::text::planned;
use crate::{Format, ImportError, Plan, PortableWatch};

/// Whether `document` is a Distill export.
pub(crate) fn recognises(document: &Value) -> bool {
    document.get("data").and_then(Value::as_array).is_some_and(|monitors| {
        monitors.iter().all(|m| m.get("uri").is_some()) && (document.get("client").is_some() || !monitors.is_empty())
    })
}

/// The plan of a Distill export.
pub(crate) fn read(document: &Value) -> Result<Plan, ImportError> {
    let mut plan = Plan::new(Format::Distill);
    let monitors = document.get("data").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (n, monitor) in monitors.iter().enumerate() {
        let Some(url) = monitor.get("uri").and_then(Value::as_str).map(str::trim).filter(|u| !u.is_empty()) else {
            plan.problem(format!("monitor {}", n + 1), "it has no URL; skipped");
            continue;
        };
        let name = monitor.get("name").and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
        let label = name.unwrap_or(url).to_owned();
        let mut watch = PortableWatch::at(url);
        watch.name = name.map(str::to_owned);
        let config = embedded(monitor.get("config"));
        let (mut selectors, mut removed) = (Vec::new(), Vec::new());
        let selections = config.as_ref().and_then(|c| c.get("selections")).and_then(Value::as_array);
        for selection in selections.into_iter().flatten() {
            if selection.get("dynamic").and_then(Value::as_bool) == Some(true) {
                watch.options.fetch.engine = driftwatch_core::Engine::Auto;
            }
            for frame in selection.get("frames").and_then(Value::as_array).into_iter().flatten() {
                for (key, into) in [("includes", &mut selectors), ("excludes", &mut removed)] {
                    for part in frame.get(key).and_then(Value::as_array).into_iter().flatten() {
                        let expr = part.get("expr").and_then(Value::as_str).unwrap_or_default();
                        let written = match part.get("type").and_then(Value::as_str) {
                            Some("xpath") => format!("xpath:{expr}"),
                            _ => expr.to_owned(),
                        };
                        match include(&written) {
                            Ok(css) => into.push(css),
                            Err(why) => plan.problem(label.clone(), format!("selection `{expr}`: {why}; left out")),
                        }
                    }
                }
            }
        }
        if !selectors.is_empty() {
            watch.selector = Some(selectors.join(", "));
        }
        watch.options.extract.remove_selectors = removed;
        let schedule = embedded(monitor.get("schedule"));
        match schedule.as_ref().map(|s| (s.get("type").and_then(Value::as_str), s.get("params"))) {
            Some((Some("INTERVAL"), Some(params))) => {
                watch.interval_seconds = params.get("interval").and_then(Value::as_i64).filter(|i| *i > 0);
            }
            Some((Some(other), _)) => {
                plan.problem(label.clone(), format!("its `{other}` schedule is not imported; checked hourly"))
            }
            _ => {}
        }
        watch.tags = match monitor.get("tags") {
            Some(Value::String(tags)) => tags.split(',').map(crate::tag_name).filter(|t| !t.is_empty()).collect(),
            Some(Value::Array(tags)) => tags.iter().filter_map(Value::as_str).map(crate::tag_name).collect(),
            _ => Vec::new(),
        };
        let mut planned = planned(watch);
        planned.label = label;
        plan.watches.push(planned);
    }
    Ok(plan)
}

/// A JSON object given as one or as a string holding one.
fn embedded(value: Option<&Value>) -> Option<Value> {
    match value? {
        Value::String(text) => serde_json::from_str(text).ok(),
        other @ Value::Object(_) => Some(other.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn monitors_map_onto_watches() {
        let config = json!({"selections": [{"frames": [{"index": 0,
            "includes": [{"type": "css", "expr": "#price"}, {"type": "xpath", "expr": "//span[@class='stock']"}],
            "excludes": [{"type": "css", "expr": ".ad"}]}], "dynamic": true}]});
        let document = json!({"client": {"local": 1}, "data": [
            {"name": "Lamp", "uri": "https://shop.example/lamp", "config": config.to_string(),
             "schedule": "{\"type\":\"INTERVAL\",\"params\":{\"interval\":1800}}", "tags": "home, deals"},
            {"name": "", "uri": "https://news.example/", "schedule": {"type": "LIVE"}}
        ]});
        assert!(recognises(&document));
        let plan = read(&document).expect("read");
        let lamp = &plan.watches[0].watch;
        assert_eq!(lamp.selector.as_deref(), Some("#price, span[class=\"stock\"]"));
        assert_eq!(lamp.options.extract.remove_selectors, [".ad"]);
        assert_eq!(lamp.interval_seconds, Some(1800));
        assert_eq!(lamp.tags, ["home", "deals"]);
        assert_eq!(lamp.options.fetch.engine, driftwatch_core::Engine::Auto);
        assert_eq!(plan.watches[1].label, "https://news.example/");
        assert_eq!(plan.problems.len(), 1, "{:?}", plan.problems);
        assert!(!recognises(&json!({"watching": {}})));
    }
}
