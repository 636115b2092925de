//! A backup encrypted with a passphrase: the key is derived with Argon2id from the passphrase
//! and a random salt; the stream is cut into 64 KiB chunks, each sealed with
//! XChaCha20-Poly1305 under a nonce of a random prefix, the chunk's number and a last-chunk
//! flag (the STREAM construction), so a chunk cannot be dropped, moved, or cut off the end
//! unnoticed. The header (magic, the Argon2 costs, salt, nonce prefix) is every chunk's
//! associated data.

use std::io::{self, BufRead, Read, Write};

use chacha20poly1305::aead::{Aead as _, KeyInit as _, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngExt as _;
use zeroize::Zeroize as _;

/// How an encrypted backup starts.
pub const MAGIC: &[u8; 8] = b"DWBAKENC";
/// Plaintext bytes per chunk.
const CHUNK: usize = 64 * 1024;
const TAG: usize = 16;
const SALT: usize = 16;
const PREFIX: usize = 19;
const HEADER: usize = MAGIC.len() + 1 + 12 + SALT + PREFIX;
/// Argon2id's memory (KiB), passes and lanes for new files (read back from each file's header).
const COSTS: (u32, u32, u32) = (64 * 1024, 3, 1);

fn cipher(passphrase: &[u8], salt: &[u8], (m, t, p): (u32, u32, u32)) -> io::Result<XChaCha20Poly1305> {
    let params =
        argon2::Params::new(m, t, p, Some(32)).map_err(|e| super::bad(format!("key derivation costs: {e}")))?;
    let mut key = [0u8; 32];
    argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
        .hash_password_into(passphrase, salt, &mut key)
        .map_err(|e| super::bad(format!("key derivation: {e}")))?;
    let cipher = XChaCha20Poly1305::new((&key).into());
    key.zeroize();
    Ok(cipher)
}

fn nonce(prefix: &[u8; PREFIX], counter: u32, last: bool) -> XNonce {
    let mut nonce = [0u8; 24];
    nonce[..PREFIX].copy_from_slice(prefix);
    nonce[PREFIX..PREFIX + 4].copy_from_slice(&counter.to_be_bytes());
    nonce[23] = u8::from(last);
    XNonce::from(nonce)
}

/// Encrypts what is written to it into `inner`; [`Encryptor::finish`] seals the last chunk.
pub struct Encryptor<W: Write> {
    inner: W,
    cipher: XChaCha20Poly1305,
    header: Vec<u8>,
    prefix: [u8; PREFIX],
    counter: u32,
    buffer: Vec<u8>,
}

impl<W: Write> Encryptor<W> {
    /// Writes the header to `inner` and returns the writer.
    pub fn new(mut inner: W, passphrase: &[u8]) -> io::Result<Encryptor<W>> {
        let (mut salt, mut prefix) = ([0u8; SALT], [0u8; PREFIX]);
        rand::rng().fill(&mut salt[..]);
        rand::rng().fill(&mut prefix[..]);
        let mut header = MAGIC.to_vec();
        header.push(1);
        for cost in [COSTS.0, COSTS.1, COSTS.2] {
            header.extend_from_slice(&cost.to_le_bytes());
        }
        header.extend_from_slice(&salt);
        header.extend_from_slice(&prefix);
        inner.write_all(&header)?;
        let cipher = cipher(passphrase, &salt, COSTS)?;
        Ok(Encryptor { inner, cipher, header, prefix, counter: 0, buffer: Vec::with_capacity(CHUNK) })
    }

    fn seal(&mut self, last: bool) -> io::Result<()> {
        let nonce = nonce(&self.prefix, self.counter, last);
        let sealed = self
            .cipher
            .encrypt(&nonce, Payload { msg: &self.buffer, aad: &self.header })
            .map_err(|_| super::bad("encryption failed"))?;
        self.counter = self.counter.checked_add(1).ok_or_else(|| super::bad("the backup is too large"))?;
        self.buffer.zeroize();
        self.buffer.clear();
        self.inner.write_all(&sealed)
    }

    /// Seals the last chunk and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.seal(true)?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for Encryptor<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buffer.len() == CHUNK {
            // Only now is it known that this full chunk is not the last.
            self.seal(false)?;
        }
        let n = data.len().min(CHUNK - self.buffer.len());
        self.buffer.extend_from_slice(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Decrypts an encrypted backup read from `inner` (past [`MAGIC`], which the caller has
/// checked); an error names a wrong passphrase, damage or truncation.
pub struct Decryptor<R: BufRead> {
    inner: R,
    cipher: XChaCha20Poly1305,
    header: Vec<u8>,
    prefix: [u8; PREFIX],
    counter: u32,
    plain: Vec<u8>,
    at: usize,
    done: bool,
}

impl<R: BufRead> Decryptor<R> {
    /// Reads the header from `inner` and derives the key from `passphrase`.
    pub fn new(mut inner: R, passphrase: &[u8]) -> io::Result<Decryptor<R>> {
        let mut header = vec![0u8; HEADER];
        inner.read_exact(&mut header).map_err(|_| super::bad("the encrypted backup's header is cut short"))?;
        if &header[..MAGIC.len()] != MAGIC || header[MAGIC.len()] != 1 {
            return Err(super::bad("not an encrypted driftwatch backup of a known version"));
        }
        let cost = |i: usize| {
            let at = MAGIC.len() + 1 + 4 * i;
            u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
        };
        let costs = (cost(0), cost(1), cost(2));
        if costs.0 > 1024 * 1024 || costs.1 > 64 || costs.2 > 16 {
            return Err(super::bad("the key derivation costs in the header are out of range"));
        }
        let salt = &header[MAGIC.len() + 13..MAGIC.len() + 13 + SALT];
        let cipher = cipher(passphrase, salt, costs)?;
        let mut prefix = [0u8; PREFIX];
        prefix.copy_from_slice(&header[HEADER - PREFIX..]);
        Ok(Decryptor { inner, cipher, header, prefix, counter: 0, plain: Vec::new(), at: 0, done: false })
    }

    fn next_chunk(&mut self) -> io::Result<()> {
        let mut sealed = Vec::with_capacity(CHUNK + TAG);
        (&mut self.inner).take((CHUNK + TAG) as u64).read_to_end(&mut sealed)?;
        let last = self.inner.fill_buf()?.is_empty();
        let nonce = nonce(&self.prefix, self.counter, last);
        self.plain.zeroize();
        self.plain = self.cipher.decrypt(&nonce, Payload { msg: &sealed, aad: &self.header }).map_err(|_| {
            super::bad(if self.counter == 0 {
                "cannot decrypt the backup: wrong passphrase, or the file is damaged or cut short".into()
            } else {
                format!(
                    "cannot decrypt the backup past {} KiB: the file is damaged or cut short",
                    self.counter as usize * 64
                )
            })
        })?;
        self.counter = self.counter.wrapping_add(1);
        self.at = 0;
        self.done = last;
        Ok(())
    }
}

impl<R: BufRead> Read for Decryptor<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.plain.len() {
            if self.done {
                return Ok(0);
            }
            self.next_chunk()?;
        }
        let n = out.len().min(self.plain.len() - self.at);
        out[..n].copy_from_slice(&self.plain[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl<R: BufRead> Drop for Decryptor<R> {
    fn drop(&mut self) {
        self.plain.zeroize();
    }
}
