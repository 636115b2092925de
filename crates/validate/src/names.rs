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

#[cfg(test)]
mod tests {
    use super::*;

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
