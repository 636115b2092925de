//! The browser's settings.

use std::ffi::OsString;
use std::path::PathBuf;

use driftwatch_net::TargetPolicy;

/// Settings of the browser.
#[derive(Debug, Clone)]
pub struct BrowserConfig {
    /// Chromium's executable; looked for in `search_path` when not set.
    pub executable: Option<PathBuf>,
    /// Where to look for Chromium when `executable` is not set: a `PATH` value, read from the
    /// environment by the caller (`None`: nowhere).
    pub search_path: Option<OsString>,
    /// A remote browser's DevTools address (`ws://...`, or `http://host:9222`) instead of a
    /// local Chromium.
    pub remote: Option<String>,
    /// Renders in flight at once.
    pub concurrency: usize,
    /// A local browser is restarted after this many renders.
    pub recycle_after: u32,
    /// A local browser is restarted once its process tree uses more than this (PSS, bytes).
    pub memory_cap: u64,
    /// Which addresses pages and their resources may reach.
    pub policy: TargetPolicy,
    /// Exact addresses (IP and port) reachable whatever `policy` says.
    pub exempt: Vec<std::net::SocketAddr>,
    /// Where the guard proxy listens (127.0.0.1 on a free port when not set). A remote
    /// browser must reach it there.
    pub proxy_bind: Option<std::net::SocketAddr>,
    /// The window: width and height in CSS pixels.
    pub window: (u32, u32),
    /// Screenshots larger than this (encoded) are not kept.
    pub max_screenshot_bytes: usize,
    /// Full-page screenshots are cut at this height.
    pub full_page_max_height: u32,
    /// The rendered document's HTML larger than this fails the check.
    pub max_html_bytes: usize,
    /// Flags added to a local Chromium's command line after driftwatch's own (to try one
    /// out, as `driftwatch-bench browser --chromium-arg` does); none by default.
    pub extra_args: Vec<String>,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        BrowserConfig {
            executable: None,
            search_path: None,
            remote: None,
            concurrency: 2,
            recycle_after: 200,
            memory_cap: 1536 * 1024 * 1024,
            policy: TargetPolicy::default(),
            exempt: Vec::new(),
            proxy_bind: None,
            window: (1280, 900),
            max_screenshot_bytes: 4 * 1024 * 1024,
            full_page_max_height: 10_000,
            max_html_bytes: 5 * 1024 * 1024,
            extra_args: Vec::new(),
        }
    }
}
