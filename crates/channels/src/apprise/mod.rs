//! Apprise notification URLs (what changedetection.io stores) as endpoints: `mailto://`,
//! `mailtos://`, `discord://` (and Discord's own `https://` webhook URL), `tgram://`, `ntfy://`,
//! `ntfys://`, `pover://`, `gotify://`, `gotifys://`, `matrix://`, `matrixs://`, `mmost://`,
//! `mmosts://`, `json://`, `jsons://`. The forms and defaults are Apprise's (its
//! `apprise/plugins/*.py`). Each kind reads its own schemes (`Kind::parse_apprise`, in its file
//! under `kinds/`); this module splits the URL and finds the kind by its spec's schemes.
//!
//! What cannot be mapped is refused naming the scheme and the part at fault, never a secret
//! value. Whatever is imported passes [`crate::settings::validate`] as a hand-made endpoint
//! does.
//!
//! The URL is split by hand, as Apprise does, rather than with [`url::Url`]: a Telegram bot
//! token's colon would read as a port, and a Matrix room's `#` as a fragment. The URLs built
//! from it go through [`url::Url`].

use serde_json::Value;

use crate::kinds::EndpointKind;

#[cfg(test)]
mod tests;

/// An endpoint as an Apprise URL describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// Its kind.
    pub kind: EndpointKind,
    /// Its URL: the webhook, the API server, or `smtp://host:port`.
    pub url: String,
    /// Its settings (a JSON object).
    pub settings: Value,
    /// Its secrets (a JSON object).
    pub secrets: Value,
}

/// Why a URL cannot be imported: names the scheme or the part at fault, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ImportError(pub String);

/// A refusal of a `scheme://` URL.
pub(crate) fn fail<T>(scheme: &str, message: impl std::fmt::Display) -> Result<T, ImportError> {
    Err(ImportError(format!("`{scheme}://`: {message}")))
}

/// The endpoint `apprise_url` describes.
pub fn parse(apprise_url: &str) -> Result<Imported, ImportError> {
    let parts = split(apprise_url)?;
    let scheme = parts.scheme.as_str();
    let imported = match scheme {
        // A provider's own webhook URL (Discord's), as Apprise takes it.
        "http" | "https" => native(&parts)?,
        "form" | "forms" | "xml" | "xmls" => {
            return Err(ImportError(format!(
                "`{scheme}://` cannot be imported: driftwatch's http endpoints send the body of their template; \
                 add one with a body template in the shape the receiver expects"
            )));
        }
        _ => match EndpointKind::of_apprise_scheme(scheme) {
            Some(kind) => kind.kind().parse_apprise(&parts)?,
            None => return Err(ImportError(format!("`{scheme}://` is not a notification driftwatch can map"))),
        },
    };
    // What comes out must be what an endpoint accepts; the check names fields, not values.
    crate::settings::validate(imported.kind, &imported.url, Some(&imported.settings), Some(&imported.secrets))
        .map_err(|e| ImportError(format!("`{scheme}://`: {e}")))?;
    Ok(imported)
}

/// A service's own `https://` URL, which Apprise also takes: Discord's webhooks.
fn native(p: &Parts) -> Result<Imported, ImportError> {
    let host = p.host.to_ascii_lowercase();
    let discord_host = ["discord.com", "discordapp.com", "canary.discord.com", "ptb.discord.com"];
    match (host.as_str(), p.path.as_slice()) {
        (h, [api, webhooks, id, token]) if discord_host.contains(&h) && api == "api" && webhooks == "webhooks" => {
            crate::kinds::discord::webhook("https", id, token, p)
        }
        (h, _) if discord_host.contains(&h) => fail(&p.scheme, "not a Discord webhook URL (…/api/webhooks/id/token)"),
        ("hooks.slack.com", _) => Err(ImportError(format!(
            "`{}://`: a Slack webhook URL is not imported: add it as a slack endpoint with this URL",
            p.scheme
        ))),
        (h, _) if h.ends_with(".webhook.office.com") || h.ends_with(".logic.azure.com") => Err(ImportError(format!(
            "`{}://`: a Teams webhook URL is not imported: add it as a teams endpoint with this URL",
            p.scheme
        ))),
        _ => Err(ImportError(format!(
            "`{}://` is not a notification driftwatch can map: add it as a webhook or http endpoint",
            p.scheme
        ))),
    }
}

