//! Stored answers to `POST`s sent with an `Idempotency-Key`.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::idempotency_keys;
use crate::{DbConn, StoreResult};

/// One stored answer.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = idempotency_keys)]
pub struct Stored {
    /// The account that sent it.
    pub account_id: String,
    /// The client's key.
    pub key: String,
    /// Hash of the request path and body: the same key with another request is refused.
    pub fingerprint: String,
    /// The status answered.
    pub status: i32,
    /// The body answered.
    pub body: Vec<u8>,
    /// When.
    pub created_at: NaiveDateTime,
}

/// The stored answer for the account's `key`, if stored at or after `since`; an older one is
/// deleted (the key may be used afresh).
pub fn find(conn: &mut DbConn, account_id: &str, key: &str, since: NaiveDateTime) -> StoreResult<Option<Stored>> {
    diesel::delete(
        idempotency_keys::table
            .filter(idempotency_keys::account_id.eq(account_id))
            .filter(idempotency_keys::key.eq(key))
            .filter(idempotency_keys::created_at.lt(since)),
    )
    .execute(conn)?;
    Ok(idempotency_keys::table
        .filter(idempotency_keys::account_id.eq(account_id))
        .filter(idempotency_keys::key.eq(key))
        .select(Stored::as_select())
        .first(conn)
        .optional()?)
}

/// Stores an answer (a concurrent duplicate that stored first wins).
pub fn save(conn: &mut DbConn, stored: &Stored) -> StoreResult<()> {
    match diesel::insert_into(idempotency_keys::table).values(stored).execute(conn) {
        Ok(_) => Ok(()),
        Err(diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::UniqueViolation, _)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Deletes answers stored before `before`; returns how many.
pub fn purge(conn: &mut DbConn, before: NaiveDateTime) -> StoreResult<usize> {
    Ok(diesel::delete(idempotency_keys::table.filter(idempotency_keys::created_at.lt(before))).execute(conn)?)
}
