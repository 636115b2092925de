//! One browser per node, started when first needed, restarted when it fails or grows.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use chromiumoxide::Browser;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::handler::viewport::Viewport;
use futures_util::StreamExt;
use tokio::sync::{Mutex, Semaphore};

use crate::config::BrowserConfig;
use crate::instance::Instance;
use crate::process::{Process, find_chromium};
use crate::proxy::GuardProxy;
use crate::render::{self, RenderError, RenderRequest, Rendered};

/// What the browser has done since the node started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrowserStats {
    /// Renders finished (successful or not).
    pub renders: u64,
    /// Browsers started (the first one included).
    pub starts: u64,
    /// The local browser's process id, while one runs.
    pub pid: Option<u32>,
}

/// Guard proxies chained to users' proxies kept at once.
const MAX_CHAINED: usize = 64;

/// The node's browser. Cheap to clone.
#[derive(Clone)]
pub struct Browsers {
    inner: Arc<Inner>,
}

struct Inner {
    config: BrowserConfig,
    executable: Option<PathBuf>,
    permits: Semaphore,
    current: Mutex<Option<Arc<Instance>>>,
    proxy: Mutex<Option<Arc<GuardProxy>>>,
    /// Guard proxies chained to users' proxies, by proxy URL, started on first use.
    chained: Mutex<std::collections::HashMap<String, Arc<GuardProxy>>>,
    renders: AtomicU64,
    starts: AtomicU64,
    closed: AtomicBool,
}

