//! The endpoint form's "when" part: at once or a digest per period, the urgent types that skip
//! it, and the endpoint's own quiet hours. What is typed is kept as typed; the rules are
//! `driftwatch_validate`'s, so the form refuses what the API refuses, in the same words.

use driftwatch_core::delivery_time::{DEFAULT_URGENT, Mode};
use driftwatch_core::{DeliveryMode, EventType, QuietHours};
use driftwatch_store::Endpoint;

use super::form;

/// Day names as the form posts them, Monday first.
pub const DAYS: [(&str, &str); 7] =
    [("mon", "Mon"), ("tue", "Tue"), ("wed", "Wed"), ("thu", "Thu"), ("fri", "Fri"), ("sat", "Sat"), ("sun", "Sun")];

/// The form's timing fields as typed.
#[derive(Debug, Clone, Default)]
pub struct TimingForm {
    /// `immediate` or `digest`.
    pub mode: String,
    /// A duration (`1d`) or a cron expression (`0 8 * * *`).
    pub schedule: String,
    /// The digest's zone.
    pub zone: String,
    /// The types that go at once.
    pub urgent: Vec<String>,
    /// Send a note for an empty period.
    pub send_empty: bool,
    /// Open with a model's summary.
    pub summary: bool,
    /// Whether the endpoint has quiet hours of its own.
    pub quiet: bool,
    /// `HH:MM`.
    pub quiet_from: String,
    /// `HH:MM`.
    pub quiet_to: String,
    /// The days windows start on.
    pub quiet_days: Vec<String>,
    /// Their zone.
    pub quiet_zone: String,
}

impl TimingForm {
    /// A new endpoint's: at once, no quiet hours of its own, times in `zone` (the viewer's).
    pub fn new_in(zone: &str) -> TimingForm {
        TimingForm {
            mode: "immediate".into(),
            schedule: "0 8 * * *".into(),
            zone: zone.to_owned(),
            urgent: DEFAULT_URGENT.iter().map(|t| t.as_str().to_owned()).collect(),
            quiet_from: "22:00".into(),
            quiet_to: "07:00".into(),
            quiet_days: DAYS.iter().map(|(d, _)| (*d).to_owned()).collect(),
            quiet_zone: zone.to_owned(),
            ..TimingForm::default()
        }
    }

    /// As posted.
    pub fn from_pairs(pairs: &[(String, String)]) -> TimingForm {
        let get = |name: &str| form::value(pairs, name);
        let all = |name: &str| pairs.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect();
        TimingForm {
            mode: get("delivery_mode"),
            schedule: get("digest_schedule"),
            zone: get("digest_zone"),
            urgent: all("digest_urgent"),
            send_empty: !get("digest_send_empty").is_empty(),
            summary: !get("digest_summary").is_empty(),
            quiet: !get("quiet").is_empty(),
            quiet_from: get("quiet_from"),
            quiet_to: get("quiet_to"),
            quiet_days: all("quiet_days"),
            quiet_zone: get("quiet_zone"),
        }
    }

    /// An endpoint's, for its edit form (unset parts as a new one's, in `zone`).
    pub fn of(e: &Endpoint, zone: &str) -> TimingForm {
        let mut form = TimingForm::new_in(zone);
        if let Some(mode) = e.delivery.as_deref().and_then(|d| DeliveryMode::parse(d).ok()) {
            form.mode = "digest".into();
            form.schedule = mode.cron.clone().or(mode.every.clone()).unwrap_or_default();
            form.zone = mode.time_zone.clone().unwrap_or_else(|| "UTC".into());
            if let Some(urgent) = mode.urgent {
                form.urgent = urgent;
            }
            form.send_empty = mode.send_empty;
            form.summary = mode.summary;
        }
        form.with_quiet(e.quiet_hours.as_deref());
        form
    }

    /// Shows the stored quiet hours `json` (ticked), when there are any.
    pub fn with_quiet(&mut self, json: Option<&str>) {
        if let Some(quiet) = json.and_then(|q| QuietHours::parse(q).ok()) {
            self.quiet = true;
            self.quiet_from = quiet.from;
            self.quiet_to = quiet.to;
            self.quiet_days = quiet.days.unwrap_or_else(|| DAYS.iter().map(|(d, _)| (*d).to_owned()).collect());
            self.quiet_zone = quiet.time_zone.unwrap_or_else(|| "UTC".into());
        }
    }

    /// The delivery mode asked for (`None`: at once).
    pub fn delivery(&self) -> Option<DeliveryMode> {
        if self.mode != "digest" {
            return None;
        }
        let schedule = self.schedule.trim();
        // A duration is a period's length; anything else is read as a cron expression.
        let is_length = driftwatch_core::parse_duration(schedule).is_ok();
        let zone = Some(self.zone.trim().to_owned()).filter(|z| !z.is_empty());
        Some(DeliveryMode {
            mode: Mode::Digest,
            cron: (!is_length).then(|| schedule.to_owned()),
            every: is_length.then(|| schedule.to_owned()),
            time_zone: if is_length { None } else { zone },
            urgent: Some(self.urgent.clone()),
            send_empty: self.send_empty,
            summary: self.summary,
        })
    }

    /// The endpoint's own quiet hours (`None`: the account's).
    pub fn quiet_hours(&self) -> Option<QuietHours> {
        self.quiet.then(|| QuietHours {
            from: self.quiet_from.trim().to_owned(),
            to: self.quiet_to.trim().to_owned(),
            days: Some(self.quiet_days.clone()),
            time_zone: Some(self.quiet_zone.trim().to_owned()).filter(|z| !z.is_empty()),
        })
    }

    /// The types a digest may let through at once, each with whether it is ticked.
    pub fn urgent_choices(&self) -> Vec<(&'static str, bool)> {
        EventType::ALL
            .iter()
            .filter(|t| !matches!(t, EventType::Digest | EventType::EndpointTest))
            .map(|t| (t.as_str(), self.urgent.iter().any(|u| u == t.as_str())))
            .collect()
    }

    /// The days, each with whether quiet hours start on it.
    pub fn day_choices(&self) -> Vec<(&'static str, &'static str, bool)> {
        DAYS.iter().map(|(value, label)| (*value, *label, self.quiet_days.iter().any(|d| d == value))).collect()
    }
}

/// The form field a rule's error belongs beside.
pub fn form_field(field: &str) -> Option<&'static str> {
    Some(match field {
        "delivery" | "delivery.cron" | "delivery.every" => "digest_schedule",
        "delivery.time_zone" => "digest_zone",
        "delivery.urgent" => "digest_urgent",
        "quiet_hours" | "quiet_hours.from" => "quiet_from",
        "quiet_hours.to" => "quiet_to",
        "quiet_hours.days" => "quiet_days",
        "quiet_hours.time_zone" => "quiet_zone",
        _ => return None,
    })
}
