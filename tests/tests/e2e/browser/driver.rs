//! The chromedriver process behind a [`super::Browser`]: found, started on a loopback port of its
//! own, awaited until ready, and stopped (browser first) on drop.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long chromedriver may take to listen and report ready.
const STARTUP: Duration = Duration::from_secs(30);

/// Where the tools are, or why a browser test cannot run here.
pub(super) struct Tools {
    pub chromedriver: PathBuf,
    pub chromium: PathBuf,
}

impl Tools {
    /// Finds chromedriver (`DRIFTWATCH_CHROMEDRIVER`, `PATH`, `/usr/bin`) and Chromium
    /// (`DRIFTWATCH_CHROMIUM`, `/usr/bin/chromium`, `PATH`); `Err` says what is missing.
    pub fn find() -> Result<Tools, String> {
        let chromedriver = from_env("DRIFTWATCH_CHROMEDRIVER")?
            .or_else(|| on_path(&["chromedriver"]))
            .or_else(|| existing("/usr/bin/chromedriver"))
            .ok_or("no chromedriver found (install chromium and chromium-driver, or set DRIFTWATCH_CHROMEDRIVER)")?;
        let chromium = from_env("DRIFTWATCH_CHROMIUM")?
            .or_else(|| existing("/usr/bin/chromium"))
            .or_else(|| on_path(&["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]))
            .ok_or("no chromium found (install chromium, or set DRIFTWATCH_CHROMIUM)")?;
        Ok(Tools { chromedriver, chromium })
    }
}

/// A variable that is set must name a file: a typo should not quietly fall back to another binary.
fn from_env(name: &str) -> Result<Option<PathBuf>, String> {
    match std::env::var_os(name) {
        Some(value) if !value.is_empty() => {
            let path = PathBuf::from(value);
            if path.is_file() { Ok(Some(path)) } else { Err(format!("{name}={} is not a file", path.display())) }
        }
        _ => Ok(None),
    }
}

fn existing(path: &str) -> Option<PathBuf> {
    Path::new(path).is_file().then(|| PathBuf::from(path))
}

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|name| std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file()))
}

/// A running chromedriver. Dropping it ends its session (so Chromium quits: it outlives a
/// killed chromedriver otherwise) and then kills it.
pub(super) struct Driver {
    pub addr: SocketAddr,
    child: Child,
    log: PathBuf,
    pub session: Option<String>,
}

impl Driver {
    /// Starts chromedriver on a port the kernel picks (`--port=0`, so parallel tests never race
    /// for one) and awaits its `/status` being ready. `log` receives chromedriver's log, which is
    /// also where it says its port (with `--log-path`, nothing goes to stdout).
    pub async fn start(chromedriver: &Path, log: PathBuf) -> Driver {
        let child = Command::new(chromedriver)
            .arg("--port=0")
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", chromedriver.display()));
        let mut driver = Driver { addr: SocketAddr::from(([127, 0, 0, 1], 0)), child, log, session: None };
        let http = reqwest::Client::builder().no_proxy().build().expect("http client");
        let deadline = tokio::time::Instant::now() + STARTUP;
        loop {
            if driver.addr.port() == 0 {
                driver.addr.set_port(driver.reported_port().unwrap_or(0));
            } else if driver.is_ready(&http).await {
                return driver;
            }
            if let Ok(Some(exit)) = driver.child.try_wait() {
                panic!("chromedriver exited ({exit}) before it was ready; {}", driver.log_tail());
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "chromedriver not ready in {STARTUP:?}; {}",
                driver.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The WebDriver base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The port from the log's "ChromeDriver was started successfully on port N." line.
    fn reported_port(&self) -> Option<u16> {
        let log = std::fs::read_to_string(&self.log).ok()?;
        log.lines()
            .find_map(|line| line.split("started successfully on port ").nth(1)?.trim_end_matches('.').parse().ok())
    }

    async fn is_ready(&self, http: &reqwest::Client) -> bool {
        let Ok(response) = http.get(format!("{}/status", self.url())).send().await else { return false };
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        body["value"]["ready"] == true
    }

    /// The end of chromedriver's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        format!("chromedriver log {} ends:\n{}", self.log.display(), lines[lines.len().saturating_sub(20)..].join("\n"))
    }

    /// `DELETE /session/{id}` over a plain blocking socket: drop may run outside any runtime or
    /// while the test's runtime is shutting down.
    fn end_session(&self, id: &str) {
        let Ok(mut stream) = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2)) else { return };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let request = format!(
            "DELETE /session/{id} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            self.addr
        );
        // The first bytes of the answer are enough: chromedriver answers once Chromium quit, and
        // it keeps the connection open despite `Connection: close`.
        if stream.write_all(request.as_bytes()).is_ok() {
            let _ = stream.read(&mut [0; 512]);
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(id) = self.session.take() {
            self.end_session(&id);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
