//! An account's proxies as the API, the UI and MCP share them: saving one (sealed), testing one,
//! and settling what a watch's options say about proxies before they are stored (a named proxy
//! must exist; a URL with credentials is sealed).

use driftwatch_core::{FieldError, WatchOptions, is_sealed};
use driftwatch_store::StoreError;
use driftwatch_store::proxies::{self, Proxy, ProxyTest};

use crate::AppState;

/// The page a proxy test fetches when none is given.
pub const DEFAULT_TEST_URL: &str = "https://www.example.com/";

/// Why a proxy could not be saved.
#[derive(Debug)]
pub(crate) enum SaveError {
    /// A field is wrong (`name`, `url`).
    Field(FieldError),
    /// The database refused (a name taken is a conflict).
    Store(StoreError),
}

impl From<StoreError> for SaveError {
    fn from(e: StoreError) -> SaveError {
        SaveError::Store(e)
    }
}

/// Checks `name` and `url` as a proxy of the account is saved: the URL sealed, and shown
/// without its password.
pub(crate) fn checked(state: &AppState, name: &str, url: &str) -> Result<(String, String, String), FieldError> {
    let name = name.trim();
    if !driftwatch_validate::secret_name_ok(name) || name == driftwatch_core::NO_PROXY {
        return Err(FieldError::new("name", format!("{} (and not \"none\")", driftwatch_validate::SECRET_NAME_RULE)));
    }
    let parsed = driftwatch_net::parse_proxy_url(url).map_err(|e| FieldError::new("url", e))?;
    let shown = driftwatch_net::redact_proxy(&parsed);
    Ok((name.to_owned(), state.seal(parsed.as_str()), shown))
}

/// Adds the account's proxy `name` (`replace`: or replaces the URL of the one it has).
pub(crate) async fn save(
    state: &AppState,
    account_id: &str,
    name: &str,
    url: &str,
    replace: bool,
) -> Result<Proxy, SaveError> {
    let (name, sealed, shown) = checked(state, name, url).map_err(SaveError::Field)?;
    let (account, now) = (account_id.to_owned(), state.clock.now().naive_utc());
    let saved = state
        .store
        .write(move |c| {
            if replace && let Some(replaced) = proxies::replace(c, &account, &name, &sealed, &shown, now)? {
                return Ok(replaced);
            }
            proxies::create(c, &account, &name, &sealed, &shown, now)
        })
        .await?;
    tracing::info!(proxy.id = %saved.id, proxy.name = %saved.name, "proxy saved");
    Ok(saved)
}

/// Tests the account's proxy `name` by fetching `target` through it, records the result and
/// returns the proxy as it now stands (`None`: the account has no such proxy).
pub(crate) async fn test(
    state: &AppState,
    account_id: &str,
    name: &str,
    target: &str,
) -> Result<Option<Proxy>, StoreError> {
    let (account, wanted) = (account_id.to_owned(), name.to_owned());
    let Some(proxy) = state.store.read(move |c| proxies::find(c, &account, &wanted)).await? else {
        return Ok(None);
    };
    let tested = match state.open(&proxy.url).map(|u| driftwatch_net::parse_proxy_url(&u)) {
        Some(Ok(url)) => state.runner.test_proxy(&url, target).await,
        Some(Err(e)) => driftwatch_schedule::ProxyTested { status: None, millis: 0, error: Some(e) },
        None => driftwatch_schedule::ProxyTested {
            status: None,
            millis: 0,
            error: Some("the proxy's sealed URL cannot be opened with this node's key".into()),
        },
    };
    let result = ProxyTest {
        at: state.clock.now().naive_utc(),
        status: tested.status.map(i32::from),
        ms: i32::try_from(tested.millis).unwrap_or(i32::MAX),
        error: tested.error,
    };
    tracing::info!(proxy.name = %proxy.name, status = ?result.status, ms = result.ms, "proxy tested");
    let (account, wanted) = (account_id.to_owned(), name.to_owned());
    state
        .store
        .write(move |c| {
            proxies::record_test(c, &account, &wanted, &result)?;
            proxies::find(c, &account, &wanted)
        })
        .await
}

/// Settles what `options` (stored JSON, as validation returned it) say about proxies before
/// they are saved: every proxy they name must be one of the account's, and a proxy URL that
/// carries a password is sealed. A value sealed by an earlier save is kept as it is.
pub(crate) async fn settle_options(state: &AppState, account_id: &str, stored: &mut String) -> Result<(), FieldError> {
    let Ok(mut options) = serde_json::from_str::<WatchOptions>(stored) else { return Ok(()) };
    let named: Vec<(&'static str, String)> =
        driftwatch_validate::named_proxies(&options).into_iter().map(|(f, v)| (f, v.to_owned())).collect();
    if !named.is_empty() {
        let account = account_id.to_owned();
        let have: Vec<String> = state
            .store
            .read(move |c| proxies::list(c, &account))
            .await
            .map_err(|e| FieldError::new("options.fetch.proxy", format!("cannot read your proxies: {e}")))?
            .into_iter()
            .map(|p| p.name)
            .collect();
        for (field, name) in named {
            if !have.contains(&name) {
                return Err(FieldError::new(
                    field,
                    format!("you have no proxy named {name:?} (add it under Proxies, or give a proxy URL)"),
                ));
            }
        }
    }
    let mut sealed_any = false;
    let fetch = &mut options.fetch;
    let blocked = fetch.when_blocked.as_mut().and_then(|w| w.proxy.as_mut());
    for value in [fetch.proxy.as_mut(), blocked].into_iter().flatten() {
        let with_password =
            value.contains("://") && driftwatch_net::parse_proxy_url(value).is_ok_and(|u| u.password().is_some());
        if with_password && !is_sealed(value) && state.keyring.is_some() {
            *value = state.seal(value);
            sealed_any = true;
        }
    }
    if sealed_any {
        *stored = serde_json::to_string(&options).map_err(|e| FieldError::new("options", e.to_string()))?;
    }
    Ok(())
}

/// A proxy value of a watch's options as a person may see it: a sealed URL opened and shown
/// without its password.
pub(crate) fn shown_value(state: &AppState, value: &str) -> String {
    if !is_sealed(value) {
        return value.to_owned();
    }
    state
        .open(value)
        .and_then(|url| driftwatch_net::parse_proxy_url(&url).ok())
        .map_or_else(|| "(a sealed proxy URL)".to_owned(), |url| driftwatch_net::redact_proxy(&url))
}
