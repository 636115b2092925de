//! Where events go. Each endpoint kind (webhook, Slack, email, Discord, Telegram, Teams,
//! Mattermost, ntfy, Pushover, Gotify, Matrix, generic HTTP) lives in one file under
//! [`kinds`], behind the [`Kind`] trait: its spec (what the UI form and the API's documents
//! are made of), its rules, its message, the request that carries it, and its Apprise URL.
//! Around them:
//! - settings and secrets, checked at save against the kind's spec ([`settings`]);
//! - what every message is made of ([`context`], [`message`], [`template`]): rendered once at
//!   enqueue from the event and the endpoint's templates, stored and re-sent byte for byte;
//! - the request, built at send with the opened secrets ([`outgoing`]);
//! - Apprise URLs as endpoints ([`apprise`]).
//!
//! [`Channels`] is the outbox's [`Render`]. Pure: no IO, and no database (the seam is
//! `driftwatch_core::render`).

pub mod apprise;
pub mod context;
pub mod digest;
pub mod kinds;
pub mod masked;
pub mod message;
pub mod outgoing;
pub mod settings;
pub mod template;

use driftwatch_core::render::{EventRef, Recipient, Render, WatchFacts};

pub use context::Context;
pub use kinds::{EndpointKind, Kind, Security, Spec, Transport};
pub use masked::{masked_url, shown_and_sealed};
pub use message::Templates;
pub use settings::{FieldError, Secrets, Settings};
pub use template::TemplateError;

/// Renders every kind's body. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Channels {
    /// The UI's public base URL, for links to a change.
    public_url: Option<String>,
}

impl Channels {
    /// Links point at `public_url` (`DRIFTWATCH_PUBLIC_URL`) when it is set.
    pub fn new(public_url: Option<String>) -> Channels {
        Channels { public_url: public_url.filter(|u| !u.is_empty()) }
    }

    /// The variables of `event` for an endpoint (what templates see).
    pub fn context(&self, event: EventRef<'_>, tags: &str) -> Context {
        Context::new(event.id, event.event_type, event.payload, tags, self.public_url.as_deref())
    }

    /// The sample event's variables.
    pub fn sample(&self) -> Context {
        Context::sample(self.public_url.as_deref())
    }

    /// The body for an endpoint of `kind`, from `context`.
    pub fn render_body(
        &self,
        kind: EndpointKind,
        endpoint_id: &str,
        settings: &Settings,
        context: &Context,
        templates: Templates<'_>,
    ) -> Result<Vec<u8>, String> {
        kind.kind().message(kinds::Message { endpoint_id, settings, context, templates })
    }
}

impl Render for Channels {
    fn body(&self, to: &Recipient<'_>, event: EventRef<'_>, watch: WatchFacts<'_>) -> Result<Vec<u8>, String> {
        let kind: EndpointKind = to.kind.parse().map_err(|_| format!("unknown endpoint kind `{}`", to.kind))?;
        if kind == EndpointKind::Webhook {
            // The payload as it is: no parse, no context.
            return Ok(event.payload.as_bytes().to_vec());
        }
        let context = self.context(event, watch.tags);
        let settings = Settings::parse(to.settings);
        let templates = Templates { title: to.title_template, body: to.body_template };
        self.render_body(kind, to.id, &settings, &context, templates)
    }
}

/// Checks an endpoint's templates for saving against `sample`; the error names the field
/// (`title_template` or `body_template`) with the line and column.
pub fn check_templates(templates: Templates<'_>, sample: &Context) -> Result<(), (&'static str, TemplateError)> {
    if let Some(title) = templates.title {
        template::check(title, sample).map_err(|e| ("title_template", e))?;
    }
    if let Some(body) = templates.body {
        template::check(body, sample).map_err(|e| ("body_template", e))?;
    }
    Ok(())
}
