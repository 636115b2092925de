//! The official MCP Python SDK (`mcp` on PyPI) as a test client, through the repository's
//! `tests/mcp/client.py`. Its Python is `DRIFTWATCH_MCP_PYTHON`, else `target/mcp-venv/bin/python`
//! when that venv has the SDK (`.ci/run` makes it). Without one, tests say SKIPPED once, unless
//! `DRIFTWATCH_REQUIRE_MCP_CLIENT=1` (CI), which fails them.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncBufReadExt as _;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The SDK's client, when a Python with it is at hand.
#[derive(Debug, Clone)]
pub struct McpClient {
    python: PathBuf,
}

impl McpClient {
    /// The client, or `None` (said once on stderr) when there is no Python with the SDK.
    pub fn find() -> Option<McpClient> {
        let found = std::env::var_os("DRIFTWATCH_MCP_PYTHON").map(PathBuf::from).or_else(|| {
            let venv = root().join("target/mcp-venv/bin/python");
            venv.exists().then_some(venv)
        });
        let usable = found.filter(|python| {
            std::process::Command::new(python).args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success())
        });
        if usable.is_none() {
            let what = "MCP client tests: no Python with the `mcp` SDK (set DRIFTWATCH_MCP_PYTHON, or: python3 -m \
                        venv target/mcp-venv && target/mcp-venv/bin/pip install mcp==2.3.0)";
            if std::env::var("DRIFTWATCH_REQUIRE_MCP_CLIENT").is_ok_and(|v| v == "1") {
                panic!("DRIFTWATCH_REQUIRE_MCP_CLIENT=1 but {what}");
            }
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                let _ = writeln!(std::io::stderr(), "SKIPPED {what}");
            });
        }
        usable.map(|python| McpClient { python })
    }

    /// Runs `plan` (`[["list_tools"], ["call", name, arguments], ...]`) over Streamable HTTP
    /// at `url` with `token`: one answer per step (tool names, or `{is_error, structured, text}`).
    pub async fn http(&self, url: &str, token: &str, plan: &Value) -> Vec<Value> {
        self.run(&[url, token], plan).await
    }

    /// [`McpClient::http`] through `driftwatch mcp` (the `binary`) on stdio, calling `server`.
    pub async fn stdio(&self, binary: &Path, server: &str, token: &str, plan: &Value) -> Vec<Value> {
        self.run(&["--stdio", &binary.to_string_lossy(), server, token], plan).await
    }

    /// Subscribes to `uri` at `url` (with `subscriptions/listen`, or the session's
    /// `resources/subscribe` when `legacy`) and returns once the subscription stands; the
    /// update is then awaited with [`Subscribed::update`].
    pub async fn subscribe(&self, url: &str, token: &str, uri: &str, legacy: bool) -> Subscribed {
        let mode = if legacy { "--subscribe" } else { "--listen" };
        self.subscribed(&[mode, url, token, uri]).await
    }

    /// [`McpClient::subscribe`] through `driftwatch mcp` (the `binary`) on stdio, calling `server`.
    pub async fn subscribe_stdio(&self, binary: &Path, server: &str, token: &str, uri: &str) -> Subscribed {
        self.subscribed(&["--stdio-listen", &binary.to_string_lossy(), server, token, uri]).await
    }

    async fn subscribed(&self, args: &[&str]) -> Subscribed {
        let mut child = tokio::process::Command::new(&self.python)
            .arg(root().join("tests/mcp/client.py"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("python runs");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let ready = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("subscribed within a minute")
            .expect("read");
        assert_eq!(ready.as_deref(), Some("READY"), "the client could not subscribe");
        Subscribed { _child: child, lines }
    }

    async fn run(&self, args: &[&str], plan: &Value) -> Vec<Value> {
        let mut child = tokio::process::Command::new(&self.python)
            .arg(root().join("tests/mcp/client.py"))
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python runs");
        let mut stdin = child.stdin.take().expect("stdin");
        tokio::io::AsyncWriteExt::write_all(&mut stdin, plan.to_string().as_bytes()).await.expect("plan written");
        drop(stdin);
        let output = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
            .await
            .expect("the MCP client finishes within 90 s")
            .expect("its output");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the MCP client failed: {}\n{stdout}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }
}

/// A standing subscription of the SDK's client.
pub struct Subscribed {
    _child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Subscribed {
    /// The update notification (`{"protocol", "uri", "meta"}`), when it arrives.
    pub async fn update(mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(40), self.lines.next_line())
            .await
            .expect("an update within 40 s")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }
}
