//! The email kind on the wire: the stored message sent over SMTP to a vetted address of the
//! endpoint's server, with STARTTLS, implicit TLS or (for a local relay) none.

use std::time::Instant;

use driftwatch_channels::{Secrets, Security, Settings};
use driftwatch_core::AttemptErrorKind;
use driftwatch_store::Endpoint;
use lettre::address::{Address, Envelope};
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Tokio1Executor};

use driftwatch_net::TargetPolicy;

use crate::policy::{Outcome, SendResult, failed};

/// Certificates trusted for SMTP TLS beside the system's: for a relay whose certificate an
/// internal authority signed (`DRIFTWATCH_SMTP_CA_FILE`).
#[derive(Clone, Default)]
pub struct SmtpRoots(Vec<Certificate>);

impl SmtpRoots {
    /// Every `CERTIFICATE` block of a PEM bundle; an error names the block that does not parse,
    /// and a bundle without one is an error too.
    pub fn from_pem(pem: &[u8]) -> Result<SmtpRoots, String> {
        const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
        const END: &str = "-----END CERTIFICATE-----";
        let text = std::str::from_utf8(pem).map_err(|_| "not a PEM file (it is not text)".to_owned())?;
        let mut roots = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find(BEGIN) {
            let Some(len) = rest[start..].find(END) else {
                return Err(format!("certificate {} has no END line", roots.len() + 1));
            };
            let block = &rest[start..start + len + END.len()];
            let certificate = Certificate::from_pem(block.as_bytes())
                .map_err(|e| format!("certificate {} does not parse: {e}", roots.len() + 1))?;
            roots.push(certificate);
            rest = &rest[start + len + END.len()..];
        }
        if roots.is_empty() {
            return Err("no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)".to_owned());
        }
        Ok(SmtpRoots(roots))
    }

    /// How many certificates.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for SmtpRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SmtpRoots({} certificates)", self.0.len())
    }
}

/// How to reach SMTP servers: the address guard, the timeout, the extra trusted roots.
pub(crate) struct Connection<'a> {
    /// Which addresses may be reached.
    pub(crate) policy: TargetPolicy,
    /// The whole exchange's timeout.
    pub(crate) timeout: std::time::Duration,
    /// Certificates trusted beside the system's.
    pub(crate) roots: &'a SmtpRoots,
}

/// Sends the stored message `body` through the endpoint's SMTP server.
pub(crate) async fn send(
    server: &Connection<'_>,
    endpoint: &Endpoint,
    settings: &Settings,
    secrets: &Secrets,
    body: &[u8],
    started: Instant,
) -> SendResult {
    let security = Security::of(settings);
    let Some((host, port)) = self::server(&endpoint.url, security) else {
        return failed(AttemptErrorKind::Url, format!("not an SMTP server URL: {}", endpoint.url), started);
    };
    let envelope = match envelope(settings) {
        Ok(envelope) => envelope,
        Err(e) => return failed(AttemptErrorKind::Url, e, started),
    };
    // The private-address guard: connect to an address it let through, never a name that
    // could resolve elsewhere a moment later.
    let address = match driftwatch_net::resolve_vetted(&host, port, server.policy).await {
        Ok(addresses) => match addresses.first() {
            Some(address) => *address,
            None => return failed(AttemptErrorKind::Dns, format!("{host} has no address"), started),
        },
        Err(e) => return failed(AttemptErrorKind::Blocked, e.to_string(), started),
    };
    let tls = match tls(server.roots, &host, security) {
        Ok(tls) => tls,
        // The endpoint's setup cannot work, whatever the server does: not a network failure.
        Err(e) => return SendResult { outcome: Outcome::Unsendable, ..failed(AttemptErrorKind::Tls, e, started) },
    };
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(address.ip().to_string())
        .port(address.port())
        .timeout(Some(server.timeout))
        .tls(tls);
    if let Some(username) = settings.text("username") {
        let password = secrets.text("password").unwrap_or_default().to_owned();
        builder = builder.credentials(Credentials::new(username.to_owned(), password));
    }
    let sent = builder.build().send_raw(&envelope, body).await;
    let (outcome, error_kind, error, snippet) = match sent {
        Ok(response) => {
            let code = u16::from(response.code());
            let said = response.message().collect::<Vec<_>>().join(" ");
            (Outcome::Smtp(code), None, None, Some(format!("{code} {said}")))
        }
        Err(e) => {
            let (outcome, kind, message) = refused(&e);
            (outcome, Some(kind), Some(message), None)
        }
    };
    SendResult { outcome, error_kind, error, snippet, duration: started.elapsed(), retry_after: None }
}

