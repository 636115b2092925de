//! Rendering an event's body for one endpoint, at enqueue.
//!
//! The store queues one delivery per endpoint with the exact bytes every attempt will send, so
//! the body is rendered inside the transaction that queues it. What a body looks like (a Slack
//! message, an email, a Discord embed, a template's output) is not the store's business: it
//! asks a [`Render`] that `cli` wires in (`driftwatch-channels`). The default, [`PayloadOnly`],
//! knows only webhooks.
//!
//! The seam lives here, below both `store` and `channels`, and takes the event's type, id and
//! payload rather than a store row, so that the kinds never depend on the database.

/// The event a body is rendered from: what every kind's message is made of.
#[derive(Debug, Clone, Copy)]
pub struct EventRef<'a> {
    /// `evt_...`.
    pub id: &'a str,
    /// [`crate::EventType`] as stored (`change.detected`, ...).
    pub event_type: &'a str,
    /// The payload as stored: the JSON a webhook receives byte for byte.
    pub payload: &'a str,
}

/// The endpoint a body is rendered for: its kind, settings and templates (never its secrets).
#[derive(Debug, Clone, Copy)]
pub struct Recipient<'a> {
    /// `end_...`.
    pub id: &'a str,
    /// The endpoint kind's stored name (`webhook`, `slack`, ...).
    pub kind: &'a str,
    /// The kind's settings, a JSON object.
    pub settings: &'a str,
    /// The title template, when the endpoint has one.
    pub title_template: Option<&'a str>,
    /// The body template, when the endpoint has one.
    pub body_template: Option<&'a str>,
}

/// What a template may know about the watch beyond the payload.
#[derive(Debug, Clone, Copy, Default)]
pub struct WatchFacts<'a> {
    /// Its tags as stored (`,a,b,`; empty for none).
    pub tags: &'a str,
}

/// Renders bodies. Called inside a write transaction: keep it quick and never block on IO.
pub trait Render: Send + Sync + 'static {
    /// The body of `event` for `to`, or why it cannot be rendered (the delivery is then
    /// dead-lettered with that reason).
    fn body(&self, to: &Recipient<'_>, event: EventRef<'_>, watch: WatchFacts<'_>) -> Result<Vec<u8>, String>;
}

/// Webhooks only: the payload as it is. Any other kind is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct PayloadOnly;

impl Render for PayloadOnly {
    fn body(&self, to: &Recipient<'_>, event: EventRef<'_>, _: WatchFacts<'_>) -> Result<Vec<u8>, String> {
        match to.kind {
            "webhook" => Ok(event.payload.as_bytes().to_vec()),
            kind => Err(format!("this process cannot render `{kind}` messages")),
        }
    }
}
