//! Browser users, their sessions, what each has seen, and account feed keys.
//!
//! Sessions are looked up by the SHA-256 of the cookie's id; the id itself is never stored.

use std::collections::HashMap;

use chrono::{NaiveDateTime, TimeDelta};
use diesel::prelude::*;
use driftwatch_core::{IdKind, hash_token, new_id};

use crate::schema::{accounts, sessions, snapshots, users, watch_views};
use crate::{Account, DbConn, Session, StoreResult, User, conflict_on_unique};

/// How long a session lives: idle (since its last request) and absolute (since sign-in).
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// A session unused this long is over.
    pub idle: TimeDelta,
    /// A session this old is over, however busy.
    pub absolute: TimeDelta,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits { idle: TimeDelta::days(7), absolute: TimeDelta::days(30) }
    }
}

/// Whether any user exists (a fresh install has none and offers the one-time setup).
pub fn any_user(conn: &mut DbConn) -> StoreResult<bool> {
    Ok(users::table.select(users::id).first::<String>(conn).optional()?.is_some())
}

/// Creates a user of `account_id`; a taken email is a [`crate::StoreError::Conflict`].
pub fn create_user(
    conn: &mut DbConn,
    account_id: &str,
    email: &str,
    password_hash: &str,
    now: NaiveDateTime,
) -> StoreResult<User> {
    let user = User {
        id: new_id(IdKind::User),
        account_id: account_id.to_owned(),
        email: email.trim().to_lowercase(),
        password_hash: password_hash.to_owned(),
        time_zone: "UTC".to_owned(),
        created_at: now,
        updated_at: now,
    };
    diesel::insert_into(users::table)
        .values(&user)
        .execute(conn)
        .map_err(conflict_on_unique("a user with this email exists"))?;
    Ok(user)
}

/// First run: creates the account and its first user in one transaction, only while no user
/// exists (a [`crate::StoreError::Conflict`] otherwise).
pub fn create_first_user(
    conn: &mut DbConn,
    account_name: &str,
    email: &str,
    password_hash: &str,
    now: NaiveDateTime,
) -> StoreResult<User> {
    conn.transaction(|c| {
        if any_user(c)? {
            return Err(crate::StoreError::Conflict("setup is done: a user exists".into()));
        }
        let account = match crate::accounts::find_account_by_name(c, account_name)? {
            Some(account) => account,
            None => crate::accounts::create_account(c, account_name, now)?,
        };
        create_user(c, &account.id, email, password_hash, now)
    })
}

/// The user signing in as `email` (any case).
pub fn find_user_by_email(conn: &mut DbConn, email: &str) -> StoreResult<Option<User>> {
    Ok(users::table
        .filter(users::email.eq(email.trim().to_lowercase()))
        .select(User::as_select())
        .first(conn)
        .optional()?)
}

/// The account's users, oldest first.
pub fn list_users(conn: &mut DbConn, account_id: &str) -> StoreResult<Vec<User>> {
    Ok(users::table
        .filter(users::account_id.eq(account_id))
        .order(users::id.asc())
        .select(User::as_select())
        .load(conn)?)
}

/// Every user with their account's name, for `driftwatch user list`.
pub fn list_all_users(conn: &mut DbConn) -> StoreResult<Vec<(User, String)>> {
    Ok(users::table
        .inner_join(accounts::table)
        .order(users::id.asc())
        .select((User::as_select(), accounts::name))
        .load(conn)?)
}

/// Replaces the user's password hash and ends their sessions except `keep` (the hash of the
/// session that made the change, if any). False when there is no such user.
pub fn set_password(
    conn: &mut DbConn,
    user_id: &str,
    password_hash: &str,
    keep: Option<&str>,
    now: NaiveDateTime,
) -> StoreResult<bool> {
    conn.transaction(|c| {
        let changed = diesel::update(users::table.find(user_id))
            .set((users::password_hash.eq(password_hash), users::updated_at.eq(now)))
            .execute(c)?;
        let others = sessions::table.filter(sessions::user_id.eq(user_id)).into_boxed();
        let others = match keep {
            Some(keep) => others.filter(sessions::id_hash.ne(keep.to_owned())),
            None => others,
        };
        let ids: Vec<String> = others.select(sessions::id_hash).load(c)?;
        diesel::delete(sessions::table.filter(sessions::id_hash.eq_any(ids))).execute(c)?;
        Ok(changed == 1)
    })
}

/// Sets the user's display time zone (already validated).
pub fn set_time_zone(conn: &mut DbConn, user_id: &str, zone: &str, now: NaiveDateTime) -> StoreResult<()> {
    diesel::update(users::table.find(user_id))
        .set((users::time_zone.eq(zone), users::updated_at.eq(now)))
        .execute(conn)?;
    Ok(())
}

/// Starts a session for `user_id` under the cookie id `session_id` (stored hashed).
pub fn create_session(
    conn: &mut DbConn,
    user_id: &str,
    session_id: &str,
    csrf_token: &str,
    now: NaiveDateTime,
    limits: SessionLimits,
) -> StoreResult<Session> {
    let session = Session {
        id_hash: hash_token(session_id),
        user_id: user_id.to_owned(),
        csrf_token: csrf_token.to_owned(),
        created_at: now,
        last_seen_at: now,
        expires_at: now + limits.absolute,
        flash: None,
    };
    diesel::insert_into(sessions::table).values(&session).execute(conn)?;
    Ok(session)
}