impl Browsers {
    /// The node's browser; nothing starts until the first render.
    pub fn new(config: BrowserConfig) -> Browsers {
        let executable = match config.remote {
            Some(_) => None,
            None => find_chromium(config.executable.as_deref(), config.search_path.as_deref()),
        };
        Browsers {
            inner: Arc::new(Inner {
                permits: Semaphore::new(config.concurrency.max(1)),
                config,
                executable,
                current: Mutex::new(None),
                proxy: Mutex::new(None),
                chained: Mutex::new(std::collections::HashMap::new()),
                renders: AtomicU64::new(0),
                starts: AtomicU64::new(0),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// Whether a browser is configured: a remote address, or a Chromium executable found.
    pub fn available(&self) -> bool {
        self.inner.config.remote.is_some() || self.inner.executable.is_some()
    }

    /// Why no browser is available, naming what fixes it.
    pub fn unavailable_reason(&self) -> String {
        match &self.inner.config.executable {
            Some(path) => format!("no Chromium at {} (DRIFTWATCH_CHROMIUM)", path.display()),
            None => "no browser: install Chromium (Debian: apt-get install chromium), or set DRIFTWATCH_CHROMIUM \
                     or DRIFTWATCH_BROWSER_WS"
                .to_owned(),
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &BrowserConfig {
        &self.inner.config
    }

    /// Counters, and the local browser's process id.
    pub async fn stats(&self) -> BrowserStats {
        let pid = self.inner.current.lock().await.as_ref().and_then(|i| i.pid);
        BrowserStats {
            renders: self.inner.renders.load(Ordering::Relaxed),
            starts: self.inner.starts.load(Ordering::Relaxed),
            pid,
        }
    }

    /// Memory (PSS) of the local browser's processes, in bytes; `None` while none runs (or
    /// the browser is remote).
    pub async fn memory(&self) -> Option<u64> {
        let pid = self.inner.current.lock().await.as_ref().and_then(|i| i.pid)?;
        tokio::task::spawn_blocking(move || crate::process::tree_memory(pid)).await.ok()
    }

    /// The guard proxy's counters of pages' requests (passed, refused), once it runs.
    pub async fn proxy_counts(&self) -> Option<(u64, u64)> {
        self.inner.proxy.lock().await.as_ref().map(|p| (p.passed(), p.refused()))
    }

    /// Renders a page: waits for a render slot, then loads, waits, runs the steps and reads
    /// the document (and a screenshot when asked), all within `request.timeout`.
    pub async fn render(&self, request: RenderRequest<'_>) -> Result<Rendered, RenderError> {
        if !self.available() {
            return Err(RenderError::Unavailable(self.unavailable_reason()));
        }
        let deadline = tokio::time::Instant::now() + request.timeout;
        let _permit = tokio::time::timeout_at(deadline, self.inner.permits.acquire())
            .await
            .map_err(|_| RenderError::Timeout(request.timeout))?
            .map_err(|_| RenderError::Unavailable("the browser is shutting down".into()))?;
        let instance = tokio::time::timeout_at(deadline, self.instance())
            .await
            .map_err(|_| RenderError::Browser(format!("the browser did not start within {:?}", request.timeout)))??;
        let chained = match request.proxy {
            Some(proxy) => Some(self.chained(proxy).await?),
            None => None,
        };
        let guard = chained.as_ref().map_or_else(|| instance.proxy.url(), |p| p.url());
        let mut result = render::render(&instance, &self.inner.config, &request, &guard, deadline).await;
        if let Err(RenderError::Crashed(why)) = &result {
            // Once more in a fresh context, within what is left of the render's time: a renderer
            // killed from outside (or by a page's passing spike) rarely dies twice.
            tracing::warn!(url = request.url, why = why.as_str(), "a page crashed its renderer; rendering it again");
            let first = why.clone();
            result = render::render(&instance, &self.inner.config, &request, &guard, deadline).await.map(|mut r| {
                r.note.get_or_insert_with(|| {
                    format!("the page crashed the browser's renderer ({first}) and rendered on the second try")
                });
                r
            });
        }
        self.inner.renders.fetch_add(1, Ordering::Relaxed);
        if let Err(RenderError::Browser(why)) = &result {
            instance.break_down(why);
        }
        instance.renders.fetch_add(1, Ordering::Relaxed);
        result
    }

    /// The browser to render in: the current one, or a new one when there is none, it failed,
    /// it has rendered enough pages or it uses too much memory.
    async fn instance(&self) -> Result<Arc<Instance>, RenderError> {
        let mut current = self.inner.current.lock().await;
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(RenderError::Unavailable("the browser is shutting down".into()));
        }
        if let Some(instance) = current.as_ref() {
            let renders = instance.renders.load(Ordering::Relaxed);
            let worn = instance.pid.is_some() && renders >= self.inner.config.recycle_after;
            // Measured every tenth render: reading /proc is cheap but not free.
            let heavy = renders % 10 == 9
                && instance.process.lock().ok().and_then(|p| p.as_ref().and_then(Process::memory)).unwrap_or(0)
                    > self.inner.config.memory_cap;
            if instance.usable() && !worn && !heavy {
                return Ok(instance.clone());
            }
            tracing::info!(renders, worn, heavy, "replacing the browser");
            if instance.usable() {
                // Worn or heavy, not broken: its connection closing later is expected.
                instance.closing.store(true, Ordering::SeqCst);
            }
            // Renders still using the old one finish in it; it goes when the last one does.
            *current = None;
        }
        let instance = Arc::new(self.start().await?);
        *current = Some(instance.clone());
        if instance.pid.is_some() {
            tokio::spawn(watch_process(Arc::downgrade(&instance)));
        }
        Ok(instance)
    }

    async fn proxy(&self) -> Result<Arc<GuardProxy>, RenderError> {
        let mut proxy = self.inner.proxy.lock().await;
        if let Some(proxy) = proxy.as_ref() {
            return Ok(proxy.clone());
        }
        let started = GuardProxy::start_with(
            self.inner.config.policy,
            self.inner.config.exempt.clone(),
            self.inner.config.proxy_bind,
        )
        .await
        .map_err(|e| RenderError::Browser(format!("cannot start the guard proxy: {e}")))?;
        let started = Arc::new(started);
        *proxy = Some(started.clone());
        Ok(started)
    }

    /// The guard proxy that leaves through `upstream`, started on first use. At most
    /// [`MAX_CHAINED`] are kept; past that the old ones go (renders using one keep it open).
    async fn chained(&self, upstream: &url::Url) -> Result<Arc<GuardProxy>, RenderError> {
        let mut chained = self.inner.chained.lock().await;
        if let Some(proxy) = chained.get(upstream.as_str()) {
            return Ok(proxy.clone());
        }
        if chained.len() >= MAX_CHAINED {
            chained.clear();
        }
        let config = &self.inner.config;
        let started = GuardProxy::start_chained(config.policy, config.exempt.clone(), upstream.clone())
            .await
            .map_err(|e| RenderError::Browser(format!("cannot start the guard proxy: {e}")))?;
        let started = Arc::new(started);
        chained.insert(upstream.as_str().to_owned(), started.clone());
        Ok(started)
    }

    async fn start(&self) -> Result<Instance, RenderError> {
        let proxy = self.proxy().await?;
        let config = &self.inner.config;
        let (process, ws_url) = match (&config.remote, &self.inner.executable) {
            (Some(remote), _) => (None, remote.clone()),
            (None, Some(executable)) => {
                let process = Process::start(executable, &proxy.background_url(), config.window, &config.extra_args)
                    .await
                    .map_err(|e| RenderError::Browser(format!("cannot start Chromium: {e}")))?;
                let url = process.ws_url.clone();
                (Some(process), url)
            }
            (None, None) => return Err(RenderError::Unavailable(self.unavailable_reason())),
        };
        let handler_config = HandlerConfig {
            viewport: Some(Viewport {
                width: config.window.0,
                height: config.window.1,
                device_scale_factor: Some(1.0),
                ..Viewport::default()
            }),
            // Renders are bounded by their own timeout; this only backs it up.
            request_timeout: Duration::from_secs(330),
            ..HandlerConfig::default()
        };
        let (browser, mut handler) = Browser::connect_with_config(ws_url, handler_config)
            .await
            .map_err(|e| RenderError::Browser(format!("cannot connect to the browser: {e}")))?;
        let gone = tokio_util::sync::CancellationToken::new();
        let signal = gone.clone();
        let closing = Arc::new(AtomicBool::new(false));
        let expected = closing.clone();
        let handler = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                match event {
                    Ok(()) => {}
                    Err(chromiumoxide::error::CdpError::InvalidMessage(..)) => {}
                    Err(e) => {
                        if !expected.load(Ordering::SeqCst) {
                            tracing::warn!(error = %e, "the DevTools connection failed");
                        }
                        break;
                    }
                }
            }
            // Commands in flight are never answered now: renders waiting on them stop here.
            signal.cancel();
        });
        self.inner.starts.fetch_add(1, Ordering::Relaxed);
        let pid = process.as_ref().and_then(Process::pid);
        Ok(Instance {
            browser,
            process: std::sync::Mutex::new(process),
            pid,
            broken: AtomicBool::new(false),
            renders: AtomicU32::new(0),
            proxy,
            handler,
            gone,
            closing,
            agent: tokio::sync::OnceCell::new(),
        })
    }

    /// Closes the browser (asking it to quit, then killing what is left after `grace`) and
    /// refuses further renders. Idempotent.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.permits.close();
        let instance = self.inner.current.lock().await.take();
        if let Some(instance) = instance {
            instance.closing.store(true, Ordering::SeqCst);
            instance.broken.store(true, Ordering::SeqCst);
            let process = instance.process.lock().ok().and_then(|mut p| p.take());
            if let Some(process) = process {
                // Renders still in flight end with an error as the browser goes.
                let close = chromiumoxide::cdp::browser_protocol::browser::CloseParams::default();
                let _ = tokio::time::timeout(grace / 2, instance.browser.execute(close)).await;
                process.stop(grace / 2).await;
                tracing::info!("Chromium closed");
            }
            instance.handler.abort();
        }
        self.inner.proxy.lock().await.take();
    }
}

/// Notices a local browser's death (a crash, the kernel's OOM killer, `kill`): its DevTools
/// connection does not always say so, and renders waiting on it must stop at once.
async fn watch_process(instance: std::sync::Weak<Instance>) {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tick.tick().await;
        let Some(instance) = instance.upgrade() else { return };
        if instance.gone.is_cancelled() {
            return;
        }
        let exited = instance.process.lock().map(|mut p| p.as_mut().is_some_and(Process::exited)).unwrap_or(true);
        if exited {
            tracing::warn!(pid = ?instance.pid, "the browser exited");
            instance.gone.cancel();
            return;
        }
    }
}
