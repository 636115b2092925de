//! changedetection.io backup zips, made as its `create_backup` makes them
//! (`changedetectionio/blueprint/backups/__init__.py`, 0.60.x): `changedetection.json`, a
//! folder per group with `tag.json`, a folder per watch with `watch.json`, its history index
//! (`history.txt`, or `history-<processor>.txt`: `unix_seconds,file` lines, oldest first) and
//! the snapshots it names (`<md5>.txt`, or brotli-compressed `<md5>.txt.br` above cd's
//! threshold), plus the files that are not history (`last-checksum.txt`, `<md5>.html.br`) and
//! `url-list.txt`; every member deflated at level 8.

use std::io::Write;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// A backup being built.
#[derive(Debug, Default, Clone)]
pub struct CdBackup {
    settings: Value,
    members: Vec<(String, Vec<u8>)>,
    urls: Vec<String>,
}

/// One snapshot of a watch's history.
#[derive(Debug, Clone)]
pub struct CdSnapshot {
    /// When it was taken (unix seconds).
    pub at: i64,
    /// Its text.
    pub text: String,
    /// Stored brotli-compressed (`.txt.br`).
    pub brotli: bool,
}

impl CdSnapshot {
    /// A plain `.txt` snapshot.
    pub fn text(at: i64, text: &str) -> CdSnapshot {
        CdSnapshot { at, text: text.to_owned(), brotli: false }
    }

    /// A `.txt.br` snapshot.
    pub fn brotli(at: i64, text: &str) -> CdSnapshot {
        CdSnapshot { at, text: text.to_owned(), brotli: true }
    }
}

impl CdBackup {
    /// A backup whose `changedetection.json` is `settings` (the whole document:
    /// `{"settings": {"application": ..., "requests": ...}, "app_guid": ...}`).
    pub fn new(settings: Value) -> CdBackup {
        CdBackup { settings, members: Vec::new(), urls: Vec::new() }
    }

    /// A group (cd's "tag") folder.
    pub fn group(mut self, uuid: &str, title: &str, notification_urls: &[&str]) -> CdBackup {
        let tag = json!({"uuid": uuid, "title": title, "notification_urls": notification_urls,
                         "processor": "restock_diff", "overrides_watch": false});
        self.members.push((format!("{uuid}/tag.json"), serde_json::to_vec_pretty(&tag).expect("json")));
        self
    }

    /// A watch folder: `watch.json` (the `uuid` added) and its history.
    pub fn watch(mut self, uuid: &str, mut watch: Value, history: &[CdSnapshot]) -> CdBackup {
        watch["uuid"] = json!(uuid);
        if let Some(url) = watch["url"].as_str() {
            self.urls.push(url.to_owned());
        }
        let processor = watch["processor"].as_str().filter(|p| *p != "text_json_diff").map(str::to_owned);
        self.members.push((format!("{uuid}/watch.json"), serde_json::to_vec_pretty(&watch).expect("json")));
        if history.is_empty() {
            return self;
        }
        let mut index = String::new();
        for snapshot in history {
            let md5ish = driftwatch_core::hex(&Sha256::digest(snapshot.text.as_bytes()))[..32].to_owned();
            let (file, bytes) = if snapshot.brotli {
                (format!("{md5ish}.txt.br"), brotli_bytes(snapshot.text.as_bytes()))
            } else {
                (format!("{md5ish}.txt"), snapshot.text.clone().into_bytes())
            };
            index.push_str(&format!("{},{file}\n", snapshot.at));
            self.members.push((format!("{uuid}/{file}"), bytes));
            // The page's HTML of that check: kept by cd, not history.
            self.members.push((format!("{uuid}/{md5ish}.html.br"), brotli_bytes(b"<html>not history</html>")));
        }
        let name = processor.map_or_else(|| "history.txt".to_owned(), |p| format!("history-{p}.txt"));
        self.members.push((format!("{uuid}/{name}"), index.into_bytes()));
        self.members.push((format!("{uuid}/last-checksum.txt"), b"0123456789abcdef".to_vec()));
        self
    }

    /// Any other member, as it is (a processor's config, or something hostile).
    pub fn member(mut self, name: &str, bytes: &[u8]) -> CdBackup {
        self.members.push((name.to_owned(), bytes.to_vec()));
        self
    }

    /// The zip's bytes.
    pub fn zip(&self) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .compression_level(Some(8));
        let mut write = |name: &str, bytes: &[u8]| {
            zip.start_file(name, options).expect("member");
            zip.write_all(bytes).expect("write");
        };
        write("changedetection.json", &serde_json::to_vec_pretty(&self.settings).expect("json"));
        for (name, bytes) in &self.members {
            write(name, bytes);
        }
        let list: String = self.urls.iter().map(|u| format!("{u}\r\n")).collect();
        write("url-list.txt", list.as_bytes());
        zip.finish().expect("zip").into_inner()
    }
}

impl CdBackup {
    /// A zip of just these members (not a backup).
    pub fn zip_of(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, bytes) in members {
            zip.start_file(*name, zip::write::SimpleFileOptions::default()).expect("member");
            zip.write_all(bytes).expect("write");
        }
        zip.finish().expect("zip").into_inner()
    }
}

fn brotli_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut writer = brotli::CompressorWriter::new(&mut out, 4096, 6, 22);
        writer.write_all(bytes).expect("brotli");
    }
    out
}
