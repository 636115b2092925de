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

use crate::policy::Outcome;
use crate::sender::{SendResult, SenderOptions};

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

/// Sends the stored message `body` through the endpoint's SMTP server.
pub(crate) async fn send(
    options: &SenderOptions,
    endpoint: &Endpoint,
    settings: &Settings,
    secrets: &Secrets,
    body: &[u8],
    started: Instant,
) -> SendResult {
    let result = |outcome, kind: Option<AttemptErrorKind>, error: Option<String>, snippet: Option<String>| SendResult {
        outcome,
        error_kind: kind,
        error,
        snippet,
        duration: started.elapsed(),
        retry_after: None,
    };
    let unsendable = |kind: AttemptErrorKind, error: String| result(Outcome::Unsendable, Some(kind), Some(error), None);
    let Some((host, port)) = server(&endpoint.url, Security::of(settings)) else {
        return unsendable(AttemptErrorKind::Url, format!("not an SMTP server URL: {}", endpoint.url));
    };
    let envelope = match envelope(settings) {
        Ok(envelope) => envelope,
        Err(e) => return unsendable(AttemptErrorKind::Url, e),
    };
    // The private-address guard: connect to an address it let through, never a name that
    // could resolve elsewhere a moment later.
    let address = match driftwatch_net::resolve_vetted(&host, port, options.policy).await {
        Ok(addresses) => match addresses.first() {
            Some(address) => *address,
            None => {
                return result(
                    Outcome::NetworkError,
                    Some(AttemptErrorKind::Dns),
                    Some(format!("{host} has no address")),
                    None,
                );
            }
        },
        Err(e) => return unsendable(AttemptErrorKind::Blocked, e.to_string()),
    };
    let security = Security::of(settings);
    let tls = match security {
        Security::Plain => Tls::None,
        Security::Starttls | Security::Tls => match options
            .smtp_roots
            .0
            .iter()
            .fold(TlsParameters::builder(host.clone()), |builder, root| builder.add_root_certificate(root.clone()))
            .build()
        {
            Ok(parameters) if security == Security::Tls => Tls::Wrapper(parameters),
            Ok(parameters) => Tls::Required(parameters),
            Err(e) => return unsendable(AttemptErrorKind::Tls, format!("TLS for {host}: {e}")),
        },
    };
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(address.ip().to_string())
        .port(address.port())
        .timeout(Some(options.timeout))
        .tls(tls);
    if let Some(username) = settings.text("username") {
        let password = secrets.text("password").unwrap_or_default().to_owned();
        builder = builder.credentials(Credentials::new(username.to_owned(), password));
    }
    let transport = builder.build();
    match transport.send_raw(&envelope, body).await {
        Ok(response) => {
            let code = u16::from(response.code());
            let said = response.message().collect::<Vec<_>>().join(" ");
            result(Outcome::Smtp(code), None, None, Some(format!("{code} {said}")))
        }
        Err(e) => {
            let message = chain(&e);
            match e.status() {
                Some(code) => {
                    let code = u16::from(code);
                    result(
                        Outcome::Smtp(code),
                        Some(AttemptErrorKind::Smtp),
                        Some(format!("SMTP {code}: {message}")),
                        None,
                    )
                }
                None if e.is_timeout() => {
                    result(Outcome::NetworkError, Some(AttemptErrorKind::Timeout), Some(message), None)
                }
                None if message.to_ascii_lowercase().contains("tls") || message.contains("certificate") => {
                    result(Outcome::NetworkError, Some(AttemptErrorKind::Tls), Some(message), None)
                }
                None => result(Outcome::NetworkError, Some(AttemptErrorKind::Connect), Some(message), None),
            }
        }
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
