//! A plan imported in one transaction: every watch checked as the API checks it, its history
//! written with each snapshot's own time (the watch's first own check then takes a new
//! baseline without an alert, as after a change of its settings), and an endpoint per
//! notification URL, sealed and routed. A watch or endpoint already there is skipped, so an
//! import run twice creates nothing the second time. A damaged snapshot refuses it all.

use chrono::{DateTime, Utc};
use driftwatch_core::{IdKind, Keyring, id_at};
use driftwatch_store::{DbConn, Endpoint, Snapshot, StoreError, Watch};

use crate::{ImportError, Plan, Problem, Route};

/// Where and how a plan is imported.
pub struct Target<'a> {
    /// The account everything belongs to.
    pub account_id: &'a str,
    /// The server's limits (browser available, shortest interval).
    pub limits: &'a driftwatch_validate::Limits,
    /// Which addresses watches and endpoints may reach.
    pub policy: driftwatch_net::TargetPolicy,
    /// Now.
    pub now: DateTime<Utc>,
    /// Seals the endpoints' secrets and opens the stored ones to compare (`None`: stored as
    /// given, which only tests do).
    pub keyring: Option<&'a Keyring>,
    /// Bytes of a snapshot's text kept, as a check keeps them.
    pub max_text_bytes: usize,
}

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Watches created.
    pub watches_created: usize,
    /// Watches already there, skipped.
    pub watches_skipped: usize,
    /// Snapshots of history written.
    pub snapshots: usize,
    /// Endpoints created, by kind.
    pub endpoints_created: std::collections::BTreeMap<String, usize>,
    /// Endpoints already there, skipped.
    pub endpoints_skipped: usize,
    /// The plan's problems and those met importing it.
    pub problems: Vec<Problem>,
}

/// What importing `plan` would do, found by importing it in a transaction that is rolled
/// back: the same checks, the same skips, every snapshot read.
pub fn dry_run(conn: &mut DbConn, mut plan: Plan, target: &Target<'_>) -> Result<Report, ImportError> {
    let mut outcome = None;
    let rolled_back = driftwatch_store::transaction(conn, |c| {
        outcome = Some(run(c, &mut plan, target));
        Err::<(), _>(StoreError::Batch("a dry run is rolled back".into()))
    });
    match (outcome, rolled_back) {
        (Some(outcome), _) => outcome,
        (None, Err(e)) => Err(ImportError::Store(e)),
        (None, Ok(())) => Err(ImportError::refused("the dry run did not run")),
    }
}

/// Imports `plan` into `target`'s account in one transaction: all of it, or nothing.
pub fn apply(conn: &mut DbConn, mut plan: Plan, target: &Target<'_>) -> Result<Report, ImportError> {
    let mut refusal = None;
    let done = driftwatch_store::transaction(conn, |c| match run(c, &mut plan, target) {
        Ok(report) => Ok(report),
        Err(ImportError::Store(e)) => Err(e),
        Err(refused) => {
            refusal = Some(refused);
            Err(StoreError::Batch("the import was refused".into()))
        }
    });
    done.map_err(|e| refusal.unwrap_or(ImportError::Store(e)))
}

fn run(c: &mut DbConn, plan: &mut Plan, target: &Target<'_>) -> Result<Report, ImportError> {
    let mut report = Report { problems: std::mem::take(&mut plan.problems), ..Report::default() };
    // What the account has, and what this import added: the same watch twice in one file is
    // one watch.
    let mut existing = all_watches(c, target.account_id)?;
    let before = existing.len();
    let kept: Vec<String> =
        driftwatch_store::logins::list_secrets(c, target.account_id)?.into_iter().map(|s| s.name).collect();
    // The stored id of each planned watch (created or found), by index.
    let mut ids: Vec<Option<String>> = Vec::with_capacity(plan.watches.len());
    for planned in &plan.watches {
        let row =
            to_watch(&planned.watch, target.account_id, target.limits, target.policy, target.now).and_then(|row| {
                driftwatch_validate::steps_name_kept_secrets(&row.options().fetch, &kept)
                    .map(|()| row)
                    .map_err(|e| e.to_string())
            });
        let mut row = match row {
            Ok(row) => row,
            Err(reason) => {
                report.problems.push(Problem { subject: planned.label.clone(), message: format!("{reason}; skipped") });
                ids.push(None);
                continue;
            }
        };
        if let Some(found) = existing.iter().find(|w| same_watch(w, &row)) {
            report.watches_skipped += 1;
            ids.push(Some(found.id.clone()));
            continue;
        }
        // The first own check takes a new baseline: cd's text and ours differ in layout.
        row.rebaseline = !planned.history.is_empty();
        driftwatch_store::watches::insert_watch(c, &row)?;
        report.watches_created += 1;
        if let Some(archive) = plan.archive.as_mut() {
            let mut snapshots: Vec<Snapshot> = Vec::with_capacity(planned.history.len());
            for entry in &planned.history {
                let mut text = archive.read_text(&entry.member)?;
                truncate(&mut text, target.max_text_bytes);
                let hash = driftwatch_core::content_hash(&text, None);
                // The same text twice in a row is one state, as a check records it.
                if snapshots.last().is_some_and(|s| s.content_hash == hash) {
                    continue;
                }
                snapshots.push(Snapshot {
                    id: id_at(IdKind::Snapshot, entry.at),
                    watch_id: row.id.clone(),
                    content_hash: hash,
                    content: text,
                    created_at: entry.at.naive_utc(),
                    screenshot_hash: None,
                    visual_change_percent: None,
                    readings: None,
                    kept_quiet: None,
                });
            }
            report.snapshots += driftwatch_store::snapshots::insert_snapshots(c, &snapshots)?;
        }
        ids.push(Some(row.id.clone()));
        existing.push(row);
    }
    endpoints(c, plan, target, &existing[..before], &ids, &mut report)?;
    Ok(report)
}

