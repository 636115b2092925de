//! `driftwatch backup` and `driftwatch restore`: every table's rows and the secret key in one
//! file (see `driftwatch::backup` for the format), restorable on either database.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};
use driftwatch::Settings;
use driftwatch::backup::{self, Creating, KEY_MEMBER, Manifest, Writer, bad, table_member};
use driftwatch_core::{Keyring, SecretKey};
use driftwatch_store::backup::{Column, Sink, TABLES, columns, dump, empty_or_which, insert_rows, latest_migration};
use driftwatch_store::{DbConn, PoolOptions, Store, StoreError, StoreResult};
use serde_json::{Map, Value};

/// Rows read, and inserted, per statement.
const BATCH: i64 = 500;
/// Bytes of rows held before they are inserted, whatever their number.
const HELD_BYTES: usize = 16 * 1024 * 1024;

/// What `restore` is asked to do besides reading the file.
pub(crate) struct RestoreArgs {
    /// The backup.
    pub(crate) file: PathBuf,
    /// The passphrase's file, for an encrypted backup.
    pub(crate) passphrase_file: Option<PathBuf>,
    /// A key that opens the secrets of a backup made `--without-key`.
    pub(crate) key_file: Option<PathBuf>,
    /// Check the file only.
    pub(crate) verify: bool,
}

/// The passphrase in `path`: its content without the final newline.
fn passphrase(path: Option<&Path>) -> anyhow::Result<Option<Vec<u8>>> {
    let Some(path) = path else { return Ok(None) };
    let mut text = std::fs::read(path).with_context(|| format!("the passphrase file {}", path.display()))?;
    while text.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        text.pop();
    }
    if text.is_empty() {
        bail!("the passphrase file {} is empty", path.display());
    }
    Ok(Some(text))
}

fn open_store(settings: &Settings) -> anyhow::Result<Store> {
    Store::open(&settings.database_url, &PoolOptions { max_size: 2, ..PoolOptions::default() })
        .with_context(|| format!("opening {}", driftwatch_store::redact(&settings.database_url)))
}

/// Writes each table as a member of the file.
struct ToFile {
    writer: Writer<backup::Sealed>,
    line: Vec<u8>,
}

impl Sink for ToFile {
    fn table(&mut self, table: &str, _: &[Column]) -> StoreResult<()> {
        self.writer.member(&table_member(table)).map_err(writing)
    }

    fn row(&mut self, row: &Map<String, Value>) -> StoreResult<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, row).map_err(|e| StoreError::Backup(e.to_string()))?;
        self.writer.line(&self.line).map_err(writing)
    }
}

fn writing(e: std::io::Error) -> StoreError {
    StoreError::Backup(format!("writing the backup: {e}"))
}

