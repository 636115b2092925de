//! Moving in. A file another tool made (changedetection.io's backup zip, with every snapshot
//! of its history, or its `url-watches.json`; a Distill export; urlwatch's `urls.yaml`; a list
//! of URLs; a driftwatch export) is read into a [`Plan`]: the watches to create, each with the
//! history to bring along, the endpoints to create from its notification URLs and where each
//! is routed, and everything that could not be mapped, by watch. [`apply`] then imports a plan
//! in one transaction: all of it or nothing. Run twice, it creates nothing new.
//!
//! Reading is bounded: a zip's members are read by name, never extracted, each through a cap
//! that holds however its header lies; names with `..` or an absolute path refuse the file.
//! Nothing is written to disk.

use chrono::{DateTime, Utc};

mod apply;
mod archive;
mod changedetection;
mod distill;
mod routes;
mod text;

pub use apply::{Report, Target, apply, dry_run, same_watch, to_endpoint, to_watch};
pub use archive::ReadLimits;
pub use driftwatch_validate::{PortableWatch, from_watch};

/// What a file was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A list of URLs, one per line (other lines: Apprise notification URLs).
    List,
    /// urlwatch's `urls.yaml`.
    Urlwatch,
    /// `driftwatch export`'s JSON array.
    Driftwatch,
    /// changedetection.io's `url-watches.json` alone (no history).
    ChangedetectionJson,
    /// changedetection.io's backup zip, with every watch's history.
    ChangedetectionBackup,
    /// Distill's JSON export of monitors.
    Distill,
}

impl Format {
    /// What people call it.
    pub fn label(self) -> &'static str {
        match self {
            Format::List => "a list of URLs",
            Format::Urlwatch => "urlwatch's urls.yaml",
            Format::Driftwatch => "a driftwatch export",
            Format::ChangedetectionJson => "changedetection.io's url-watches.json",
            Format::ChangedetectionBackup => "a changedetection.io backup",
            Format::Distill => "a Distill export",
        }
    }
}

/// What a file holds, mapped onto driftwatch, before anything is written.
pub struct Plan {
    /// What the file was.
    pub format: Format,
    /// The watches to create, in the file's order.
    pub watches: Vec<PlannedWatch>,
    /// The endpoints to create: one per distinct notification URL, routed as the file had it.
    pub notifications: Vec<Notification>,
    /// Everything left out or changed, and why.
    pub problems: Vec<Problem>,
    /// Where the histories' snapshots are read from, when the file has them.
    archive: Option<archive::Archive>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("format", &self.format)
            .field("watches", &self.watches)
            .field("notifications", &self.notifications.len())
            .field("problems", &self.problems)
            .finish_non_exhaustive()
    }
}

impl Plan {
    /// A plan of `format` with nothing in it yet.
    fn new(format: Format) -> Plan {
        Plan { format, watches: Vec::new(), notifications: Vec::new(), problems: Vec::new(), archive: None }
    }

    /// How many snapshots the histories hold.
    pub fn snapshot_count(&self) -> usize {
        self.watches.iter().map(|w| w.history.len()).sum()
    }

    /// Notes a problem about `subject` (a watch's title or URL, a group, "settings").
    fn problem(&mut self, subject: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem { subject: subject.into(), message: message.into() });
    }
}

/// One watch to create.
#[derive(Debug, Clone)]
pub struct PlannedWatch {
    /// How reports name it: its title, else its URL.
    pub label: String,
    /// The watch.
    pub watch: PortableWatch,
    /// Its earlier snapshots, oldest first.
    pub history: Vec<HistoryEntry>,
}

/// One snapshot of a watch's history: when it was taken and the archive member holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// When it was taken.
    pub at: DateTime<Utc>,
    /// The member of the archive with its text (`<uuid>/<md5>.txt` or `.txt.br`).
    pub member: String,
}

/// An Apprise notification URL to make an endpoint of, and what it is routed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// The Apprise URL (it may hold a token: never printed).
    pub url: String,
    /// What it notifies about.
    pub route: Route,
}

