//! Secrets at rest: values sealed with XChaCha20-Poly1305 under a key from configuration.
//!
//! Endpoint secrets (webhook signing secrets, bot tokens, passwords, access tokens) are stored
//! as `dwenc:v1:<key id>:<nonce and ciphertext>`: the [`Keyring`]'s current key seals, and the
//! current or any previous key opens, chosen by the id written beside the ciphertext. The id is
//! the first 8 hex characters of the key's SHA-256: it names a key without revealing it. The
//! header up to the last colon (`dwenc:v1:<key id>`) is authenticated as associated data, so a
//! value cannot be moved under another id or version.
//!
//! A stored value without the `dwenc:` prefix was written before encryption and is returned
//! unchanged by [`Keyring::open`]; [`Keyring::needs_reseal`] finds it (and values under a
//! previous key) so that it can be sealed afresh under the current key.
//!
//! Neither a key nor a plaintext ever appears in an error message or a `Debug` output.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead as _, KeyInit as _, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngExt as _;
use sha2::{Digest as _, Sha256};
use zeroize::Zeroize as _;

#[cfg(test)]
mod tests;

/// The prefix of every sealed value; a stored value without it is plaintext.
pub const SEALED_PREFIX: &str = "dwenc:";

/// The prefix of values sealed in this module's (only) format, version 1.
const V1_PREFIX: &str = "dwenc:v1:";

/// Bytes of a key.
const KEY_LEN: usize = 32;

/// Bytes of an XChaCha20 nonce.
const NONCE_LEN: usize = 24;

/// Bytes of a Poly1305 tag.
const TAG_LEN: usize = 16;

/// Hex characters of a key id.
const KEY_ID_LEN: usize = 8;

/// A 256-bit key that seals and opens secrets. Its bytes are wiped when it is dropped, and
/// `Debug` shows only its [`id`](SecretKey::id).
#[derive(Clone)]
pub struct SecretKey {
    bytes: [u8; KEY_LEN],
    id: String,
}

impl SecretKey {
    /// A new random key (from the thread's cryptographically secure generator).
    pub fn generate() -> SecretKey {
        let mut bytes = [0u8; KEY_LEN];
        rand::rng().fill(&mut bytes[..]);
        SecretKey::from_bytes(bytes)
    }

    /// The key written as standard base64 (`+/`, `=` padded) of exactly 32 bytes, as
    /// [`SecretKey::to_base64`] writes it. Surrounding whitespace is ignored. The error says
    /// what is wrong without repeating the value.
    pub fn from_base64(encoded: &str) -> Result<SecretKey, KeyError> {
        let encoded = encoded.trim();
        if encoded.is_empty() {
            return Err(KeyError::Empty);
        }
        let mut decoded = STANDARD.decode(encoded).map_err(|e| KeyError::NotBase64(describe_base64_error(&e)))?;
        let key = match <[u8; KEY_LEN]>::try_from(decoded.as_slice()) {
            Ok(bytes) => Ok(SecretKey::from_bytes(bytes)),
            Err(_) => Err(KeyError::WrongLength(decoded.len())),
        };
        decoded.zeroize();
        key
    }

    /// The key as standard base64 (44 characters), the form [`SecretKey::from_base64`] reads.
    /// This is the secret itself: write it only where the key belongs.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.bytes)
    }

    /// The key's id: the first 8 lower-case hex characters of its SHA-256. Safe to log.
    pub fn id(&self) -> String {
        self.id.clone()
    }

    fn from_bytes(bytes: [u8; KEY_LEN]) -> SecretKey {
        let id = crate::hex(&Sha256::digest(bytes)[..KEY_ID_LEN / 2]);
        SecretKey { bytes, id }
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new((&self.bytes).into())
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.bytes.zeroize();
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretKey").field("id", &self.id).finish_non_exhaustive()
    }
}

