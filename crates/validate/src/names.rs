//! The names an account gives its proxies and secrets, which watches refer to.

/// What a valid name is, in words (the error beside a bad one).
pub const SECRET_NAME_RULE: &str =
    "a name of 1 to 64 letters, digits, `-`, `_` or `.`, starting with a letter or digit";

/// Whether `name` is a valid proxy or secret name ([`SECRET_NAME_RULE`]).
pub fn secret_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Checks what a watch names as its proxy in `field`: `"none"`, a proxy URL
/// ([`driftwatch_net::parse_proxy_url`]), a value sealed by a previous save, or the name of one
/// of the account's proxies (whether the account has it is the caller's to check, against the
/// database). The error is the field's message.
pub fn valid_proxy_value(value: &str) -> Result<(), String> {
    if value == driftwatch_core::NO_PROXY || driftwatch_core::is_sealed(value) {
        return Ok(());
    }
    if value.contains("://") {
        return driftwatch_net::parse_proxy_url(value).map(drop);
    }
    if secret_name_ok(value) {
        Ok(())
    } else {
        Err(format!(
            "not a proxy URL (http://, https://, socks5:// or socks5h://), \"none\", or the name of one of your proxies ({SECRET_NAME_RULE})"
        ))
    }
}

/// Proxy values that name one of the account's proxies, with their field.
pub fn named_proxies(options: &driftwatch_core::WatchOptions) -> Vec<(&'static str, &str)> {
    let fetch = &options.fetch;
    [
        ("options.fetch.proxy", fetch.proxy.as_deref()),
        ("options.fetch.when_blocked.proxy", fetch.when_blocked.as_ref().and_then(|w| w.proxy.as_deref())),
    ]
    .into_iter()
    .filter_map(|(field, value)| Some((field, value?)))
    .filter(|(_, value)| {
        *value != driftwatch_core::NO_PROXY && !value.contains("://") && !driftwatch_core::is_sealed(value)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_is_none_a_url_or_a_name() {
        for ok in ["none", "eu-1", "http://p.example:3128", "socks5h://u:pw@p.example"] {
            assert!(valid_proxy_value(ok).is_ok(), "{ok}");
        }
        assert!(valid_proxy_value("http://p.example/x").unwrap_err().contains("without a path"));
        assert!(valid_proxy_value("ftp://p.example").unwrap_err().contains("not ftp://"));
        assert!(valid_proxy_value("no spaces").unwrap_err().contains("the name of one of your proxies"));
    }

    #[test]
    fn names_are_short_plain_words() {
        for ok in ["shop", "Shop-login", "a", "eu.proxy_2"] {
            assert!(secret_name_ok(ok), "{ok}");
        }
        for bad in ["", "-x", "has space", "ü", &"x".repeat(65), "none!"] {
            assert!(!secret_name_ok(bad), "{bad}");
        }
    }
}