impl Notification {
    /// `tgram://` of `tgram://123:secret/456`: how a report names it without its secrets.
    pub fn scheme(&self) -> String {
        self.url.split_once("://").map_or_else(|| "?".to_owned(), |(s, _)| format!("{s}://"))
    }
}

/// What an imported endpoint hears about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Every watch of the account.
    Everything,
    /// The watches with one of these tags, and these watches (indexes into [`Plan::watches`]).
    Some {
        /// Tags whose every watch notified through it.
        tags: Vec<String>,
        /// The other watches that did.
        watches: Vec<usize>,
    },
}

/// Something the import left out or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What it is about: a watch's label, a group, `settings`.
    pub subject: String,
    /// What was left out or changed, and why.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.subject, self.message)
    }
}

/// Why a file or a plan was refused; nothing was imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file is not one driftwatch reads, or is damaged; the message says how.
    #[error("{0}")]
    Refused(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] driftwatch_store::StoreError),
}

impl ImportError {
    fn refused(message: impl Into<String>) -> ImportError {
        ImportError::Refused(message.into())
    }
}

/// A tag driftwatch accepts for a group or label another tool names freely ("Price drops!"):
/// lower case, each run of other characters a `-`, at most 40 characters.
pub(crate) fn tag_name(title: &str) -> String {
    let mut name = String::new();
    for c in title.trim().to_lowercase().chars() {
        if c.is_alphanumeric() || matches!(c, '_' | '.' | ':') {
            name.push(c);
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    let name: String = name.trim_end_matches('-').chars().take(40).collect();
    name.trim_end_matches('-').to_owned()
}

/// Reads a file of any format driftwatch imports, whichever `bytes` is: a zip (a
/// changedetection.io backup), JSON (a driftwatch export, changedetection.io's
/// `url-watches.json`, a Distill export), urlwatch's YAML, or a list of URLs.
pub fn read(bytes: Vec<u8>, limits: &ReadLimits) -> Result<Plan, ImportError> {
    if bytes.starts_with(b"PK") {
        let archive = archive::Archive::open(std::io::Cursor::new(bytes), limits)?;
        return changedetection::backup::read(archive);
    }
    if bytes.len() > limits.member_bytes {
        return Err(ImportError::refused(format!(
            "the file is {} bytes; a file that is not a zip may have at most {}",
            bytes.len(),
            limits.member_bytes
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        ImportError::refused(
            "the file is neither a zip (a changedetection.io backup) nor text (JSON, YAML or a list of URLs)",
        )
    })?;
    text::read(&text)
}

/// Reads the file at `path` as [`read`] does; a zip is read from the file, not loaded whole, and
/// any other file is measured before it is read.
pub fn read_path(path: &std::path::Path, limits: &ReadLimits) -> Result<Plan, ImportError> {
    use std::io::{Read, Seek};
    let failed = |e: std::io::Error| ImportError::refused(format!("reading {}: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(failed)?;
    let mut magic = [0u8; 2];
    let is_zip = file.read_exact(&mut magic).is_ok() && &magic == b"PK";
    file.rewind().map_err(failed)?;
    if is_zip {
        let archive = archive::Archive::open(std::io::BufReader::new(file), limits)?;
        return changedetection::backup::read(archive);
    }
    let len = file.metadata().map_err(failed)?.len();
    if len > limits.member_bytes as u64 {
        return Err(ImportError::refused(format!(
            "the file is {len} bytes; a file that is not a zip may have at most {}",
            limits.member_bytes
        )));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(failed)?;
    read(bytes, limits)
}

#[cfg(test)]
mod tests {
    #[test]
    fn group_titles_become_tags_driftwatch_accepts() {
        assert_eq!(super::tag_name("  Price drops! "), "price-drops");
        assert_eq!(super::tag_name("Shops"), "shops");
        assert_eq!(super::tag_name("a/b c:d"), "a-b-c:d");
        assert_eq!(super::tag_name(&"x".repeat(50)).len(), 40);
        assert_eq!(super::tag_name("!!!"), "");
        assert!(driftwatch_validate::valid_tags(&[super::tag_name("Été 2026 — soldes")]).is_ok());
    }
}
