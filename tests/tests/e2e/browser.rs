//! A real browser for UI tests: headless Chromium driven through chromedriver with fantoccini,
//! screenshots at desktop and phone widths in light and dark, and axe-core accessibility checks.
//!
//! A test starts one with [`Browser::start`] and returns early on `None` (no chromedriver or
//! Chromium on this machine: one `SKIPPED` line goes to stderr). With
//! `DRIFTWATCH_REQUIRE_BROWSER=1`, as in CI, a missing browser or axe-core fails the test instead.
//! Every `Browser` has its own chromedriver on its own port and its own Chromium profile, so
//! browser tests run in parallel like the rest.
//!
//! The helpers panic with the selector and page in the message, like the rest of the harness:
//! a test reads as a list of steps.

mod axe;
mod capture;
mod driver;
pub mod self_test;

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

pub use axe::Violation;
pub use capture::Scheme;
use driver::{Driver, Tools};

/// How long element lookups wait for the element to appear: long enough for a page answered by a
/// database and drawn by a Chromium that share two loaded cores with the rest of the suite (a
/// wait returns as soon as the element is there; this only bounds a failure).
const ELEMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long opening the browser session may take (Chromium's first start is the slow part).
const SESSION_TIMEOUT: Duration = Duration::from_secs(60);

/// One headless Chromium session. Dropping it quits Chromium and chromedriver and removes the
/// profile directory.
pub struct Browser {
    client: Client,
    // Field order is drop order: the session ends before the profile directory goes.
    _driver: Driver,
    _profile: tempfile::TempDir,
}

/// A cookie as the browser holds it, with the flags a test asserts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cookie {
    pub name: String,
    pub value: String,
    pub path: Option<String>,
    pub http_only: bool,
    pub secure: bool,
    /// `Strict`, `Lax` or `None`, as the server set it.
    pub same_site: Option<String>,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session (1280x900). `None` when no
    /// chromedriver or Chromium is installed and `DRIFTWATCH_REQUIRE_BROWSER` is not `1`.
    pub async fn start() -> Option<Browser> {
        let tools = match Tools::find() {
            Ok(tools) => tools,
            Err(why) => {
                skip_or_fail(&format!("browser tests: {why}"));
                return None;
            }
        };
        let profile = tempfile::Builder::new().prefix("driftwatch-browser-").tempdir().expect("temp dir");
        let mut driver = Driver::start(&tools.chromedriver, profile.path().join("chromedriver.log")).await;
        let mut builder = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
        builder.capabilities(session_capabilities(&tools.chromium, &profile.path().join("chromium")));
        let client = match tokio::time::timeout(SESSION_TIMEOUT, builder.connect(&driver.url())).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => panic!("cannot open a Chromium session: {e}; {}", driver.log_tail()),
            Err(_) => panic!("no Chromium session within {SESSION_TIMEOUT:?}; {}", driver.log_tail()),
        };
        driver.session = client.session_id().await.expect("session id");
        Some(Browser { client, _driver: driver, _profile: profile })
    }

    /// The fantoccini client, for what the helpers do not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Navigates and waits for the page to load.
    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap_or_else(|e| panic!("goto {url}: {e}"));
    }

    pub async fn current_url(&self) -> url::Url {
        self.client.current_url().await.expect("current url")
    }

    /// Waits (up to [`ELEMENT_TIMEOUT`]) for an element matching `css` and returns it.
    pub async fn wait_for(&self, css: &str) -> Element {
        match self.client.wait().at_most(ELEMENT_TIMEOUT).for_element(Locator::Css(css)).await {
            Ok(element) => element,
            Err(e) => panic!("no element {css} on {} within {ELEMENT_TIMEOUT:?}: {e}", self.current_url().await),
        }
    }

    /// Chooses the file at `path` in the file input `css`, as a person picking it would.
    pub async fn attach(&self, css: &str, path: &std::path::Path) {
        let field = self.wait_for(css).await;
        let path = path.to_str().expect("a UTF-8 path");
        field.send_keys(path).await.unwrap_or_else(|e| panic!("attach {css}: {e}"));
    }

    /// Replaces the value of the field matching `css` with `text`, typed as a user would. A
    /// field gone stale (the page it was found on was still being replaced) is looked up again.
    pub async fn fill(&self, css: &str, text: &str) {
        let mut tries = 0;
        loop {
            let field = self.wait_for(css).await;
            let typed = match field.clear().await {
                Ok(()) => field.send_keys(text).await,
                Err(e) => Err(e),
            };
            match typed {
                Ok(()) => return,
                Err(e) if tries < 20 && is_stale(&e.to_string()) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("fill {css}: {e}"),
            }
        }
    }

    /// Clicks the element matching `css`; a click that navigates returns once the new page loaded.
    pub async fn click(&self, css: &str) {
        self.wait_for(css).await.click().await.unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// The rendered text of the element matching `css`. An element gone stale (the page was
    /// replaced between finding and reading it, as after a form post) is looked up again.
    pub async fn text(&self, css: &str) -> String {
        let mut tries = 0;
        loop {
            match self.wait_for(css).await.text().await {
                Ok(text) => return text,
                Err(e) if tries < 20 && is_stale(&e.to_string()) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("text of {css}: {e}"),
            }
        }
    }

    /// Waits (up to [`ELEMENT_TIMEOUT`]) until the element matching `css` contains `needle` (after an
    /// action whose answer page replaces one that had the same element); returns its text.
    pub async fn wait_for_text(&self, css: &str, needle: &str) -> String {
        let deadline = tokio::time::Instant::now() + ELEMENT_TIMEOUT;
        loop {
            let found = match self.client.find(Locator::Css(css)).await {
                Ok(element) => element.text().await.ok(),
                Err(_) => None,
            };
            match found {
                Some(text) if text.contains(needle) => return text,
                other if tokio::time::Instant::now() >= deadline => {
                    panic!("{css} on {} never said {needle:?}; last: {other:?}", self.current_url().await)
                }
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Submits the form matching `form_css` by clicking its first submit button (as a user would,
    /// so validation and submit handlers run) and waits for the answer page.
    pub async fn submit_form(&self, form_css: &str) {
        let button =
            format!("{form_css} button:not([type]), {form_css} button[type=submit], {form_css} input[type=submit]");
        self.click(&button).await;
    }

    /// Runs `js` as a function body in the page (`return` gives the result). WebDriver scripts
    /// are not subject to the page's Content-Security-Policy.
    pub async fn execute(&self, js: &str) -> Value {
        self.client.execute(js, vec![]).await.unwrap_or_else(|e| panic!("script failed: {e}\n{js}"))
    }

    /// All cookies visible to the current page, flags included.
    pub async fn cookies(&self) -> Vec<Cookie> {
        let cookies = self.client.get_all_cookies().await.expect("cookies");
        cookies
            .iter()
            .map(|c| Cookie {
                name: c.name().to_owned(),
                value: c.value().to_owned(),
                path: c.path().map(str::to_owned),
                http_only: c.http_only().unwrap_or(false),
                secure: c.secure().unwrap_or(false),
                same_site: c.same_site().map(|s| s.to_string()),
            })
            .collect()
    }

    /// The cookie named `name`; panics listing the cookies there are when it is missing.
    pub async fn cookie(&self, name: &str) -> Cookie {
        let cookies = self.cookies().await;
        cookies
            .iter()
            .find(|c| c.name == name)
            .cloned()
            .unwrap_or_else(|| panic!("no cookie {name}; cookies: {cookies:?}"))
    }
}

/// Whether a WebDriver error says the element left the page (replaced by a navigation).
fn is_stale(error: &str) -> bool {
    error.contains("stale element") || error.contains("does not belong to the document")
}

fn session_capabilities(chromium: &std::path::Path, profile: &std::path::Path) -> fantoccini::wd::Capabilities {
    let args = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--no-proxy-server",
        "--force-color-profile=srgb",
        "--hide-scrollbars",
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .chain([format!("--user-data-dir={}", profile.display())]);
    let capabilities = json!({
        "browserName": "chrome",
        "goog:chromeOptions": { "binary": chromium, "args": args.collect::<Vec<_>>() },
    });
    capabilities.as_object().cloned().expect("an object")
}

/// Where cargo builds: `CARGO_TARGET_DIR` or the workspace's `target/`. Screenshots and the
/// npm-installed axe-core live under it.
pub fn target_dir() -> PathBuf {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => workspace.join(dir), // an absolute path replaces the base
        _ => workspace.join("target"),
    }
}

/// A browser tool is missing: fails under `DRIFTWATCH_REQUIRE_BROWSER=1`, otherwise says
/// `SKIPPED {what}` once per test binary. Written to stderr directly, past the test harness's
/// output capture, so a skip is seen without `--nocapture`.
fn skip_or_fail(what: &str) {
    if std::env::var("DRIFTWATCH_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
        panic!("DRIFTWATCH_REQUIRE_BROWSER=1 but {what}");
    }
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !said.iter().any(|s| s == what) {
        let _ = writeln!(std::io::stderr(), "SKIPPED {what}");
        said.push(what.to_owned());
    }
}
