use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rand::RngExt as _;
use sha2::{Digest, Sha256};

/// The prefix of every API token, so leaked tokens are easy to recognise and scan for.
pub const API_TOKEN_PREFIX: &str = "dwt_";

/// The prefix of webhook signing secrets (Standard Webhooks).
pub const WEBHOOK_SECRET_PREFIX: &str = "whsec_";

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::rng().fill(&mut bytes[..]);
    bytes
}

/// A new API token: `dwt_` and 256 random bits, URL-safe base64. Shown once, stored hashed.
pub fn new_api_token() -> String {
    format!("{API_TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(random_bytes::<32>()))
}

/// A new random secret for a browser session, a feed key or a setup code: `prefix` and 256
/// random bits, URL-safe base64. Like API tokens, stored only as [`hash_token`].
pub fn new_random_key(prefix: &str) -> String {
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(random_bytes::<32>()))
}

/// A new webhook signing secret: `whsec_` and base64 of 32 random bytes.
pub fn new_webhook_secret() -> String {
    format!("{WEBHOOK_SECRET_PREFIX}{}", STANDARD.encode(random_bytes::<32>()))
}

/// The stored form of an API token: lower-case hex SHA-256.
///
/// Tokens carry 256 random bits, so a fast unsalted hash is enough: nothing can be guessed.
pub fn hash_token(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_hash_stably() {
        let (a, b) = (new_api_token(), new_api_token());
        assert_ne!(a, b);
        assert!(a.starts_with(API_TOKEN_PREFIX) && a.len() == 4 + 43);
        assert_eq!(hash_token(&a), hash_token(&a));
        assert_ne!(hash_token(&a), hash_token(&b));
        assert_eq!(hash_token("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let secret = new_webhook_secret();
        assert!(secret.starts_with("whsec_"));
        assert_eq!(STANDARD.decode(&secret[6..]).map(|k| k.len()).ok(), Some(32));
    }
}
