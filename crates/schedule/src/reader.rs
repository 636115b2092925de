//! What reads a watch's page: the fetcher, the node's browser, per-host turns and the text cap.
//! A [`crate::Runner`] reads through one for every check; `driftwatch check` builds one alone,
//! so a one-off check reads a page exactly as a scheduled check does.

use std::sync::Arc;

use chrono::NaiveDateTime;
use driftwatch_core::Clock;
use driftwatch_scrape::Fetcher;

use crate::hosts::Hosts;
use crate::runner::RunnerConfig;

/// Reads pages as watches read them (see `check/read.rs`), saving nothing.
pub struct PageReader {
    fetcher: Fetcher,
    clock: Arc<dyn Clock>,
    config: RunnerConfig,
    hosts: Hosts,
    /// The node's browser, for watches that render (none: they fail, saying so).
    browsers: Option<driftwatch_browser::Browsers>,
}

impl PageReader {
    /// A reader with `config`'s per-host limits, text cap and metrics, and no browser.
    pub fn new(fetcher: Fetcher, clock: Arc<dyn Clock>, config: RunnerConfig) -> PageReader {
        let hosts = Hosts::new(config.per_host_concurrency, config.per_host_gap);
        PageReader { fetcher, clock, config, hosts, browsers: None }
    }

    /// The reader with a browser for the watches that render.
    pub fn with_browsers(mut self, browsers: driftwatch_browser::Browsers) -> PageReader {
        self.browsers = Some(browsers);
        self
    }

    pub(crate) fn set_browsers(&mut self, browsers: driftwatch_browser::Browsers) {
        self.browsers = Some(browsers);
    }

    /// The node's browser, when it has one.
    pub fn browsers(&self) -> Option<&driftwatch_browser::Browsers> {
        self.browsers.as_ref()
    }

    /// A read without an account: through the operator's proxy, if any, with no secrets.
    pub fn operator_access(&self) -> crate::Access {
        crate::Access { proxy: self.fetcher.options().proxy.clone(), ..crate::Access::default() }
    }

    pub(crate) fn fetcher(&self) -> &Fetcher {
        &self.fetcher
    }

    pub(crate) fn hosts(&self) -> &Hosts {
        &self.hosts
    }

    pub(crate) fn config(&self) -> &RunnerConfig {
        &self.config
    }

    pub(crate) fn now(&self) -> NaiveDateTime {
        self.clock.now().naive_utc()
    }
}
