//! Accessibility checks with axe-core, injected into the page through WebDriver (which the
//! page's Content-Security-Policy does not govern).
//!
//! axe-core comes from npm: `DRIFTWATCH_AXE_JS`, else `target/npm/node_modules/axe-core/axe.min.js`,
//! else `npm install` into a fresh directory renamed into place (so parallel tests and test
//! processes never see a half-written copy), once per test binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::OnceCell;

use super::Browser;

/// The npm package installed when axe-core is missing.
const AXE_PACKAGE: &str = "axe-core@4";

/// One axe rule the page breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The axe rule, e.g. `label` or `color-contrast`.
    pub id: String,
    /// `serious` or `critical` (only those are reported).
    pub impact: String,
    pub help: String,
    /// How many elements break the rule.
    pub count: usize,
    /// Selectors of the first few of them.
    pub targets: Vec<String>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Violation { id, impact, help, count, targets } = self;
        write!(f, "{impact} {id}: {help} ({count} elements: {})", targets.join(", "))
    }
}

/// Runs axe on the document and hands back the violations, trimmed to what a report needs.
const RUN_AXE: &str = r"
const done = arguments[arguments.length - 1];
axe.run(document, { resultTypes: ['violations'] })
  .then(result => done({ violations: result.violations.map(v => ({
    id: v.id, impact: v.impact || '', help: v.help, count: v.nodes.length,
    targets: v.nodes.slice(0, 5).map(n => n.target.flat(Infinity).join(' >>> ')),
  })) }))
  .catch(error => done({ error: String(error && error.stack || error) }));
";

impl Browser {
    /// Whether axe-core can be had (found or installed); says `SKIPPED` once when not.
    pub async fn has_axe(&self) -> bool {
        axe_source().await.is_some()
    }

    /// Runs axe-core on the current page and returns its `serious` and `critical` violations;
    /// empty when axe-core cannot be had (then the check was skipped, see [`Browser::has_axe`]).
    /// `page` names the page in messages.
    pub async fn check_accessibility(&self, page: &str) -> Vec<Violation> {
        let Some(source) = axe_source().await else { return Vec::new() };
        let loaded = self.execute("return typeof window.axe === 'object';").await;
        if loaded != Value::Bool(true) {
            self.client.execute(&source, vec![]).await.unwrap_or_else(|e| panic!("inject axe-core into {page}: {e}"));
        }
        let answer =
            self.client.execute_async(RUN_AXE, vec![]).await.unwrap_or_else(|e| panic!("run axe-core on {page}: {e}"));
        if let Some(error) = answer.get("error") {
            panic!("axe-core failed on {page}: {error}");
        }
        let all: Vec<Value> = answer["violations"].as_array().cloned().unwrap_or_default();
        all.iter()
            .map(|v| Violation {
                id: v["id"].as_str().unwrap_or_default().to_owned(),
                impact: v["impact"].as_str().unwrap_or_default().to_owned(),
                help: v["help"].as_str().unwrap_or_default().to_owned(),
                count: v["count"].as_u64().unwrap_or(0).try_into().unwrap_or(usize::MAX),
                targets: v["targets"]
                    .as_array()
                    .map(|t| t.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_default(),
            })
            .filter(|v| v.impact == "serious" || v.impact == "critical")
            .collect()
    }

    /// Panics listing every `serious` or `critical` axe violation on the current page.
    pub async fn assert_accessible(&self, page: &str) {
        let violations = self.check_accessibility(page).await;
        if !violations.is_empty() {
            let list: Vec<String> = violations.iter().map(|v| format!("  - {v}")).collect();
            panic!("{page} ({}) has accessibility violations:\n{}", self.current_url().await, list.join("\n"));
        }
    }
}

/// axe.min.js, loaded (or installed) once per test binary; `None` when it cannot be had.
async fn axe_source() -> Option<Arc<str>> {
    static AXE: OnceCell<Option<Arc<str>>> = OnceCell::const_new();
    AXE.get_or_init(|| async {
        let found = tokio::task::spawn_blocking(load_axe).await.expect("axe-core loader");
        match found {
            Ok(source) => Some(Arc::from(source)),
            Err(why) => {
                super::skip_or_fail(&format!("accessibility checks: {why}"));
                None
            }
        }
    })
    .await
    .clone()
}

fn load_axe() -> Result<String, String> {
    if let Some(path) = std::env::var_os("DRIFTWATCH_AXE_JS").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return std::fs::read_to_string(&path).map_err(|e| format!("DRIFTWATCH_AXE_JS={}: {e}", path.display()));
    }
    let prefix = super::target_dir().join("npm");
    let file = prefix.join("node_modules/axe-core/axe.min.js");
    if !file.is_file() {
        install_axe(&prefix)?;
    }
    std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))
}

/// `npm install`s axe-core into a scratch directory next to `prefix/node_modules`, then renames
/// the package into it; when another process got there first, its copy is kept.
fn install_axe(prefix: &Path) -> Result<(), String> {
    let modules = prefix.join("node_modules");
    std::fs::create_dir_all(&modules).map_err(|e| format!("create {}: {e}", modules.display()))?;
    let installed = modules.join("axe-core");
    let scratch = tempfile::Builder::new()
        .prefix(".axe-install-")
        .tempdir_in(prefix)
        .map_err(|e| format!("temp dir in {}: {e}", prefix.display()))?;
    let output = Command::new("npm")
        .args(["install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(scratch.path())
        .arg(AXE_PACKAGE)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("no axe-core and cannot run npm ({e}); set DRIFTWATCH_AXE_JS or install npm"))?;
    if !output.status.success() {
        return Err(format!(
            "npm install {AXE_PACKAGE} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    match std::fs::rename(scratch.path().join("node_modules/axe-core"), &installed) {
        Ok(()) => Ok(()),
        Err(_) if installed.join("axe.min.js").is_file() => Ok(()),
        Err(e) => Err(format!("move axe-core to {}: {e}", installed.display())),
    }
}
