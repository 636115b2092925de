//! The rules, one test each. A test gathers every offence before it fails, so one run lists
//! them all, each with the file and line to change and what to do.

use regex::Regex;

use crate::workspace::{self, CodeMap, Kind, Line, Member};

/// Crates only tests link. They may name diesel, read the environment, and be dev-dependencies
/// of crates listed before them (a crate's tests may use what sits above it).
const TEST_CRATES: [&str; 3] = ["test-support", "tests", "tidy"];

/// The one product crate that names diesel.
const DATABASE_CRATE: &str = "store";

/// The one product crate that reads the process environment (its settings). A binary's entry
/// point (`src/main.rs`, `src/bin/`) and a build script may read it too: that is where a
/// process's environment comes in, to be passed down as settings.
const ENVIRONMENT_CRATE: &str = "cli";

/// Third-party crates that reach the network, a database, files or other processes: a crate
/// the code map marks `*Pure*` depends on none of them, and on no member that is not pure.
/// `lettre` is not listed: `channels` uses only its message builder (sending is `delivery`'s).
const IO_CRATES: [&str; 16] = [
    "axum",
    "chromiumoxide",
    "diesel",
    "diesel_migrations",
    "fantoccini",
    "hyper",
    "hyper-util",
    "libsqlite3-sys",
    "pq-sys",
    "r2d2",
    "reqwest",
    "rmcp",
    "rustix",
    "tempfile",
    "tokio",
    "tokio-cron-scheduler",
];

/// Dependencies declared for what they switch on, not to be named: (crate, dependency, why).
const NOT_NAMED_ON_PURPOSE: [(&str, &str, &str); 2] = [
    ("store", "libsqlite3-sys", "its `bundled` feature compiles SQLite into the binary"),
    ("store", "pq-sys", "its `bundled` feature compiles libpq into the binary"),
];

/// Fails with every offence, when there is any.
fn check(rule: &str, offences: Vec<String>) {
    assert!(offences.is_empty(), "{rule}: {} offence(s)\n\n{}\n", offences.len(), offences.join("\n"));
}

/// A pattern matching code that names crate `name`: a path starting with it (`name::`,
/// `::name::`), `use name`, or `extern crate name`.
fn naming(name: &str) -> Regex {
    let ident = regex::escape(&name.replace('-', "_"));
    Regex::new(&format!(r"(?:^|[^\w:])(?:::)?{ident}::|\buse\s+(?:::)?{ident}\b|\bextern\s+crate\s+{ident}\b"))
        .expect("a valid pattern")
}

fn is_test_crate(name: &str) -> bool {
    TEST_CRATES.contains(&name)
}

/// The members that are not test crates.
fn product(members: &[Member]) -> impl Iterator<Item = &Member> {
    members.iter().filter(|m| !is_test_crate(&m.name))
}

#[test]
fn every_member_is_on_the_code_map_and_depends_only_down_it() {
    let (members, map) = (workspace::members(), workspace::code_map());
    let mut offences = Vec::new();
    for (name, at) in &map.order {
        if !members.iter().any(|m| &m.name == name) {
            offences.push(format!("{at}: `{name}` is on the code map but is no workspace member: remove its bullet"));
        }
    }
    for member in &members {
        let Some((position, member_at)) = map.position(&member.name) else {
            offences.push(format!(
                "{}: `{}` is not on ARCHITECTURE.md's code map: add a `- **`{}`**:` bullet after the crates it \
                 uses and before those that use it",
                member.manifest, member.name, member.name
            ));
            continue;
        };
        for dep in &member.deps {
            let Some(target) = members.iter().find(|m| m.package == dep.package) else { continue };
            if dep.kind == Kind::Dev && is_test_crate(&target.name) {
                continue;
            }
            match map.position(&target.name) {
                Some((above, _)) if above < position => {}
                Some((_, target_at)) => offences.push(format!(
                    "{}: `{}` ({member_at}) depends on `{}` ({target_at}), which the code map lists after it. A \
                     crate may depend only on crates listed before it: move what it needs below it, or, if the \
                     design changed, reorder the map and say why in the commit",
                    dep.at, member.name, target.name
                )),
                None => {} // reported above as missing from the map
            }
        }
    }
    check("the code map's order", offences);
}

#[test]
fn only_store_and_the_test_crates_name_diesel() {
    let patterns = [naming("diesel"), naming("diesel_migrations")];
    let mut offences = Vec::new();
    for member in product(&workspace::members()).filter(|m| m.name != DATABASE_CRATE) {
        for dep in member.deps.iter().filter(|d| d.package.starts_with("diesel")) {
            offences.push(format!(
                "{}: `{}` declares `{}`: only `{DATABASE_CRATE}` talks to the database; ask it through a `Store` \
                 method",
                dep.at, member.name, dep.name
            ));
        }
        for line in member.lines.iter().filter(|l| patterns.iter().any(|p| p.is_match(&l.text))) {
            offences.push(format!(
                "{}: `{}` names diesel: `{}`; move the query into `{DATABASE_CRATE}`",
                line.at,
                member.name,
                line.text.trim()
            ));
        }
    }
    check("only store names diesel", offences);
}

