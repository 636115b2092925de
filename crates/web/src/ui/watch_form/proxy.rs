//! The watch form's proxy fields: the proxy its checks leave through, and what to try when a
//! bot wall blocks a check (the browser, then a proxy). A proxy URL sealed by a save is shown
//! without its password and, sent back unchanged, kept sealed as it was.

use driftwatch_core::{WatchOptions, WhenBlocked, is_sealed};
use driftwatch_store::Watch;

use super::fields::WatchForm;
use crate::AppState;
use crate::proxies::shown_value;
use crate::ui::form::{checked, optional};

impl WatchForm {
    /// Fills the proxy fields from `options`.
    pub(super) fn set_proxy_fields(&mut self, options: &WatchOptions) {
        self.fetch_proxy = options.fetch.proxy.clone().unwrap_or_default();
        let blocked = options.fetch.when_blocked.clone().unwrap_or_default();
        self.blocked_browser = checked(blocked.browser);
        self.blocked_proxy = blocked.proxy.unwrap_or_default();
    }

    /// Reads the proxy fields into `options`.
    pub(super) fn proxy_options(&self, options: &mut WatchOptions) {
        options.fetch.proxy = optional(&self.fetch_proxy);
        let blocked = WhenBlocked { browser: self.blocked_browser.is_some(), proxy: optional(&self.blocked_proxy) };
        options.fetch.when_blocked = (blocked != WhenBlocked::default()).then_some(blocked);
    }

    /// The form as a person sees it: sealed proxy URLs shown without their password.
    pub(super) fn shown(mut self, state: &AppState) -> WatchForm {
        self.fetch_proxy = shown_value(state, &self.fetch_proxy);
        self.blocked_proxy = shown_value(state, &self.blocked_proxy);
        self
    }

    /// A proxy URL sent back as it was shown stands for the sealed value it showed.
    pub(super) fn with_sealed(mut self, state: &AppState, current: &Watch) -> WatchForm {
        let options = current.options();
        let sealed = [
            (&mut self.fetch_proxy, options.fetch.proxy.as_deref()),
            (&mut self.blocked_proxy, options.fetch.when_blocked.as_ref().and_then(|w| w.proxy.as_deref())),
        ];
        for (field, stored) in sealed {
            if let Some(stored) = stored.filter(|s| is_sealed(s))
                && field.trim() == shown_value(state, stored)
            {
                *field = stored.to_owned();
            }
        }
        self
    }
}
