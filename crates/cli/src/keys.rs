//! The key that encrypts stored secrets: from `DRIFTWATCH_SECRET_KEY`, or (for SQLite) a key
//! file beside the database created on first run; previous keys for rotations; and
//! re-encrypting every stored secret under the current key.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use driftwatch_core::{Keyring, SecretKey};
use driftwatch_store::Store;

use crate::Settings;
use crate::key_file::{key_file_is_exposed, load_or_create_key_file};

/// Secrets re-encrypted per transaction.
pub const RESEAL_BATCH: i64 = 500;

/// Why a PostgreSQL setup without a key is refused (by `serve`, `worker` and `config` alike).
const NO_KEY: &str = "PostgreSQL needs DRIFTWATCH_SECRET_KEY (the key that encrypts stored secrets; every node must \
                      use the same one). Make one with `driftwatch secrets generate-key`.";

/// Checks that the settings name a key the server can use, without reading or creating a key
/// file: the check `config` makes, in the words `serve` refuses to start with.
pub fn check_key(settings: &Settings) -> anyhow::Result<()> {
    if settings.secret_key.as_deref().is_some_and(|k| !k.trim().is_empty()) || key_file(settings).is_some() {
        Ok(())
    } else {
        bail!(NO_KEY)
    }
}

/// Whether a key is configured or can be found (a key is given, or SQLite's key file is used).
pub fn has_key(settings: &Settings) -> bool {
    check_key(settings).is_ok()
}

/// Where the key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `DRIFTWATCH_SECRET_KEY`.
    Setting,
    /// A key file.
    File(PathBuf),
}

/// The key file in use when no key is configured: the one given, or the SQLite database's
/// path with `.key` added; `None` for PostgreSQL.
pub fn key_file(settings: &Settings) -> Option<PathBuf> {
    if let Some(path) = &settings.secret_key_file {
        return Some(path.clone());
    }
    let path = settings.database_url.strip_prefix("sqlite://")?;
    Some(PathBuf::from(format!("{path}.key")))
}

/// A key file's companion: `<file>.new` (a rotation under way) or `<file>.previous`.
fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The server's keyring, logging where the key came from (its id, never the key). A key file
/// created now is announced with a warning to back it up.
pub fn keyring(settings: &Settings) -> anyhow::Result<(Keyring, KeySource)> {
    let mut previous = Vec::new();
    for (i, key) in settings.previous_secret_keys.iter().filter(|k| !k.trim().is_empty()).enumerate() {
        previous.push(
            SecretKey::from_base64(key.trim())
                .with_context(|| format!("DRIFTWATCH_PREVIOUS_SECRET_KEYS: key {} is not a key", i + 1))?,
        );
    }
    if let Some(key) = settings.secret_key.as_deref().filter(|k| !k.trim().is_empty()) {
        let key = SecretKey::from_base64(key.trim()).context("DRIFTWATCH_SECRET_KEY is not a key")?;
        let keyring = Keyring::new(key, previous);
        tracing::info!(key.id = keyring.current_id(), source = "DRIFTWATCH_SECRET_KEY", "secret key loaded");
        return Ok((keyring, KeySource::Setting));
    }
    let Some(path) = key_file(settings) else { bail!(NO_KEY) };
    let (key, created) =
        load_or_create_key_file(&path).with_context(|| format!("the secret key file {}", path.display()))?;
    // A rotation interrupted before it swapped the files: its new key may already seal some
    // secrets, and the one before it may still seal others.
    for suffix in [".new", ".previous"] {
        let other = companion(&path, suffix);
        if other.exists() {
            let (key, _) = load_or_create_key_file(&other).with_context(|| format!("{}", other.display()))?;
            previous.push(key);
        }
    }
    let keyring = Keyring::new(key, previous);
    if created {
        tracing::warn!(
            path = %path.display(),
            key.id = keyring.current_id(),
            "created a new secret key file: back it up with the database; without it the stored secrets \
             (bot tokens, passwords, signing secrets) cannot be read"
        );
    } else {
        tracing::info!(path = %path.display(), key.id = keyring.current_id(), "secret key loaded");
    }
    if let Some(mode) = key_file_is_exposed(&path) {
        tracing::warn!(path = %path.display(), mode = format!("{mode:o}"), "the secret key file is readable by others: chmod 600 it");
    }
    Ok((keyring, KeySource::File(path)))
}

