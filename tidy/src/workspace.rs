//! The workspace as the rules read it: members, their declared dependencies with the lines
//! that declare them, their code lines, and the code map.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A kind of dependency table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Normal,
    Dev,
    Build,
}

impl Kind {
    const ALL: [(Kind, &'static str); 3] =
        [(Kind::Normal, "dependencies"), (Kind::Dev, "dev-dependencies"), (Kind::Build, "build-dependencies")];

    pub fn table(self) -> &'static str {
        Kind::ALL.iter().find(|(k, _)| *k == self).map_or("", |(_, t)| t)
    }
}

/// A place in a file, printed `path:line` (relative to the workspace root).
#[derive(Debug, Clone)]
pub struct At {
    pub path: String,
    pub line: usize,
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path, self.line)
    }
}

/// One declared dependency.
#[derive(Debug, Clone)]
pub struct Dep {
    /// The name the code uses (the table's key).
    pub name: String,
    /// The package it is (differs from `name` only when renamed).
    pub package: String,
    pub kind: Kind,
    pub at: At,
}

/// One line of code, comments dropped.
#[derive(Debug, Clone)]
pub struct Line {
    pub at: At,
    pub text: String,
    /// Inside test code: a test file or a `#[cfg(test)] mod … { … }` block.
    pub test: bool,
    /// In a binary's entry point (`src/main.rs`, `src/bin/…`) or a build script.
    pub entry: bool,
    /// Under `src/` (not `tests/`, `benches/`, `examples/`, `build.rs`).
    pub in_src: bool,
    /// In `build.rs`.
    pub build: bool,
}

/// A workspace member.
#[derive(Debug)]
pub struct Member {
    /// Its directory's name, the name the code map uses (`core`, `cli`, `tests`).
    pub name: String,
    pub package: String,
    pub manifest: String,
    pub deps: Vec<Dep>,
    pub lines: Vec<Line>,
}

/// ARCHITECTURE.md's code map: crates bottom-up, and which are pure.
#[derive(Debug)]
pub struct CodeMap {
    /// Each bullet's crate and line, in order.
    pub order: Vec<(String, At)>,
    pub pure: Vec<String>,
}

impl CodeMap {
    /// Where `name` stands in the map, with its bullet's place.
    pub fn position(&self, name: &str) -> Option<(usize, &At)> {
        self.order.iter().position(|(n, _)| n == name).map(|i| (i, &self.order[i].1))
    }

    pub fn is_pure(&self, name: &str) -> bool {
        self.pure.iter().any(|p| p == name)
    }
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tidy sits in the workspace root").to_owned()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// Every member listed in the root `Cargo.toml` (`dir/*` globs expanded), sorted by name.
pub fn members() -> Vec<Member> {
    let root = root();
    let manifest: toml::Table = read(&root.join("Cargo.toml")).parse().expect("the root Cargo.toml parses");
    let listed = manifest["workspace"]["members"].as_array().expect("workspace.members");
    let mut dirs = Vec::new();
    for pattern in listed.iter().filter_map(toml::Value::as_str) {
        match pattern.strip_suffix("/*") {
            Some(parent) => {
                let entries = std::fs::read_dir(root.join(parent)).expect("a members directory");
                dirs.extend(entries.flatten().map(|e| e.path()).filter(|p| p.join("Cargo.toml").is_file()));
            }
            None => dirs.push(root.join(pattern)),
        }
    }
    let mut members: Vec<Member> = dirs.iter().map(|dir| member(dir)).collect();
    members.sort_by(|a, b| a.name.cmp(&b.name));
    members
}

fn member(dir: &Path) -> Member {
    let path = dir.join("Cargo.toml");
    let manifest = relative(&path);
    let text = read(&path);
    let table: toml::Table = text.parse().unwrap_or_else(|e| panic!("{manifest} does not parse: {e}"));
    let package = table["package"]["name"].as_str().expect("package.name").to_owned();
    let mut deps = Vec::new();
    for (kind, name) in Kind::ALL {
        let Some(entries) = table.get(name).and_then(toml::Value::as_table) else { continue };
        for (key, value) in entries {
            let renamed = value.get("package").and_then(toml::Value::as_str);
            let line = declaring_line(&text, name, key)
                .unwrap_or_else(|| panic!("{manifest}: cannot find the line declaring {key} in [{name}]"));
            deps.push(Dep {
                name: key.clone(),
                package: renamed.unwrap_or(key).to_owned(),
                kind,
                at: At { path: manifest.clone(), line },
            });
        }
    }
    let name = dir.file_name().expect("a directory name").to_string_lossy().into_owned();
    let mut lines = Vec::new();
    for file in rust_files(dir) {
        lines.extend(code_lines(dir, &file));
    }
    Member { name, package, manifest, deps, lines }
}

/// The 1-based line of `key` in the table `[table]` of a manifest's text.
fn declaring_line(text: &str, table: &str, key: &str) -> Option<usize> {
    let header = format!("[{table}]");
    let mut inside = false;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == header;
        } else if inside && line.strip_prefix(key).is_some_and(|rest| rest.starts_with(['.', ' ', '='])) {
            return Some(i + 1);
        }
    }
    None
}

