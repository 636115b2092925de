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
    /// The watch's kept session, opened (with `options.fetch.session.keep`).
    pub session: Option<driftwatch_core::SessionState>,
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
        let mut access = self.reader().operator_access();
        access.secrets = self.open_secrets(account_id, options).await?;
        Ok(access)
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
