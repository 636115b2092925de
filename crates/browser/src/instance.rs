//! One connected browser: what a render uses of it, and how it is judged broken.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use chromiumoxide::Browser;

use crate::process::Process;
use crate::proxy::GuardProxy;

/// One connected browser.
pub(crate) struct Instance {
    pub(crate) browser: Browser,
    /// Local Chromium (none for a remote browser).
    pub(crate) process: std::sync::Mutex<Option<Process>>,
    pub(crate) pid: Option<u32>,
    /// The DevTools connection ended or a render found it broken.
    pub(crate) broken: AtomicBool,
    pub(crate) renders: AtomicU32,
    pub(crate) proxy: Arc<GuardProxy>,
    pub(crate) handler: tokio::task::JoinHandle<()>,
    /// Cancelled when the DevTools connection ends (the browser crashed, was killed or closed).
    pub(crate) gone: tokio_util::sync::CancellationToken,
    /// Set when driftwatch closes the browser itself: its connection ending is no news.
    pub(crate) closing: Arc<AtomicBool>,
    /// The browser's own user agent without `Headless`, learnt from the first page.
    pub(crate) agent: tokio::sync::OnceCell<Option<String>>,
}

impl Instance {
    /// Marks the browser as unusable: the next render starts another.
    pub(crate) fn break_down(&self, why: &str) {
        if !self.broken.swap(true, Ordering::SeqCst) {
            tracing::warn!(pid = ?self.pid, why, "browser will be restarted");
        }
    }

    /// The user agent pages see: the browser's own, without the `HeadlessChrome` that many
    /// sites turn away.
    pub(crate) async fn user_agent(&self, page: &chromiumoxide::Page) -> Option<String> {
        self.agent
            .get_or_init(|| async { page.user_agent().await.ok().map(|a| a.replace("HeadlessChrome", "Chrome")) })
            .await
            .clone()
    }

    pub(crate) fn usable(&self) -> bool {
        !self.broken.load(Ordering::SeqCst)
            && !self.gone.is_cancelled()
            && !self.handler.is_finished()
            && self.process.lock().map(|mut p| p.as_mut().is_none_or(|p| !p.exited())).unwrap_or(false)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.handler.abort();
        // Dropping the process kills its group.
    }
}
