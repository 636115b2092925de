//! changedetection.io's backup zip read into a plan: the settings, the groups, every watch
//! with its history (the snapshot files its `history.txt` names, read later, in the import's
//! transaction), and its notification URLs routed as cd routes them.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Globals, watch};
use crate::archive::Archive;
use crate::routes::{self, Group};
use crate::{Format, HistoryEntry, ImportError, Plan, Problem};

/// Reads the backup in `archive`.
pub(crate) fn read(mut archive: Archive) -> Result<Plan, ImportError> {
    let Some(settings) = ["changedetection.json", "url-watches.json"].into_iter().find(|n| archive.has(n)) else {
        return Err(ImportError::refused(
            "this zip is not a changedetection.io backup: it has neither changedetection.json nor url-watches.json",
        ));
    };
    let document = json(&mut archive, settings)?;
    let mut globals = Globals::of(&document);
    let folders: BTreeSet<String> = archive
        .names()
        .filter_map(|n| n.split_once('/'))
        .filter(|(_, file)| !file.contains('/'))
        .map(|(d, _)| d.to_owned())
        .collect();
    let mut watches: BTreeMap<String, Value> = document
        .get("watching")
        .and_then(Value::as_object)
        .map(|w| w.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    for folder in &folders {
        let tag = format!("{folder}/tag.json");
        if archive.has(&tag) {
            let tag = json(&mut archive, &tag)?;
            globals.add_group(folder, &tag);
        }
        let watch = format!("{folder}/watch.json");
        if archive.has(&watch) {
            watches.insert(folder.clone(), json(&mut archive, &watch)?);
        }
    }
    plan(Format::ChangedetectionBackup, watches, &globals, Some(archive))
}

/// The plan of `watches` (by uuid) under `globals`, with their histories when `archive` is
/// given.
pub(crate) fn plan(
    format: Format,
    watches: BTreeMap<String, Value>,
    globals: &Globals,
    mut archive: Option<Archive>,
) -> Result<Plan, ImportError> {
    let mut plan = Plan::new(format);
    // cd lists watches by creation; the uuid keeps the order stable between runs.
    let mut ordered: Vec<(String, Value)> = watches.into_iter().collect();
    ordered.sort_by_key(|(uuid, w)| (w.get("date_created").and_then(Value::as_f64).map(|d| d as i64), uuid.clone()));
    let (mut used, mut memberships) = (Vec::new(), Vec::new());
    for (uuid, document) in &ordered {
        let config_name = format!("{uuid}/restock_diff.json");
        let config = match archive.as_mut() {
            Some(archive) if archive.has(&config_name) => Some(json(archive, &config_name)?),
            _ => None,
        };
        let Some(mut mapped) = watch::map(uuid, document, globals, config.as_ref(), &mut plan.problems) else {
            continue;
        };
        if let Some(archive) = archive.as_mut() {
            mapped.planned.history = history(archive, uuid, document, &mapped.planned.label, &mut plan.problems)?;
        }
        let group_urls = mapped
            .groups
            .iter()
            .filter_map(|g| globals.tags.get(g))
            .map(|g| &g.notification_urls)
            .find(|u| !u.is_empty());
        let urls = if !mapped.own_notifications.is_empty() {
            mapped.own_notifications.clone()
        } else {
            group_urls.cloned().unwrap_or_else(|| globals.notification_urls.clone())
        };
        used.push(urls);
        memberships.push(mapped.groups);
        plan.watches.push(mapped.planned);
    }
    let groups: Vec<Group<'_>> = globals
        .tags
        .iter()
        .map(|(uuid, g)| Group {
            title: &g.title,
            members: (0..memberships.len()).filter(|w| memberships[*w].contains(uuid)).collect(),
            urls: &g.notification_urls,
        })
        .collect();
    plan.notifications = routes::notifications(&used, &groups);
    plan.archive = archive;
    Ok(plan)
}

/// A member parsed as JSON; a file that is not refuses the import.
fn json(archive: &mut Archive, name: &str) -> Result<Value, ImportError> {
    let bytes = archive.read(name)?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ImportError::refused(format!("{name}: not valid JSON ({e}): refused, nothing imported")))
}

/// The watch's history, oldest first: `history.txt` (or `history-<processor>.txt`), lines of
/// `unix_seconds,file`, each naming a text snapshot in the watch's folder (a `.br` one read
/// decompressed). Entries whose file is missing or not text are said and left out.
fn history(
    archive: &mut Archive,
    uuid: &str,
    watch: &Value,
    label: &str,
    problems: &mut Vec<Problem>,
) -> Result<Vec<HistoryEntry>, ImportError> {
    let note =
        |problems: &mut Vec<Problem>, message: String| problems.push(Problem { subject: label.to_owned(), message });
    let processor = watch.get("processor").and_then(Value::as_str).filter(|p| *p != "text_json_diff");
    let own = processor.map(|p| format!("{uuid}/history-{p}.txt"));
    let plain = format!("{uuid}/history.txt");
    let Some(index) = own.into_iter().chain([plain]).find(|n| archive.has(n)) else { return Ok(Vec::new()) };
    let bytes = archive.read(&index)?;
    let mut entries = Vec::new();
    for (n, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some((at, file)) = line.split_once(',') else {
            note(problems, format!("{index} line {}: not `time,file`; left out", n + 1));
            continue;
        };
        let Some(at) =
            at.trim().parse::<f64>().ok().and_then(|s| DateTime::<Utc>::from_timestamp_millis((s * 1000.0) as i64))
        else {
            note(problems, format!("{index} line {}: `{}` is not a time; left out", n + 1, at.trim()));
            continue;
        };
        // Only the file's name counts: cd resolves every entry inside the watch's folder.
        let file = file.trim().rsplit(['/', '\\']).next().unwrap_or_default();
        if !(file.ends_with(".txt") || file.ends_with(".txt.br")) {
            note(problems, format!("snapshot of {at}: `{file}` is not a text snapshot; left out"));
            continue;
        }
        let member = format!("{uuid}/{file}");
        let other = match member.strip_suffix(".br") {
            Some(plain) => plain.to_owned(),
            None => format!("{member}.br"),
        };
        match [member, other].into_iter().find(|m| archive.has(m)) {
            Some(member) => entries.push(HistoryEntry { at, member }),
            None => note(problems, format!("snapshot of {at}: `{file}` is not in the zip; left out")),
        }
    }
    entries.sort_by_key(|e| e.at);
    Ok(entries)
}
