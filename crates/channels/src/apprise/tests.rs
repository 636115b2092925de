//! The Apprise forms, and refusals that never say a secret.

use base64::Engine as _;
use serde_json::json;

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

    assert!(refused("tgram://123:SECRET/1/2").contains("only one chat per endpoint is supported: create one per chat"));
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
    for (name, level) in [("min", 1), ("low", 2), ("default", 3), ("high", 4), ("max", 5), ("emergency", 5), ("2", 2)] {
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
    assert_eq!(full.settings, json!({"headers": {"X-Source": "dw"}, "content_type": "text/plain", "method": "PUT"}));
    let basic = base64::engine::general_purpose::STANDARD.encode("user:p:w");
    assert_eq!(full.secrets, json!({"headers": {"X-Api-Key": "k1", "Authorization": format!("Basic {basic}")}}));
    assert_eq!(ok("json://h.example/?+Authorization=Bearer%20x").secrets["headers"]["Authorization"], "Bearer x");
    assert_eq!(ok("jsons://h.example").url, "https://h.example/");
    // changedetection.io's own schemes: post:// and put://, with s for https.
    let post = ok("posts://h.example/hook");
    assert_eq!(
        (post.kind, post.url.as_str(), &post.settings),
        (EndpointKind::Http, "https://h.example/hook", &json!({}))
    );
    let put = ok("put://h.example/hook");
    assert_eq!((put.url.as_str(), &put.settings), ("http://h.example/hook", &json!({"method": "PUT"})));

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
        ("rocket://h.example/token", "`rocket://` is not a notification driftwatch can map"),
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
        "", "://", "tgram", "mailto", "ntfy", "matrix", "json", "pover", "gotify", "discord", "@", ":", "/", "?", "=",
        "&", "#", "[", "]", "%", "%3A", "+", "bot", "1", "a", "é", "::", "@@", "?to=", "-", "!",
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
