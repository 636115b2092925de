//! The import page: a file another tool made (changedetection.io's backup zip with its
//! history, its `url-watches.json`, a Distill export, urlwatch's YAML, a URL list, a driftwatch
//! export) is uploaded, shown as what it will create and what cannot be mapped (a dry run of
//! the very import, rolled back), and imported on confirmation in one transaction.
//!
//! The upload waits for the confirmation in this node's memory (never on disk), for 30
//! minutes, bound to the account and user who sent it; behind a load balancer, the preview and
//! the import must reach the same node.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_import::{Plan, ReadLimits, Report, Route};
use serde::Deserialize;

use super::error::UiError;
use super::flash;
use super::layout::{Layout, html, render};
use super::session::{Post, Upload, Viewer};
use crate::AppState;

/// The largest file the page takes (changedetection.io restores at most 256 MiB too).
pub const MAX_UPLOAD_BYTES: usize = 256 << 20;
/// How long an upload waits for its confirmation.
const KEPT_FOR: Duration = Duration::from_secs(30 * 60);
/// The most bytes of uploads kept waiting at once; the oldest go first.
const KEPT_BYTES: usize = 1 << 30;

struct Kept {
    account_id: String,
    user_id: String,
    file_name: String,
    bytes: Arc<Vec<u8>>,
    at: Instant,
}

static UPLOADS: LazyLock<Mutex<HashMap<String, Kept>>> = LazyLock::new(Mutex::default);

/// Keeps an upload until it is confirmed; its id.
fn keep(viewer: &Viewer, file_name: &str, bytes: Arc<Vec<u8>>) -> String {
    // 80 random bits after the time; bound to the account and user besides.
    let id = driftwatch_core::new_id(driftwatch_core::IdKind::Request);
    let mut uploads = UPLOADS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    uploads.retain(|_, k| k.at.elapsed() < KEPT_FOR);
    while uploads.values().map(|k| k.bytes.len()).sum::<usize>() + bytes.len() > KEPT_BYTES {
        let Some(oldest) = uploads.iter().min_by_key(|(_, k)| k.at).map(|(id, _)| id.clone()) else { break };
        uploads.remove(&oldest);
    }
    let kept = Kept {
        account_id: viewer.account_id().to_owned(),
        user_id: viewer.user.id.clone(),
        file_name: file_name.to_owned(),
        bytes,
        at: Instant::now(),
    };
    uploads.insert(id.clone(), kept);
    id
}

/// Takes the upload `id` back, when it is the viewer's and has not expired.
fn take(viewer: &Viewer, id: &str) -> Option<Kept> {
    let mut uploads = UPLOADS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mine = uploads.get(id).is_some_and(|k| {
        k.account_id == viewer.account_id() && k.user_id == viewer.user.id && k.at.elapsed() < KEPT_FOR
    });
    if mine { uploads.remove(id) } else { None }
}

#[derive(Template)]
#[template(path = "import.html")]
struct ImportPage {
    layout: Layout,
    error: Option<String>,
}

/// A watch as the preview lists it.
struct WatchRow {
    label: String,
    url: String,
    tags: String,
    snapshots: usize,
}

/// An endpoint as the preview lists it (its URL may hold a token: only its scheme).
struct EndpointRow {
    scheme: String,
    route: String,
}

#[derive(Template)]
#[template(path = "import_preview.html")]
struct PreviewPage {
    layout: Layout,
    id: String,
    file_name: String,
    format: &'static str,
    watches: Vec<WatchRow>,
    endpoints: Vec<EndpointRow>,
    report: Report,
    endpoints_created: usize,
    problems: Vec<(String, Vec<String>)>,
}

/// `GET /import`.
pub async fn page(State(state): State<AppState>, viewer: Viewer) -> Result<Response, UiError> {
    let notice = flash::take(&state, &viewer).await?;
    let layout = Layout::signed_in(&viewer, "watches", "Import").with_notice(notice);
    Ok(html(&ImportPage { layout, error: None }))
}

