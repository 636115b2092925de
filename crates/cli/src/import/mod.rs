//! Importing watches from a plain URL list, from urlwatch's `urls.yaml`, from
//! changedetection.io's `url-watches.json` (URLs, titles, tags, intervals, paused), or from a
//! driftwatch export, and endpoints from Apprise notification URLs (changedetection.io's);
//! exporting an account's watches as JSON. An import run twice adds nothing the second time:
//! a watch already there (same URL, selector and options) is skipped.

use serde::Deserialize;

mod changedetection;

pub use driftwatch_validate::{PortableWatch, from_watch};

/// What a file held: the watches that map onto driftwatch, and what could not be mapped.
#[derive(Debug, Default)]
pub struct Imported {
    /// Watches to create.
    pub watches: Vec<PortableWatch>,
    /// Apprise notification URLs (`tgram://…`, `mailto://…`) to create endpoints from.
    pub notifications: Vec<String>,
    /// One line per job or filter that was left out or changed, and why.
    pub problems: Vec<String>,
}

/// Reads a driftwatch export (JSON array), changedetection.io's `url-watches.json` (a JSON
/// object with `watching`), a urlwatch `urls.yaml`, or a list of URLs (one per line, `#`
/// comments), whichever `text` is. In a list, a line that is not an `http(s)` URL is an
/// Apprise notification URL: an endpoint. Any other JSON is refused, saying what it is not.
pub fn parse(text: &str) -> anyhow::Result<Imported> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let watches: Vec<PortableWatch> = serde_json::from_str(text)?;
        return Ok(Imported { watches, ..Imported::default() });
    }
    if trimmed.starts_with('{') {
        let document: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("the file starts like JSON but is not JSON: {e}"))?;
        return changedetection::parse(&document);
    }
    let looks_like_yaml = text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("url:") || l.starts_with("name:") || l.starts_with("command:") || l.starts_with("---")
    });
    if looks_like_yaml { parse_urlwatch(text) } else { Ok(parse_list(text)) }
}

fn parse_list(text: &str) -> Imported {
    let mut imported = Imported::default();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let scheme = line.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("http" | "https") | None => imported.watches.push(PortableWatch::at(line)),
            Some(_) => imported.notifications.push(line.to_owned()),
        }
    }
    imported
}

/// The endpoint an Apprise URL describes, checked as the API checks it (secrets still in
/// plaintext: the caller seals them); why not, without the URL's secrets.
pub fn to_endpoint(
    apprise_url: &str,
    account_id: &str,
    policy: driftwatch_net::TargetPolicy,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<driftwatch_store::Endpoint, String> {
    let input = driftwatch_validate::from_apprise(apprise_url).map_err(|e| e.message)?;
    driftwatch_validate::new_endpoint(input, policy, account_id, now).map_err(|e| e.to_string())
}

/// urlwatch jobs: YAML documents with `url` (or `command`, which cannot be imported), `name`,
/// and `filter` (a string like `css:div.price,html2text` or a list of single-key maps).
fn parse_urlwatch(text: &str) -> anyhow::Result<Imported> {
    use serde_yaml_ng::Value;
    let mut imported = Imported::default();
    for (n, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let job = Value::deserialize(document)?;
        if job.is_null() {
            continue;
        }
        let label = job.get("name").and_then(Value::as_str).map_or_else(|| format!("job {}", n + 1), str::to_owned);
        let Some(url) = job.get("url").and_then(Value::as_str) else {
            imported.problems.push(format!("{label}: only URL jobs can be imported (command jobs are not)"));
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
                imported.problems.push(format!("{label}: filter not understood; imported without filters"));
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
                    imported.problems.push(format!("{label}: filter `{other}` has no driftwatch equivalent; left out"))
                }
            }
        }
        imported.watches.push(watch);
    }
    Ok(imported)
}

/// The stored watch for an imported one, after exactly the checks the API makes (the rules of
/// `driftwatch-validate`, with the server's `limits`); the reasons when it cannot be created.
pub fn to_watch(
    watch: &PortableWatch,
    account_id: &str,
    limits: &driftwatch_validate::Limits,
    policy: driftwatch_net::TargetPolicy,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<driftwatch_store::Watch, String> {
    let input = driftwatch_validate::WatchInput {
        url: watch.url.clone(),
        name: watch.name.clone(),
        selector: watch.selector.clone(),
        interval_seconds: watch.interval_seconds,
        cron: watch.cron.clone(),
        time_zone: watch.time_zone.clone(),
        paused: Some(watch.paused),
        options: Some(watch.options.clone()),
        tags: Some(watch.tags.clone()),
        muted: Some(watch.muted),
    };
    driftwatch_validate::new_watch(input, limits, policy, account_id, now).map_err(|e| e.to_string())
}

/// Whether `stored` already watches what `new` would: the same page, selector and options
/// (names, tags and schedules aside), so that importing a file twice adds nothing.
pub fn same_watch(stored: &driftwatch_store::Watch, new: &driftwatch_store::Watch) -> bool {
    stored.url == new.url && stored.selector == new.selector && stored.options() == new.options()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_lists() {
        let imported = parse("# my pages\nhttps://a.example/\n\n  https://b.example/x  \n").expect("parse");
        let urls: Vec<&str> = imported.watches.iter().map(|w| w.url.as_str()).collect();
        assert_eq!(urls, vec!["https://a.example/", "https://b.example/x"]);
    }

    #[test]
    fn urlwatch_jobs_map_onto_watches_and_report_the_rest() {
        let yaml = "name: Prices\nurl: https://shop.example/\nfilter: css:div.price,html2text,sort\n---\n\
                    url: https://news.example/\nfilter:\n  - element-by-id: main\n  - grepi: ^Ad\n  - re.sub: '\\d+'\n---\n\
                    name: Disk\ncommand: df -h\n";
        let imported = parse(yaml).expect("parse");
        assert_eq!(imported.watches.len(), 2);
        let prices = &imported.watches[0];
        assert_eq!((prices.name.as_deref(), prices.selector.as_deref()), (Some("Prices"), Some("div.price")));
        assert!(prices.options.rules.sort_lines);
        let news = &imported.watches[1];
        assert_eq!(news.selector.as_deref(), Some("#main"));
        assert_eq!(news.options.rules.ignore_lines, vec!["^Ad".to_owned()]);
        assert_eq!(imported.problems.len(), 2, "{:?}", imported.problems);
        assert!(imported.problems[0].contains("re.sub"));
        assert!(imported.problems[1].contains("Disk") && imported.problems[1].contains("command"));
    }

    #[test]
    fn exports_round_trip() {
        let mut watch = PortableWatch::at("https://a.example/");
        watch.cron = Some("0 0 9 * * *".into());
        watch.options.noise.known_states = Some(3);
        let text = serde_json::to_string(&vec![watch.clone()]).expect("json");
        assert_eq!(parse(&text).expect("parse").watches, vec![watch]);
    }
}
