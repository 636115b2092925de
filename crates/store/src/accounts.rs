//! Accounts and API tokens.

use chrono::{NaiveDateTime, TimeDelta};
use diesel::prelude::*;
use driftwatch_core::{IdKind, hash_token, new_api_token, new_id};

use crate::schema::{accounts, api_tokens, users, watches};
use crate::{Account, ApiToken, DbConn, StoreResult, conflict_on_unique};

/// Creates an account; a taken name is a [`crate::StoreError::Conflict`].
pub fn create_account(conn: &mut DbConn, name: &str, now: NaiveDateTime) -> StoreResult<Account> {
    let account = Account { id: new_id(IdKind::Account), name: name.to_owned(), created_at: now };
    diesel::insert_into(accounts::table)
        .values(&account)
        .execute(conn)
        .map_err(conflict_on_unique("an account with this name exists"))?;
    Ok(account)
}

/// The account `id`.
pub fn get_account(conn: &mut DbConn, id: &str) -> StoreResult<Option<Account>> {
    Ok(accounts::table.filter(accounts::id.eq(id)).select(Account::as_select()).first(conn).optional()?)
}

/// The account named `name`.
pub fn find_account_by_name(conn: &mut DbConn, name: &str) -> StoreResult<Option<Account>> {
    Ok(accounts::table.filter(accounts::name.eq(name)).select(Account::as_select()).first(conn).optional()?)
}

/// An account with who signs in to it and how many watches it has, for `driftwatch account
/// list` (an operator's view across accounts: it serves no request).
#[derive(Debug, Clone)]
pub struct AccountSummary {
    /// The account.
    pub account: Account,
    /// The emails of its users, sorted.
    pub users: Vec<String>,
    /// How many watches it has.
    pub watches: i64,
}

/// Every account, oldest first, with its users and its number of watches.
pub fn list_accounts(conn: &mut DbConn) -> StoreResult<Vec<AccountSummary>> {
    let all: Vec<Account> = accounts::table.order(accounts::id.asc()).select(Account::as_select()).load(conn)?;
    let emails: Vec<(String, String)> =
        users::table.order(users::email.asc()).select((users::account_id, users::email)).load(conn)?;
    let counts: Vec<(String, i64)> = watches::table
        .group_by(watches::account_id)
        .select((watches::account_id, diesel::dsl::count_star()))
        .load(conn)?;
    Ok(all
        .into_iter()
        .map(|account| AccountSummary {
            users: emails.iter().filter(|(id, _)| *id == account.id).map(|(_, email)| email.clone()).collect(),
            watches: counts.iter().find(|(id, _)| *id == account.id).map_or(0, |(_, n)| *n),
            account,
        })
        .collect())
}

/// Creates a token for `account_id`; returns the row and the plaintext token (shown once).
pub fn create_token(
    conn: &mut DbConn,
    account_id: &str,
    name: &str,
    scopes: &str,
    now: NaiveDateTime,
) -> StoreResult<(ApiToken, String)> {
    let plaintext = new_api_token();
    let token = ApiToken {
        id: new_id(IdKind::Token),
        account_id: account_id.to_owned(),
        name: name.to_owned(),
        token_hash: hash_token(&plaintext),
        prefix: plaintext.chars().take(10).collect(),
        scopes: scopes.to_owned(),
        created_at: now,
        last_used_at: None,
        revoked_at: None,
    };
    diesel::insert_into(api_tokens::table).values(&token).execute(conn)?;
    Ok((token, plaintext))
}

/// The live token whose plaintext is `token`, with `last_used_at` refreshed (at most once a
/// minute, so reads do not turn into writes on every request).
///
/// The lookup is by hash: the plaintext is never compared or stored.
pub fn authenticate(conn: &mut DbConn, token: &str, now: NaiveDateTime) -> StoreResult<Option<ApiToken>> {
    let found = api_tokens::table
        .filter(api_tokens::token_hash.eq(hash_token(token)))
        .filter(api_tokens::revoked_at.is_null())
        .select(ApiToken::as_select())
        .first(conn)
        .optional()?;
    if let Some(t) = &found
        && t.last_used_at.is_none_or(|used| now - used > TimeDelta::minutes(1))
    {
        diesel::update(api_tokens::table.find(&t.id)).set(api_tokens::last_used_at.eq(now)).execute(conn)?;
    }
    Ok(found)
}

/// The account's tokens, newest first (hashes stay inside).
pub fn list_tokens(conn: &mut DbConn, account_id: &str, page: &crate::Page) -> StoreResult<Vec<ApiToken>> {
    let mut query =
        api_tokens::table.filter(api_tokens::account_id.eq(account_id)).select(ApiToken::as_select()).into_boxed();
    if let Some(after) = &page.after {
        query = query.filter(api_tokens::id.lt(after));
    }
    Ok(query.order(api_tokens::id.desc()).limit(page.limit).load(conn)?)
}

/// Revokes the account's token `id` (a token revoked before stays as it was); false when the
/// account has no such token.
pub fn revoke_token(conn: &mut DbConn, account_id: &str, id: &str, now: NaiveDateTime) -> StoreResult<bool> {
    let revoked = diesel::update(
        api_tokens::table
            .filter(api_tokens::account_id.eq(account_id))
            .filter(api_tokens::id.eq(id))
            .filter(api_tokens::revoked_at.is_null()),
    )
    .set(api_tokens::revoked_at.eq(now))
    .execute(conn)?;
    if revoked == 1 {
        return Ok(true);
    }
    // Revoking is idempotent: a token revoked before is found (and stays revoked as it was).
    let exists: i64 = api_tokens::table
        .filter(api_tokens::account_id.eq(account_id))
        .filter(api_tokens::id.eq(id))
        .count()
        .get_result(conn)?;
    Ok(exists == 1)
}

/// The account's quiet hours (JSON), which hold the deliveries of its endpoints that set none.
pub fn quiet_hours(conn: &mut DbConn, account_id: &str) -> StoreResult<Option<String>> {
    Ok(accounts::table
        .find(account_id)
        .select(accounts::quiet_hours)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten())
}

/// Sets (or with `None` removes) the account's quiet hours.
pub fn set_quiet_hours(conn: &mut DbConn, account_id: &str, quiet_hours: Option<&str>) -> StoreResult<()> {
    diesel::update(accounts::table.find(account_id)).set(accounts::quiet_hours.eq(quiet_hours)).execute(conn)?;
    Ok(())
}
