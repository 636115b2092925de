//! The key file: created atomically with mode 0600, read whatever its permissions.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;

use zeroize::Zeroize as _;

use super::{KeyError, SecretKey};

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
