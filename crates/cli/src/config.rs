//! The optional configuration file (TOML), layered under the environment and the flags.
//!
//! The file names settings by their field names, as `driftwatch config` prints them
//! (`max_attempts = 3`, `database_url = "postgres://…"`, `retry_schedule = "1m,5m"`). Its values
//! become the defaults of the matching flags, so a `DRIFTWATCH_*` variable overrides the file
//! and a flag overrides both. A key that names no setting is refused, naming it.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

/// The settings a file gave, sorted by name: (name, value as text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileSettings {
    /// The file they came from.
    pub path: Option<PathBuf>,
    /// Name and value of each.
    pub values: Vec<(String, String)>,
}

/// The config file named by `--config PATH` (or `--config=PATH`) in `args`, else by
/// `DRIFTWATCH_CONFIG`.
pub fn path_from(args: &[std::ffi::OsString], env: Option<std::ffi::OsString>) -> Option<PathBuf> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let text = arg.to_string_lossy();
        if text == "--config" {
            return iter.next().map(PathBuf::from);
        }
        if let Some(path) = text.strip_prefix("--config=") {
            return Some(PathBuf::from(path));
        }
    }
    env.filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// Reads `path`; every key must be one of `known` (the settings' names).
pub fn load(path: &Path, known: &[String]) -> anyhow::Result<FileSettings> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the config file {}", path.display()))?;
    let table: toml::Table =
        text.parse().with_context(|| format!("the config file {} is not valid TOML", path.display()))?;
    let mut values = Vec::new();
    for (key, value) in table {
        if !known.contains(&key) {
            bail!("the config file {}: `{key}` is not a setting (see `driftwatch config`)", path.display());
        }
        let text = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(n) => n.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => bail!(
                "the config file {}: `{key}` must be a string, a number or a boolean, not {}",
                path.display(),
                other.type_str()
            ),
        };
        values.push((key, text));
    }
    Ok(FileSettings { path: Some(path.to_owned()), values })
}

/// The names of the settings (the ids of the `Settings` flags that have an environment
/// variable), in declaration order.
pub fn setting_names() -> Vec<String> {
    use clap::Args as _;
    crate::Settings::augment_args(Command::new("settings"))
        .get_arguments()
        .filter(|a| a.get_env().is_some())
        .map(|a| a.get_id().to_string())
        .collect()
}

/// `command` with the file's values as the defaults of the matching flags, in every
/// subcommand that has them.
pub fn with_defaults(mut command: Command, file: &FileSettings) -> Command {
    for (name, value) in &file.values {
        if command.get_arguments().any(|a| a.get_id() == name.as_str()) {
            let value = value.clone();
            command = command.mut_arg(name.as_str(), move |arg| arg.default_value(value));
        }
    }
    let names: Vec<String> = command.get_subcommands().map(|s| s.get_name().to_owned()).collect();
    for name in names {
        command = command.mut_subcommand(name, |sub| with_defaults(sub, file));
    }
    command
}

/// Where a setting's value came from.
fn source(matches: &ArgMatches, name: &str, file: &FileSettings) -> &'static str {
    match matches.value_source(name) {
        Some(ValueSource::CommandLine) => "flag",
        Some(ValueSource::EnvVariable) => "environment",
        _ if file.values.iter().any(|(key, _)| key == name) => "file",
        _ => "default",
    }
}

/// The effective settings of a `config` invocation, one `name = value  # source (VARIABLE)`
/// line each; secrets are masked and database URLs lose their passwords.
pub fn describe(matches: &ArgMatches, file: &FileSettings) -> String {
    use clap::Args as _;
    let command = crate::Settings::augment_args(Command::new("settings"));
    let mut out = String::new();
    if let Some(path) = &file.path {
        out.push_str(&format!("# config file: {}\n", path.display()));
    }
    for arg in command.get_arguments().filter(|a| a.get_env().is_some()) {
        let name = arg.get_id().as_str();
        let env = arg.get_env().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
        let raw: Option<String> = matches
            .get_raw(name)
            .map(|values| values.map(|v| v.to_string_lossy().into_owned()).collect::<Vec<_>>().join(","));
        let shown = match (name, raw) {
            (_, None) => "(unset)".to_owned(),
            ("database_url", Some(url)) => format!("{:?}", driftwatch_store::redact(&url)),
            // A secret is declared as one: its environment value is hidden from `--help`.
            (_, Some(_)) if arg.is_hide_env_values_set() => "\"********\"".to_owned(),
            (_, Some(value)) => format!("{value:?}"),
        };
        out.push_str(&format!("{name} = {shown}  # {} ({env}){}\n", source(matches, name, file), hint(name, &shown)));
    }
    out
}

