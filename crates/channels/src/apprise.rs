//! Apprise notification URLs (what changedetection.io stores) as endpoints: `mailto://`,
//! `mailtos://`, `discord://` (and Discord's own `https://` webhook URL), `tgram://`, `ntfy://`,
//! `ntfys://`, `pover://`, `gotify://`, `gotifys://`, `matrix://`, `matrixs://`, `json://`,
//! `jsons://`. The forms and defaults are Apprise's (its `apprise/plugins/*.py`).
//!
//! What cannot be mapped is refused naming the scheme and the part at fault, never a secret
//! value. Whatever is imported passes [`crate::settings::validate`] as a hand-made endpoint
//! does.
//!
//! The URL is split by hand, as Apprise does, rather than with [`url::Url`]: a Telegram bot
//! token's colon would read as a port, and a Matrix room's `#` as a fragment. The URLs built
//! from it go through [`url::Url`].

use base64::Engine as _;
use driftwatch_core::EndpointKind;
use serde_json::{Map, Value, json};

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
fn fail<T>(scheme: &str, message: impl std::fmt::Display) -> Result<T, ImportError> {
    Err(ImportError(format!("`{scheme}://`: {message}")))
}

/// The endpoint `apprise_url` describes.
pub fn parse(apprise_url: &str) -> Result<Imported, ImportError> {
    let parts = split(apprise_url)?;
    let scheme = parts.scheme.as_str();
    let imported = match scheme {
        "mailto" | "mailtos" => email(&parts)?,
        "discord" => discord(&parts)?,
        "http" | "https" => native(&parts)?,
        "tgram" => telegram(&parts)?,
        "ntfy" | "ntfys" => ntfy(&parts)?,
        "pover" => pushover(&parts)?,
        "gotify" | "gotifys" => gotify(&parts)?,
        "matrix" | "matrixs" => matrix(&parts)?,
        "json" | "jsons" => http(&parts)?,
        "slack" => {
            return Err(ImportError(
                "`slack://` cannot be imported yet: add it as a slack endpoint with its webhook URL".into(),
            ));
        }
        "msteams" | "workflow" | "workflows" => {
            return Err(ImportError(format!(
                "`{scheme}://` cannot be imported yet: add it as a teams endpoint with its webhook URL"
            )));
        }
        "form" | "forms" | "xml" | "xmls" => {
            return Err(ImportError(format!(
                "`{scheme}://` cannot be imported: driftwatch's http endpoints send the body of their template; \
                 add one with a body template in the shape the receiver expects"
            )));
        }
        other => return Err(ImportError(format!("`{other}://` is not a notification driftwatch can map"))),
    };
    // What comes out must be what an endpoint accepts; the check names fields, not values.
    crate::settings::validate(imported.kind, &imported.url, Some(&imported.settings), Some(&imported.secrets))
        .map_err(|e| ImportError(format!("`{scheme}://`: {e}")))?;
    Ok(imported)
}

/// The parts of `scheme://user:password@host:port/path?query`, as Apprise reads them: `#` is
/// no fragment (Matrix rooms and Slack channels start with it), `+` in a value is no space
/// (tokens hold it).
#[derive(Debug)]
struct Parts {
    /// Lower case.
    scheme: String,
    /// `user:password@host:port` as written.
    authority: String,
    /// Decoded.
    user: String,
    /// Decoded.
    password: String,
    /// Decoded; with its port when that port is not a number (a Telegram token).
    host: String,
    port: Option<u16>,
    /// Decoded segments, empty ones dropped.
    path: Vec<String>,
    /// Whether the path as written ends with `/`.
    trailing_slash: bool,
    /// Keys as written (`+Header` keeps its case), values decoded and trimmed; a later key
    /// wins, as in Apprise.
    query: Vec<(String, String)>,
}

impl Parts {
    /// The non-empty value of `key` (case-insensitive; no `+`, `-` or `:` prefix).
    fn query(&self, key: &str) -> Option<&str> {
        self.query.iter().rev().find(|(k, v)| k.eq_ignore_ascii_case(key) && !v.is_empty()).map(|(_, v)| v.as_str())
    }

    /// Path segments and the entries of `?to=`: the targets of most plugins.
    fn targets(&self) -> Vec<String> {
        let mut targets = self.path.clone();
        targets.extend(list(self.query("to")));
        targets
    }

    /// `http(s)://host[:port]` followed by `segments`, the host checked.
    fn http_url<'a>(
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
    fn base_url<'a>(&self, secure: bool, prefix: impl IntoIterator<Item = &'a String>) -> Result<String, ImportError> {
        let url = self.http_url(secure, prefix)?;
        Ok(url.as_str().trim_end_matches('/').to_owned())
    }
}