/// `driftwatch backup FILE`: one read transaction of the database, written while others
/// write, to a private temporary file renamed to `file` once complete.
pub(crate) async fn backup(
    file: &Path,
    without_key: bool,
    passphrase_file: Option<&Path>,
    settings: &Settings,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let passphrase = passphrase(passphrase_file)?;
    if let Some(path) = settings.database_url.strip_prefix("sqlite://")
        && !Path::new(path).exists()
    {
        bail!("there is no database at {path}");
    }
    let store = open_store(settings)?;
    let pending = store.pending_migrations().await.context("reading the database's migrations")?;
    if pending > 0 {
        bail!("the database lacks {pending} of this driftwatch's migrations: run `driftwatch migrate` first");
    }
    // No key configured and no key file yet: nothing was ever sealed here, and a backup
    // creates no key file.
    let no_key_yet = settings.secret_key.as_deref().is_none_or(|k| k.trim().is_empty())
        && driftwatch::keys::key_file(settings).is_some_and(|file| !file.exists());
    let keys: Vec<SecretKey> = if without_key || no_key_yet {
        Vec::new()
    } else {
        driftwatch::keys::keyring(settings)?.0.keys().cloned().collect()
    };
    let (creating, sealed) =
        Creating::new(file, passphrase.as_deref()).with_context(|| format!("creating {}", file.display()))?;
    let mut writer = Writer::new(sealed)?;
    if !keys.is_empty() {
        writer.member(KEY_MEMBER)?;
        for key in &keys {
            writer.line(key.to_base64().as_bytes())?;
        }
    }
    let sink = ToFile { writer, line: Vec::new() };
    let (dumped, sink) = store
        .read(move |conn| {
            let mut sink = sink;
            dump(conn, BATCH, &mut sink).map(|dumped| (dumped, sink))
        })
        .await
        .context("reading the database")?;
    let backend = store.backend().as_str().to_owned();
    let (sealed, manifest) = sink.writer.finish(|members| Manifest {
        format_version: backup::FORMAT_VERSION,
        driftwatch_version: env!("CARGO_PKG_VERSION").to_owned(),
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        source_backend: backend,
        migration: dumped.migration.clone(),
        key_id: keys.first().map(SecretKey::id),
        tables: dumped.rows.iter().cloned().collect(),
        members,
    })?;
    sealed.finish().with_context(|| format!("writing {}", file.display()))?;
    creating.commit().with_context(|| format!("renaming the backup to {}", file.display()))?;
    let size = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    let rows: u64 = manifest.tables.values().sum();
    println!(
        "backed up {rows} rows of {} tables to {} ({size} bytes{}{}) in {:.1} s",
        manifest.tables.len(),
        file.display(),
        if passphrase.is_some() { ", encrypted" } else { "" },
        if keys.is_empty() { ", without the secret key" } else { ", with the secret key" },
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What the first read of a backup found.
struct Checked {
    manifest: Manifest,
    /// The keys that open its secrets: the backup's, then `--key-file`'s.
    keys: Vec<SecretKey>,
    /// Sealed values found, and the first that none of `keys` opens.
    sealed: u64,
    unopened: Option<String>,
}

/// Reads the whole backup without writing anything: the manifest, every member's checksum,
/// every row a JSON object of a known table, the counts, and whether the keys open its secrets.
fn check(path: &Path, passphrase: Option<&[u8]>, extra: Option<SecretKey>) -> anyhow::Result<Checked> {
    let (mut keys, mut ring, mut counts) = (Vec::new(), None::<Option<Keyring>>, BTreeMap::<String, u64>::new());
    let (mut sealed, mut unopened) = (0, None);
    let reader = backup::open(path, passphrase).with_context(|| format!("reading {}", path.display()))?;
    let manifest = reader
        .read(|member, line| {
            if member == KEY_MEMBER {
                keys.push(SecretKey::from_base64(line).map_err(|e| bad(format!("the key in the backup: {e}")))?);
                return Ok(());
            }
            let table = table_of(member)?;
            let row: Map<String, Value> = serde_json::from_str(line)
                .map_err(|e| bad(format!("{member}: a row that is not a JSON object: {e}")))?;
            *counts.entry(table.to_owned()).or_default() += 1;
            let ring = ring.get_or_insert_with(|| {
                let mut all = keys.iter().cloned().chain(extra.clone());
                all.next().map(|current| Keyring::new(current, all.collect()))
            });
            for text in row.values().filter_map(Value::as_str) {
                for (_, value) in driftwatch_core::sealed_within(text) {
                    sealed += 1;
                    let opened = ring.as_ref().map(|r| r.open(value).map(|_| ()));
                    if unopened.is_none() && !matches!(opened, Some(Ok(()))) {
                        let why =
                            opened.map_or("no key".to_owned(), |r| r.err().map(|e| e.to_string()).unwrap_or_default());
                        unopened = Some(format!("a secret in {table}: {why}"));
                    }
                }
            }
            Ok(())
        })
        .with_context(|| format!("reading {}", path.display()))?;
    for (table, _) in TABLES {
        let (listed, read) = (manifest.tables.get(*table).copied(), counts.get(*table).copied().unwrap_or(0));
        if listed != Some(read) {
            bail!("{}: the manifest counts {listed:?} rows of {table}, the file holds {read}", path.display());
        }
    }
    if let Some(other) = manifest.tables.keys().find(|t| !TABLES.iter().any(|(n, _)| n == t)) {
        bail!("{}: the manifest lists a table {other} this driftwatch does not have", path.display());
    }
    if manifest.key_id.is_some() == keys.is_empty() {
        bail!("{}: the manifest and the key member disagree", path.display());
    }
    keys.extend(extra);
    Ok(Checked { manifest, keys, sealed, unopened })
}

/// The table a member `tables/<table>.jsonl` holds, one of [`TABLES`].
fn table_of(member: &str) -> std::io::Result<&'static str> {
    let name = member.strip_prefix("tables/").and_then(|m| m.strip_suffix(".jsonl"));
    TABLES
        .iter()
        .map(|(t, _)| *t)
        .find(|t| Some(*t) == name)
        .ok_or_else(|| bad(format!("a member {member} this driftwatch does not know")))
}

/// `driftwatch restore FILE` (or `--verify FILE`).
pub(crate) async fn restore(args: RestoreArgs, settings: &Settings) -> anyhow::Result<()> {
    let started = Instant::now();
    let passphrase = passphrase(args.passphrase_file.as_deref())?;
    let extra = match &args.key_file {
        Some(path) => Some(
            SecretKey::from_base64(&std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?)
                .with_context(|| format!("the key file {}", path.display()))?,
        ),
        None => None,
    };
    if !args.verify {
        // Before anything is written: the target's key must be there to re-seal the secrets.
        driftwatch::keys::check_key(settings)?;
    }
    let (path, pass) = (args.file.clone(), passphrase.clone());
    let checked = tokio::task::spawn_blocking(move || check(&path, pass.as_deref(), extra)).await??;
    let manifest = &checked.manifest;
    let rows: u64 = manifest.tables.values().sum();
    if args.verify {
        println!(
            "{}: a backup of {} at migration {} made {} by driftwatch {}; {rows} rows of {} tables, every checksum and count \
             right; {} sealed secrets{}",
            args.file.display(),
            manifest.source_backend,
            manifest.migration,
            manifest.created_at,
            manifest.driftwatch_version,
            manifest.tables.len(),
            checked.sealed,
            match (&checked.unopened, checked.keys.is_empty()) {
                (None, _) => ", all of which open with its key".to_owned(),
                (Some(_), true) => " (not checked: the backup holds no key)".to_owned(),
                (Some(why), false) => format!("; they do not open with its key: {why}"),
            }
        );
        return if checked.unopened.is_some() && !checked.keys.is_empty() {
            bail!("the secrets do not open")
        } else {
            Ok(())
        };
    }
    if manifest.migration != latest_migration() {
        bail!(
            "the backup is at migration {}, this driftwatch at {}: restore it with driftwatch {}",
            manifest.migration,
            latest_migration(),
            manifest.driftwatch_version
        );
    }
    if let Some(why) = &checked.unopened {
        if checked.keys.is_empty() {
            bail!("the backup was made --without-key: give the key that sealed its secrets with --key-file ({why})");
        }
        bail!("the backup's secrets do not open with its key or --key-file's ({why})");
    }
    let store = open_store(settings)?;
    let taken = store.read(empty_or_which).await.context("reading the target database")?;
    if !taken.is_empty() {
        let which: Vec<String> = taken.iter().map(|(t, n)| format!("{t} has {n} rows")).collect();
        bail!("the target database is not empty ({}): restore only into a new database", which.join(", "));
    }
    // The target's keyring (with the backup's keys to open what it holds) before anything is
    // written: a bad key setting refuses the restore while the target is still empty.
    let mut target = settings.clone();
    target.previous_secret_keys.extend(checked.keys.iter().map(SecretKey::to_base64));
    let (keyring, _) = driftwatch::keys::keyring(&target)?;
    store.migrate().await.context("applying migrations")?;
    let (path, expected) = (args.file.clone(), checked.manifest.clone());
    store
        .write(move |conn| {
            driftwatch_store::transaction(conn, |conn| insert_all(conn, &path, passphrase.as_deref(), &expected))
        })
        .await
        .context("restoring the rows")?;
    driftwatch::keys::seal_stored(&store, &keyring)
        .await
        .context("re-sealing the secrets under this database's key")?;
    println!(
        "restored {rows} rows of {} tables from {} ({} backup) into {} in {:.1} s; {} sealed secrets carried over, now under key {}",
        manifest.tables.len(),
        args.file.display(),
        manifest.source_backend,
        store.backend(),
        started.elapsed().as_secs_f64(),
        checked.sealed,
        keyring.current_id()
    );
    Ok(())
}

/// A table's rows waiting to be inserted: the table, its columns in the target, the rows.
type Pending = (&'static str, Vec<Column>, Vec<Map<String, Value>>);

/// Reads the backup again and inserts its rows, [`BATCH`] at a time, in the caller's
/// transaction; the manifest must be the one [`check`] read.
fn insert_all(conn: &mut DbConn, path: &Path, passphrase: Option<&[u8]>, expected: &Manifest) -> StoreResult<()> {
    let failed = |e: std::io::Error| StoreError::Backup(format!("{}: {e}", path.display()));
    let reader = backup::open(path, passphrase).map_err(failed)?;
    let (mut pending, mut held): (Option<Pending>, usize) = (None, 0);
    let flush = |conn: &mut DbConn, pending: &mut Option<Pending>| {
        if let Some((table, columns, rows)) = pending {
            insert_rows(conn, table, columns, rows)?;
            rows.clear();
        }
        StoreResult::Ok(())
    };
    let stored = |e: StoreError| std::io::Error::other(e.to_string());
    let manifest = reader
        .read(|member, line| {
            if member == KEY_MEMBER {
                return Ok(());
            }
            let table = table_of(member)?;
            if pending.as_ref().is_none_or(|(t, _, _)| *t != table) {
                flush(conn, &mut pending).map_err(stored)?;
                held = 0;
                pending = Some((table, columns(conn, table).map_err(stored)?, Vec::new()));
            }
            let row = serde_json::from_str(line).map_err(|e| bad(format!("{member}: {e}")))?;
            held += line.len();
            let full = pending.as_mut().map(|(_, _, rows)| {
                rows.push(row);
                rows.len() as i64 >= BATCH || held >= HELD_BYTES
            });
            if full == Some(true) {
                flush(conn, &mut pending).map_err(stored)?;
                held = 0;
            }
            Ok(())
        })
        .map_err(failed)?;
    flush(conn, &mut pending)?;
    if &manifest != expected {
        return Err(StoreError::Backup(format!("{} changed while it was restored", path.display())));
    }
    Ok(())
}