/// An endpoint per notification URL, routed to the watches that used it.
fn endpoints(
    c: &mut DbConn,
    plan: &Plan,
    target: &Target<'_>,
    existing: &[Watch],
    ids: &[Option<String>],
    report: &mut Report,
) -> Result<(), ImportError> {
    if plan.notifications.is_empty() {
        return Ok(());
    }
    let stored = all_endpoints(c, target.account_id)?;
    let others = existing.iter().any(|w| !ids.iter().flatten().any(|id| *id == w.id));
    for (n, notification) in plan.notifications.iter().enumerate() {
        let subject = format!("notification {} ({})", n + 1, notification.scheme());
        // The URL may hold a token: reports name its place and scheme, never the URL.
        let mut row = match to_endpoint(&notification.url, target.account_id, target.policy, target.now) {
            Ok(row) => row,
            Err(reason) => {
                report.problems.push(Problem { subject, message: format!("{reason}; skipped") });
                continue;
            }
        };
        let everyone = || ids.iter().flatten().cloned().collect::<Vec<_>>();
        let (tags, watches) = match &notification.route {
            // Every imported watch used it; the account's other watches did not.
            Route::Everything if others => (Vec::new(), everyone()),
            Route::Everything => (Vec::new(), Vec::new()),
            Route::Some { tags, watches } => {
                (tags.clone(), watches.iter().filter_map(|w| ids.get(*w).cloned().flatten()).collect())
            }
        };
        if tags.is_empty() && watches.is_empty() && !matches!(notification.route, Route::Everything if !others) {
            report.problems.push(Problem { subject, message: "no imported watch notifies through it; skipped".into() });
            continue;
        }
        row.route_tags = (!tags.is_empty()).then(|| tags.join(","));
        row.route_watches = (!watches.is_empty()).then(|| watches.join(","));
        row.description = format!("imported from {}", plan.format.label());
        if stored.iter().any(|s| same_endpoint(s, &row, target.keyring)) {
            report.endpoints_skipped += 1;
            continue;
        }
        let sealed = row.sealed(|s| target.keyring.map_or_else(|| s.to_owned(), |k| k.seal(s)));
        driftwatch_store::endpoints::insert_endpoint(c, &sealed)?;
        *report.endpoints_created.entry(sealed.kind.clone()).or_default() += 1;
    }
    Ok(())
}

/// Whether `stored` already delivers where `new` (plaintext) would: the same kind, address,
/// settings and channel secrets (its own signing secret aside).
fn same_endpoint(stored: &Endpoint, new: &Endpoint, keyring: Option<&Keyring>) -> bool {
    let open = |sealed: &Option<String>| {
        sealed.as_deref().map(|s| match keyring {
            Some(keyring) => keyring.open(s).ok(),
            None => Some(s.to_owned()),
        })
    };
    stored.kind == new.kind
        && stored.url == new.url
        && stored.settings == new.settings
        && open(&stored.secrets) == new.secrets.clone().map(Some)
        && open(&stored.url_secret) == new.url_secret.clone().map(Some)
}

/// The stored watch for an imported one, after exactly the checks the API makes (the rules of
/// `driftwatch-validate`, with the server's `limits`); the reasons when it cannot be created.
pub fn to_watch(
    watch: &crate::PortableWatch,
    account_id: &str,
    limits: &driftwatch_validate::Limits,
    policy: driftwatch_net::TargetPolicy,
    now: DateTime<Utc>,
) -> Result<Watch, String> {
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

/// The endpoint an Apprise URL describes, checked as the API checks it (secrets still in
/// plaintext: the caller seals them); why not, without the URL's secrets.
pub fn to_endpoint(
    apprise_url: &str,
    account_id: &str,
    policy: driftwatch_net::TargetPolicy,
    now: DateTime<Utc>,
) -> Result<Endpoint, String> {
    let input = driftwatch_validate::from_apprise(apprise_url).map_err(|e| e.message)?;
    driftwatch_validate::new_endpoint(input, policy, account_id, now).map_err(|e| e.to_string())
}

/// Whether `stored` already watches what `new` would: the same page, selector and options
/// (names, tags and schedules aside), so that importing a file twice adds nothing.
pub fn same_watch(stored: &Watch, new: &Watch) -> bool {
    stored.url == new.url && stored.selector == new.selector && stored.options() == new.options()
}

fn all_watches(c: &mut DbConn, account_id: &str) -> Result<Vec<Watch>, StoreError> {
    let (mut all, mut after) = (Vec::new(), None);
    loop {
        let page = driftwatch_store::Page { after: after.take(), limit: 500 };
        let rows = driftwatch_store::watches::list_watches(c, account_id, &Default::default(), &page)?;
        let Some(last) = rows.last() else { return Ok(all) };
        after = Some(last.id.clone());
        all.extend(rows);
    }
}

fn all_endpoints(c: &mut DbConn, account_id: &str) -> Result<Vec<Endpoint>, StoreError> {
    let (mut all, mut after) = (Vec::new(), None);
    loop {
        let page = driftwatch_store::Page { after: after.take(), limit: 500 };
        let rows = driftwatch_store::endpoints::list_endpoints(c, account_id, &page)?;
        let Some(last) = rows.last() else { return Ok(all) };
        after = Some(last.id.clone());
        all.extend(rows);
    }
}

/// Cuts `text` to at most `max` bytes, on a character boundary.
fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}