/// The TLS the endpoint's security asks for, trusting `roots` beside the system's.
fn tls(roots: &SmtpRoots, host: &str, security: Security) -> Result<Tls, String> {
    if security == Security::Plain {
        return Ok(Tls::None);
    }
    let parameters = roots
        .0
        .iter()
        .fold(TlsParameters::builder(host.to_owned()), |builder, root| builder.add_root_certificate(root.clone()))
        .build()
        .map_err(|e| format!("TLS for {host}: {e}"))?;
    Ok(if security == Security::Tls { Tls::Wrapper(parameters) } else { Tls::Required(parameters) })
}

/// What an SMTP failure was: the server's code, or a timeout, TLS or connection failure, in
/// words where lettre's are a library's (`internal client error: …`).
fn refused(e: &lettre::transport::smtp::Error) -> (Outcome, AttemptErrorKind, String) {
    let message = chain(e);
    match e.status() {
        Some(code) => {
            let code = u16::from(code);
            let said = match login_refused(code) {
                Some(what) => format!("SMTP {code}: {what} (the server said: {message})"),
                None => format!("SMTP {code}: {message}"),
            };
            (Outcome::Smtp(code), AttemptErrorKind::Smtp, said)
        }
        // lettre found no mechanism it shares with the server's EHLO before sending anything:
        // the endpoint's login cannot work with this server as configured.
        None if e.is_client() && message.contains("authentication mechanism") => {
            (Outcome::Unsendable, AttemptErrorKind::Smtp, NO_LOGIN.to_owned())
        }
        None if e.is_timeout() => (Outcome::NetworkError, AttemptErrorKind::Timeout, message),
        None if message.to_ascii_lowercase().contains("tls") || message.contains("certificate") => {
            (Outcome::NetworkError, AttemptErrorKind::Tls, message)
        }
        None => (Outcome::NetworkError, AttemptErrorKind::Connect, message),
    }
}

/// Why the endpoint's login cannot be used with a server that offers no AUTH driftwatch speaks.
const NO_LOGIN: &str = "the server offers no login (AUTH PLAIN or LOGIN) for the endpoint's username and \
                        password; many servers offer it only over TLS (security `starttls` or `tls`), and a \
                        relay that needs no login wants the username and password removed";

/// What a reply code about logging in means, in words.
fn login_refused(code: u16) -> Option<&'static str> {
    match code {
        535 => Some("the server refused the username or password"),
        530 => Some("the server requires a login: set the endpoint's username and password"),
        534 | 538 => Some("the server wants a stronger login, or TLS, before this one"),
        _ => None,
    }
}

/// Host and port of `smtp://host[:port]`; the port defaults by security (587, 465, 25).
fn server(url: &str, security: Security) -> Option<(String, u16)> {
    let url = url::Url::parse(url).ok()?;
    if url.scheme() != "smtp" {
        return None;
    }
    let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned();
    let default = match security {
        Security::Starttls => 587,
        Security::Tls => 465,
        Security::Plain => 25,
    };
    Some((host, url.port().unwrap_or(default)))
}

fn envelope(settings: &Settings) -> Result<Envelope, String> {
    let from: Mailbox = settings.text("from").unwrap_or_default().parse().map_err(|e| format!("from: {e}"))?;
    let to: Result<Vec<Address>, String> = settings
        .list("to")
        .iter()
        .map(|to| to.parse::<Mailbox>().map(|m| m.email).map_err(|e| format!("to: {e}")))
        .collect();
    Envelope::new(Some(from.email), to?).map_err(|e| format!("envelope: {e}"))
}

fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_ports_follow_the_security() {
        assert_eq!(server("smtp://mail.example", Security::Starttls), Some(("mail.example".into(), 587)));
        assert_eq!(server("smtp://mail.example", Security::Tls), Some(("mail.example".into(), 465)));
        assert_eq!(server("smtp://127.0.0.1:2525", Security::Plain), Some(("127.0.0.1".into(), 2525)));
        assert_eq!(server("https://mail.example", Security::Plain), None);
    }
}
