//! Text files: a driftwatch export (a JSON array), JSON objects (changedetection.io's
//! `url-watches.json`, a Distill export), urlwatch's `urls.yaml`, or a list of URLs.

use serde::Deserialize;

use crate::{Format, ImportError, Notification, Plan, PlannedWatch, PortableWatch, Route};

/// The plan of `text`, whichever of the formats it is.
pub(crate) fn read(text: &str) -> Result<Plan, ImportError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let watches: Vec<PortableWatch> = serde_json::from_str(text)
            .map_err(|e| ImportError::refused(format!("the file is a JSON array but not a driftwatch export: {e}")))?;
        let mut plan = Plan::new(Format::Driftwatch);
        plan.watches = watches.into_iter().map(planned).collect();
        return Ok(plan);
    }
    if trimmed.starts_with('{') {
        let document: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| ImportError::refused(format!("the file starts like JSON but is not JSON: {e}")))?;
        if crate::distill::recognises(&document) {
            return crate::distill::read(&document);
        }
        return crate::changedetection::datastore::read(&document);
    }
    let looks_like_yaml = text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("url:") || l.starts_with("name:") || l.starts_with("command:") || l.starts_with("---")
    });
    if looks_like_yaml { parse_urlwatch(text) } else { Ok(parse_list(text)) }
}

/// A watch with no history, named by its name or URL.
pub(crate) fn planned(watch: PortableWatch) -> PlannedWatch {
    PlannedWatch { label: watch.name.clone().unwrap_or_else(|| watch.url.clone()), watch, history: Vec::new() }
}

fn parse_list(text: &str) -> Plan {
    let mut plan = Plan::new(Format::List);
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let scheme = line.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("http" | "https") | None => plan.watches.push(planned(PortableWatch::at(line))),
            Some(_) => plan.notifications.push(Notification { url: line.to_owned(), route: Route::Everything }),
        }
    }
    plan
}

/// urlwatch jobs: YAML documents with `url` (or `command`, which cannot be imported), `name`,
/// and `filter` (a string like `css:div.price,html2text` or a list of single-key maps).
fn parse_urlwatch(text: &str) -> Result<Plan, ImportError> {
    use serde_yaml_ng::Value;
    let mut plan = Plan::new(Format::Urlwatch);
    for (n, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let job = Value::deserialize(document)
            .map_err(|e| ImportError::refused(format!("the file looks like urlwatch's YAML but is not: {e}")))?;
        if job.is_null() {
            continue;
        }
        let label = job.get("name").and_then(Value::as_str).map_or_else(|| format!("job {}", n + 1), str::to_owned);
        let Some(url) = job.get("url").and_then(Value::as_str) else {
            plan.problem(label, "only URL jobs can be imported (command jobs are not)");
            continue;
        };
        let mut watch = PortableWatch::at(url);
        watch.name = job.get("name").and_then(Value::as_str).map(str::to_owned);
        let filters: Vec<(String, Option<String>)> = match job.get("filter") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(chain)) => chain
                .split(',')
                .map(|f| match f.trim().split_once(':') {
                    Some((kind, arg)) => (kind.trim().to_owned(), Some(arg.trim().to_owned())),
                    None => (f.trim().to_owned(), None),
                })
                .collect(),
            Some(Value::Sequence(items)) => items
                .iter()
                .filter_map(|item| match item {
                    Value::String(kind) => Some((kind.clone(), None)),
                    Value::Mapping(map) => map.iter().next().map(|(k, v)| {
                        let arg = match v {
                            Value::String(s) => Some(s.clone()),
                            Value::Mapping(m) => m.values().find_map(Value::as_str).map(str::to_owned),
                            _ => None,
                        };
                        (k.as_str().unwrap_or("").to_owned(), arg)
                    }),
                    _ => None,
                })
                .collect(),
            Some(_) => {
                plan.problem(label.clone(), "filter not understood; imported without filters");
                Vec::new()
            }
        };
        for (kind, arg) in filters {
            let arg = arg.unwrap_or_default();
            match kind.as_str() {
                "css" if watch.selector.is_none() => watch.selector = Some(arg),
                "element-by-id" if watch.selector.is_none() => watch.selector = Some(format!("#{arg}")),
                "element-by-class" if watch.selector.is_none() => watch.selector = Some(format!(".{arg}")),
                "element-by-tag" if watch.selector.is_none() => watch.selector = Some(arg),
                "html2text" | "strip" | "" => {}
                "sort" => watch.options.rules.sort_lines = true,
                "remove-duplicate-lines" => watch.options.rules.unique_lines = true,
                "grep" => watch.options.rules.extract_regex = Some(format!("^.*(?:{arg}).*$")),
                "grepi" => watch.options.rules.ignore_lines.push(arg),
                other => {
                    plan.problem(label.clone(), format!("filter `{other}` has no driftwatch equivalent; left out"))
                }
            }
        }
        plan.watches.push(planned(watch));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_lists() {
        let imported = read("# my pages\nhttps://a.example/\n\n  https://b.example/x  \n").expect("parse");
        let urls: Vec<&str> = imported.watches.iter().map(|w| w.watch.url.as_str()).collect();
        assert_eq!(urls, vec!["https://a.example/", "https://b.example/x"]);
    }

    #[test]
    fn urlwatch_jobs_map_onto_watches_and_report_the_rest() {
        let yaml = "name: Prices\nurl: https://shop.example/\nfilter: css:div.price,html2text,sort\n---\n\
                    url: https://news.example/\nfilter:\n  - element-by-id: main\n  - grepi: ^Ad\n  - re.sub: '\\d+'\n---\n\
                    name: Disk\ncommand: df -h\n";
        let imported = read(yaml).expect("parse");
        assert_eq!(imported.watches.len(), 2);
        let prices = &imported.watches[0].watch;
        assert_eq!((prices.name.as_deref(), prices.selector.as_deref()), (Some("Prices"), Some("div.price")));
        assert!(prices.options.rules.sort_lines);
        let news = &imported.watches[1].watch;
        assert_eq!(news.selector.as_deref(), Some("#main"));
        assert_eq!(news.options.rules.ignore_lines, vec!["^Ad".to_owned()]);
        assert_eq!(imported.problems.len(), 2, "{:?}", imported.problems);
        assert!(imported.problems[0].to_string().contains("re.sub"));
        let disk = imported.problems[1].to_string();
        assert!(disk.contains("Disk") && disk.contains("command"), "{disk}");
    }

    #[test]
    fn exports_round_trip() {
        let mut watch = PortableWatch::at("https://a.example/");
        watch.cron = Some("0 0 9 * * *".into());
        watch.options.noise.known_states = Some(3);
        let text = serde_json::to_string(&vec![watch.clone()]).expect("json");
        let plan = read(&text).expect("parse");
        assert_eq!(plan.watches.iter().map(|w| w.watch.clone()).collect::<Vec<_>>(), vec![watch]);
    }
}
