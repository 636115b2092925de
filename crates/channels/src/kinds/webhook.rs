//! `webhook`: the event payload as it is, POSTed and signed the Standard Webhooks way.

use super::{Kind, Message, Spec, Target, Transport, json_post};
use crate::outgoing::Outgoing;

/// The signed webhook.
pub struct Webhook;

static SPEC: Spec = Spec {
    label: "Webhook: a signed JSON POST (Standard Webhooks)",
    url_hint: "Where to send: the webhook URL, http:// or https://.",
    default_url: None,
    fields: &[],
    transport: Transport::Http,
    signed: true,
    credential_url: false,
    apprise: &[],
};

impl Kind for Webhook {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn message(&self, message: Message<'_>) -> Result<Vec<u8>, String> {
        Ok(message.context.payload.to_string().into_bytes())
    }

    fn request<'a>(&self, to: Target<'_>, _: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        Ok(Outgoing { signed: true, ..json_post(to.url.to_owned(), body) })
    }
}
