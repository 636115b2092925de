//! Where events go. Each endpoint kind (webhook, Slack, email, Discord, Telegram, Teams, ntfy,
//! Pushover, Gotify, Matrix, generic HTTP) has:
//! - its settings and secrets, checked at save ([`settings`]);
//! - its message, rendered once at enqueue from the event and the endpoint's templates
//!   ([`message`], [`email`], [`template`]), stored and re-sent byte for byte;
//! - the request that carries it, built at send with the opened secrets ([`outgoing`]).
//!
//! [`Channels`] is the store's [`Render`]: the outbox asks it for each delivery's body.

pub mod apprise;
pub mod context;
pub mod email;
pub mod message;
pub mod outgoing;
pub mod settings;
pub mod template;

use std::str::FromStr;

use driftwatch_core::EndpointKind;
use driftwatch_store::Event;
use driftwatch_store::render::{Recipient, Render, WatchFacts};

pub use context::Context;
pub use message::Templates;
pub use settings::{FieldError, Secrets, Security, Settings};
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
    pub fn context(&self, event: &Event, tags: &str) -> Context {
        Context::new(&event.id, &event.event_type, &event.payload, tags, self.public_url.as_deref())
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
        match kind {
            EndpointKind::Email => email::message(settings, context, templates, endpoint_id),
            kind => message::body(kind, settings, context, templates),
        }
    }
}

impl Render for Channels {
    fn body(&self, to: &Recipient<'_>, event: &Event, watch: WatchFacts<'_>) -> Result<Vec<u8>, String> {
        let kind = EndpointKind::from_str(to.kind).map_err(|_| format!("unknown endpoint kind `{}`", to.kind))?;
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
