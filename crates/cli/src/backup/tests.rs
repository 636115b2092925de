use std::collections::BTreeMap;
use std::io::{Cursor, Read as _, Write as _};

use super::*;

fn manifest(members: BTreeMap<String, Member>) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        driftwatch_version: "0.0.0-test".into(),
        created_at: "2026-12-07T15:00:00Z".into(),
        source_backend: "sqlite".into(),
        migration: "20261211003700".into(),
        key_id: None,
        tables: BTreeMap::from([("accounts".to_owned(), 2)]),
        members,
    }
}

/// A stream (not gzipped) of a key and two rows.
fn stream() -> Vec<u8> {
    let mut writer = Writer::new(Vec::new()).expect("header");
    writer.member(KEY_MEMBER).expect("member");
    writer.line(b"a2V5").expect("line");
    writer.member(&table_member("accounts")).expect("member");
    writer.line(br#"{"id":"acc_1"}"#).expect("line");
    writer.line(br#"{"id":"acc_2"}"#).expect("line");
    writer.finish(manifest).expect("finish").0
}

fn read(bytes: &[u8]) -> std::io::Result<(Manifest, Vec<(String, String)>)> {
    let mut lines = Vec::new();
    let manifest = Reader::new(Cursor::new(bytes)).read(|member, line| {
        lines.push((member.to_owned(), line.to_owned()));
        Ok(())
    })?;
    Ok((manifest, lines))
}

#[test]
fn members_and_manifest_round_trip() {
    let (manifest, lines) = read(&stream()).expect("read");
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[2], ("tables/accounts.jsonl".to_owned(), r#"{"id":"acc_2"}"#.to_owned()));
    let accounts = &manifest.members["tables/accounts.jsonl"];
    assert_eq!((accounts.bytes, accounts.lines), (30, 2));
    assert_eq!(manifest.members["key"].sha256, sha256_hex(b"a2V5\n"));
    assert_eq!(accounts.sha256, sha256_hex(b"{\"id\":\"acc_1\"}\n{\"id\":\"acc_2\"}\n"), "the rows as written");
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    driftwatch_core::hex(&sha2::Sha256::digest(bytes))
}

#[test]
fn a_changed_or_cut_stream_is_refused() {
    let good = stream();
    let text = String::from_utf8(good.clone()).expect("utf-8");
    let changed = text.replace("acc_2", "acc_3");
    let err = read(changed.as_bytes()).expect_err("checksum");
    assert!(err.to_string().contains("tables/accounts.jsonl does not match its checksum"), "{err}");
    let cut = &good[..text.find("@manifest").expect("manifest")];
    assert!(read(cut).expect_err("cut").to_string().contains("cut short"));
    let mid_line = &good[..good.len() - 3];
    assert!(read(mid_line).is_err());
    let extra = format!("{text}more\n");
    assert!(read(extra.as_bytes()).expect_err("after the end").to_string().contains("does not end"));
    let dropped = text.replace("@member key\na2V5\n", "");
    assert!(read(dropped.as_bytes()).expect_err("missing").to_string().contains("the member key is missing"));
    assert!(read(b"hello\n").expect_err("not a backup").to_string().contains("not a driftwatch backup"));
}

#[test]
fn a_marker_cannot_be_written_as_a_line() {
    let mut writer = Writer::new(Vec::new()).expect("header");
    assert!(writer.line(b"{}").is_err(), "outside a member");
    writer.member("m").expect("member");
    assert!(writer.line(b"@manifest").is_err());
    assert!(writer.line(b"a\nb").is_err());
}

fn encrypted(plain: &[u8], passphrase: &[u8]) -> Vec<u8> {
    let mut encryptor = crypt::Encryptor::new(Vec::new(), passphrase).expect("encryptor");
    encryptor.write_all(plain).expect("write");
    encryptor.finish().expect("finish")
}

fn decrypted(sealed: &[u8], passphrase: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut plain = Vec::new();
    crypt::Decryptor::new(Cursor::new(sealed), passphrase)?.read_to_end(&mut plain)?;
    Ok(plain)
}

#[test]
fn encryption_round_trips_and_refuses_a_wrong_passphrase_or_a_cut() {
    // Over two chunks, and exactly one chunk (whose last flag is known only at the end).
    for size in [150_000, 64 * 1024, 0] {
        let plain: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let sealed = encrypted(&plain, b"correct horse");
        assert_eq!(decrypted(&sealed, b"correct horse").expect("opens"), plain, "{size} bytes");
        let err = decrypted(&sealed, b"wrong horse").expect_err("wrong passphrase");
        assert!(err.to_string().contains("wrong passphrase"), "{err}");
    }
    let plain = vec![7u8; 150_000];
    let sealed = encrypted(&plain, b"pw");
    // Cut at a chunk's end: the chunk before was not sealed as the last.
    let header = crypt::MAGIC.len() + 1 + 12 + 16 + 19;
    let err = decrypted(&sealed[..header + 64 * 1024 + 16], b"pw").expect_err("cut");
    assert!(err.to_string().contains("cannot decrypt"), "{err}");
    let mut flipped = sealed.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(decrypted(&flipped, b"pw").expect_err("changed").to_string().contains("damaged"));
}

#[test]
fn a_backup_file_is_private_and_opens_only_as_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    for passphrase in [None, Some(&b"s3cret"[..])] {
        let path = dir.path().join("backup.dwb");
        let (creating, sealed) = Creating::new(&path, passphrase).expect("create");
        let mut writer = Writer::new(sealed).expect("header");
        writer.member(KEY_MEMBER).expect("member");
        writer.line(b"a2V5").expect("line");
        let (sealed, _) = writer.finish(manifest).expect("finish");
        sealed.finish().expect("sync");
        creating.commit().expect("rename");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).expect("metadata").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1, "no temporary file left");
        let mut lines = 0;
        open(&path, passphrase)
            .expect("open")
            .read(|_, _| {
                lines += 1;
                Ok(())
            })
            .expect("read");
        assert_eq!(lines, 1);
        let other = if passphrase.is_some() { None } else { Some(&b"x"[..]) };
        let err = open(&path, other).err().expect("refused");
        assert!(err.to_string().contains("--passphrase-file"), "{err}");
    }
    // A file dropped before it is committed leaves nothing behind.
    let (creating, _) = Creating::new(&dir.path().join("other"), None).expect("create");
    drop(creating);
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
}