/// The live session with cookie id `session_id` and its user; refreshes `last_seen_at` at most
/// once a minute. An expired session is deleted and not found.
pub fn find_session(
    conn: &mut DbConn,
    session_id: &str,
    now: NaiveDateTime,
    limits: SessionLimits,
) -> StoreResult<Option<(Session, User)>> {
    let id_hash = hash_token(session_id);
    let found: Option<(Session, User)> = sessions::table
        .inner_join(users::table)
        .filter(sessions::id_hash.eq(&id_hash))
        .select((Session::as_select(), User::as_select()))
        .first(conn)
        .optional()?;
    let Some((mut session, user)) = found else { return Ok(None) };
    if session.expires_at <= now || session.last_seen_at + limits.idle <= now {
        diesel::delete(sessions::table.find(&id_hash)).execute(conn)?;
        return Ok(None);
    }
    if now - session.last_seen_at > TimeDelta::minutes(1) {
        diesel::update(sessions::table.find(&id_hash)).set(sessions::last_seen_at.eq(now)).execute(conn)?;
        session.last_seen_at = now;
    }
    Ok(Some((session, user)))
}

/// Sets (or with `None` clears) the message the session's next page shows.
pub fn set_flash(conn: &mut DbConn, id_hash: &str, message: Option<&str>) -> StoreResult<()> {
    diesel::update(sessions::table.find(id_hash)).set(sessions::flash.eq(message)).execute(conn)?;
    Ok(())
}

/// Ends one session (by the hash of its id).
pub fn delete_session(conn: &mut DbConn, id_hash: &str) -> StoreResult<()> {
    diesel::delete(sessions::table.find(id_hash)).execute(conn)?;
    Ok(())
}

/// Ends every session of the user ("sign out everywhere"); returns how many.
pub fn delete_user_sessions(conn: &mut DbConn, user_id: &str) -> StoreResult<usize> {
    Ok(diesel::delete(sessions::table.filter(sessions::user_id.eq(user_id))).execute(conn)?)
}

/// Deletes sessions past their absolute expiry or idle limit.
pub fn purge_sessions(conn: &mut DbConn, now: NaiveDateTime, limits: SessionLimits) -> StoreResult<usize> {
    Ok(diesel::delete(
        sessions::table.filter(sessions::expires_at.le(now).or(sessions::last_seen_at.le(now - limits.idle))),
    )
    .execute(conn)?)
}

/// Sets the account's feed key (stored hashed), replacing (revoking) any earlier one; `None`
/// turns the feed off.
pub fn set_feed_key(conn: &mut DbConn, account_id: &str, key: Option<&str>) -> StoreResult<()> {
    diesel::update(accounts::table.find(account_id))
        .set(accounts::feed_key_hash.eq(key.map(hash_token)))
        .execute(conn)?;
    Ok(())
}

/// Whether the account has a feed key.
pub fn has_feed_key(conn: &mut DbConn, account_id: &str) -> StoreResult<bool> {
    Ok(accounts::table
        .find(account_id)
        .select(accounts::feed_key_hash)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten()
        .is_some())
}

/// The account whose feed key is `key`.
pub fn account_by_feed_key(conn: &mut DbConn, key: &str) -> StoreResult<Option<Account>> {
    Ok(accounts::table
        .filter(accounts::feed_key_hash.eq(hash_token(key)))
        .select(Account::as_select())
        .first(conn)
        .optional()?)
}

/// Records that `user_id` has seen `snapshot_id` of `watch_id` (the newest they looked at).
pub fn mark_seen(
    conn: &mut DbConn,
    user_id: &str,
    watch_id: &str,
    snapshot_id: &str,
    now: NaiveDateTime,
) -> StoreResult<()> {
    conn.transaction(|c| {
        let updated = diesel::update(watch_views::table.find((user_id, watch_id)))
            .set((watch_views::snapshot_id.eq(snapshot_id), watch_views::seen_at.eq(now)))
            .execute(c)?;
        if updated == 0 {
            diesel::insert_into(watch_views::table)
                .values((
                    watch_views::user_id.eq(user_id),
                    watch_views::watch_id.eq(watch_id),
                    watch_views::snapshot_id.eq(snapshot_id),
                    watch_views::seen_at.eq(now),
                ))
                .execute(c)?;
        }
        Ok(())
    })
}

/// The snapshot `user_id` last saw of each of `watch_ids` (absent: never looked).
pub fn seen_snapshots(conn: &mut DbConn, user_id: &str, watch_ids: &[String]) -> StoreResult<HashMap<String, String>> {
    Ok(watch_views::table
        .filter(watch_views::user_id.eq(user_id))
        .filter(watch_views::watch_id.eq_any(watch_ids))
        .select((watch_views::watch_id, watch_views::snapshot_id))
        .load::<(String, String)>(conn)?
        .into_iter()
        .collect())
}

/// The newest snapshot id of each of `watch_ids` that has one, in one query.
pub fn newest_snapshots(conn: &mut DbConn, watch_ids: &[String]) -> StoreResult<HashMap<String, String>> {
    Ok(snapshots::table
        .filter(snapshots::watch_id.eq_any(watch_ids))
        .group_by(snapshots::watch_id)
        .select((snapshots::watch_id, diesel::dsl::max(snapshots::id)))
        .load::<(String, Option<String>)>(conn)?
        .into_iter()
        .filter_map(|(watch, newest)| newest.map(|n| (watch, n)))
        .collect())
}