/// Every `.rs` file under `dir`, build outputs left out.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory").flatten() {
            let path = entry.path();
            if path.is_dir() && entry.file_name() != "target" {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The code lines of `file` in member `dir`: comment lines dropped, test code marked. A
/// `#[cfg(test)]` followed by a top-level `mod name {` is test code down to the next `}` at
/// the start of a line (rustfmt's layout).
fn code_lines(dir: &Path, file: &Path) -> Vec<Line> {
    let inner = file.strip_prefix(dir).expect("under its member");
    let parts: Vec<String> = inner.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let in_src = parts[0] == "src";
    let build = parts.len() == 1 && parts[0] == "build.rs";
    let test_file = (!in_src && !build) || parts.iter().any(|p| p == "tests" || p == "tests.rs");
    let entry = build || (in_src && (parts[1] == "main.rs" || parts[1] == "bin"));
    let path = relative(file);
    let text = read(file);
    let raw: Vec<&str> = text.lines().collect();
    let mut lines = Vec::new();
    let mut in_test_mod = false;
    for (i, line) in raw.iter().enumerate() {
        let opens_test_mod = line.trim() == "#[cfg(test)]"
            && raw.get(i + 1).is_some_and(|next| next.starts_with("mod ") && next.ends_with('{'));
        in_test_mod |= opens_test_mod;
        let trimmed = line.trim_start();
        if !trimmed.is_empty() && !trimmed.starts_with("//") {
            lines.push(Line {
                at: At { path: path.clone(), line: i + 1 },
                text: (*line).to_owned(),
                test: test_file || in_test_mod,
                entry,
                in_src,
                build,
            });
        }
        if in_test_mod && *line == "}" {
            in_test_mod = false;
        }
    }
    lines
}

/// ARCHITECTURE.md's "## Code map": its `- **`name`**` bullets in order; a bullet whose text
/// (down to the next bullet) contains `*Pure` marks its crate pure.
pub fn code_map() -> CodeMap {
    let text = read(&root().join("ARCHITECTURE.md"));
    let mut order = Vec::new();
    let mut bullets: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut inside = false;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("## ") {
            inside = line == "## Code map";
            current = None;
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(name) = line.strip_prefix("- **`").and_then(|rest| rest.split_once("`**")).map(|(n, _)| n) {
            order.push((name.to_owned(), At { path: "ARCHITECTURE.md".to_owned(), line: i + 1 }));
            current = Some(name.to_owned());
        } else if line.starts_with("- ") {
            current = None;
        }
        if let Some(name) = &current {
            bullets.entry(name.clone()).or_default().push_str(line);
        }
    }
    assert!(!order.is_empty(), "ARCHITECTURE.md has no `## Code map` with `- **`name`**:` bullets");
    let pure = bullets.into_iter().filter(|(_, text)| text.contains("*Pure")).map(|(name, _)| name).collect();
    CodeMap { order, pure }
}