/// `POST /import` (multipart): reads the file and shows what importing it would do.
pub async fn preview(State(state): State<AppState>, upload: Upload) -> Result<Response, UiError> {
    let viewer = upload.viewer;
    let refuse = |message: String| {
        let layout = Layout::signed_in(&viewer, "watches", "Import");
        render(StatusCode::UNPROCESSABLE_ENTITY, &ImportPage { layout, error: Some(message) })
    };
    if upload.bytes.is_empty() {
        return Ok(refuse("Choose a file to import.".into()));
    }
    let bytes = Arc::new(upload.bytes);
    let plan = match read(Arc::clone(&bytes)).await? {
        Ok(plan) => plan,
        Err(message) => return Ok(refuse(message)),
    };
    let watches = plan
        .watches
        .iter()
        .map(|w| WatchRow {
            label: w.label.clone(),
            url: w.watch.url.clone(),
            tags: w.watch.tags.join(", "),
            snapshots: w.history.len(),
        })
        .collect();
    let endpoints =
        plan.notifications.iter().map(|n| EndpointRow { scheme: n.scheme(), route: route(&plan, &n.route) }).collect();
    let format = plan.format.label();
    let report = match run(&state, &viewer, plan, true).await? {
        Ok(report) => report,
        Err(message) => return Ok(refuse(message)),
    };
    let mut problems: Vec<(String, Vec<String>)> = Vec::new();
    for problem in &report.problems {
        match problems.iter_mut().find(|(subject, _)| *subject == problem.subject) {
            Some((_, messages)) => messages.push(problem.message.clone()),
            None => problems.push((problem.subject.clone(), vec![problem.message.clone()])),
        }
    }
    let id = keep(&viewer, &upload.file_name, bytes);
    let endpoints_created = report.endpoints_created.values().sum();
    let layout = Layout::signed_in(&viewer, "watches", "Import: check and confirm");
    Ok(html(&PreviewPage {
        layout,
        id,
        file_name: upload.file_name,
        format,
        watches,
        endpoints,
        report,
        endpoints_created,
        problems,
    }))
}

/// `POST /import/{id}`: imports the upload the preview showed, in one transaction.
pub async fn confirm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Confirm>,
) -> Result<Response, UiError> {
    let viewer = post.viewer;
    let Some(kept) = take(&viewer, &id) else {
        flash::set(
            &state,
            &viewer,
            "That upload has expired (30 minutes) or was imported already: choose the file again.",
        )
        .await?;
        return Ok(Redirect::to("/import").into_response());
    };
    let plan = match read(kept.bytes).await? {
        Ok(plan) => plan,
        Err(message) => return Err(UiError::BadRequest(message)),
    };
    let report = match run(&state, &viewer, plan, false).await? {
        Ok(report) => report,
        Err(message) => {
            flash::set(&state, &viewer, format!("Nothing was imported from {}: {message}", kept.file_name)).await?;
            return Ok(Redirect::to("/import").into_response());
        }
    };
    let endpoints: usize = report.endpoints_created.values().sum();
    tracing::info!(watches = report.watches_created, snapshots = report.snapshots, endpoints, "import from the UI");
    let skipped = report.watches_skipped + report.endpoints_skipped;
    let mut message = format!(
        "Imported {} watches with {} snapshots of history and {endpoints} endpoints from {}.",
        report.watches_created, report.snapshots, kept.file_name,
    );
    if skipped > 0 {
        message.push_str(&format!(" {skipped} already here were skipped."));
    }
    flash::set(&state, &viewer, message).await?;
    Ok(Redirect::to("/").into_response())
}

/// Body of `POST /import/{id}`: nothing but the CSRF token.
#[derive(Debug, Deserialize)]
pub struct Confirm {}

/// The plan of `bytes`, read on the blocking pool; why not, in words.
async fn read(bytes: Arc<Vec<u8>>) -> Result<Result<Plan, String>, UiError> {
    let read = tokio::task::spawn_blocking(move || driftwatch_import::read(bytes.to_vec(), &ReadLimits::default()))
        .await
        .map_err(|e| UiError::Server(format!("reading the upload: {e}")))?;
    Ok(read.map_err(|e| e.to_string()))
}

/// Imports `plan` into the viewer's account, or only finds what that would do (`dry`).
async fn run(state: &AppState, viewer: &Viewer, plan: Plan, dry: bool) -> Result<Result<Report, String>, UiError> {
    let (account_id, rules, policy) = (viewer.account_id().to_owned(), state.limits.rules(), state.policy);
    let (keyring, now, max_text_bytes) = (state.keyring.clone(), state.clock.now(), state.runner.max_text_bytes());
    let done = state
        .store
        .write(move |c| {
            let target = driftwatch_import::Target {
                account_id: &account_id,
                limits: &rules,
                policy,
                now,
                keyring: keyring.as_ref(),
                max_text_bytes,
            };
            Ok(if dry {
                driftwatch_import::dry_run(c, plan, &target)
            } else {
                driftwatch_import::apply(c, plan, &target)
            })
        })
        .await?;
    match done {
        Ok(report) => Ok(Ok(report)),
        Err(driftwatch_import::ImportError::Refused(message)) => Ok(Err(message)),
        Err(driftwatch_import::ImportError::Store(e)) => Err(e.into()),
    }
}

/// Who an endpoint will hear about, in words.
fn route(plan: &Plan, route: &Route) -> String {
    match route {
        Route::Everything => "every watch".into(),
        Route::Some { tags, watches } => {
            let mut parts: Vec<String> = tags.iter().map(|t| format!("tag “{t}”")).collect();
            parts.extend(watches.iter().filter_map(|w| plan.watches.get(*w)).map(|w| format!("“{}”", w.label)));
            if parts.is_empty() { "no watch".into() } else { parts.join(", ") }
        }
    }
}
