//! Apprise notification URLs (what changedetection.io stores) as endpoints: `mailto://`,
//! `mailtos://`, `discord://`, `tgram://`, `ntfy://`, `ntfys://`, `pover://`, `gotify://`,
//! `gotifys://`, `matrix://`, `matrixs://`, `json://`, `jsons://`. What cannot be mapped is
//! refused naming the scheme or the part, never a secret.

use base64::Engine as _;
use driftwatch_core::EndpointKind;
use serde_json::{Map, Value, json};

/// An endpoint as an Apprise URL describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// Its kind.
    pub kind: EndpointKind,
    /// Its URL (the webhook, API server or `smtp://host:port`).
    pub url: String,
    /// Its settings (a JSON object).
    pub settings: Value,
    /// Its secrets (a JSON object).
    pub secrets: Value,
}

/// Why a URL cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ImportError(pub String);

fn fail<T>(message: impl Into<String>) -> Result<T, ImportError> {
    Err(ImportError(message.into()))
}

/// The parts of `scheme://user:pass@host:port/path?query`, percent-decoded.
struct Parts {
    scheme: String,
    user: String,
    password: String,
    host: String,
    port: Option<u16>,
    /// Path segments, decoded, empty ones dropped.
    path: Vec<String>,
    query: Vec<(String, String)>,
    fragment: Option<String>,
}

impl Parts {
    fn query(&self, key: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.as_str())
    }

    fn host_port(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.clone(),
        }
    }
}

fn decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

fn split(raw: &str) -> Result<Parts, ImportError> {
    let raw = raw.trim();
    let Some((scheme, rest)) = raw.split_once("://") else {
        return fail("not an Apprise URL: it has no scheme://");
    };
    let scheme = scheme.to_ascii_lowercase();
    let (rest, fragment) = match rest.split_once('#') {
        // A Matrix room alias comes as `/#room`: keep it as a path segment.
        Some((before, after)) if before.ends_with('/') => (format!("{before}%23{after}"), None),
        Some((before, after)) => (before.to_owned(), Some(decode(after))),
        None => (rest.to_owned(), None),
    };
    let (rest, query) = match rest.split_once('?') {
        // `+Header=value` is Apprise's way to add a header: a `+` here is not a space.
        Some((before, q)) => (
            before.to_owned(),
            q.split('&')
                .filter(|pair| !pair.is_empty())
                .map(|pair| match pair.split_once('=') {
                    Some((k, v)) => (decode(k), decode(v)),
                    None => (decode(pair), String::new()),
                })
                .collect(),
        ),
        None => (rest, Vec::new()),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest.as_str(), ""),
    };
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(i) => (&authority[..i], &authority[i + 1..]),
        None => ("", authority),
    };
    let (user, password) = match userinfo.split_once(':') {
        Some((u, p)) => (decode(u), decode(p)),
        None => (decode(userinfo), String::new()),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && !h.ends_with(']') || p.parse::<u16>().is_ok() => match p.parse::<u16>() {
            Ok(port) => (h.to_owned(), Some(port)),
            Err(_) => (hostport.to_owned(), None),
        },
        _ => (hostport.to_owned(), None),
    };
    let path = path.split('/').filter(|s| !s.is_empty()).map(decode).collect();
    Ok(Parts { scheme, user, password, host: decode(&host), port, path, query, fragment })
}

/// The endpoint `apprise_url` describes.
pub fn parse(apprise_url: &str) -> Result<Imported, ImportError> {
    let parts = split(apprise_url)?;
    let imported = match parts.scheme.as_str() {
        "mailto" | "mailtos" => email(&parts)?,
        "discord" => discord(&parts)?,
        "tgram" => telegram(&parts)?,
        "ntfy" | "ntfys" => ntfy(&parts)?,
        "pover" => pushover(&parts)?,
        "gotify" | "gotifys" => gotify(&parts)?,
        "matrix" | "matrixs" => matrix(&parts)?,
        "json" | "jsons" => http(&parts)?,
        "https" | "http" if parts.host == "discord.com" || parts.host == "discordapp.com" => Imported {
            kind: EndpointKind::Discord,
            url: apprise_url.trim().to_owned(),
            settings: json!({}),
            secrets: json!({}),
        },
        "slack" => return fail("`slack://` cannot be imported yet: add it as a slack endpoint with its webhook URL"),
        "msteams" | "workflows" => {
            return fail(format!(
                "`{}://` cannot be imported yet: add it as a teams endpoint with its webhook URL",
                parts.scheme
            ));
        }
        "form" | "forms" | "xml" | "xmls" | "post" | "posts" => {
            return fail(format!(
                "`{}://` cannot be imported: driftwatch's http kind sends a body of your template; add it with a body template",
                parts.scheme
            ));
        }
        other => return fail(format!("`{other}://` is not a notification driftwatch can map")),
    };
    // What comes out must be what an endpoint accepts.
    crate::settings::validate(imported.kind, &imported.url, Some(&imported.settings), Some(&imported.secrets))
        .map_err(|e| ImportError(format!("`{}://`: {}", parts.scheme, e)))?;
    Ok(imported)
}