/// What a setting's value means where it is easy to miss.
fn hint(name: &str, shown: &str) -> &'static str {
    match (name, shown) {
        ("public_url", "(unset)") => {
            "; messages link to the watched page, and payloads' screenshot links are paths without a host"
        }
        ("public_url", _) => "; payloads' screenshot links are paths: put this URL in front of them",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_comes_from_the_flag_then_the_environment() {
        let args = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(path_from(&args(&["driftwatch", "serve", "--config", "a.toml"]), None), Some("a.toml".into()));
        assert_eq!(
            path_from(&args(&["driftwatch", "--config=b.toml", "serve"]), Some("c".into())),
            Some("b.toml".into())
        );
        assert_eq!(path_from(&args(&["driftwatch", "serve"]), Some("c.toml".into())), Some("c.toml".into()));
        assert_eq!(path_from(&args(&["driftwatch", "serve"]), Some("".into())), None);
    }

    #[test]
    fn the_public_url_says_what_links_look_like() {
        assert!(hint("public_url", "(unset)").contains("screenshot links are paths without a host"));
        assert!(hint("public_url", "\"https://watch.example.com\"").contains("put this URL in front"));
        assert_eq!(hint("max_attempts", "7"), "");
    }

    #[test]
    fn secrets_are_masked_by_what_they_are_not_by_their_names() {
        use clap::Args as _;
        let command = crate::Settings::augment_args(Command::new("config"));
        let matches = command
            .try_get_matches_from([
                "config",
                "--secret-key",
                "a-key-never-shown",
                "--metrics-token",
                "a-token-never-shown",
                "--secret-key-file",
                "/etc/driftwatch/key",
                "--secret-rotation-overlap",
                "12h",
            ])
            .expect("parses");
        let described = describe(&matches, &FileSettings::default());
        let line =
            |name: &str| described.lines().find(|l| l.starts_with(&format!("{name} = "))).expect("listed").to_owned();
        assert!(line("secret_key").starts_with("secret_key = \"********\""), "{described}");
        assert!(line("metrics_token").starts_with("metrics_token = \"********\""), "{described}");
        assert!(!described.contains("never-shown"), "{described}");
        // A duration and a path whose names say "secret" are not secrets.
        assert!(line("secret_rotation_overlap").starts_with("secret_rotation_overlap = \"12h\""), "{described}");
        assert!(line("secret_key_file").starts_with("secret_key_file = \"/etc/driftwatch/key\""), "{described}");
    }

    #[test]
    fn a_file_names_known_settings_only() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("driftwatch.toml");
        let known = setting_names();
        assert!(known.contains(&"max_attempts".to_owned()) && known.contains(&"database_url".to_owned()));
        std::fs::write(&path, "max_attempts = 7\nretry_schedule = \"1m,2m\"\nallow_private_targets = true\n")
            .expect("write");
        let file = load(&path, &known).expect("loads");
        assert_eq!(
            file.values,
            [("allow_private_targets", "true"), ("max_attempts", "7"), ("retry_schedule", "1m,2m")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        std::fs::write(&path, "max_atempts = 7\n").expect("write");
        let error = load(&path, &known).expect_err("a typo is refused").to_string();
        assert!(error.contains("`max_atempts` is not a setting"), "{error}");
        std::fs::write(&path, "max_attempts = [1]\n").expect("write");
        assert!(load(&path, &known).is_err(), "an array is refused");
    }
}