#[test]
fn pure_crates_depend_on_nothing_that_does_io() {
    let (members, map) = (workspace::members(), workspace::code_map());
    let io_in_code = Regex::new(r"\bstd::(fs|process)\b|\b(TcpStream|TcpListener|UdpSocket)\b").expect("valid");
    let mut offences = Vec::new();
    for member in members.iter().filter(|m| map.is_pure(&m.name)) {
        for dep in member.deps.iter().filter(|d| d.kind == Kind::Normal) {
            let impure_member = members.iter().find(|m| m.package == dep.package).filter(|m| !map.is_pure(&m.name));
            if impure_member.is_some() || IO_CRATES.contains(&dep.package.as_str()) {
                offences.push(format!(
                    "{}: `{}` is marked *Pure* on the code map but depends on `{}`, which does IO. Take what it \
                     needs as a parameter, or move the IO to a crate that is not pure",
                    dep.at, member.name, dep.name
                ));
            }
        }
        for line in production(&member.lines).filter(|l| io_in_code.is_match(&l.text)) {
            offences.push(format!(
                "{}: `{}` is marked *Pure* but does IO: `{}`; move it to a crate above that does IO",
                line.at,
                member.name,
                line.text.trim()
            ));
        }
    }
    check("pure crates do no IO", offences);
}

/// Lines that run in the product: under `src/`, outside tests.
fn production(lines: &[Line]) -> impl Iterator<Item = &Line> {
    lines.iter().filter(|l| l.in_src && !l.test)
}

#[test]
fn only_cli_reads_the_environment() {
    // What reads the environment; `env::split_paths` and `env!` read nothing at run time.
    let reads =
        Regex::new(r"\benv::(var|var_os|vars|vars_os|args|args_os|current_dir|current_exe|home_dir|temp_dir)\b")
            .expect("valid");
    let mut offences = Vec::new();
    for member in product(&workspace::members()).filter(|m| m.name != ENVIRONMENT_CRATE) {
        for line in production(&member.lines).filter(|l| !l.entry && reads.is_match(&l.text)) {
            offences.push(format!(
                "{}: `{}` reads the process environment: `{}`. Only `{ENVIRONMENT_CRATE}` does (its `Settings`); \
                 take the value as a parameter or a config field (`env!` at compile time is fine)",
                line.at,
                member.name,
                line.text.trim()
            ));
        }
    }
    check("only cli reads the environment", offences);
}

#[test]
fn every_declared_dependency_is_named() {
    let mut offences = Vec::new();
    for member in workspace::members() {
        for dep in &member.deps {
            if NOT_NAMED_ON_PURPOSE.iter().any(|(m, d, _)| *m == member.name && *d == dep.name) {
                continue;
            }
            let pattern = naming(&dep.name);
            let named = |mut lines: Box<dyn Iterator<Item = &Line> + '_>| lines.any(|l| pattern.is_match(&l.text));
            let table = dep.kind.table();
            let problem = match dep.kind {
                Kind::Normal if named(Box::new(production(&member.lines))) => continue,
                Kind::Normal if named(Box::new(member.lines.iter())) => {
                    "only its tests name it: move it to [dev-dependencies]"
                }
                Kind::Dev if named(Box::new(member.lines.iter().filter(|l| !l.build))) => continue,
                Kind::Build if named(Box::new(member.lines.iter().filter(|l| l.build))) => continue,
                _ => "no code names it: remove the line (`Cargo.lock` follows)",
            };
            offences.push(format!(
                "{}: `{}` declares `{}` in [{table}] but {problem}. If it is there for a feature or to be \
                 linked, add it to `NOT_NAMED_ON_PURPOSE` in tidy/src/rules.rs with the reason",
                dep.at, member.name, dep.name
            ));
        }
    }
    check("every declared dependency is named", offences);
}

/// The map itself is read as the rules expect: bottom-up from `core`, tests last, and some
/// crates marked pure (a renamed heading or marker would make every rule pass vacuously).
#[test]
fn the_code_map_is_read() {
    let map: CodeMap = workspace::code_map();
    assert_eq!(map.order.first().map(|(n, _)| n.as_str()), Some("core"), "{:?}", map.order);
    assert!(map.position("cli").is_some() && map.position("tests").is_some(), "{:?}", map.order);
    assert!(map.is_pure("diff") && !map.is_pure("store"), "pure: {:?}", map.pure);
}
