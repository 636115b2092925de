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

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead as _, KeyInit as _, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngExt as _;
use sha2::{Digest as _, Sha256};
use zeroize::Zeroize as _;

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
    /// The key file holds an unusable key.
    #[error("key file {}: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with its content.
        reason: Box<KeyError>,
    },
    /// The key file could not be read or created.
    #[error("key file {}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        error: std::io::Error,
    },
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

/// Reads the key in `path`, or creates the file with a new random key when it does not exist;
/// `true` when it was created.
///
/// The file holds the key as standard base64 and a newline; surrounding whitespace is ignored
/// when reading. It is created with mode 0600 (on Unix) atomically and without ever replacing
/// a file: the key is written to a temporary file in the same directory, synced, then linked
/// to `path` (a hard link, unlike a rename, fails when `path` exists), so a crash leaves either
/// no key file or a complete one, and two processes starting together end up with the same key.
/// Missing parent directories are created.
///
/// An existing file is read whatever its permissions; the caller should warn when
/// [`key_file_is_exposed`] says others can read it.
pub fn load_or_create_key_file(path: &Path) -> Result<(SecretKey, bool), KeyError> {
    match read_key_file(path) {
        Err(KeyError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {}
        other => return other.map(|key| (key, false)),
    }
    let io = |error: std::io::Error| KeyError::Io { path: path.to_owned(), error };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let key = SecretKey::generate();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "key".to_owned());
    let temp = dir.join(format!(".{name}.{}.tmp", crate::new_random_key("")));
    let written =
        write_new_file(&temp, &format!("{}\n", key.to_base64())).and_then(|()| std::fs::hard_link(&temp, path));
    let _ = std::fs::remove_file(&temp);
    match written {
        Ok(()) => {
            // Make the new name durable too (best effort: not every platform opens directories).
            if let Ok(dir) = std::fs::File::open(dir) {
                let _ = dir.sync_all();
            }
            Ok((key, true))
        }
        // Another process created it first: use its key.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key_file(path).map(|key| (key, false)),
        Err(e) => Err(io(e)),
    }
}

