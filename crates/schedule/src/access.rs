//! What a watch's read needs from its account beyond its options, resolved (and opened) just
//! before the read: the proxy its requests leave through and the secrets its steps type.

use std::collections::BTreeMap;

use driftwatch_core::{NO_PROXY, SEALED_PREFIX, WatchOptions};
use driftwatch_store::proxies;
use url::Url;

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
    /// The watch's kept session, opened (with `options.fetch.session.keep`).
    pub session: Option<driftwatch_core::SessionState>,
}

/// Why a read cannot have what it needs: the message and the run's `error_kind`.
pub(crate) type AccessError = (String, &'static str);

impl crate::Runner {
    /// What the account gives a read of a watch with `options`: its proxy and the secrets its
    /// steps type, opened with the runner's keyring. The error (a message and the run's
    /// `error_kind`) fails the check without reading the page.
    pub(crate) async fn access(&self, account_id: &str, options: &WatchOptions) -> Result<Access, AccessError> {
        let mut access = self.reader().operator_access();
        if let Some(proxy) = options.fetch.proxy.as_deref() {
            access.proxy = self.proxy_for(account_id, proxy, "options.fetch.proxy").await?;
        }
        if let Some(proxy) = options.fetch.when_blocked.as_ref().and_then(|w| w.proxy.as_deref()) {
            access.blocked_proxy = self.proxy_for(account_id, proxy, "options.fetch.when_blocked.proxy").await?;
        }
        access.secrets = self.open_secrets(account_id, options).await?;
        Ok(access)
    }

    /// The proxy a watch names in `field`: `"none"` (directly), a URL (sealed when it carries
    /// credentials) or the name of one of the account's proxies. A proxy on a private address
    /// passes only when the operator allows it.
    async fn proxy_for(&self, account_id: &str, value: &str, field: &str) -> Result<Option<Url>, AccessError> {
        if value == NO_PROXY {
            return Ok(None);
        }
        let written = if value.contains("://") || value.starts_with(SEALED_PREFIX) {
            self.open_sealed(value).map_err(|e| (format!("{field}: the sealed proxy URL {e}"), "proxy"))?
        } else {
            let (account, name) = (account_id.to_owned(), value.to_owned());
            let found = self
                .store()
                .read(move |c| proxies::find(c, &account, &name))
                .await
                .map_err(|e| (format!("cannot read the account's proxies: {e}"), "proxy"))?;
            let Some(found) = found else {
                return Err((format!("{field}: the account has no proxy named {value:?}"), "proxy"));
            };
            self.open_sealed(&found.url).map_err(|e| (format!("the proxy {value:?} {e}"), "proxy"))?
        };
        let url = driftwatch_net::parse_proxy_url(&written).map_err(|e| (format!("{field}: {e}"), "proxy"))?;
        driftwatch_net::vet_proxy(&url, self.config().allow_private_proxies)
            .await
            .map_err(|e| (e.to_string(), "proxy"))?;
        Ok(Some(url))
    }
}

/// What testing a proxy found: the status the test page answered with through it (`None`: no
/// answer), how long it took and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyTested {
    /// The test page's status through the proxy.
    pub status: Option<u16>,
    /// The whole request, in milliseconds.
    pub millis: u64,
    /// What went wrong (the proxy named when it is the proxy).
    pub error: Option<String>,
}

impl crate::Runner {
    /// Fetches `target` through `proxy` as a check would (the proxy's own address vetted, the
    /// target guarded) and says what came back and how long it took.
    pub async fn test_proxy(&self, proxy: &Url, target: &str) -> ProxyTested {
        let started = std::time::Instant::now();
        let result = match driftwatch_net::vet_proxy(proxy, self.config().allow_private_proxies).await {
            Err(e) => Err((None, e.to_string())),
            Ok(()) => {
                let request = driftwatch_scrape::PageRequest::default();
                match self.reader().fetcher().fetch_with(target, &request, Some(proxy)).await {
                    Ok(driftwatch_scrape::Fetched::Page(page)) => Ok(page.status),
                    Ok(driftwatch_scrape::Fetched::NotModified) => Ok(304),
                    Err(e) => Err((e.status(), e.to_string())),
                }
            }
        };
        let millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match result {
            Ok(status) => ProxyTested { status: Some(status), millis, error: None },
            Err((status, error)) => ProxyTested { status, millis, error: Some(error) },
        }
    }
}

impl crate::Runner {
    /// The account's secrets the watch's steps type, opened. A name the account does not keep
    /// (deleted since the watch was saved) fails the run, naming it and its step.
    async fn open_secrets(
        &self,
        account_id: &str,
        options: &driftwatch_core::WatchOptions,
    ) -> Result<BTreeMap<String, String>, (String, &'static str)> {
        let named = driftwatch_core::session::secret_names(&options.fetch);
        if named.is_empty() {
            return Ok(BTreeMap::new());
        }
        let names: Vec<String> = named.iter().map(|(_, n)| n.clone()).collect();
        let account = account_id.to_owned();
        let stored = self
            .store()
            .read(move |c| driftwatch_store::logins::secrets_named(c, &account, &names))
            .await
            .map_err(|e| (format!("reading the account's secrets failed: {e}"), "secret"))?;
        let mut opened = BTreeMap::new();
        for (step, name) in named {
            let Some(secret) = stored.iter().find(|s| s.name == name) else {
                return Err((
                    format!("options.fetch.steps[{step}]: the account has no secret named {name:?}"),
                    "secret",
                ));
            };
            let value = self.open_sealed(&secret.value).map_err(|e| (format!("the secret {name:?}: {e}"), "secret"))?;
            opened.insert(name, value);
        }
        Ok(opened)
    }

    /// A value the store keeps sealed, opened with the runner's keyring (a node without one
    /// reads only what was stored in the clear).
    pub(crate) fn open_sealed(&self, stored: &str) -> Result<String, String> {
        match &self.config().keyring {
            Some(keyring) => keyring.open(stored).map_err(|e| format!("cannot be opened: {e}")),
            None if driftwatch_core::is_sealed(stored) => {
                Err("cannot be opened: this node has no secret key (DRIFTWATCH_SECRET_KEY)".into())
            }
            None => Ok(stored.to_owned()),
        }
    }

    /// `plaintext` sealed with the runner's keyring (as it is, on a node without one).
    pub(crate) fn seal(&self, plaintext: &str) -> String {
        match &self.config().keyring {
            Some(keyring) => keyring.seal(plaintext),
            None => plaintext.to_owned(),
        }
    }
}
