//! Logins that stay logged in: an account's named secrets (`account_secrets`, what login steps
//! type) and a watch's kept session (`watch_sessions`). Both hold sealed values only: the caller
//! seals before writing and opens after reading.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::Keyring;

use crate::schema::{account_secrets, watch_sessions, watches};
use crate::{DbConn, StoreError, StoreResult};

/// A named secret of an account.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = account_secrets)]
pub struct AccountSecret {
    /// `sec_...`
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// The name steps use (`{"secret": "name"}`), unique per account.
    pub name: String,
    /// The value, sealed.
    pub value: String,
    /// When it was first set.
    pub created_at: NaiveDateTime,
    /// When its value was last set.
    pub updated_at: NaiveDateTime,
}

/// A watch's kept session.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = watch_sessions)]
pub struct WatchSession {
    /// The watch.
    pub watch_id: String,
    /// `core::SessionState` as JSON, sealed.
    pub state: String,
    /// How many cookies it holds.
    pub cookies: i32,
    /// How many times the login steps ran to make it.
    pub logins: i64,
    /// `check` (kept by a check) or `import` (a `cookies.txt`).
    pub source: String,
    /// When it was last saved.
    pub updated_at: NaiveDateTime,
}

/// The account's secrets, by name.
pub fn list_secrets(conn: &mut DbConn, account_id: &str) -> StoreResult<Vec<AccountSecret>> {
    Ok(account_secrets::table
        .filter(account_secrets::account_id.eq(account_id))
        .order(account_secrets::name.asc())
        .select(AccountSecret::as_select())
        .load(conn)?)
}

/// The account's secret `name`.
pub fn get_secret(conn: &mut DbConn, account_id: &str, name: &str) -> StoreResult<Option<AccountSecret>> {
    Ok(account_secrets::table
        .filter(account_secrets::account_id.eq(account_id))
        .filter(account_secrets::name.eq(name))
        .select(AccountSecret::as_select())
        .first(conn)
        .optional()?)
}

/// The account's secrets among `names` (those that exist).
pub fn secrets_named(conn: &mut DbConn, account_id: &str, names: &[String]) -> StoreResult<Vec<AccountSecret>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    Ok(account_secrets::table
        .filter(account_secrets::account_id.eq(account_id))
        .filter(account_secrets::name.eq_any(names))
        .select(AccountSecret::as_select())
        .load(conn)?)
}

/// Sets the account's secret `name` to `sealed`: a new one, or a new value of the one there.
/// Returns it and whether it is new.
pub fn set_secret(
    conn: &mut DbConn,
    account_id: &str,
    name: &str,
    sealed: &str,
    now: NaiveDateTime,
) -> StoreResult<(AccountSecret, bool)> {
    conn.transaction(|conn| {
        let updated = diesel::update(
            account_secrets::table
                .filter(account_secrets::account_id.eq(account_id))
                .filter(account_secrets::name.eq(name)),
        )
        .set((account_secrets::value.eq(sealed), account_secrets::updated_at.eq(now)))
        .execute(conn)?;
        if updated == 0 {
            let secret = AccountSecret {
                id: driftwatch_core::new_id(driftwatch_core::IdKind::Secret),
                account_id: account_id.to_owned(),
                name: name.to_owned(),
                value: sealed.to_owned(),
                created_at: now,
                updated_at: now,
            };
            diesel::insert_into(account_secrets::table).values(&secret).execute(conn)?;
            return Ok((secret, true));
        }
        let secret = get_secret(conn, account_id, name)?
            .ok_or_else(|| StoreError::Conflict(format!("the secret {name} went away")))?;
        Ok((secret, false))
    })
}

/// Deletes the account's secret `name`; whether there was one.
pub fn delete_secret(conn: &mut DbConn, account_id: &str, name: &str) -> StoreResult<bool> {
    let deleted = diesel::delete(
        account_secrets::table
            .filter(account_secrets::account_id.eq(account_id))
            .filter(account_secrets::name.eq(name)),
    )
    .execute(conn)?;
    Ok(deleted > 0)
}

/// The session kept for watch `watch_id` (the runner's look-up: the watch is already its own).
pub fn session_of(conn: &mut DbConn, watch_id: &str) -> StoreResult<Option<WatchSession>> {
    Ok(watch_sessions::table.find(watch_id).select(WatchSession::as_select()).first(conn).optional()?)
}

/// The session of the account's watch `watch_id`: `None` when the account has no such watch,
/// `Some(None)` when it keeps no session.
pub fn get_session(conn: &mut DbConn, account_id: &str, watch_id: &str) -> StoreResult<Option<Option<WatchSession>>> {
    if !owns(conn, account_id, watch_id)? {
        return Ok(None);
    }
    Ok(Some(session_of(conn, watch_id)?))
}

