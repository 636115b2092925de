//! An account's named proxies. The URL is stored sealed (the caller seals and opens it); the
//! list shows `shown`, the URL without its password.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::{IdKind, new_id};

use crate::schema::proxies;
use crate::{DbConn, StoreError, StoreResult, conflict_on_unique};

/// One of an account's proxies.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Insertable)]
#[diesel(table_name = proxies)]
pub struct Proxy {
    /// `prx_…`.
    pub id: String,
    /// Its owner.
    pub account_id: String,
    /// What watches call it (`options.fetch.proxy`), unique in the account.
    pub name: String,
    /// The URL, sealed.
    pub url: String,
    /// The URL with its password replaced by `****`.
    pub shown: String,
    /// When it was added.
    pub created_at: NaiveDateTime,
    /// When its URL last changed.
    pub updated_at: NaiveDateTime,
    /// When it was last tested.
    pub tested_at: Option<NaiveDateTime>,
    /// The status the test URL answered with through it (`None`: no answer).
    pub test_status: Option<i32>,
    /// How long the test took, in milliseconds.
    pub test_ms: Option<i32>,
    /// What went wrong in the test.
    pub test_error: Option<String>,
}

/// The result of testing a proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyTest {
    /// When.
    pub at: NaiveDateTime,
    /// The status the test URL answered with (`None`: no answer).
    pub status: Option<i32>,
    /// How long it took, in milliseconds.
    pub ms: i32,
    /// What went wrong.
    pub error: Option<String>,
}

/// The account's proxies, by name.
pub fn list(conn: &mut DbConn, account_id: &str) -> StoreResult<Vec<Proxy>> {
    Ok(proxies::table
        .filter(proxies::account_id.eq(account_id))
        .order(proxies::name.asc())
        .select(Proxy::as_select())
        .load(conn)?)
}

/// The account's proxy called `name`.
pub fn find(conn: &mut DbConn, account_id: &str, name: &str) -> StoreResult<Option<Proxy>> {
    Ok(proxies::table
        .filter(proxies::account_id.eq(account_id).and(proxies::name.eq(name)))
        .select(Proxy::as_select())
        .first(conn)
        .optional()?)
}

/// Adds a proxy; a name the account already uses is a [`crate::StoreError::Conflict`].
pub fn create(
    conn: &mut DbConn,
    account_id: &str,
    name: &str,
    sealed_url: &str,
    shown: &str,
    now: NaiveDateTime,
) -> StoreResult<Proxy> {
    let proxy = Proxy {
        id: new_id(IdKind::Proxy),
        account_id: account_id.to_owned(),
        name: name.to_owned(),
        url: sealed_url.to_owned(),
        shown: shown.to_owned(),
        created_at: now,
        updated_at: now,
        tested_at: None,
        test_status: None,
        test_ms: None,
        test_error: None,
    };
    diesel::insert_into(proxies::table)
        .values(&proxy)
        .execute(conn)
        .map_err(conflict_on_unique("a proxy with this name exists"))?;
    Ok(proxy)
}

/// Replaces the URL of the account's proxy `name` (forgetting its last test); `None` when there
/// is no such proxy.
pub fn replace(
    conn: &mut DbConn,
    account_id: &str,
    name: &str,
    sealed_url: &str,
    shown: &str,
    now: NaiveDateTime,
) -> StoreResult<Option<Proxy>> {
    let updated = diesel::update(proxies::table.filter(proxies::account_id.eq(account_id).and(proxies::name.eq(name))))
        .set((
            proxies::url.eq(sealed_url),
            proxies::shown.eq(shown),
            proxies::updated_at.eq(now),
            proxies::tested_at.eq(None::<NaiveDateTime>),
            proxies::test_status.eq(None::<i32>),
            proxies::test_ms.eq(None::<i32>),
            proxies::test_error.eq(None::<String>),
        ))
        .execute(conn)?;
    if updated == 0 { Ok(None) } else { find(conn, account_id, name) }
}