/// Encrypts every stored secret still in plaintext, or sealed under another key, under the
/// current key (endpoints in batches, the other tables each in one write); returns how many
/// endpoints changed.
pub async fn seal_stored(store: &Store, keyring: &Keyring) -> anyhow::Result<usize> {
    // A credential URL stored whole (before such URLs were sealed) is moved out of sight first.
    let credential_kinds = driftwatch_channels::EndpointKind::ALL
        .iter()
        .filter(|k| k.spec().credential_url)
        .map(|k| k.as_str().to_owned())
        .collect();
    let changed = store
        .seal_credential_urls_and_reseal(keyring, RESEAL_BATCH, credential_kinds, driftwatch_channels::masked_url)
        .await
        .context("encrypting stored secrets")?;
    // The other sealed columns, each table in one write.
    type Reseal = fn(&mut driftwatch_store::DbConn, &Keyring) -> driftwatch_store::StoreResult<usize>;
    let others: [(Reseal, &str); 3] = [
        (driftwatch_store::verdicts::reseal_account_keys, "accounts' model keys"),
        (driftwatch_store::logins::reseal_logins, "account secrets and watches' sessions"),
        (driftwatch_store::proxies::reseal_proxies, "proxies and the proxy URLs in watches' options"),
    ];
    let mut resealed = 0;
    for (reseal, what) in others {
        let ring = keyring.clone();
        let rows = store.write(move |c| reseal(c, &ring)).await.with_context(|| format!("encrypting {what}"))?;
        if rows > 0 {
            tracing::info!(rows, key.id = keyring.current_id(), "{what} encrypted under the current key");
        }
        resealed += rows;
    }
    if changed > 0 {
        tracing::info!(
            endpoints = changed,
            key.id = keyring.current_id(),
            "stored secrets encrypted under the current key"
        );
    }
    // Plaintext that was replaced may linger in freed pages: scrubbed whichever table held it.
    if changed + resealed > 0 {
        store.scrub_replaced_secrets().await.context("removing the replaced secrets' old copies")?;
    }
    Ok(changed)
}

/// What `secrets rotate-key` did.
#[derive(Debug, Clone)]
pub struct Rotated {
    /// The new key's id.
    pub key_id: String,
    /// Endpoints whose secrets were re-encrypted.
    pub endpoints: usize,
    /// Where the new key is, when it is a file.
    pub file: Option<PathBuf>,
}

/// Rotates the key. With a key file: a new key is written beside it (`.new`), every secret is
/// re-encrypted under it in batches, then the files are swapped (the old key is kept as
/// `.previous`); a crash at any point leaves every secret readable at the next start. With
/// `DRIFTWATCH_SECRET_KEY`: the operator has already set the new key (and the old one in
/// `DRIFTWATCH_PREVIOUS_SECRET_KEYS`); every secret is re-encrypted under it.
pub async fn rotate(settings: &Settings, store: &Store) -> anyhow::Result<Rotated> {
    let (keyring, source) = keyring(settings)?;
    match source {
        KeySource::Setting => {
            let endpoints = seal_stored(store, &keyring).await?;
            Ok(Rotated { key_id: keyring.current_id().to_owned(), endpoints, file: None })
        }
        KeySource::File(path) => {
            let next = companion(&path, ".new");
            let (new_key, _) = load_or_create_key_file(&next).with_context(|| format!("{}", next.display()))?;
            let current = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
            let old = SecretKey::from_base64(current.trim()).context("the current key file")?;
            let mut previous = vec![old];
            let stale = companion(&path, ".previous");
            if stale.exists() {
                previous.push(load_or_create_key_file(&stale)?.0);
            }
            let rotated = Keyring::new(new_key, previous);
            let endpoints = seal_stored(store, &rotated).await?;
            // Every secret now opens with the new key: swap the files.
            std::fs::rename(&path, &stale).with_context(|| format!("keeping the old key as {}", stale.display()))?;
            std::fs::rename(&next, &path).with_context(|| format!("installing the new key as {}", path.display()))?;
            Ok(Rotated { key_id: rotated.current_id().to_owned(), endpoints, file: Some(path) })
        }
    }
}
