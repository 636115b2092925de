//! Each scheme's form, as Apprise's plugins read it.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::{ImportError, Imported, Parts, decode, fail, list, priority};
use crate::kinds::EndpointKind;

pub(crate) fn email(p: &Parts) -> Result<Imported, ImportError> {
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

pub(crate) fn discord(p: &Parts) -> Result<Imported, ImportError> {
    // discord://webhook_id/webhook_token, or discord://botname@webhook_id/webhook_token.
    let token = p.path.first().map_or("", String::as_str);
    discord_webhook(&p.scheme, &p.host, token, p)
}

/// A service's own `https://` URL, which Apprise also takes: Discord's webhooks.
pub(crate) fn native(p: &Parts) -> Result<Imported, ImportError> {
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

pub(crate) fn telegram(p: &Parts) -> Result<Imported, ImportError> {
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

pub(crate) fn ntfy(p: &Parts) -> Result<Imported, ImportError> {
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

pub(crate) fn pushover(p: &Parts) -> Result<Imported, ImportError> {
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

pub(crate) fn gotify(p: &Parts) -> Result<Imported, ImportError> {
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

pub(crate) fn matrix(p: &Parts) -> Result<Imported, ImportError> {
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

pub(crate) fn http(p: &Parts) -> Result<Imported, ImportError> {
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
