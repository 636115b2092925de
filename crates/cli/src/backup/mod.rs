//! The backup file: one stream of members, each a run of lines, ending in a manifest.
//!
//! ```text
//! driftwatch-backup 1
//! @member key                      the secret keys, base64, the current one first (unless --without-key)
//! <key>
//! @member tables/accounts.jsonl    one JSON object per row, columns by name (store::backup's form)
//! {"id":"acc_…",…}
//! …                                every table of store::backup::TABLES, in insert order
//! @manifest
//! {"format_version":1,…}           versions, source backend, migration, counts, each member's SHA-256
//! @end
//! ```
//!
//! The stream is gzip; with a passphrase the gzip is encrypted as a whole ([`crypt`]). Both are
//! written and read front to back, so a backup is written while rows are read in batches and
//! read back while rows are inserted, never held whole in memory, and without a plaintext copy
//! on disk. The manifest comes last because its counts and checksums are known only then; a
//! reader checks them before it trusts anything it read (`restore` reads the file twice: once
//! to check it, once to insert).

pub mod crypt;
mod file;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use file::{Reader, Writer};

/// The first line of every backup's stream.
pub const HEADER: &str = "driftwatch-backup 1";
/// The version of the format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The member holding the secret keys.
pub const KEY_MEMBER: &str = "key";

/// The member holding `table`'s rows.
pub fn table_member(table: &str) -> String {
    format!("tables/{table}.jsonl")
}

/// What a backup says of itself, written last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// The driftwatch that wrote it.
    pub driftwatch_version: String,
    /// When it was written (RFC 3339, UTC).
    pub created_at: String,
    /// `sqlite` or `postgres`.
    pub source_backend: String,
    /// The source database's last migration; a restore needs a build whose last is the same.
    pub migration: String,
    /// The id of the key that sealed the secrets when it was written; `None` when the key is
    /// left out (`--without-key`).
    pub key_id: Option<String>,
    /// Rows per table.
    pub tables: BTreeMap<String, u64>,
    /// Each member: its SHA-256, bytes and lines.
    pub members: BTreeMap<String, Member>,
}

/// A member's size and checksum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// Lower-case hex SHA-256 of its bytes (its lines, each with its newline).
    pub sha256: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// Its number of lines.
    pub lines: u64,
}

/// A backup file being written: a temporary file beside the final name, created readable by
/// its owner only, renamed into place by [`Creating::commit`] and removed if dropped before.
pub struct Creating {
    temp: PathBuf,
    path: PathBuf,
    committed: bool,
}

/// The stream a backup is written to: gzip, encrypted or not, over the temporary file.
pub enum Sealed {
    /// Gzip only.
    Plain(flate2::write::GzEncoder<io::BufWriter<std::fs::File>>),
    /// Gzip, then encrypted with a passphrase.
    Encrypted(flate2::write::GzEncoder<crypt::Encryptor<io::BufWriter<std::fs::File>>>),
}

impl Write for Sealed {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Sealed::Plain(w) => w.write(data),
            Sealed::Encrypted(w) => w.write(data),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sealed::Plain(w) => w.flush(),
            Sealed::Encrypted(w) => w.flush(),
        }
    }
}

impl Sealed {
    /// Ends the gzip stream (and the encryption) and syncs the file.
    pub fn finish(self) -> io::Result<()> {
        let buffered = match self {
            Sealed::Plain(w) => w.finish()?,
            Sealed::Encrypted(w) => w.finish()?.finish()?,
        };
        buffered.into_inner().map_err(|e| e.into_error())?.sync_all()
    }
}

impl Creating {
    /// Creates the temporary file for `path` (mode 0600) and the stream over it, encrypted
    /// with `passphrase` when there is one.
    pub fn new(path: &Path, passphrase: Option<&[u8]>) -> io::Result<(Creating, Sealed)> {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "backup".into());
        let temp = dir.join(format!(".{name}.{}.tmp", driftwatch_core::new_random_key("")));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let file = io::BufWriter::new(options.open(&temp)?);
        let creating = Creating { temp, path: path.to_owned(), committed: false };
        let level = flate2::Compression::fast();
        let sealed = match passphrase {
            Some(passphrase) => {
                Sealed::Encrypted(flate2::write::GzEncoder::new(crypt::Encryptor::new(file, passphrase)?, level))
            }
            None => Sealed::Plain(flate2::write::GzEncoder::new(file, level)),
        };
        Ok((creating, sealed))
    }

    /// Renames the finished file into place (replacing a file of that name).
    pub fn commit(mut self) -> io::Result<()> {
        std::fs::rename(&self.temp, &self.path)?;
        self.committed = true;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty())
            && let Ok(dir) = std::fs::File::open(dir)
        {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

impl Drop for Creating {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Opens the backup at `path` for reading: decrypted with `passphrase` when it is encrypted
/// (refused clearly when a passphrase is missing or given for a plain file), then gunzipped.
pub fn open(path: &Path, passphrase: Option<&[u8]>) -> io::Result<Reader<Box<dyn BufRead>>> {
    let mut file = BufReader::new(std::fs::File::open(path)?);
    let start = file.fill_buf()?;
    let encrypted = start.starts_with(crypt::MAGIC);
    let gzip = start.starts_with(&[0x1f, 0x8b]);
    let stream: Box<dyn BufRead> = match (encrypted, gzip, passphrase) {
        (true, _, Some(passphrase)) => Box::new(BufReader::new(flate2::bufread::GzDecoder::new(BufReader::new(
            crypt::Decryptor::new(file, passphrase)?,
        )))),
        (true, _, None) => return Err(bad("the backup is encrypted: give its passphrase with --passphrase-file")),
        (false, true, Some(_)) => return Err(bad("the backup is not encrypted: leave out --passphrase-file")),
        (false, true, None) => Box::new(BufReader::new(flate2::bufread::GzDecoder::new(file))),
        (false, false, _) => return Err(bad("not a driftwatch backup (neither gzip nor encrypted)")),
    };
    Ok(Reader::new(stream))
}

/// An `InvalidData` error saying `what`.
pub fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}