/// Percent-decodes `text`, a `+` staying a `+`.
fn decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Apprise's lists: items between commas, semicolons or spaces.
fn list(value: Option<&str>) -> Vec<String> {
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
fn priority(value: Option<&str>, map: &[(&str, i64)]) -> Option<i64> {
    let value = value?.to_ascii_lowercase();
    map.iter().find(|(prefix, _)| value.starts_with(prefix)).map(|(_, p)| *p)
}

fn email(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    let user = p.query("user").map_or_else(|| p.user.clone(), str::to_owned);
    let password = p.query("pass").map_or_else(|| p.password.clone(), str::to_owned);
    // The sender's domain: the URL's host, or the user's when the user is an address.
    let domain = match (p.host.is_empty(), user.rsplit_once('@')) {
        (false, _) => p.host.clone(),
        (true, Some((_, domain))) => domain.to_owned(),
        (true, None) => String::new(),
    };
    let server = p.query("smtp").map_or_else(|| domain.clone(), str::to_owned);
    if server.is_empty() {
        return fail(scheme, "no mail server (give user:password@domain, or ?smtp=host)");
    }
    let Ok(server) = url::Host::parse(&server) else {
        return fail(scheme, "the mail server is not a host name or IP address");
    };
    // Apprise: `mailto` is plain (25), `mailtos` STARTTLS (587), `mode=` overrides. A `mailto`
    // without a port is taken as STARTTLS on 587 here, so that no password crosses in the clear
    // unless port 25 says so; port 465 is always TLS from the first byte.
    let (security, default_port) = match (p.query("mode").map(str::to_ascii_lowercase).as_deref(), p.port) {
        (Some("ssl" | "tls"), _) => ("tls", 465),
        (Some("starttls"), _) => ("starttls", 587),
        (Some("insecure" | "plain"), _) => ("plain", 25),
        (Some(_), _) => return fail(scheme, "mode= is not ssl, starttls or insecure"),
        (None, Some(465)) => ("tls", 465),
        (None, Some(25)) if scheme == "mailto" => ("plain", 25),
        (None, _) => ("starttls", 587),
    };
    let port = p.port.unwrap_or(default_port);
    // The sender: ?from= (an address, or just a name for the derived address), ?name=.
    let derived = if user.contains('@') {
        user.clone()
    } else if !user.is_empty() && !domain.is_empty() {
        format!("{user}@{domain}")
    } else {
        String::new()
    };
    let (name, address) = match p.query("from") {
        Some(from) if from.contains('@') => (None, from.to_owned()),
        Some(name) => (Some(name.to_owned()), derived),
        None => (None, derived),
    };
    if address.is_empty() {
        return fail(scheme, "no sender (give user@domain, or ?from=address)");
    }
    let from = match (name.or_else(|| p.query("name").map(str::to_owned)), address.parse::<lettre::Address>()) {
        (Some(name), Ok(address)) => lettre::message::Mailbox::new(Some(name), address).to_string(),
        _ => address,
    };
    if p.query("bcc").is_some() {
        return fail(scheme, "blind copies (bcc=) are not supported; create one endpoint for them");
    }
    let mut to = Vec::new();
    for target in p.path.iter().map(String::as_str).chain(p.query("to")).chain(p.query("cc")) {
        for piece in target.split([',', ';']).map(str::trim).filter(|s| !s.is_empty()) {
            if piece.contains('<') {
                to.push(piece.to_owned());
            } else {
                to.extend(piece.split_whitespace().map(str::to_owned));
            }
        }
    }
    if to.is_empty() {
        // Apprise mails the sender when no one else is named.
        let bare = from.rsplit_once('<').map_or(from.as_str(), |(_, a)| a.trim_end_matches('>'));
        to.push(bare.to_owned());
    }
    let mut settings = Map::new();
    settings.insert("from".into(), json!(from));
    settings.insert("to".into(), json!(to));
    settings.insert("security".into(), json!(security));
    let mut secrets = Map::new();
    if !user.is_empty() {
        settings.insert("username".into(), json!(user));
        if !password.is_empty() {
            secrets.insert("password".into(), json!(password));
        }
    } else if !password.is_empty() {
        return fail(scheme, "a password without a user (give user:password@domain or ?user=)");
    }
    Ok(Imported {
        kind: EndpointKind::Email,
        url: format!("smtp://{server}:{port}"),
        settings: Value::Object(settings),
        secrets: Value::Object(secrets),
    })
}

fn is_token(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Discord's webhook URL, with the thread of `?thread=` when one is given.
fn discord_webhook(scheme: &str, id: &str, token: &str, p: &Parts) -> Result<Imported, ImportError> {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return fail(scheme, "the webhook id is not a number (discord://webhook_id/webhook_token)");
    }
    if !is_token(token) {
        return fail(
            scheme,
            "no webhook token, or not one of letters, digits, - and _ (discord://webhook_id/webhook_token)",
        );
    }
    let mut url = format!("https://discord.com/api/webhooks/{id}/{token}");
    if let Some(thread) = p.query("thread").or_else(|| p.query("thread_id")) {
        if !thread.bytes().all(|b| b.is_ascii_digit()) {
            return fail(scheme, "thread= is not a thread id (a number)");
        }
        url.push_str("?thread_id=");
        url.push_str(thread);
    }
    Ok(Imported { kind: EndpointKind::Discord, url, settings: json!({}), secrets: json!({}) })
}

fn discord(p: &Parts) -> Result<Imported, ImportError> {
    // discord://webhook_id/webhook_token, or discord://botname@webhook_id/webhook_token.
    let token = p.path.first().map_or("", String::as_str);
    discord_webhook(&p.scheme, &p.host, token, p)
}

/// A service's own `https://` URL, which Apprise also takes: Discord's webhooks.
fn native(p: &Parts) -> Result<Imported, ImportError> {
    let host = p.host.to_ascii_lowercase();
    let discord_host = ["discord.com", "discordapp.com", "canary.discord.com", "ptb.discord.com"];
    match (host.as_str(), p.path.as_slice()) {
        (h, [api, webhooks, id, token]) if discord_host.contains(&h) && api == "api" && webhooks == "webhooks" => {
            discord_webhook("https", id, token, p)
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

fn telegram(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    // tgram://bot_token/chat_id: the token's colon is no port, so read the authority as
    // written, as Apprise does (`bot` before it and `name@` are allowed).
    let hostport = p.authority.rsplit_once('@').map_or(p.authority.as_str(), |(_, h)| h);
    let hostport = decode(hostport);
    let hostport = match hostport.get(..3) {
        Some(bot) if bot.eq_ignore_ascii_case("bot") && hostport[3..].starts_with(|c: char| c.is_ascii_digit()) => {
            &hostport[3..]
        }
        _ => hostport.as_str(),
    };
    let token_ok = hostport
        .split_once(':')
        .is_some_and(|(id, key)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && is_token(key));
    if !token_ok {
        return fail(scheme, "no bot token like 123456789:AAH… (digits, a colon, then letters, digits, - or _)");
    }
    let chats = p.targets();
    let chat = match chats.as_slice() {
        [chat] => chat.trim(),
        [] => return fail(scheme, "no chat id (tgram://bot_token/chat_id)"),
        _ => return fail(scheme, "only one chat per endpoint is supported: create one per chat"),
    };
    if p.query("topic").is_some() || p.query("thread").is_some() || chat.contains(':') || chat.contains("%3A") {
        return fail(scheme, "posting to a topic (thread) of a chat is not supported: import the chat without it");
    }
    let name = chat.strip_prefix('@').or_else(|| chat.strip_prefix("%40")).unwrap_or(chat);
    let chat_id = if let Ok(id) = chat.parse::<i64>() {
        json!(id)
    } else if name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '-')
        && name.len() > 1
        && is_token(name)
    {
        json!(format!("@{name}"))
    } else {
        return fail(scheme, "the chat is not a chat id (like -1001234567890) or @channelname");
    };
    Ok(Imported {
        kind: EndpointKind::Telegram,
        url: "https://api.telegram.org".to_owned(),
        settings: json!({"chat_id": chat_id}),
        secrets: json!({"bot_token": hostport}),
    })
}

fn ntfy(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    let mut topics = p.targets();
    let host_ok = !p.host.is_empty() && url::Host::parse(&p.host).is_ok();
    // Apprise: a server when the host is one and topics follow it, else ntfy.sh with the host
    // as the first topic; `mode=` says which.
    let private = match p.query("mode").map(str::to_ascii_lowercase).as_deref() {
        Some("private") => true,
        Some("cloud") => false,
        Some(_) => return fail(scheme, "mode= is not cloud or private"),
        None => host_ok && !topics.is_empty(),
    };
    let url = if private {
        // The public server is https whatever the scheme said.
        p.base_url(p.scheme == "ntfys" || p.host.eq_ignore_ascii_case("ntfy.sh"), [])?
    } else {
        if !p.host.to_ascii_lowercase().contains("ntfy.sh") && !p.host.is_empty() {
            topics.insert(0, p.host.clone());
        }
        "https://ntfy.sh".to_owned()
    };
    let topic = match topics.as_slice() {
        [topic] => topic.clone(),
        [] => return fail(scheme, "no topic (ntfy://topic or ntfys://host/topic)"),
        _ => return fail(scheme, "only one topic per endpoint is supported: create one per topic"),
    };
    // Access tokens only: `?token=`, `token@host`, or `auth=token` with the token as user or
    // password. A user with a password is a basic sign-in.
    let auth = p.query("auth").map(str::to_ascii_lowercase);
    let token = match (p.query("token"), auth.as_deref()) {
        (Some(token), _) => Some(token.to_owned()),
        (None, Some("token")) if !p.password.is_empty() => Some(p.password.clone()),
        (None, Some("token")) if !p.user.is_empty() => Some(p.user.clone()),
        (None, Some("basic")) if !p.user.is_empty() => None,
        (None, _) if !p.user.is_empty() && p.password.is_empty() => Some(p.user.clone()),
        _ => None,
    };
    if token.is_none() && !p.user.is_empty() {
        return fail(
            scheme,
            "a user and password sign-in is not supported, only access tokens: ntfy://tk_…@host/topic or ?token=",
        );
    }
    let mut settings = Map::new();
    settings.insert("topic".into(), json!(topic));
    let map = [
        ("l", 2),
        ("mo", 2),
        ("n", 3),
        ("h", 4),
        ("e", 5),
        ("mi", 1),
        ("ma", 5),
        ("d", 3),
        ("1", 1),
        ("2", 2),
        ("3", 3),
        ("4", 4),
        ("5", 5),
    ];
    if let Some(prio) = priority(p.query("priority"), &map) {
        settings.insert("priority".into(), json!(prio));
    }
    let tags = list(p.query("xtags").or_else(|| p.query("tags")));
    if !tags.is_empty() {
        settings.insert("tags".into(), json!(tags));
    }
    let secrets = token.map_or_else(|| json!({}), |token| json!({"token": token}));
    Ok(Imported { kind: EndpointKind::Ntfy, url, settings: Value::Object(settings), secrets })
}

fn pushover(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    // pover://user_key@app_token[/device…]
    if p.user.is_empty() || p.host.is_empty() {
        return fail(scheme, "expected pover://user_key@app_token");
    }
    let mut devices = Vec::new();
    for target in p.targets() {
        if target.starts_with('#') || target.starts_with("%23") {
            return fail(scheme, "delivery groups (#…) are not supported: give the group key as the user key");
        }
        let device_ok =
            target.len() <= 25 && target.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !device_ok {
            return fail(scheme, "a device is not 1 to 25 letters, digits, - or _");
        }
        devices.push(target);
    }
    let mut settings = Map::new();
    if !devices.is_empty() {
        // Pushover takes several devices comma-separated.
        settings.insert("device".into(), json!(devices.join(",")));
    }
    let map =
        [("l", -2), ("m", -1), ("n", 0), ("h", 1), ("e", 2), ("-2", -2), ("-1", -1), ("0", 0), ("1", 1), ("2", 2)];
    if let Some(prio) = priority(p.query("priority"), &map) {
        settings.insert("priority".into(), json!(prio));
    }
    Ok(Imported {
        kind: EndpointKind::Pushover,
        url: "https://api.pushover.net".to_owned(),
        settings: Value::Object(settings),
        secrets: json!({"token": p.host, "user_key": p.user}),
    })
}

fn gotify(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    // gotify://host[:port][/path]/app_token
    let Some((token, prefix)) = p.path.split_last() else {
        return fail(scheme, "no application token (gotify://host/app_token)");
    };
    let url = p.base_url(p.scheme == "gotifys", prefix)?;
    let mut settings = Map::new();
    let map = [
        ("l", 0),
        ("m", 3),
        ("n", 5),
        ("h", 8),
        ("e", 10),
        ("10", 10),
        ("0", 0),
        ("1", 0),
        ("2", 0),
        ("3", 3),
        ("4", 3),
        ("5", 5),
        ("6", 5),
        ("7", 5),
        ("8", 8),
        ("9", 8),
    ];
    if let Some(prio) = priority(p.query("priority"), &map) {
        settings.insert("priority".into(), json!(prio));
    }
    Ok(Imported {
        kind: EndpointKind::Gotify,
        url,
        settings: Value::Object(settings),
        secrets: json!({"token": token}),
    })
}

fn matrix(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    match p.query("mode").map(str::to_ascii_lowercase).as_deref() {
        None | Some("off") => {}
        Some(_) => return fail(scheme, "webhook modes (mode=) are not supported: give an access token and a room id"),
    }
    if p.host.is_empty() {
        return fail(scheme, "no homeserver (matrixs://token@host/!room:server)");
    }
    // The access token: ?token=, `token@host`, or `user:token@host`.
    let token = p
        .query("token")
        .map(str::to_owned)
        .unwrap_or_else(|| if p.password.is_empty() { p.user.clone() } else { p.password.clone() });
    let rooms = p.targets();
    if token.is_empty() {
        return fail(scheme, "no access token (matrixs://token@host/!room:server or ?token=)");
    }
    let room = match rooms.as_slice() {
        [room] => room.trim(),
        [] => return fail(scheme, "no room (matrixs://token@host/!room:server)"),
        _ => return fail(scheme, "only one room per endpoint is supported: create one per room"),
    };
    let room = room.strip_prefix("%21").map_or_else(|| room.to_owned(), |r| format!("!{r}"));
    if room.starts_with('@') || room.starts_with("%40") {
        return fail(scheme, "direct messages to a user are not supported: give the room id (!…:server)");
    }
    if !room.starts_with('!') {
        return fail(
            scheme,
            "a room alias (#…) cannot be resolved when importing: give the room id (!…:server, in the room's settings)",
        );
    }
    // Apprise adds the homeserver to a room id without one.
    let room = if room.contains(':') { room } else { format!("{room}:{}", p.host) };
    Ok(Imported {
        kind: EndpointKind::Matrix,
        url: p.base_url(p.scheme == "matrixs", [])?,
        settings: json!({"room_id": room}),
        secrets: json!({"access_token": token}),
    })
}

/// Whether a header's value is likely secret, so kept sealed.
fn secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["authorization", "cookie"].contains(&name.as_str())
        || ["auth", "token", "key", "secret", "pass", "session", "signature"].iter().any(|s| name.contains(s))
}

fn http(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    let mut segments = p.path.clone();
    if p.trailing_slash && !segments.is_empty() {
        segments.push(String::new());
    }
    let mut url = p.http_url(p.scheme == "jsons", &segments)?;
    let mut settings = Map::new();
    let mut headers = Map::new();
    let mut secret_headers = Map::new();
    for (key, value) in &p.query {
        if let Some(name) = key.strip_prefix('+') {
            // `+Header=value`: a header.
            if name.eq_ignore_ascii_case("content-type") {
                settings.insert("content_type".into(), json!(value));
            } else if secret_header(name) {
                secret_headers.insert(name.to_owned(), json!(value));
            } else {
                headers.insert(name.to_owned(), json!(value));
            }
        } else if let Some(name) = key.strip_prefix('-') {
            // `-param=value`: a query parameter of the request.
            url.query_pairs_mut().append_pair(name, value);
        }
        // `:key=value` reshapes Apprise's own payload: driftwatch sends its body template.
    }
    match p.query("method").map(str::to_ascii_uppercase).as_deref() {
        None | Some("POST") => {}
        Some(method @ ("PUT" | "PATCH")) => {
            settings.insert("method".into(), json!(method));
        }
        Some(_) => return fail(scheme, "method= is not POST, PUT or PATCH, the methods driftwatch sends with"),
    }
    if !p.user.is_empty() {
        // Basic authentication wins over an Authorization header, as in Apprise.
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", p.user, p.password));
        secret_headers.retain(|name, _| !name.eq_ignore_ascii_case("authorization"));
        secret_headers.insert("Authorization".into(), json!(format!("Basic {basic}")));
    }
    if !headers.is_empty() {
        settings.insert("headers".into(), Value::Object(headers));
    }
    let mut secrets = Map::new();
    if !secret_headers.is_empty() {
        secrets.insert("headers".into(), Value::Object(secret_headers));
    }
    Ok(Imported {
        kind: EndpointKind::Http,
        url: url.into(),
        settings: Value::Object(settings),
        secrets: Value::Object(secrets),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses and checks the result as an endpoint would be checked.
    fn ok(url: &str) -> Imported {
        let imported = parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        crate::settings::validate(imported.kind, &imported.url, Some(&imported.settings), Some(&imported.secrets))
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        imported
    }

    fn refused(url: &str) -> String {
        parse(url).map(|i| format!("{i:?}")).expect_err(url).to_string()
    }

    #[test]
    fn email_takes_the_server_the_sender_and_the_security() {
        let mail = ok("mailtos://alerts:p%40ss+w@example.com?to=ops@example.com,dev@example.com");
        assert_eq!((mail.kind, mail.url.as_str()), (EndpointKind::Email, "smtp://example.com:587"));
        assert_eq!(
            mail.settings,
            json!({
                "from": "alerts@example.com",
                "to": ["ops@example.com", "dev@example.com"],
                "security": "starttls",
                "username": "alerts",
            })
        );
        assert_eq!(mail.secrets, json!({"password": "p@ss+w"}));

        let ssl = ok("mailtos://alerts:pw@example.com?mode=ssl");
        assert_eq!((ssl.url.as_str(), &ssl.settings["security"]), ("smtp://example.com:465", &json!("tls")));
        assert_eq!(ssl.settings["to"], json!(["alerts@example.com"]), "the sender when no one else is named");
        assert_eq!(ok("mailtos://a:pw@example.com:465").settings["security"], "tls");
        assert_eq!(ok("mailto://a:pw@example.com:465").settings["security"], "tls");

        let plain = ok("mailto://relay.local:25?from=dw@example.com&to=ops@example.com");
        assert_eq!((plain.url.as_str(), &plain.settings["security"]), ("smtp://relay.local:25", &json!("plain")));
        assert_eq!(plain.secrets, json!({}));
        assert_eq!(ok("mailto://a:pw@example.com").url, "smtp://example.com:587");
        assert_eq!(ok("mailto://a:pw@example.com").settings["security"], "starttls");
        let insecure = ok("mailto://relay.local?mode=insecure&from=dw@example.com");
        assert_eq!((insecure.url.as_str(), &insecure.settings["security"]), ("smtp://relay.local:25", &json!("plain")));

        let smtp = ok(
            "mailto://me%40corp.example:pw@corp.example/boss@corp.example?smtp=smtp.corp.example&from=Driftwatch&cc=team@corp.example",
        );
        assert_eq!(smtp.url, "smtp://smtp.corp.example:587");
        assert_eq!(smtp.settings["from"], "Driftwatch <me@corp.example>");
        assert_eq!(smtp.settings["to"], json!(["boss@corp.example", "team@corp.example"]));
        assert_eq!(smtp.settings["username"], "me@corp.example");
        let query_user = ok("mailto://example.com?user=bot&pass=pw&from=alerts@example.com&name=Shop%20watch");
        assert_eq!(
            (query_user.settings["from"].as_str(), query_user.secrets["password"].as_str()),
            (Some("Shop watch <alerts@example.com>"), Some("pw"))
        );

        assert!(refused("mailto://").contains("no mail server"));
        assert!(refused("mailto://example.com").contains("no sender"));
        assert!(refused("mailto://a:pw@example.com?mode=weird").contains("mode="));
        assert!(refused("mailto://a:pw@example.com?bcc=x@example.com").contains("bcc="));
        assert!(refused("mailto://a:pw@bad%20host").contains("mail server"));
        assert!(refused("mailto://a:pw@example.com/not-an-address").contains("settings.to[0]"));
    }

    #[test]
    fn discord_takes_its_webhook_either_way() {
        let discord = ok("discord://Driftwatch@1234567890/AbCdEf-tok_en?avatar=no");
        assert_eq!(
            (discord.kind, discord.url.as_str()),
            (EndpointKind::Discord, "https://discord.com/api/webhooks/1234567890/AbCdEf-tok_en")
        );
        assert_eq!((discord.settings, discord.secrets), (json!({}), json!({})));
        let native = ok("https://discordapp.com/api/webhooks/1234567890/AbCdEf/?thread=42");
        assert_eq!(native.url, "https://discord.com/api/webhooks/1234567890/AbCdEf?thread_id=42");
        assert!(refused("discord://notanumber/tok").contains("not a number"));
        assert!(refused("discord://123").contains("no webhook token"));
        assert!(refused("https://discord.com/channels/1/2").contains("not a Discord webhook URL"));
    }

    #[test]
    fn telegram_takes_one_chat() {
        let tgram = ok("tgram://123456789:AAE-token_x/-1001234");
        assert_eq!((tgram.kind, tgram.url.as_str()), (EndpointKind::Telegram, "https://api.telegram.org"));
        assert_eq!(tgram.settings, json!({"chat_id": -1001234}));
        assert_eq!(tgram.secrets, json!({"bot_token": "123456789:AAE-token_x"}));
        assert_eq!(ok("tgram://123456789:AAE/news").settings["chat_id"], "@news");
        assert_eq!(ok("tgram://123456789:AAE/@news").settings["chat_id"], "@news");
        assert_eq!(ok("tgram://123456789:AAE/?to=42").settings["chat_id"], 42);
        let odd = ok("tgram://bot123456789%3A00012/42");
        assert_eq!(odd.secrets["bot_token"], "123456789:00012", "a numeric key is no port");

        assert!(
            refused("tgram://123:SECRET/1/2").contains("only one chat per endpoint is supported: create one per chat")
        );
        assert!(refused("tgram://123:SECRET/1?to=2").contains("create one per chat"));
        assert!(refused("tgram://123:SECRET").contains("no chat id"));
        assert!(refused("tgram://123:SECRET/-100:7").contains("topic"));
        assert!(refused("tgram://abc:SECRET/1").contains("no bot token"));
        assert!(refused("tgram://123456/1").contains("no bot token"));
        assert!(refused("tgram://123:SE*CRET/1").contains("no bot token"));
        assert!(refused("tgram://123:SECRET/a%20b").contains("not a chat id"));
    }

    #[test]
    fn ntfy_takes_a_topic_and_a_token() {
        let public = ok("ntfy://shop-alerts");
        assert_eq!((public.kind, public.url.as_str()), (EndpointKind::Ntfy, "https://ntfy.sh"));
        assert_eq!((public.settings, public.secrets), (json!({"topic": "shop-alerts"}), json!({})));
        assert_eq!(ok("ntfy://ntfy.sh/shop").url, "https://ntfy.sh");
        assert_eq!(ok("ntfy://ntfy.example.com/shop").url, "http://ntfy.example.com");
        assert_eq!(ok("ntfy://127.0.0.1:8080/shop").url, "http://127.0.0.1:8080");

        let own = ok("ntfys://tk_abc@ntfy.example.com/alerts?priority=high&tags=warning,shop");
        assert_eq!(own.url, "https://ntfy.example.com");
        assert_eq!(own.settings, json!({"topic": "alerts", "priority": 4, "tags": ["warning", "shop"]}));
        assert_eq!(own.secrets, json!({"token": "tk_abc"}));
        assert_eq!(ok("ntfys://ntfy.example.com/a?token=tk_q").secrets, json!({"token": "tk_q"}));
        assert_eq!(ok("ntfys://me:tk_p@ntfy.example.com/a?auth=token").secrets, json!({"token": "tk_p"}));
        for (name, level) in
            [("min", 1), ("low", 2), ("default", 3), ("high", 4), ("max", 5), ("emergency", 5), ("2", 2)]
        {
            assert_eq!(ok(&format!("ntfy://t?priority={name}")).settings["priority"], level, "{name}");
        }
        assert_eq!(ok("ntfy://t?priority=whatever").settings.get("priority"), None);
        assert_eq!(ok("ntfy://ntfy.sh/t?mode=cloud").settings["topic"], "t");
        assert!(refused("ntfy://ntfy.example.com/t?mode=cloud").contains("one topic"), "the host is a topic too");

        assert!(refused("ntfy://me:SECRET@ntfy.example.com/topic").contains("access tokens"));
        assert!(refused("ntfy://host.example/a/b").contains("only one topic per endpoint is supported"));
        assert!(refused("ntfy://host.example/a%20b").contains("settings.topic"));
        assert!(refused("ntfy://host.example/a?mode=odd").contains("mode="));
    }

    #[test]
    fn pushover_takes_keys_devices_and_priority() {
        let (user, token) = ("u".repeat(30), "a".repeat(30));
        let pover = ok(&format!("pover://{user}@{token}/phone/tablet?priority=high"));
        assert_eq!((pover.kind, pover.url.as_str()), (EndpointKind::Pushover, "https://api.pushover.net"));
        assert_eq!(pover.settings, json!({"device": "phone,tablet", "priority": 1}));
        assert_eq!(pover.secrets, json!({"token": token, "user_key": user}));
        assert_eq!(ok(&format!("pover://{user}@{token}?priority=low")).settings["priority"], -2);
        assert_eq!(ok(&format!("pover://{user}@{token}?priority=moderate")).settings["priority"], -1);
        assert_eq!(ok(&format!("pover://{user}@{token}")).settings, json!({}));

        assert!(refused(&format!("pover://{user}@{token}?priority=emergency")).contains("acknowledgement"));
        assert!(refused(&format!("pover://{user}@{token}/%23group")).contains("groups"));
        assert!(refused(&format!("pover://{user}@{token}/a%20b")).contains("device"));
        assert!(refused("pover://SECRET").contains("pover://user_key@app_token"));
        assert!(refused("pover://short@SECRET").contains("secrets.token"));
    }

    #[test]
    fn gotify_takes_its_server_and_token() {
        let gotify = ok("gotify://push.example.com/AbCdEf123");
        assert_eq!((gotify.kind, gotify.url.as_str()), (EndpointKind::Gotify, "http://push.example.com"));
        assert_eq!((gotify.settings, gotify.secrets), (json!({}), json!({"token": "AbCdEf123"})));
        let behind = ok("gotifys://push.example.com:8443/sub/path/AbCdEf123?priority=high");
        assert_eq!(behind.url, "https://push.example.com:8443/sub/path");
        assert_eq!(behind.settings, json!({"priority": 8}));
        assert_eq!(ok("gotify://[::1]:80/T?priority=7").settings["priority"], 5);
        assert_eq!(ok("gotify://[::1]:8080/T").url, "http://[::1]:8080");
        assert!(refused("gotify://push.example.com").contains("no application token"));
        assert!(refused("gotify:///SECRET").contains("no host"));
        assert!(refused("gotify://bad host/SECRET").contains("not a host name"));
        assert!(refused("gotify://host:99999/SECRET").contains("not a host name"));
    }

    #[test]
    fn matrix_takes_a_token_and_a_room_id() {
        let matrix = ok("matrixs://bot:syt_token@matrix.example.org/!abc:example.org");
        assert_eq!((matrix.kind, matrix.url.as_str()), (EndpointKind::Matrix, "https://matrix.example.org"));
        assert_eq!(matrix.settings, json!({"room_id": "!abc:example.org"}));
        assert_eq!(matrix.secrets, json!({"access_token": "syt_token"}));
        let bare = ok("matrix://syt_t@matrix.example.org:8008/%21abc");
        assert_eq!(bare.url, "http://matrix.example.org:8008");
        assert_eq!(bare.settings["room_id"], "!abc:matrix.example.org");
        assert_eq!(ok("matrixs://me@m.example/?token=syt_q&to=!r:m.example").secrets["access_token"], "syt_q");

        assert!(refused("matrixs://bot:SECRET@matrix.example.org/#room").contains("alias"));
        assert!(refused("matrixs://bot:SECRET@matrix.example.org/%23room:example.org").contains("alias"));
        assert!(refused("matrixs://bot:SECRET@matrix.example.org/room").contains("alias"));
        assert!(refused("matrixs://SECRET@matrix.example.org/@me:example.org").contains("direct messages"));
        assert!(refused("matrixs://SECRET@matrix.example.org/!a/!b").contains("one room per endpoint"));
        assert!(refused("matrixs://SECRET@matrix.example.org").contains("no room"));
        assert!(refused("matrixs://matrix.example.org/!a:b").contains("no access token"));
        assert!(refused("matrix://SECRET?mode=t2bot").contains("webhook"));
    }

    #[test]
    fn json_becomes_an_http_endpoint() {
        let hook = ok("json://n8n.example.com:5678/webhook/abc");
        assert_eq!((hook.kind, hook.url.as_str()), (EndpointKind::Http, "http://n8n.example.com:5678/webhook/abc"));
        assert_eq!((hook.settings, hook.secrets), (json!({}), json!({})));
        let full =
            ok("jsons://user:p%3Aw@n8n.example.com/webhook/abc/?+X-Source=dw&+X-Api-Key=k1&+Content-Type=text/plain\
             &-ref=watch&:message=text&method=put&format=markdown");
        assert_eq!(full.url, "https://n8n.example.com/webhook/abc/?ref=watch");
        assert_eq!(
            full.settings,
            json!({"headers": {"X-Source": "dw"}, "content_type": "text/plain", "method": "PUT"})
        );
        let basic = base64::engine::general_purpose::STANDARD.encode("user:p:w");
        assert_eq!(full.secrets, json!({"headers": {"X-Api-Key": "k1", "Authorization": format!("Basic {basic}")}}));
        assert_eq!(ok("json://h.example/?+Authorization=Bearer%20x").secrets["headers"]["Authorization"], "Bearer x");
        assert_eq!(ok("jsons://h.example").url, "https://h.example/");

        assert!(refused("json://h.example/?method=GET").contains("method="));
        assert!(refused("json://h.example/?+Host=x").contains("settings.headers.Host"));
        assert!(refused("json://").contains("no host"));
        assert!(refused("json://[::1").contains("not a host name"));
    }

    #[test]
    fn what_cannot_be_mapped_names_its_scheme() {
        for (url, says) in [
            ("slack://TokenA/TokenB/TokenC/#chan", "`slack://` cannot be imported yet: add it as a slack endpoint"),
            ("msteams://a/b/c", "`msteams://` cannot be imported yet: add it as a teams endpoint"),
            ("form://h.example/x", "`form://` cannot be imported"),
            ("mmost://h.example/token", "`mmost://` is not a notification driftwatch can map"),
            ("XYZ://whatever", "`xyz://` is not a notification driftwatch can map"),
            ("https://hooks.slack.com/services/T/B/X", "slack endpoint"),
            ("https://example.com/hook", "webhook or http endpoint"),
            ("no scheme at all", "no scheme://"),
            ("user:SECRET@host://x", "not an Apprise URL"),
        ] {
            let said = refused(url);
            assert!(said.contains(says), "{url}: {said}");
        }
    }

    #[test]
    fn refusals_never_repeat_a_secret() {
        let user = "u".repeat(30);
        for url in [
            "slack://SECRET/SECRET/SECRET/#chan",
            "tgram://123:SECRET/1/2",
            "tgram://123:SECRET",
            "tgram://123:SECRET/-100:5",
            "tgram://SECRET/1",
            "tgram://123:SECRET/bad%20chat",
            "matrixs://bot:SECRET@matrix.example.org/#room",
            "matrixs://SECRET@matrix.example.org/@user:x",
            "matrixs://SECRET@bad host/!a:b",
            "ntfy://me:SECRET@ntfy.example.com/topic",
            "ntfy://SECRET@ntfy.example.com/a/b",
            "pover://SECRET",
            "pover://short@SECRET",
            &format!("pover://{user}@SECRET"),
            "gotify://bad host/SECRET",
            "mailto://me:SECRET@example.com?mode=nope",
            "mailto://me:SECRET@example.com/nope",
            "mailto://:SECRET@example.com?from=a@example.com",
            "json://me:SECRET@h.example/?method=DELETE",
            "json://h.example/?+Host=SECRET",
            "discord://1/SECRET%2F",
            "discord://x/SECRET",
            "xyz://SECRET",
            "SECRET://x",
            "SECRET",
        ] {
            let said = refused(url);
            assert!(!said.contains("SECRET"), "{url}: {said}");
        }
    }

    #[test]
    fn odd_input_is_an_error_not_a_panic() {
        let pieces = [
            "", "://", "tgram", "mailto", "ntfy", "matrix", "json", "pover", "gotify", "discord", "@", ":", "/", "?",
            "=", "&", "#", "[", "]", "%", "%3A", "+", "bot", "1", "a", "é", "::", "@@", "?to=", "-", "!",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let _ = parse(&format!("{a}://{b}{c}{a}{b}"));
                    let _ = parse(&format!("{a}{b}{c}"));
                }
            }
        }
    }
}
