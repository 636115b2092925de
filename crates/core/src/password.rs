//! Passwords of browser users: Argon2id with OWASP's parameters, in the PHC string format.

use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use rand::RngExt as _;

/// Shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// Longest password accepted (hashing cost grows with length).
pub const MAX_PASSWORD_CHARS: usize = 1024;

/// Why a password cannot be used or hashed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordError {
    /// Too short or too long.
    #[error("must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters")]
    Length,
    /// The hashing library failed (never the password's content).
    #[error("password hashing failed: {0}")]
    Hash(String),
}

/// OWASP's Argon2id choice: 19 MiB, two passes, one lane.
fn hasher() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Hashes `password` with a fresh salt; the result carries its parameters (PHC string).
pub fn hash_password(password: &str) -> Result<String, PasswordError> {
    let chars = password.chars().count();
    if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&chars) {
        return Err(PasswordError::Length);
    }
    let mut bytes = [0u8; 16];
    rand::rng().fill(&mut bytes[..]);
    let salt = SaltString::encode_b64(&bytes).map_err(|e| PasswordError::Hash(e.to_string()))?;
    hasher()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| PasswordError::Hash(e.to_string()))
}

/// Whether `password` matches `stored` (a PHC string from [`hash_password`]). A malformed
/// stored hash matches nothing.
pub fn verify_password(password: &str, stored: &str) -> bool {
    if password.chars().count() > MAX_PASSWORD_CHARS {
        return false;
    }
    PasswordHash::new(stored).is_ok_and(|parsed| hasher().verify_password(password.as_bytes(), &parsed).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only() {
        let hash = hash_password("correct horse battery").expect("hash");
        assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{hash}");
        assert!(verify_password("correct horse battery", &hash));
        assert!(!verify_password("correct horse battery!", &hash));
        assert!(!verify_password("correct horse battery", "not a hash"));
        assert_ne!(hash, hash_password("correct horse battery").expect("hash"), "salted");
    }

    #[test]
    fn short_passwords_are_refused() {
        assert_eq!(hash_password("short"), Err(PasswordError::Length));
    }
}