/// The mode bits of the key file at `path` when group or others may access it (anything wider
/// than 0600), for the caller to warn about; `None` when it is private, unreadable, or not on Unix.
pub fn key_file_is_exposed(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// The key in the file at `path`.
fn read_key_file(path: &Path) -> Result<SecretKey, KeyError> {
    let mut content = std::fs::read_to_string(path).map_err(|error| KeyError::Io { path: path.to_owned(), error })?;
    let key =
        SecretKey::from_base64(&content).map_err(|e| KeyError::File { path: path.to_owned(), reason: Box::new(e) });
    content.zeroize();
    key
}

/// Creates `path` (failing when it exists) readable by its owner only, writes `content` and
/// syncs it.
fn write_new_file(path: &Path, content: &str) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(content.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of its own, removed afterwards.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            let dir = std::env::temp_dir().join(format!("driftwatch-sealed-{}", crate::new_random_key("")));
            std::fs::create_dir_all(&dir).expect("temp dir");
            TempDir(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn keyring() -> Keyring {
        Keyring::new(SecretKey::generate(), Vec::new())
    }

    #[test]
    fn seals_and_opens_round_trip() {
        let ring = keyring();
        for plaintext in ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "", "päss wörd ✓", &"x".repeat(10_000)] {
            let sealed = ring.seal(plaintext);
            assert!(is_sealed(&sealed));
            assert!(sealed.starts_with(&format!("dwenc:v1:{}:", ring.current_id())), "{sealed}");
            assert!(!sealed.contains(plaintext) || plaintext.is_empty());
            assert_eq!(ring.open(&sealed).as_deref(), Ok(plaintext));
        }
        let (a, b) = (ring.seal("same"), ring.seal("same"));
        assert_ne!(a, b, "a fresh nonce each time");
        let body = a.rsplit(':').next().unwrap_or_default();
        assert_eq!(URL_SAFE_NO_PAD.decode(body).map(|b| b.len()).ok(), Some(NONCE_LEN + 4 + TAG_LEN));
    }

    #[test]
    fn another_key_fails() {
        let sealed = keyring().seal("secret");
        let other = keyring();
        let err = other.open(&sealed).expect_err("another key");
        assert!(matches!(err, SealError::UnknownKey { .. }), "{err}");
        // The same id over another key (forged): the tag does not verify.
        let forged = sealed.replacen(&sealed[9..17], other.current_id(), 1);
        assert!(matches!(other.open(&forged), Err(SealError::Tampered { .. })));
    }

    #[test]
    fn tampering_is_detected() {
        let ring = keyring();
        let sealed = ring.seal("secret value");
        let (header, body) = sealed.rsplit_once(':').unwrap_or_default();
        let mut bytes = URL_SAFE_NO_PAD.decode(body).unwrap_or_default();
        for i in [0, NONCE_LEN, bytes.len() - 1] {
            bytes[i] ^= 1;
            let altered = format!("{header}:{}", URL_SAFE_NO_PAD.encode(&bytes));
            let err = ring.open(&altered).expect_err("altered");
            assert_eq!(err, SealError::Tampered { key_id: ring.current_id().to_owned() });
            assert!(!err.to_string().contains("secret value"));
            bytes[i] ^= 1;
        }
        assert!(matches!(ring.open(&format!("{header}:AAAA")), Err(SealError::Malformed(_))));
        assert!(matches!(ring.open(&format!("{header}:not base64!")), Err(SealError::Malformed(_))));
        assert!(matches!(ring.open("dwenc:v2:0123abcd:AAAA"), Err(SealError::Malformed(_))));
        assert!(matches!(ring.open("dwenc:v1:nothex!!:AAAA"), Err(SealError::Malformed(_))));
        assert!(matches!(ring.open("dwenc:v1:"), Err(SealError::Malformed(_))));
    }

    #[test]
    fn the_header_is_authenticated() {
        let key = SecretKey::generate();
        let sealed = Keyring::new(key.clone(), Vec::new()).seal("secret");
        let (header, body) = sealed.rsplit_once(':').unwrap_or_default();
        let bytes = URL_SAFE_NO_PAD.decode(body).unwrap_or_default();
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).expect("24 bytes");
        let open = |aad: &str| key.cipher().decrypt(&nonce, Payload { msg: ciphertext, aad: aad.as_bytes() });
        assert_eq!(header, format!("dwenc:v1:{}", key.id()));
        assert_eq!(open(header).ok().as_deref(), Some(&b"secret"[..]));
        assert!(open("").is_err(), "without the header");
        assert!(open(&format!("dwenc:v2:{}", key.id())).is_err(), "under another version");
    }

    #[test]
    fn previous_keys_still_open() {
        let old = SecretKey::generate();
        let sealed = Keyring::new(old.clone(), Vec::new()).seal("rotated");
        let ring = Keyring::new(SecretKey::generate(), vec![SecretKey::generate(), old.clone()]);
        assert_eq!(ring.open(&sealed).as_deref(), Ok("rotated"));
        assert!(ring.needs_reseal(&sealed));
        let resealed = ring.reseal(&sealed).ok().flatten().unwrap_or_default();
        assert!(resealed.starts_with(&format!("dwenc:v1:{}:", ring.current_id())));
        assert_eq!(ring.open(&resealed).as_deref(), Ok("rotated"));
        assert_eq!(ring.reseal(&resealed), Ok(None));
        assert_eq!(ring.previous_ids().collect::<Vec<_>>(), vec![ring.previous[0].id.as_str(), old.id.as_str()]);
    }

    #[test]
    fn an_unknown_key_is_named_and_the_value_is_not() {
        let old = SecretKey::generate();
        let sealed = Keyring::new(old.clone(), Vec::new()).seal("hunter2-very-secret");
        let err = keyring().open(&sealed).expect_err("unknown key");
        let message = err.to_string();
        assert_eq!(message, format!("sealed with key {}, which is not configured", old.id()));
        assert!(!message.contains("hunter2") && !message.contains(sealed.rsplit(':').next().unwrap_or("-")));
        assert!(!message.contains(&old.to_base64()));
    }

    #[test]
    fn plaintext_passes_through() {
        let ring = keyring();
        for plain in ["whsec_abc", "", "dwenc", "DWENC:v1:00000000:AAAA", "token:with:colons"] {
            assert!(!is_sealed(plain));
            assert_eq!(ring.open(plain).as_deref(), Ok(plain));
        }
    }

    #[test]
    fn needs_reseal_is_plaintext_or_another_key() {
        let old = SecretKey::generate();
        let ring = Keyring::new(SecretKey::generate(), vec![old.clone()]);
        assert!(ring.needs_reseal("whsec_plain"));
        assert!(ring.needs_reseal(""));
        assert!(!ring.needs_reseal(&ring.seal("x")));
        assert!(ring.needs_reseal(&Keyring::new(old, Vec::new()).seal("x")));
        assert!(ring.needs_reseal(&keyring().seal("x")), "an unknown key: resealing reports it");
        assert!(ring.needs_reseal("dwenc:v9:junk"));
        assert!(matches!(ring.reseal(&keyring().seal("x")), Err(SealError::UnknownKey { .. })));
        let resealed = ring.reseal("whsec_plain").ok().flatten().unwrap_or_default();
        assert_eq!(ring.open(&resealed).as_deref(), Ok("whsec_plain"));
    }

    #[test]
    fn keys_read_back_and_have_stable_ids() {
        let key = SecretKey::generate();
        let encoded = key.to_base64();
        assert_eq!(encoded.len(), 44);
        let again = SecretKey::from_base64(&format!("  {encoded}\n")).expect("valid");
        assert_eq!(again.to_base64(), encoded);
        assert_eq!(again.id(), key.id());
        assert_eq!(key.id().len(), 8);
        assert_ne!(SecretKey::generate().id(), key.id());
        // SHA-256 of 32 zero bytes starts 66687aad.
        let zero = SecretKey::from_base64(&STANDARD.encode([0u8; 32])).expect("valid");
        assert_eq!(zero.id(), "66687aad");
        let debug = format!("{key:?} {:?}", Keyring::new(key.clone(), vec![zero]));
        assert!(debug.contains(&key.id()) && !debug.contains(&encoded) && !debug.contains("bytes"), "{debug}");
    }

    #[test]
    fn bad_keys_are_refused_clearly() {
        let short = STANDARD.encode([7u8; 16]);
        let err = SecretKey::from_base64(&short).expect_err("16 bytes");
        assert!(matches!(err, KeyError::WrongLength(16)));
        assert!(err.to_string().contains("16 bytes") && err.to_string().contains("exactly 32"), "{err}");
        assert!(!err.to_string().contains(&short));
        assert!(matches!(SecretKey::from_base64(&STANDARD.encode([7u8; 33])), Err(KeyError::WrongLength(33))));
        assert!(matches!(SecretKey::from_base64(" \n"), Err(KeyError::Empty)));
        let url_safe = URL_SAFE_NO_PAD.encode([0xfbu8; 32]);
        let err = SecretKey::from_base64(&url_safe).expect_err("URL-safe alphabet");
        assert!(matches!(err, KeyError::NotBase64(_)), "{err}");
        assert!(err.to_string().contains("offset 0") && !err.to_string().contains(&url_safe[..8]), "{err}");
        let err = SecretKey::from_base64("not base64 at all!").expect_err("garbage");
        assert!(err.to_string().starts_with("the secret key is not valid standard base64"), "{err}");
        assert!(!err.to_string().contains("not base64 at all"), "{err}");
    }

    #[test]
    fn the_key_file_is_created_once_privately() {
        let dir = TempDir::new();
        let path = dir.path().join("keys").join("secret.key");
        let (created, fresh) = load_or_create_key_file(&path).expect("created");
        assert!(fresh);
        let content = std::fs::read_to_string(&path).expect("written");
        assert_eq!(content, format!("{}\n", created.to_base64()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).expect("metadata").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            assert_eq!(key_file_is_exposed(&path), None);
        }
        let (read, fresh) = load_or_create_key_file(&path).expect("read");
        assert!(!fresh);
        assert_eq!((read.to_base64(), read.id()), (created.to_base64(), created.id()));
        assert_eq!(std::fs::read_dir(path.parent().expect("dir")).expect("dir").count(), 1, "no temporary left");

        // Whitespace around the key is fine; a broken file is an error naming the file only.
        std::fs::write(&path, format!("\n  {}  \n\n", created.to_base64())).expect("rewrite");
        assert_eq!(load_or_create_key_file(&path).map(|(k, c)| (k.id(), c)).ok(), Some((created.id(), false)));
        std::fs::write(&path, "c2hvcnQ=\n").expect("rewrite");
        let err = load_or_create_key_file(&path).expect_err("short key");
        assert!(err.to_string().contains("secret.key") && err.to_string().contains("5 bytes"), "{err}");
        assert!(!err.to_string().contains("c2hvcnQ"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).ok().as_deref(), Some("c2hvcnQ=\n"), "never overwritten");
    }

    #[cfg(unix)]
    #[test]
    fn exposed_key_files_are_flagged() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = TempDir::new();
        let path = dir.path().join("secret.key");
        std::fs::write(&path, format!("{}\n", SecretKey::generate().to_base64())).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(key_file_is_exposed(&path), Some(0o644));
        assert!(load_or_create_key_file(&path).is_ok_and(|(_, created)| !created), "still read");
    }
}