fn owns(conn: &mut DbConn, account_id: &str, watch_id: &str) -> StoreResult<bool> {
    let found: Option<String> = watches::table
        .filter(watches::account_id.eq(account_id))
        .filter(watches::id.eq(watch_id))
        .select(watches::id)
        .first(conn)
        .optional()?;
    Ok(found.is_some())
}

/// What a save of a session writes.
#[derive(Debug, Clone)]
pub struct SessionSave {
    /// The state, sealed.
    pub state: String,
    /// Its cookies.
    pub cookies: i32,
    /// Logins to add to the count (1 when the login steps ran, else 0).
    pub logins: i64,
    /// `check` or `import`.
    pub source: &'static str,
    /// Now.
    pub now: NaiveDateTime,
}

/// Saves watch `watch_id`'s session (the runner's write, after a good check), adding to its
/// count of logins. A watch deleted meanwhile saves nothing.
pub fn save_session(conn: &mut DbConn, watch_id: &str, save: &SessionSave) -> StoreResult<()> {
    conn.transaction(|conn| {
        let updated = diesel::update(watch_sessions::table.find(watch_id))
            .set((
                watch_sessions::state.eq(&save.state),
                watch_sessions::cookies.eq(save.cookies),
                watch_sessions::logins.eq(watch_sessions::logins + save.logins),
                watch_sessions::source.eq(save.source),
                watch_sessions::updated_at.eq(save.now),
            ))
            .execute(conn)?;
        let exists: Option<String> =
            watches::table.filter(watches::id.eq(watch_id)).select(watches::id).first(conn).optional()?;
        if updated == 0 && exists.is_some() {
            let row = WatchSession {
                watch_id: watch_id.to_owned(),
                state: save.state.clone(),
                cookies: save.cookies,
                logins: save.logins,
                source: save.source.to_owned(),
                updated_at: save.now,
            };
            diesel::insert_into(watch_sessions::table).values(&row).execute(conn)?;
        }
        Ok(())
    })
}

/// Sets the session of the account's watch `watch_id` (an import); `false` when the account
/// has no such watch.
pub fn import_session(conn: &mut DbConn, account_id: &str, watch_id: &str, save: &SessionSave) -> StoreResult<bool> {
    conn.transaction(|conn| {
        if !owns(conn, account_id, watch_id)? {
            return Ok(false);
        }
        save_session(conn, watch_id, save)?;
        Ok(true)
    })
}

/// Forgets the session of the account's watch `watch_id`; `None` when the account has no such
/// watch, else whether there was one.
pub fn delete_session(conn: &mut DbConn, account_id: &str, watch_id: &str) -> StoreResult<Option<bool>> {
    conn.transaction(|conn| {
        if !owns(conn, account_id, watch_id)? {
            return Ok(None);
        }
        let deleted = diesel::delete(watch_sessions::table.find(watch_id)).execute(conn)?;
        Ok(Some(deleted > 0))
    })
}

/// Forgets watch `watch_id`'s session (the runner's, when it was rejected by the site).
pub fn forget_session(conn: &mut DbConn, watch_id: &str) -> StoreResult<()> {
    diesel::delete(watch_sessions::table.find(watch_id)).execute(conn)?;
    Ok(())
}

/// Seals afresh, under `keyring`'s current key, every account secret and kept session that is
/// plaintext or sealed under another key (each under a compare-and-set on the value read);
/// returns how many. Run with the other reseals, at start and after a key rotation.
pub fn reseal_logins(conn: &mut DbConn, keyring: &Keyring) -> StoreResult<usize> {
    let fresh = |value: &str, what: &str| -> StoreResult<Option<String>> {
        if value.is_empty() {
            return Ok(None);
        }
        if !driftwatch_core::is_sealed(value) {
            return Ok(Some(keyring.seal(value)));
        }
        keyring.reseal(value).map_err(|e| StoreError::Batch(format!("{what} cannot be opened: {e}")))
    };
    let mut resealed = 0;
    let secrets: Vec<(String, String)> =
        account_secrets::table.select((account_secrets::id, account_secrets::value)).load(conn)?;
    for (id, value) in secrets {
        if let Some(new) = fresh(&value, &format!("the secret {id}"))? {
            resealed += diesel::update(account_secrets::table.find(&id).filter(account_secrets::value.eq(&value)))
                .set(account_secrets::value.eq(new))
                .execute(conn)?;
        }
    }
    let sessions: Vec<(String, String)> =
        watch_sessions::table.select((watch_sessions::watch_id, watch_sessions::state)).load(conn)?;
    for (id, state) in sessions {
        if let Some(new) = fresh(&state, &format!("the session of watch {id}"))? {
            resealed += diesel::update(watch_sessions::table.find(&id).filter(watch_sessions::state.eq(&state)))
                .set(watch_sessions::state.eq(new))
                .execute(conn)?;
        }
    }
    Ok(resealed)
}
