//! A zip read safely: members by name, never extracted; a name that climbs out (`..`) or
//! starts at the root refuses the whole file; every member is read through a cap that holds
//! whatever its header declares (a zip's sizes can lie), and so is the archive's total.

use std::collections::BTreeSet;
use std::io::{Read, Seek};

use crate::ImportError;

/// How much a file may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// Bytes of one member once inflated (a snapshot, a `watch.json`), and of a file that is
    /// not a zip.
    pub member_bytes: usize,
    /// Bytes of every member read, once inflated.
    pub total_bytes: u64,
    /// Members in a zip.
    pub members: usize,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits { member_bytes: 64 << 20, total_bytes: 4 << 30, members: 500_000 }
    }
}

trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}

/// An open zip whose member names were all checked.
pub(crate) struct Archive {
    zip: zip::ZipArchive<Box<dyn ReadSeek>>,
    names: BTreeSet<String>,
    limits: ReadLimits,
    read_bytes: u64,
}

impl Archive {
    /// Opens the zip in `reader`, refusing it when it is damaged, holds too many members, or
    /// names one outside itself.
    pub(crate) fn open<R: Read + Seek + Send + 'static>(
        reader: R,
        limits: &ReadLimits,
    ) -> Result<Archive, ImportError> {
        let boxed: Box<dyn ReadSeek> = Box::new(reader);
        let zip = zip::ZipArchive::new(boxed).map_err(|e| {
            ImportError::refused(format!(
                "the file starts like a zip but cannot be read as one (truncated or damaged?): {e}"
            ))
        })?;
        if zip.len() > limits.members {
            return Err(ImportError::refused(format!(
                "the zip has {} members; at most {} are read",
                zip.len(),
                limits.members
            )));
        }
        let mut names = BTreeSet::new();
        for name in zip.file_names() {
            let name =
                name.map_err(|e| ImportError::refused(format!("the zip has a member whose name cannot be read: {e}")))?;
            let name = name.as_ref();
            if !is_safe(name) {
                return Err(ImportError::refused(format!(
                    "the zip names a member outside itself ({name:?}): refused, nothing imported"
                )));
            }
            names.insert(name.to_owned());
        }
        Ok(Archive { zip, names, limits: *limits, read_bytes: 0 })
    }

    /// Every member's name.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Whether the zip has `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// The bytes of `name`, inflated, within the limits.
    pub(crate) fn read(&mut self, name: &str) -> Result<Vec<u8>, ImportError> {
        let limit = self.limits.member_bytes;
        let mut member = self
            .zip
            .by_name(name)
            .map_err(|e| ImportError::refused(format!("{name}: cannot be read from the zip: {e}")))?;
        let mut bytes = Vec::new();
        (&mut member)
            .take(limit as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ImportError::refused(format!("{name}: damaged in the zip: {e}")))?;
        drop(member);
        self.count(name, bytes.len())?;
        Ok(bytes)
    }

    /// The text of `name`: brotli-decompressed when it ends in `.br`, within the same limits.
    pub(crate) fn read_text(&mut self, name: &str) -> Result<String, ImportError> {
        let bytes = self.read(name)?;
        let bytes = if name.ends_with(".br") {
            let limit = self.limits.member_bytes;
            let mut inflated = Vec::new();
            brotli_decompressor::Decompressor::new(&bytes[..], 4096)
                .take(limit as u64 + 1)
                .read_to_end(&mut inflated)
                .map_err(|e| ImportError::refused(format!("{name}: not valid brotli: {e}")))?;
            self.count(name, inflated.len())?;
            inflated
        } else {
            bytes
        };
        Ok(match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// Counts `len` more bytes read from `name`, refusing past a limit.
    fn count(&mut self, name: &str, len: usize) -> Result<(), ImportError> {
        if len > self.limits.member_bytes {
            return Err(ImportError::refused(format!(
                "{name}: inflates past {} bytes, the most one member may hold: refused, nothing imported",
                self.limits.member_bytes
            )));
        }
        self.read_bytes += len as u64;
        if self.read_bytes > self.limits.total_bytes {
            return Err(ImportError::refused(format!(
                "the zip inflates past {} bytes in all: refused, nothing imported",
                self.limits.total_bytes
            )));
        }
        Ok(())
    }
}

/// Whether a member's name stays inside the archive: relative, without `..`, a drive or a NUL.
fn is_safe(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && !name.starts_with('\\')
        && !name.contains('\0')
        && name.as_bytes().get(1).is_none_or(|b| *b != b':')
        && name.split(['/', '\\']).all(|part| part != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_climb_out_are_unsafe() {
        for bad in ["../x", "a/../../x", "/etc/passwd", "\\x", "C:\\x", "a\\..\\x", ""] {
            assert!(!is_safe(bad), "{bad}");
        }
        for good in ["a/watch.json", "url-watches.json", "a/b..c.txt", "..a/x"] {
            assert!(is_safe(good), "{good}");
        }
    }
}