/// A key that cannot be read: what is wrong with it, never its value.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Nothing but whitespace.
    #[error("the secret key is empty")]
    Empty,
    /// Not standard base64 (the detail says where, not what).
    #[error("the secret key is not valid standard base64: {0}")]
    NotBase64(String),
    /// Valid base64 of the wrong number of bytes.
    #[error("the secret key decodes to {0} bytes; it must be exactly 32 (44 characters of standard base64)")]
    WrongLength(usize),
}

/// A base64 error in words, without the offending symbol (it is a piece of the key).
fn describe_base64_error(error: &base64::DecodeError) -> String {
    match error {
        base64::DecodeError::InvalidByte(offset, _) => format!(
            "a character outside the standard alphabet (A-Z a-z 0-9 + /, `=` padding at the end) at offset {offset}"
        ),
        base64::DecodeError::InvalidLength(_) => "its length is not that of any base64 encoding".to_owned(),
        base64::DecodeError::InvalidLastSymbol { offset, .. } => {
            format!("the last character (offset {offset}) has bits set that encode nothing: truncated or altered")
        }
        base64::DecodeError::InvalidPadding => "missing or misplaced `=` padding".to_owned(),
    }
}

/// The keys a server holds: the current one, which seals, and previous ones, which still open
/// values sealed before a rotation. `Debug` shows only their ids.
#[derive(Clone)]
pub struct Keyring {
    current: SecretKey,
    previous: Vec<SecretKey>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let previous: Vec<&str> = self.previous.iter().map(|k| k.id.as_str()).collect();
        f.debug_struct("Keyring").field("current", &self.current.id).field("previous", &previous).finish()
    }
}

/// A stored value that cannot be opened. Names the key id, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// Sealed under a key this server does not hold (give it as a previous key).
    #[error("sealed with key {key_id}, which is not configured")]
    UnknownKey {
        /// The id written in the value.
        key_id: String,
    },
    /// The tag did not verify: the value was altered, or sealed by another key with the same id.
    #[error("sealed with key {key_id}, but it does not authenticate: altered, or sealed with another key")]
    Tampered {
        /// The id written in the value.
        key_id: String,
    },
    /// It starts with `dwenc:` but is not a well-formed sealed value.
    #[error("malformed sealed value: {0}")]
    Malformed(&'static str),
}

/// Whether `stored` is a sealed value (starts with `dwenc:`), rather than plaintext written
/// before encryption.
pub fn is_sealed(stored: &str) -> bool {
    stored.starts_with(SEALED_PREFIX)
}

/// The sealed values written inside `text` (a JSON document, say), each with its byte offset:
/// every `dwenc:` and the characters a sealed value is made of after it (letters, digits, `:`,
/// `-`, `_`, none of which JSON escapes).
pub fn sealed_within(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.match_indices(SEALED_PREFIX).map(move |(at, _)| {
        let rest = &text[at..];
        let end =
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '_'))).unwrap_or(rest.len());
        (at, &rest[..end])
    })
}

/// A sealed value taken apart: the key id, the authenticated header, and the base64 body.
struct Parts<'a> {
    key_id: &'a str,
    header: &'a str,
    body: &'a str,
}

/// Splits `dwenc:v1:<id>:<body>`; the id must be 8 lower-case hex characters.
fn parse(stored: &str) -> Result<Parts<'_>, SealError> {
    let rest = stored.strip_prefix(V1_PREFIX).ok_or(SealError::Malformed("unknown format version"))?;
    let (key_id, body) = rest.split_once(':').ok_or(SealError::Malformed("no key id"))?;
    if key_id.len() != KEY_ID_LEN || !key_id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(SealError::Malformed("the key id is not 8 hex characters"));
    }
    let header = &stored[..V1_PREFIX.len() + KEY_ID_LEN];
    Ok(Parts { key_id, header, body })
}

