//! The key file: created atomically with mode 0600, read whatever its permissions. File IO,
//! so it lives here rather than beside the sealing in `driftwatch_core`, which does no IO.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use driftwatch_core::{KeyError, SecretKey};
use zeroize::Zeroize as _;

/// A key file that cannot be used. Names the file and what is wrong, never the key.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// The file holds an unusable key.
    #[error("key file {}: {reason}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// What is wrong with its content.
        reason: KeyError,
    },
    /// The file could not be read or created.
    #[error("key file {}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        error: std::io::Error,
    },
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
pub fn load_or_create_key_file(path: &Path) -> Result<(SecretKey, bool), KeyFileError> {
    match read_key_file(path) {
        Err(KeyFileError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {}
        other => return other.map(|key| (key, false)),
    }
    let io = |error: std::io::Error| KeyFileError::Io { path: path.to_owned(), error };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let key = SecretKey::generate();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "key".to_owned());
    let temp = dir.join(format!(".{name}.{}.tmp", driftwatch_core::new_random_key("")));
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
fn read_key_file(path: &Path) -> Result<SecretKey, KeyFileError> {
    let mut content =
        std::fs::read_to_string(path).map_err(|error| KeyFileError::Io { path: path.to_owned(), error })?;
    let key = SecretKey::from_base64(&content).map_err(|reason| KeyFileError::Key { path: path.to_owned(), reason });
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

    #[test]
    fn the_key_file_is_created_once_privately() {
        let dir = tempfile::tempdir().expect("temp dir");
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
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("secret.key");
        std::fs::write(&path, format!("{}\n", SecretKey::generate().to_base64())).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(key_file_is_exposed(&path), Some(0o644));
        assert!(load_or_create_key_file(&path).is_ok_and(|(_, created)| !created), "still read");
    }
}
