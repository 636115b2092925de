//! The endpoint page's "when it sends" card: at once or a digest (the next one's time and what
//! waits in it), and the quiet hours that hold its deliveries (and how many they hold now).

use chrono::{DateTime, Utc};
use driftwatch_core::{DeliveryMode, QuietHours};
use driftwatch_store::Endpoint;

use crate::AppState;
use crate::ui::error::UiError;
use crate::ui::present::When;
use crate::ui::session::Viewer;

/// Most waiting events listed.
const LISTED: i64 = 20;

/// What the card shows.
#[derive(Debug, Clone)]
pub struct Timing {
    /// "at once", or the digest's period in words.
    pub mode: String,
    /// The event types that skip the digest.
    pub urgent: String,
    /// When the next digest goes.
    pub next_digest: Option<When>,
    /// Since when it gathers.
    pub since: Option<When>,
    /// How many events wait for it.
    pub waiting: i64,
    /// The newest of them: delivery id, event type, the watch's name, when.
    pub waiting_rows: Vec<(String, String, String, When)>,
    /// Its quiet hours in words, and whose they are.
    pub quiet: String,
    /// How many deliveries quiet hours hold now, and the first release.
    pub held: (i64, Option<When>),
}

/// Quiet hours in words: "22:00–07:00, Mon Tue Wed Thu Fri (Europe/Berlin)".
pub fn quiet_words(json: &str) -> String {
    let Ok(q) = QuietHours::parse(json) else { return "unreadable".into() };
    let days = match q.days.as_deref() {
        None => "every day".to_owned(),
        Some(days) if days.len() == 7 => "every day".to_owned(),
        Some(days) => days.join(" "),
    };
    format!("{}–{}, starting {days} ({})", q.from, q.to, q.time_zone.as_deref().unwrap_or("UTC"))
}

/// A delivery mode in words.
fn mode_words(mode: &DeliveryMode) -> String {
    match (&mode.cron, &mode.every) {
        (Some(cron), _) => {
            format!("a digest on the schedule {cron} ({})", mode.time_zone.as_deref().unwrap_or("UTC"))
        }
        (None, Some(every)) => format!("a digest every {every}"),
        (None, None) => "a digest".into(),
    }
}

impl Timing {
    /// The card for `endpoint`, seen by `viewer` at `now`.
    pub async fn load(
        state: &AppState,
        viewer: &Viewer,
        endpoint: &Endpoint,
        now: DateTime<Utc>,
    ) -> Result<Timing, UiError> {
        let zone = viewer.user.time_zone.as_str();
        let (account, id) = (viewer.account_id().to_owned(), endpoint.id.clone());
        let (waiting, rows, held, account_quiet) = state
            .store
            .read(move |c| {
                let (waiting, rows) = driftwatch_store::digests::waiting(c, &account, &id, LISTED)?;
                let held = driftwatch_store::digests::held(c, &account, &id)?;
                let quiet = driftwatch_store::accounts::quiet_hours(c, &account)?;
                let ids: Vec<String> = rows.iter().filter_map(|d| d.watch_id.clone()).collect();
                let names = driftwatch_store::watches::names_of(c, &account, &ids)?;
                let rows = rows
                    .into_iter()
                    .map(|d| {
                        let name = d
                            .watch_id
                            .as_ref()
                            .and_then(|w| names.iter().find(|(id, _)| id == w))
                            .map_or_else(String::new, |(_, n)| n.clone());
                        (d.id, d.event_type, name, d.created_at)
                    })
                    .collect::<Vec<_>>();
                Ok((waiting, rows, held, quiet))
            })
            .await?;
        let mode = endpoint.delivery.as_deref().and_then(|d| DeliveryMode::parse(d).ok());
        let urgent = mode.as_ref().map_or_else(String::new, |m| match &m.urgent {
            Some(types) if types.is_empty() => "none".to_owned(),
            Some(types) => types.join(", "),
            None => driftwatch_core::delivery_time::DEFAULT_URGENT.map(|t| t.as_str()).join(", "),
        });
        let quiet = match (&endpoint.quiet_hours, &account_quiet) {
            (Some(own), _) => quiet_words(own),
            (None, Some(account)) => format!("{} (the account's)", quiet_words(account)),
            (None, None) => "none".into(),
        };
        Ok(Timing {
            mode: mode.as_ref().map_or_else(|| "at once".to_owned(), mode_words),
            urgent,
            next_digest: endpoint.digest_due_at.map(|t| When::new(t, now, zone)),
            since: endpoint.digest_due_at.and(endpoint.digest_since).map(|t| When::new(t, now, zone)),
            waiting,
            waiting_rows: rows.into_iter().map(|(id, t, name, at)| (id, t, name, When::new(at, now, zone))).collect(),
            quiet,
            held: (held.0, held.1.map(|t| When::new(t, now, zone))),
        })
    }
}
