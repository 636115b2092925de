//! Writing and reading the member stream (see the module above), with each member's checksum.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Read as _, Write};

use sha2::{Digest as _, Sha256};

use super::{FORMAT_VERSION, HEADER, Manifest, Member, bad};

/// The longest line read (a row with a large snapshot and screenshot is a few MiB).
const MAX_LINE: u64 = 512 * 1024 * 1024;

/// A member being written or read: its name, checksum so far and size.
struct Open {
    name: String,
    hash: Sha256,
    bytes: u64,
    lines: u64,
}

impl Open {
    fn new(name: &str) -> Open {
        Open { name: name.to_owned(), hash: Sha256::new(), bytes: 0, lines: 0 }
    }

    /// Counts `line` and its newline.
    fn add(&mut self, line: &[u8]) {
        self.hash.update(line);
        self.hash.update(b"\n");
        self.bytes += line.len() as u64 + 1;
        self.lines += 1;
    }

    fn close(self, members: &mut BTreeMap<String, Member>) {
        let sha256 = driftwatch_core::hex(&self.hash.finalize());
        members.insert(self.name, Member { sha256, bytes: self.bytes, lines: self.lines });
    }
}

/// Writes members line by line to `W`, then the manifest.
pub struct Writer<W: Write> {
    inner: W,
    members: BTreeMap<String, Member>,
    open: Option<Open>,
}

impl<W: Write> Writer<W> {
    /// Starts the stream with [`HEADER`].
    pub fn new(mut inner: W) -> io::Result<Writer<W>> {
        inner.write_all(format!("{HEADER}\n").as_bytes())?;
        Ok(Writer { inner, members: BTreeMap::new(), open: None })
    }

    /// Starts the member `name` (ending the one before).
    pub fn member(&mut self, name: &str) -> io::Result<()> {
        if let Some(open) = self.open.take() {
            open.close(&mut self.members);
        }
        if self.members.contains_key(name) || name.contains(['\n', ' ']) {
            return Err(bad(format!("member {name:?} cannot be written")));
        }
        self.inner.write_all(format!("@member {name}\n").as_bytes())?;
        self.open = Some(Open::new(name));
        Ok(())
    }

    /// Writes a line of the current member: no newline in it, and not starting with `@`.
    pub fn line(&mut self, line: &[u8]) -> io::Result<()> {
        let open = self.open.as_mut().ok_or_else(|| bad("a line outside a member"))?;
        if line.first() == Some(&b'@') || line.contains(&b'\n') {
            return Err(bad("a line that would read as a marker"));
        }
        self.inner.write_all(line)?;
        self.inner.write_all(b"\n")?;
        open.add(line);
        Ok(())
    }

    /// Ends the last member and writes the manifest `manifest` makes of the members' sizes and
    /// checksums; returns the inner writer and the manifest.
    pub fn finish(mut self, manifest: impl FnOnce(BTreeMap<String, Member>) -> Manifest) -> io::Result<(W, Manifest)> {
        if let Some(open) = self.open.take() {
            open.close(&mut self.members);
        }
        let manifest = manifest(self.members);
        let json = serde_json::to_string(&manifest).map_err(|e| bad(e.to_string()))?;
        self.inner.write_all(format!("@manifest\n{json}\n@end\n").as_bytes())?;
        Ok((self.inner, manifest))
    }
}

/// Reads members line by line from `R`, checking each against the manifest at the end.
pub struct Reader<R: BufRead> {
    inner: R,
}

impl<R: BufRead> Reader<R> {
    /// A reader of the stream `inner` (already decrypted and gunzipped).
    pub fn new(inner: R) -> Reader<R> {
        Reader { inner }
    }

    /// The next line, without its newline; `None` at the end of the stream. A last line without
    /// a newline means the stream was cut.
    fn next_line(&mut self, line: &mut String) -> io::Result<bool> {
        line.clear();
        let read = (&mut self.inner).take(MAX_LINE).read_line(line).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => bad(format!("the backup is damaged: {e}")),
            io::ErrorKind::UnexpectedEof => bad("the backup is cut short"),
            _ => e,
        })?;
        if read == 0 {
            return Ok(false);
        }
        if line.pop() != Some('\n') {
            return Err(bad("the backup is cut short (a line without its end)"));
        }
        Ok(true)
    }

    /// Reads the whole stream, handing `each` every line of every member with the member's
    /// name, then checks the manifest: the format version, and every member's checksum, size
    /// and line count. An error from `each` stops the read.
    pub fn read(mut self, mut each: impl FnMut(&str, &str) -> io::Result<()>) -> io::Result<Manifest> {
        let mut line = String::new();
        if !self.next_line(&mut line)? || line != HEADER {
            return Err(bad("not a driftwatch backup (no header line)"));
        }
        let mut members = BTreeMap::new();
        let mut open: Option<Open> = None;
        let manifest = loop {
            if !self.next_line(&mut line)? {
                return Err(bad("the backup ends before its manifest: the file is cut short"));
            }
            if let Some(name) = line.strip_prefix("@member ") {
                if let Some(done) = open.take() {
                    done.close(&mut members);
                }
                if members.contains_key(name) {
                    return Err(bad(format!("the member {name} appears twice")));
                }
                open = Some(Open::new(name));
            } else if line == "@manifest" {
                if let Some(done) = open.take() {
                    done.close(&mut members);
                }
                if !self.next_line(&mut line)? {
                    return Err(bad("the backup is cut short in its manifest"));
                }
                break line.clone();
            } else if line.starts_with('@') {
                return Err(bad(format!("an unknown marker {line:?}")));
            } else {
                let member = open.as_mut().ok_or_else(|| bad("a line outside a member"))?;
                member.add(line.as_bytes());
                each(&member.name, &line)?;
            }
        };
        let manifest: Manifest =
            serde_json::from_str(&manifest).map_err(|e| bad(format!("the manifest cannot be read: {e}")))?;
        if !self.next_line(&mut line)? || line != "@end" || self.next_line(&mut line)? {
            return Err(bad("the backup does not end after its manifest"));
        }
        if manifest.format_version != FORMAT_VERSION {
            return Err(bad(format!(
                "format version {} (this driftwatch reads version {FORMAT_VERSION})",
                manifest.format_version
            )));
        }
        check_members(&manifest.members, &members)?;
        Ok(manifest)
    }
}

/// Every member the manifest lists was read with its checksum, size and lines, and no other.
fn check_members(listed: &BTreeMap<String, Member>, read: &BTreeMap<String, Member>) -> io::Result<()> {
    for (name, member) in read {
        match listed.get(name) {
            None => return Err(bad(format!("the member {name} is not in the manifest"))),
            Some(expected) if expected != member => {
                return Err(bad(format!("the member {name} does not match its checksum: the file is damaged")));
            }
            Some(_) => {}
        }
    }
    if let Some(missing) = listed.keys().find(|name| !read.contains_key(*name)) {
        return Err(bad(format!("the member {missing} is missing")));
    }
    Ok(())
}