fn email(p: &Parts) -> Result<Imported, ImportError> {
    let secure = p.scheme == "mailtos";
    let mode = p.query("mode").map(str::to_ascii_lowercase);
    let host = p.query("smtp").map(str::to_owned).unwrap_or_else(|| p.host.clone());
    if host.is_empty() {
        return fail("`mailto://`: no mail server (give the domain, or ?smtp=host)");
    }
    let (security, default_port) = match (secure, mode.as_deref(), p.port) {
        (_, Some("ssl"), _) | (true, None, Some(465)) | (true, None, None) => ("tls", 465),
        (_, Some("starttls"), _) | (true, _, _) => ("starttls", 587),
        (false, _, Some(25)) => ("plain", 25),
        (false, _, _) => ("starttls", 587),
    };
    let port = p.port.unwrap_or(default_port);
    let user = p.query("user").map(str::to_owned).unwrap_or_else(|| p.user.clone());
    let password = p.query("pass").map(str::to_owned).unwrap_or_else(|| p.password.clone());
    let from = match p.query("from") {
        Some(from) => from.to_owned(),
        None if user.contains('@') => user.clone(),
        None if !user.is_empty() => format!("{user}@{}", p.host),
        None => return fail("`mailto://`: no sender (give user@domain or ?from=)"),
    };
    let mut to: Vec<String> = p
        .query("to")
        .map(|t| t.split([',', ' ']).filter(|s| !s.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default();
    to.extend(p.path.iter().filter(|s| s.contains('@')).cloned());
    if to.is_empty() {
        to.push(from.clone());
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
    }
    Ok(Imported {
        kind: EndpointKind::Email,
        url: format!("smtp://{host}:{port}"),
        settings: Value::Object(settings),
        secrets: Value::Object(secrets),
    })
}

fn discord(p: &Parts) -> Result<Imported, ImportError> {
    // discord://webhook_id/webhook_token (or discord://user@webhook_id/webhook_token).
    let (id, token) = match p.path.as_slice() {
        [token, ..] if !p.host.is_empty() => (p.host.clone(), token.clone()),
        _ => return fail("`discord://`: expected discord://webhook_id/webhook_token"),
    };
    if !id.bytes().all(|b| b.is_ascii_digit()) {
        return fail("`discord://`: the webhook id is a number");
    }
    Ok(Imported {
        kind: EndpointKind::Discord,
        url: format!("https://discord.com/api/webhooks/{id}/{token}"),
        settings: json!({}),
        secrets: json!({}),
    })
}

fn telegram(p: &Parts) -> Result<Imported, ImportError> {
    // tgram://bot_token/chat_id: the token holds a colon, so the "host" is `123456` and the
    // "port" or password part carries the rest; rebuild it from the raw pieces.
    let token = match (&p.port, p.password.is_empty()) {
        (Some(port), _) => format!("{}:{port}", p.host),
        _ if p.host.contains(':') => p.host.clone(),
        _ => p.host.clone(),
    };
    let token = if token.contains(':') { token } else { format!("{}:{}", p.user, p.password) };
    let chats: Vec<&String> = p.path.iter().collect();
    let chat = match chats.as_slice() {
        [chat] => chat.as_str(),
        [] => return fail("`tgram://`: no chat id (tgram://bot_token/chat_id)"),
        _ => return fail("`tgram://`: one chat per endpoint; import one URL per chat"),
    };
    if !token.contains(':') || token.starts_with(':') || token.ends_with(':') {
        return fail("`tgram://`: the bot token looks like 123456:ABC…");
    }
    let chat_id = chat
        .parse::<i64>()
        .map_or_else(|_| if chat.starts_with('@') { json!(chat) } else { json!(format!("@{chat}")) }, |n| json!(n));
    Ok(Imported {
        kind: EndpointKind::Telegram,
        url: "https://api.telegram.org".to_owned(),
        settings: json!({"chat_id": chat_id}),
        secrets: json!({"bot_token": token}),
    })
}

fn priority(name: Option<&str>, scale: &[(&str, i64)]) -> Option<i64> {
    let name = name?.to_ascii_lowercase();
    name.parse::<i64>().ok().or_else(|| scale.iter().find(|(n, _)| name.starts_with(n)).map(|(_, v)| *v))
}

fn ntfy(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = if p.scheme == "ntfys" { "https" } else { "http" };
    // ntfy://topic (ntfy.sh) or ntfy://host/topic.
    let (url, topic) = match p.path.as_slice() {
        [] => ("https://ntfy.sh".to_owned(), p.host.clone()),
        [topic] => (format!("{scheme}://{}", p.host_port()), topic.clone()),
        _ => return fail("`ntfy://`: one topic per endpoint; import one URL per topic"),
    };
    if !p.password.is_empty() {
        return fail(
            "`ntfy://`: user and password sign-in is not supported; use an access token (ntfy://token@host/topic)",
        );
    }
    let mut settings = Map::new();
    settings.insert("topic".into(), json!(topic));
    let scale = [("min", 1), ("low", 2), ("default", 3), ("normal", 3), ("high", 4), ("max", 5), ("urgent", 5)];
    if let Some(prio) = priority(p.query("priority"), &scale) {
        settings.insert("priority".into(), json!(prio));
    }
    if let Some(tags) = p.query("tags") {
        settings
            .insert("tags".into(), json!(tags.split(',').map(str::trim).filter(|t| !t.is_empty()).collect::<Vec<_>>()));
    }
    let token = p.query("token").map(str::to_owned).or_else(|| (!p.user.is_empty()).then(|| p.user.clone()));
    let secrets = match token {
        Some(token) => json!({"token": token}),
        None => json!({}),
    };
    Ok(Imported { kind: EndpointKind::Ntfy, url, settings: Value::Object(settings), secrets })
}

fn pushover(p: &Parts) -> Result<Imported, ImportError> {
    // pover://user_key@token[/device]
    if p.user.is_empty() || p.host.is_empty() {
        return fail("`pover://`: expected pover://user_key@app_token");
    }
    let mut settings = Map::new();
    if let Some(device) = p.path.first() {
        settings.insert("device".into(), json!(device));
    }
    let scale = [("low", -1), ("moderate", 0), ("normal", 0), ("high", 1)];
    if let Some(prio) = priority(p.query("priority"), &scale) {
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
    // gotify://host[:port][/path]/token
    let Some((token, prefix)) = p.path.split_last() else {
        return fail("`gotify://`: expected gotify://host/app_token");
    };
    let scheme = if p.scheme == "gotifys" { "https" } else { "http" };
    let mut url = format!("{scheme}://{}", p.host_port());
    for segment in prefix {
        url.push('/');
        url.push_str(segment);
    }
    let mut settings = Map::new();
    let scale = [("low", 2), ("moderate", 5), ("normal", 5), ("high", 8), ("emergency", 10)];
    if let Some(prio) = priority(p.query("priority"), &scale) {
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
    // matrix://user:access_token@host/!room:server (an access token, not a password).
    let token = if p.password.is_empty() { p.user.clone() } else { p.password.clone() };
    if token.is_empty() {
        return fail("`matrix://`: no access token (matrix://user:token@host/!room:server)");
    }
    let room = match (p.path.as_slice(), &p.fragment) {
        ([room], _) => room.clone(),
        ([], Some(fragment)) => format!("#{fragment}"),
        ([], None) => return fail("`matrix://`: no room (…/!room:server)"),
        _ => return fail("`matrix://`: one room per endpoint; import one URL per room"),
    };
    if room.starts_with('#') {
        return fail("`matrix://`: a room alias cannot be resolved here; give the room id (!…:server)");
    }
    let room = if room.contains(':') { room } else { format!("{room}:{}", p.host) };
    let scheme = if p.scheme == "matrixs" { "https" } else { "http" };
    Ok(Imported {
        kind: EndpointKind::Matrix,
        url: format!("{scheme}://{}", p.host_port()),
        settings: json!({"room_id": room}),
        secrets: json!({"access_token": token}),
    })
}

fn http(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = if p.scheme == "jsons" { "https" } else { "http" };
    let mut url = format!("{scheme}://{}", p.host_port());
    for segment in &p.path {
        url.push('/');
        url.push_str(segment);
    }
    let mut headers = Map::new();
    let mut settings = Map::new();
    for (key, value) in &p.query {
        if let Some(name) = key.strip_prefix('+') {
            headers.insert(name.to_owned(), json!(value));
        } else if key.eq_ignore_ascii_case("method") {
            settings.insert("method".into(), json!(value.to_ascii_uppercase()));
        }
    }
    if !headers.is_empty() {
        settings.insert("headers".into(), Value::Object(headers));
    }
    let secrets = if p.user.is_empty() {
        json!({})
    } else {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", p.user, p.password));
        json!({"headers": {"Authorization": format!("Basic {basic}")}})
    };
    Ok(Imported { kind: EndpointKind::Http, url, settings: Value::Object(settings), secrets })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str) -> Imported {
        parse(url).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    #[test]
    fn each_scheme_maps_to_its_kind() {
        let mail = ok("mailtos://alerts:p%40ss@example.com?to=ops@example.com,dev@example.com");
        assert_eq!((mail.kind, mail.url.as_str()), (EndpointKind::Email, "smtp://example.com:465"));
        assert_eq!(mail.settings["to"], json!(["ops@example.com", "dev@example.com"]));
        assert_eq!(
            (mail.settings["security"].as_str(), mail.secrets["password"].as_str()),
            (Some("tls"), Some("p@ss"))
        );
        let relay = ok("mailto://relay.local:25?from=dw@example.com&to=ops@example.com");
        assert_eq!((relay.url.as_str(), relay.settings["security"].as_str()), ("smtp://relay.local:25", Some("plain")));

        let discord = ok("discord://1234567890/AbCdEf-token");
        assert_eq!(discord.url, "https://discord.com/api/webhooks/1234567890/AbCdEf-token");
        let tgram = ok("tgram://123456789:AAE-token_x/-1001234");
        assert_eq!(
            (tgram.secrets["bot_token"].as_str(), &tgram.settings["chat_id"]),
            (Some("123456789:AAE-token_x"), &json!(-1001234))
        );
        let channel = ok("tgram://123456789:AAE/news");
        assert_eq!(channel.settings["chat_id"], json!("@news"));

        let ntfy = ok("ntfys://tk_abc@ntfy.example.com/alerts?priority=high&tags=warning,shop");
        assert_eq!((ntfy.url.as_str(), ntfy.settings["priority"].as_i64()), ("https://ntfy.example.com", Some(4)));
        assert_eq!(
            (ntfy.secrets["token"].as_str(), &ntfy.settings["tags"]),
            (Some("tk_abc"), &json!(["warning", "shop"]))
        );
        assert_eq!(ok("ntfy://mytopic").url, "https://ntfy.sh");

        let pover = ok(&format!("pover://{}@{}/phone", "u".repeat(30), "a".repeat(30)));
        assert_eq!(
            (pover.secrets["user_key"].as_str().map(str::len), pover.settings["device"].as_str()),
            (Some(30), Some("phone"))
        );
        let gotify = ok("gotifys://push.example.com:8443/sub/AbCdEf123?priority=high");
        assert_eq!(
            (gotify.url.as_str(), gotify.secrets["token"].as_str()),
            ("https://push.example.com:8443/sub", Some("AbCdEf123"))
        );
        let matrix = ok("matrixs://bot:syt_token@matrix.example.org/!abc:example.org");
        assert_eq!(
            (matrix.url.as_str(), matrix.settings["room_id"].as_str()),
            ("https://matrix.example.org", Some("!abc:example.org"))
        );
        let json_hook = ok("jsons://user:pw@n8n.example.com/webhook/abc?+X-Source=dw");
        assert_eq!(json_hook.url, "https://n8n.example.com/webhook/abc");
        assert_eq!(json_hook.settings["headers"]["X-Source"], "dw");
        assert_eq!(json_hook.secrets["headers"]["Authorization"], "Basic dXNlcjpwdw==");
    }

    #[test]
    fn refusals_name_the_scheme_and_never_the_secret() {
        for (url, says) in [
            ("slack://TokenA/TokenB/TokenC/#chan", "slack endpoint"),
            ("tgram://123:SECRETTOKEN/1/2", "one chat per endpoint"),
            ("tgram://123:SECRETTOKEN", "no chat id"),
            ("matrixs://bot:SECRETTOKEN@matrix.example.org/#room", "alias"),
            ("ntfy://me:SECRETTOKEN@ntfy.example.com/topic", "access token"),
            ("pover://SECRETTOKEN", "pover://user_key@app_token"),
            ("pover://short@SECRETTOKEN", "30 letters"),
            ("xyz://SECRETTOKEN", "not a notification"),
            ("no scheme", "no scheme"),
            ("discord://notanumber/SECRETTOKEN", "number"),
        ] {
            let e = parse(url).expect_err(url).to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("SECRETTOKEN"), "{url}: {e}");
        }
    }

    #[test]
    fn odd_input_is_an_error_not_a_panic() {
        for url in [
            "://",
            "tgram://",
            "mailto://",
            "gotify://",
            "matrix://@/",
            "json://[::1",
            "ntfy://a/b/c",
            "mailto://@:99999",
        ] {
            let _ = parse(url);
        }
    }
}
