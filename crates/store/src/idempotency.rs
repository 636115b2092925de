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
    /// The client's key with the request path, hashed (fixed length for the primary key).
    pub key: String,
    /// Hash of the request body: the same key with another request is refused.
    pub fingerprint: String,
    /// The status answered ([`IN_FLIGHT`] while the request is handled).
    pub status: i32,
    /// The body answered.
    pub body: Vec<u8>,
    /// When.
    pub created_at: NaiveDateTime,
}

/// `status` of a key whose request is still being handled.
pub const IN_FLIGHT: i32 = 0;

/// What [`claim`] found for a key.
#[derive(Debug)]
pub enum Claim {
    /// The key is new: the caller handles the request, then [`complete`]s or [`release`]s it.
    Claimed,
    /// The same request was answered before: replay this answer.
    Replay(Stored),
    /// The same key is being handled by another request right now.
    InFlight,
    /// The key was used for a different request.
    Mismatch,
}

/// Claims the account's `key` for a request whose body hashes to `fingerprint`, at `now` (the
/// claim's version, for [`complete`] and [`release`]), or says why not. Answers stored before `since`, and claims made before `abandoned_before` whose request
/// never finished (a crash, a dropped connection), free the key. The primary key decides races:
/// of two concurrent first uses, one claims and the other is told `InFlight`.
pub fn claim(
    conn: &mut DbConn,
    account_id: &str,
    key: &str,
    fingerprint: &str,
    now: NaiveDateTime,
    since: NaiveDateTime,
    abandoned_before: NaiveDateTime,
) -> StoreResult<Claim> {
    let mine = idempotency_keys::table
        .filter(idempotency_keys::account_id.eq(account_id))
        .filter(idempotency_keys::key.eq(key));
    diesel::delete(
        mine.filter(
            idempotency_keys::created_at
                .lt(since)
                .or(idempotency_keys::status.eq(IN_FLIGHT).and(idempotency_keys::created_at.lt(abandoned_before))),
        ),
    )
    .execute(conn)?;
    let claim = Stored {
        account_id: account_id.to_owned(),
        key: key.to_owned(),
        fingerprint: fingerprint.to_owned(),
        status: IN_FLIGHT,
        body: Vec::new(),
        created_at: now,
    };
    match diesel::insert_into(idempotency_keys::table).values(&claim).execute(conn) {
        Ok(_) => return Ok(Claim::Claimed),
        Err(diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::UniqueViolation, _)) => {}
        Err(e) => return Err(e.into()),
    }
    let existing = mine.select(Stored::as_select()).first(conn).optional()?;
    Ok(match existing {
        // Released between our insert and this read: the other request failed; so may this one.
        None => Claim::InFlight,
        Some(stored) if stored.fingerprint != fingerprint => Claim::Mismatch,
        Some(stored) if stored.status == IN_FLIGHT => Claim::InFlight,
        Some(stored) => Claim::Replay(stored),
    })
}

/// Stores the answer to the key claimed at `claimed_at` (a claim taken over since is left alone).
pub fn complete(
    conn: &mut DbConn,
    account_id: &str,
    key: &str,
    claimed_at: NaiveDateTime,
    status: i32,
    body: &[u8],
) -> StoreResult<()> {
    diesel::update(
        idempotency_keys::table
            .filter(idempotency_keys::account_id.eq(account_id))
            .filter(idempotency_keys::key.eq(key))
            .filter(idempotency_keys::status.eq(IN_FLIGHT))
            .filter(idempotency_keys::created_at.eq(claimed_at)),
    )
    .set((idempotency_keys::status.eq(status), idempotency_keys::body.eq(body)))
    .execute(conn)?;
    Ok(())
}

/// Frees the key claimed at `claimed_at`, whose request failed, so that it may be retried.
pub fn release(conn: &mut DbConn, account_id: &str, key: &str, claimed_at: NaiveDateTime) -> StoreResult<()> {
    diesel::delete(
        idempotency_keys::table
            .filter(idempotency_keys::account_id.eq(account_id))
            .filter(idempotency_keys::key.eq(key))
            .filter(idempotency_keys::status.eq(IN_FLIGHT))
            .filter(idempotency_keys::created_at.eq(claimed_at)),
    )
    .execute(conn)?;
    Ok(())
}

/// Deletes answers stored before `before`; returns how many.
pub fn purge(conn: &mut DbConn, before: NaiveDateTime) -> StoreResult<usize> {
    Ok(diesel::delete(idempotency_keys::table.filter(idempotency_keys::created_at.lt(before))).execute(conn)?)
}