/// The parts of `scheme://user:password@host:port/path?query`, as Apprise reads them: `#` is
/// no fragment (Matrix rooms and Slack channels start with it), `+` in a value is no space
/// (tokens hold it).
#[derive(Debug)]
pub struct Parts {
    /// Lower case.
    pub(crate) scheme: String,
    /// `user:password@host:port` as written.
    pub(crate) authority: String,
    /// Decoded.
    pub(crate) user: String,
    /// Decoded.
    pub(crate) password: String,
    /// Decoded; with its port when that port is not a number (a Telegram token).
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
    /// Decoded segments, empty ones dropped.
    pub(crate) path: Vec<String>,
    /// Whether the path as written ends with `/`.
    pub(crate) trailing_slash: bool,
    /// Keys as written (`+Header` keeps its case), values decoded and trimmed; a later key
    /// wins, as in Apprise.
    pub(crate) query: Vec<(String, String)>,
}

impl Parts {
    /// The non-empty value of `key` (case-insensitive; no `+`, `-` or `:` prefix).
    pub(crate) fn query(&self, key: &str) -> Option<&str> {
        self.query.iter().rev().find(|(k, v)| k.eq_ignore_ascii_case(key) && !v.is_empty()).map(|(_, v)| v.as_str())
    }

    /// Path segments and the entries of `?to=`: the targets of most plugins.
    pub(crate) fn targets(&self) -> Vec<String> {
        let mut targets = self.path.clone();
        targets.extend(list(self.query("to")));
        targets
    }

    /// `http(s)://host[:port]` followed by `segments`, the host checked.
    pub(crate) fn http_url<'a>(
        &self,
        secure: bool,
        segments: impl IntoIterator<Item = &'a String>,
    ) -> Result<url::Url, ImportError> {
        if self.host.is_empty() {
            return fail(&self.scheme, "no host");
        }
        let mut url = url::Url::parse(if secure { "https://localhost/" } else { "http://localhost/" })
            .map_err(|_| ImportError(format!("`{}://`: no URL", self.scheme)))?;
        if url::Host::parse(&self.host).is_err() || url.set_host(Some(&self.host)).is_err() {
            return fail(&self.scheme, "the host is not a host name or IP address (or its port is not 1 to 65535)");
        }
        if url.set_port(self.port).is_err() {
            return fail(&self.scheme, "the port is not 1 to 65535");
        }
        if let Ok(mut path) = url.path_segments_mut() {
            path.clear().extend(segments);
        }
        Ok(url)
    }

    /// The API server, `http(s)://host[:port][/prefix]`, without a trailing slash.
    pub(crate) fn base_url<'a>(
        &self,
        secure: bool,
        prefix: impl IntoIterator<Item = &'a String>,
    ) -> Result<String, ImportError> {
        let url = self.http_url(secure, prefix)?;
        Ok(url.as_str().trim_end_matches('/').to_owned())
    }
}

/// Whether `text` is a token: letters, digits, `-` and `_`.
pub(crate) fn is_token(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Percent-decodes `text`, a `+` staying a `+`.
pub(crate) fn decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Apprise's lists: items between commas, semicolons or spaces.
pub(crate) fn list(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split([',', ';', ' ', '\t'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn split(raw: &str) -> Result<Parts, ImportError> {
    let raw = raw.trim();
    let Some((scheme, rest)) = raw.split_once("://") else {
        return Err(ImportError("not an Apprise URL: it has no scheme:// (like tgram:// or mailto://)".into()));
    };
    let scheme_ok = (1..=32).contains(&scheme.len())
        && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        && scheme.as_bytes()[0].is_ascii_alphabetic();
    if !scheme_ok {
        // What stands before `://` may be anything, secrets included: do not repeat it.
        return Err(ImportError("not an Apprise URL: it does not start with a scheme:// (like tgram://)".into()));
    }
    let scheme = scheme.to_ascii_lowercase();
    let (rest, query) = match rest.split_once('?') {
        Some((before, q)) => (
            before,
            q.split(['&', ';'])
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    (decode(k).trim().to_owned(), decode(v).trim().to_owned())
                })
                .collect(),
        ),
        None => (rest, Vec::new()),
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hostport) = authority.rsplit_once('@').unwrap_or(("", authority));
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let (host, port) = match hostport.rsplit_once(':') {
        // `[::1]` alone has colons but no port.
        Some((h, p)) if !p.contains(']') && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            match p.parse::<u16>() {
                Ok(port) if port > 0 => (h, Some(port)),
                _ => (hostport, None),
            }
        }
        Some((h, "")) => (h, None),
        _ => (hostport, None),
    };
    Ok(Parts {
        scheme,
        authority: authority.to_owned(),
        user: decode(user),
        password: decode(password),
        host: decode(host),
        port,
        path: path.split('/').filter(|s| !s.is_empty()).map(decode).collect(),
        trailing_slash: path.ends_with('/'),
        query,
    })
}

/// Maps a priority the way Apprise does: the first key the given value starts with.
pub(crate) fn priority(value: Option<&str>, map: &[(&str, i64)]) -> Option<i64> {
    let value = value?.to_ascii_lowercase();
    map.iter().find(|(prefix, _)| value.starts_with(prefix)).map(|(_, p)| *p)
}