/// Records a test of the account's proxy `name`.
pub fn record_test(conn: &mut DbConn, account_id: &str, name: &str, test: &ProxyTest) -> StoreResult<bool> {
    let updated = diesel::update(proxies::table.filter(proxies::account_id.eq(account_id).and(proxies::name.eq(name))))
        .set((
            proxies::tested_at.eq(Some(test.at)),
            proxies::test_status.eq(test.status),
            proxies::test_ms.eq(Some(test.ms)),
            proxies::test_error.eq(test.error.as_deref()),
        ))
        .execute(conn)?;
    Ok(updated > 0)
}

/// Deletes the account's proxy `name`; whether there was one.
pub fn delete(conn: &mut DbConn, account_id: &str, name: &str) -> StoreResult<bool> {
    let deleted = diesel::delete(proxies::table.filter(proxies::account_id.eq(account_id).and(proxies::name.eq(name))))
        .execute(conn)?;
    Ok(deleted > 0)
}

/// The ids of the account's watches whose options name the proxy `name` (as their proxy or
/// the one to try when blocked), at most `limit`.
pub fn watches_using(conn: &mut DbConn, account_id: &str, name: &str, limit: i64) -> StoreResult<Vec<String>> {
    use crate::schema::watches;
    // Options are stored as compact JSON and names are plain (letters, digits, `.-_`), so the
    // pair is written exactly so wherever a watch names it.
    let pattern = format!("%\"proxy\":\"{}\"%", name.replace('\\', "\\\\").replace('_', "\\_").replace('%', "\\%"));
    Ok(watches::table
        .filter(watches::account_id.eq(account_id).and(watches::options.like(pattern).escape('\\')))
        .select(watches::id)
        .order(watches::id.asc())
        .limit(limit)
        .load(conn)?)
}

impl Proxy {
    /// Whether its last test got a success status through it.
    pub fn error_free(&self) -> bool {
        self.test_error.is_none() && self.test_status.is_some_and(|s| (200..400).contains(&s))
    }
}

/// Seals afresh, under `keyring`'s current key, every proxy URL and every proxy URL sealed in
/// place in a watch's options (`fetch.proxy`, `when_blocked.proxy`) that is plaintext or sealed
/// under another key, each under a compare-and-set on the value read; returns how many rows
/// changed. Run with the other reseals, at start, after a key rotation and after a restore.
pub fn reseal_proxies(conn: &mut DbConn, keyring: &driftwatch_core::Keyring) -> StoreResult<usize> {
    use crate::schema::watches;
    let fail =
        |what: String| move |e: driftwatch_core::SealError| StoreError::Batch(format!("{what} cannot be opened: {e}"));
    let mut resealed = 0;
    let urls: Vec<(String, String)> = proxies::table.select((proxies::id, proxies::url)).load(conn)?;
    for (id, url) in urls {
        // Plaintext is sealed, another key's value sealed again, the current key's left alone.
        if let Some(fresh) = keyring.reseal(&url).map_err(fail(format!("the proxy {id}")))? {
            resealed += diesel::update(proxies::table.find(&id).filter(proxies::url.eq(&url)))
                .set(proxies::url.eq(fresh))
                .execute(conn)?;
        }
    }
    let options: Vec<(String, String)> =
        watches::table.filter(watches::options.like("%dwenc:%")).select((watches::id, watches::options)).load(conn)?;
    for (id, stored) in options {
        let fresh = reseal_within(&stored, keyring).map_err(fail(format!("a proxy in the options of watch {id}")))?;
        if fresh != stored {
            resealed += diesel::update(watches::table.find(&id).filter(watches::options.eq(&stored)))
                .set(watches::options.eq(fresh))
                .execute(conn)?;
        }
    }
    Ok(resealed)
}

/// `text` with each sealed value in it (`dwenc:v1:<id>:<base64url>`, which JSON never escapes)
/// sealed afresh when `keyring` says it needs it.
fn reseal_within(text: &str, keyring: &driftwatch_core::Keyring) -> Result<String, driftwatch_core::SealError> {
    let (mut out, mut done) = (String::with_capacity(text.len()), 0);
    for (at, value) in driftwatch_core::sealed_within(text) {
        out.push_str(&text[done..at]);
        out.push_str(&keyring.reseal(value)?.unwrap_or_else(|| value.to_owned()));
        done = at + value.len();
    }
    out.push_str(&text[done..]);
    Ok(out)
}
