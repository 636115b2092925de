//! The bot-wall classifier over the fixture corpus in `tests/walls/`: every wall found and named
//! after the right vendor, no normal page (vendor beacons, cookies and headers included) taken
//! for one. Each file is one answer: `# ` comment lines (where it comes from), the status line,
//! headers, a blank line, the body; its name starts with the expected vendor's `as_str` or
//! `none`, then `--`.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};

use driftwatch_scrape::walls::{Answer, Vendor, detect};

struct Fixture {
    name: String,
    expected: Option<Vendor>,
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn corpus() -> Vec<Fixture> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/walls");
    let mut paths: Vec<PathBuf> =
        std::fs::read_dir(&dir).expect("tests/walls").map(|e| e.expect("an entry").path()).collect();
    paths.sort();
    paths.iter().map(|p| read(p)).collect()
}

fn read(path: &Path) -> Fixture {
    let name = path.file_name().expect("a file name").to_string_lossy().into_owned();
    let (prefix, _) = name.split_once("--").unwrap_or_else(|| panic!("{name}: no `<vendor>--` prefix"));
    let expected = (prefix != "none").then(|| {
        *Vendor::ALL.iter().find(|v| v.as_str() == prefix).unwrap_or_else(|| panic!("{name}: unknown vendor {prefix}"))
    });
    let text = std::fs::read(path).expect("a readable fixture");
    let split = text.windows(2).position(|w| w == b"\n\n").unwrap_or_else(|| panic!("{name}: no blank line"));
    let head = std::str::from_utf8(&text[..split]).expect("UTF-8 headers");
    let mut lines = head.lines().filter(|l| !l.starts_with("# "));
    let status_line = lines.next().expect("a status line");
    let status = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{name}: status"));
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap_or_else(|| panic!("{name}: header {l:?}"));
            (n.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    Fixture { name, expected, status, headers, body: text[split + 2..].to_vec() }
}

#[test]
fn corpus_walls_are_found_and_normal_pages_are_not() {
    let corpus = corpus();
    let (mut walls, mut found, mut normal, mut false_positives) = (0, 0, 0, 0);
    let mut wrong = Vec::new();
    for fixture in &corpus {
        let got = detect(&Answer { status: fixture.status, headers: &fixture.headers, body: &fixture.body });
        let vendor = got.as_ref().map(|w| w.vendor);
        match fixture.expected {
            Some(_) => {
                walls += 1;
                found += usize::from(vendor == fixture.expected);
            }
            None => {
                normal += 1;
                false_positives += usize::from(vendor.is_some());
            }
        }
        match &got {
            Some(wall) => println!("{:<48} {}", fixture.name, wall),
            None => println!("{:<48} not a wall", fixture.name),
        }
        if vendor != fixture.expected {
            wrong.push(format!("{}: expected {:?}, got {:?}", fixture.name, fixture.expected, got));
        }
    }
    println!("walls detected: {found}/{walls}; false positives: {false_positives}/{normal}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(walls >= 15 && normal >= 15, "the corpus is too small: {walls} walls, {normal} normal pages");
    for vendor in Vendor::ALL {
        assert!(corpus.iter().any(|f| f.expected == Some(vendor)), "no wall of {vendor:?} in the corpus");
    }
}

/// A wall's evidence says in words what gave it away, and never repeats the whole body.
#[test]
fn corpus_evidence_is_short_words() {
    for fixture in corpus().iter().filter(|f| f.expected.is_some()) {
        let wall = detect(&Answer { status: fixture.status, headers: &fixture.headers, body: &fixture.body }).unwrap();
        assert!(
            (10..=120).contains(&wall.evidence.len()) && !wall.evidence.contains('\n'),
            "{}: {:?}",
            fixture.name,
            wall.evidence
        );
    }
}