impl Keyring {
    /// A keyring sealing with `current` and also opening with each of `previous` (a previous
    /// key equal to the current one is dropped).
    pub fn new(current: SecretKey, previous: Vec<SecretKey>) -> Keyring {
        let mut kept: Vec<SecretKey> = Vec::with_capacity(previous.len());
        for key in previous {
            if key.bytes != current.bytes && !kept.iter().any(|k| k.bytes == key.bytes) {
                kept.push(key);
            }
        }
        Keyring { current, previous: kept }
    }

    /// The id of the key that seals.
    pub fn current_id(&self) -> &str {
        &self.current.id
    }

    /// The ids of the previous keys, in the order given.
    pub fn previous_ids(&self) -> impl Iterator<Item = &str> {
        self.previous.iter().map(|k| k.id.as_str())
    }

    /// Every key of the ring, the current one first: what a backup carries so that its
    /// secrets open wherever it is restored.
    pub fn keys(&self) -> impl Iterator<Item = &SecretKey> {
        std::iter::once(&self.current).chain(&self.previous)
    }

    /// `plaintext` sealed under the current key, with a fresh random nonce:
    /// `dwenc:v1:<key id>:<URL-safe base64, unpadded, of the nonce then the ciphertext and tag>`.
    pub fn seal(&self, plaintext: &str) -> String {
        let header = format!("{V1_PREFIX}{}", self.current.id);
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill(&mut nonce[..]);
        let ciphertext = self
            .current
            .cipher()
            .encrypt(&XNonce::from(nonce), Payload { msg: plaintext.as_bytes(), aad: header.as_bytes() })
            .expect("XChaCha20-Poly1305 seals any message under 256 GiB");
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        format!("{header}:{}", URL_SAFE_NO_PAD.encode(sealed))
    }

    /// The plaintext of `stored`: opened with the key its id names (the current one or a
    /// previous one), or `stored` itself when it is not sealed (written before encryption).
    pub fn open(&self, stored: &str) -> Result<String, SealError> {
        if !is_sealed(stored) {
            return Ok(stored.to_owned());
        }
        let parts = parse(stored)?;
        let bytes =
            URL_SAFE_NO_PAD.decode(parts.body).map_err(|_| SealError::Malformed("the body is not URL-safe base64"))?;
        if bytes.len() < NONCE_LEN + TAG_LEN {
            return Err(SealError::Malformed("too short"));
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).map_err(|_| SealError::Malformed("too short"))?;
        // Ids are 32 bits: two configured keys could share one, so every key with the id is tried.
        let mut keys = std::iter::once(&self.current).chain(&self.previous).filter(|k| k.id == parts.key_id).peekable();
        if keys.peek().is_none() {
            return Err(SealError::UnknownKey { key_id: parts.key_id.to_owned() });
        }
        for key in keys {
            let payload = Payload { msg: ciphertext, aad: parts.header.as_bytes() };
            if let Ok(plaintext) = key.cipher().decrypt(&nonce, payload) {
                return String::from_utf8(plaintext).map_err(|e| {
                    let mut bytes = e.into_bytes();
                    bytes.zeroize();
                    SealError::Malformed("the plaintext is not UTF-8")
                });
            }
        }
        Err(SealError::Tampered { key_id: parts.key_id.to_owned() })
    }

    /// Whether `stored` should be sealed again under the current key: it is plaintext, or
    /// sealed under another key (a malformed sealed value too, so that resealing reports it).
    pub fn needs_reseal(&self, stored: &str) -> bool {
        !is_sealed(stored) || parse(stored).map_or(true, |parts| parts.key_id != self.current.id)
    }

    /// `stored` sealed afresh under the current key when it [needs it](Keyring::needs_reseal),
    /// `None` when it is already sealed under the current key.
    pub fn reseal(&self, stored: &str) -> Result<Option<String>, SealError> {
        if !self.needs_reseal(stored) {
            return Ok(None);
        }
        let mut plaintext = self.open(stored)?;
        let sealed = self.seal(&plaintext);
        plaintext.zeroize();
        Ok(Some(sealed))
    }
}
