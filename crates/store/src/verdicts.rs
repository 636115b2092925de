//! Verdicts: the durable jobs of asking a language model about a change, the verdict cache and
//! the daily token count per account.
//!
//! A change of a watch with `options.ai` is recorded with its event but without deliveries,
//! and a pending [`Verdict`] row. The verdict loop claims due rows under a lease (like the
//! outbox), asks the model, and [`decide`]s: in one transaction the verdict is written under the
//! lease, the event's body gets its `data.ai`, and its deliveries are queued when it is to be
//! delivered. A crash between claim and decision leaves the lease to expire; the change is
//! asked about again (the cache answers if the model did) and delivered once.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::render::Render;
use crate::schema::{accounts, ai_cache, ai_usage, events, verdicts};
use crate::{CachedVerdict, DbConn, Event, StoreResult, Verdict, VerdictState};

/// A claimed verdict job and the event it is about.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The job.
    pub verdict: Verdict,
    /// The change event (its body holds the diff).
    pub event: Event,
}

/// Leases up to `limit` due pending verdicts (due now, or whose lease expired) to `owner` until
/// `lease_until`, oldest due first, with their events.
pub fn claim_due(
    conn: &mut DbConn,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
    limit: i64,
) -> StoreResult<Vec<Claimed>> {
    use diesel::sql_types::{BigInt, Text, Timestamp};
    let claimed: Vec<Verdict> = match conn {
        DbConn::Pg(pg) => diesel::sql_query(CLAIM_PG)
            .bind::<Text, _>(owner)
            .bind::<Timestamp, _>(lease_until)
            .bind::<Timestamp, _>(now)
            .bind::<BigInt, _>(limit)
            .load(pg)?,
        DbConn::Sqlite(sqlite) => diesel::sql_query(CLAIM_SQLITE)
            .bind::<Text, _>(owner)
            .bind::<Timestamp, _>(lease_until)
            .bind::<Timestamp, _>(now)
            .bind::<BigInt, _>(limit)
            .load(sqlite)?,
    };
    if claimed.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<&str> = claimed.iter().map(|v| v.event_id.as_str()).collect();
    let mut found: std::collections::HashMap<String, Event> = events::table
        .filter(events::id.eq_any(&ids))
        .select(Event::as_select())
        .load(conn)?
        .into_iter()
        .map(|e| (e.id.clone(), e))
        .collect();
    let mut jobs: Vec<Claimed> = claimed
        .into_iter()
        .filter_map(|verdict| found.remove(&verdict.event_id).map(|event| Claimed { verdict, event }))
        .collect();
    jobs.sort_by(|a, b| {
        (a.verdict.next_attempt_at, &a.verdict.event_id).cmp(&(b.verdict.next_attempt_at, &b.verdict.event_id))
    });
    Ok(jobs)
}

const CLAIM_PG: &str = "UPDATE verdicts SET lease_owner = $1, lease_until = $2 WHERE event_id = ANY(ARRAY(\
    SELECT event_id FROM verdicts WHERE state = 'pending' AND next_attempt_at <= $3 \
    AND (lease_until IS NULL OR lease_until < $3) \
    ORDER BY next_attempt_at LIMIT $4 FOR NO KEY UPDATE SKIP LOCKED)) RETURNING *";

const CLAIM_SQLITE: &str = "UPDATE verdicts SET lease_owner = ?1, lease_until = ?2 WHERE event_id IN (\
    SELECT event_id FROM verdicts INDEXED BY verdicts_due WHERE state = 'pending' AND next_attempt_at <= ?3 \
    AND (lease_until IS NULL OR lease_until < ?3) \
    ORDER BY next_attempt_at LIMIT ?4) RETURNING *";

/// When the verdict loop next has something to do: the earliest due time of an unleased
/// pending verdict, or the earliest expiry of a lease on one.
pub fn next_wake(conn: &mut DbConn) -> StoreResult<Option<NaiveDateTime>> {
    let pending = verdicts::table.filter(verdicts::state.eq(VerdictState::Pending.as_str()));
    let due: Option<NaiveDateTime> = pending
        .filter(verdicts::lease_owner.is_null())
        .select(diesel::dsl::min(verdicts::next_attempt_at))
        .first(conn)?;
    let leased: Option<NaiveDateTime> = verdicts::table
        .filter(verdicts::state.eq(VerdictState::Pending.as_str()))
        .select(diesel::dsl::min(verdicts::lease_until))
        .first(conn)?;
    Ok(match (due, leased) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

/// Gives a claimed verdict back to be tried again at `next_attempt_at`, counting the attempt
/// and keeping `error`. Only the lease holder can; returns whether it did.
pub fn retry_later(
    conn: &mut DbConn,
    event_id: &str,
    owner: &str,
    next_attempt_at: NaiveDateTime,
    error: &str,
) -> StoreResult<bool> {
    Ok(diesel::update(leased(event_id, owner))
        .set((
            verdicts::attempts.eq(verdicts::attempts + 1),
            verdicts::next_attempt_at.eq(next_attempt_at),
            verdicts::error.eq(error),
            verdicts::lease_owner.eq(None::<String>),
            verdicts::lease_until.eq(None::<NaiveDateTime>),
        ))
        .execute(conn)?
        == 1)
}

/// Gives a claimed verdict back untried (the node is stopping), so another node or the next
/// start asks at once instead of waiting for the lease to expire.
pub fn give_back(conn: &mut DbConn, event_id: &str, owner: &str) -> StoreResult<bool> {
    Ok(diesel::update(leased(event_id, owner))
        .set((verdicts::lease_owner.eq(None::<String>), verdicts::lease_until.eq(None::<NaiveDateTime>)))
        .execute(conn)?
        == 1)
}

/// A pending verdict of `event_id` under `owner`'s lease.
fn leased<'a>(
    event_id: &'a str,
    owner: &'a str,
) -> diesel::dsl::Filter<
    diesel::dsl::Filter<
        diesel::dsl::Filter<verdicts::table, diesel::dsl::Eq<verdicts::event_id, &'a str>>,
        diesel::dsl::Eq<verdicts::lease_owner, &'a str>,
    >,
    diesel::dsl::Eq<verdicts::state, &'static str>,
> {
    verdicts::table
        .filter(verdicts::event_id.eq(event_id))
        .filter(verdicts::lease_owner.eq(owner))
        .filter(verdicts::state.eq(VerdictState::Pending.as_str()))
}

/// How a verdict job ends.
#[derive(Debug, Clone)]
pub struct Decision {
    /// [`VerdictState::Judged`], [`VerdictState::Unjudged`] or [`VerdictState::Held`].
    pub state: VerdictState,
    /// The verdict, when there is an intent and an answer.
    pub important: Option<bool>,
    /// Why.
    pub reason: Option<String>,
    /// The summary.
    pub summary: Option<String>,
    /// The model asked.
    pub model: Option<String>,
    /// Tokens spent on it.
    pub tokens: i64,
    /// Whether it came from the cache.
    pub cached: bool,
    /// Why there is no verdict.
    pub error: Option<String>,
    /// The event's body with `data.ai` (written to the event when present).
    pub payload: Option<String>,
    /// Whether the event's deliveries are queued now.
    pub deliver: bool,
}

/// Ends a verdict job claimed by `owner`: in one transaction the verdict is written under the
/// lease, the event's body replaced by `decision.payload`, and, when `decision.deliver`, the
/// event's deliveries queued. Returns the deliveries queued, or `None` when the lease was lost
/// (another node decided; nothing is written).
pub fn decide(
    conn: &mut DbConn,
    render: &dyn Render,
    event_id: &str,
    owner: &str,
    decision: &Decision,
    now: NaiveDateTime,
) -> StoreResult<Option<usize>> {
    conn.transaction(|conn| {
        let written = diesel::update(leased(event_id, owner))
            .set((
                verdicts::state.eq(decision.state.as_str()),
                verdicts::important.eq(decision.important),
                verdicts::reason.eq(&decision.reason),
                verdicts::summary_text.eq(&decision.summary),
                verdicts::model.eq(&decision.model),
                verdicts::tokens.eq(decision.tokens),
                verdicts::cached.eq(decision.cached),
                verdicts::error.eq(&decision.error),
                verdicts::decided_at.eq(Some(now)),
                verdicts::lease_owner.eq(None::<String>),
                verdicts::lease_until.eq(None::<NaiveDateTime>),
            ))
            .execute(conn)?;
        if written != 1 {
            return Ok(None);
        }
        finish(conn, render, event_id, decision.payload.as_deref(), decision.deliver, now).map(Some)
    })
}

/// Writes the event's new body and queues its deliveries when asked; the deliveries' attempt
/// budget is the verdict's.
fn finish(
    conn: &mut DbConn,
    render: &dyn Render,
    event_id: &str,
    payload: Option<&str>,
    deliver: bool,
    now: NaiveDateTime,
) -> StoreResult<usize> {
    if let Some(payload) = payload {
        diesel::update(events::table.filter(events::id.eq(event_id))).set(events::payload.eq(payload)).execute(conn)?;
    }
    if !deliver {
        return Ok(0);
    }
    let event: Event = events::table.filter(events::id.eq(event_id)).select(Event::as_select()).first(conn)?;
    let max_attempts: i32 =
        verdicts::table.filter(verdicts::event_id.eq(event_id)).select(verdicts::max_attempts).first(conn)?;
    crate::outbox::enqueue_recorded(conn, render, &event, max_attempts, now)
}

/// Sends a held change (of `account_id`) now, without a verdict: its deliveries are queued
/// and it is [`VerdictState::Released`]. Returns the deliveries queued, or `None` when there
/// is no held change of this account with this id.
pub fn release(
    conn: &mut DbConn,
    render: &dyn Render,
    account_id: &str,
    event_id: &str,
    now: NaiveDateTime,
) -> StoreResult<Option<usize>> {
    conn.transaction(|conn| {
        let written = diesel::update(
            verdicts::table
                .filter(verdicts::event_id.eq(event_id))
                .filter(verdicts::account_id.eq(account_id))
                .filter(verdicts::state.eq(VerdictState::Held.as_str())),
        )
        .set((verdicts::state.eq(VerdictState::Released.as_str()), verdicts::decided_at.eq(Some(now))))
        .execute(conn)?;
        if written != 1 {
            return Ok(None);
        }
        finish(conn, render, event_id, None, true, now).map(Some)
    })
}

/// The verdicts of these events of `account_id`, by event id.
pub fn for_events(
    conn: &mut DbConn,
    account_id: &str,
    event_ids: &[&str],
) -> StoreResult<std::collections::HashMap<String, Verdict>> {
    if event_ids.is_empty() {
        return Ok(Default::default());
    }
    Ok(verdicts::table
        .filter(verdicts::account_id.eq(account_id))
        .filter(verdicts::event_id.eq_any(event_ids))
        .select(Verdict::as_select())
        .load(conn)?
        .into_iter()
        .map(|v| (v.event_id.clone(), v))
        .collect())
}

/// Changes waiting for a verdict, all accounts.
pub fn pending_count(conn: &mut DbConn) -> StoreResult<i64> {
    Ok(verdicts::table.filter(verdicts::state.eq(VerdictState::Pending.as_str())).count().get_result(conn)?)
}

/// A cached verdict on the question `key`.
pub fn cached(conn: &mut DbConn, key: &str) -> StoreResult<Option<CachedVerdict>> {
    Ok(ai_cache::table.filter(ai_cache::key.eq(key)).select(CachedVerdict::as_select()).first(conn).optional()?)
}

/// Remembers a verdict; the first answer to a question stays.
pub fn remember(conn: &mut DbConn, verdict: &CachedVerdict) -> StoreResult<()> {
    use diesel::sql_types::{BigInt, Bool, Text, Timestamp};
    // ON CONFLICT: two nodes remembering the same answer at once both succeed.
    const SQL_PG: &str = "INSERT INTO ai_cache (key, model, important, reason, summary, tokens, created_at) \
                          VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (key) DO NOTHING";
    const SQL_SQLITE: &str = "INSERT INTO ai_cache (key, model, important, reason, summary, tokens, created_at) \
                              VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING";
    macro_rules! insert {
        ($sql:expr, $conn:expr) => {
            diesel::sql_query($sql)
                .bind::<Text, _>(&verdict.key)
                .bind::<Text, _>(&verdict.model)
                .bind::<Bool, _>(verdict.important)
                .bind::<Text, _>(&verdict.reason)
                .bind::<Text, _>(&verdict.summary)
                .bind::<BigInt, _>(verdict.tokens)
                .bind::<Timestamp, _>(verdict.created_at)
                .execute($conn)?
        };
    }
    match conn {
        DbConn::Pg(c) => insert!(SQL_PG, c),
        DbConn::Sqlite(c) => insert!(SQL_SQLITE, c),
    };
    Ok(())
}

/// Tokens `account_id` spent on UTC day `day` (`YYYY-MM-DD`).
pub fn spent(conn: &mut DbConn, account_id: &str, day: &str) -> StoreResult<i64> {
    Ok(ai_usage::table
        .filter(ai_usage::account_id.eq(account_id))
        .filter(ai_usage::day.eq(day))
        .select(ai_usage::tokens)
        .first(conn)
        .optional()?
        .unwrap_or(0))
}

/// Adds `tokens` and `calls` to `account_id`'s count of UTC day `day`.
pub fn spend(conn: &mut DbConn, account_id: &str, day: &str, tokens: i64, calls: i64) -> StoreResult<()> {
    use diesel::sql_types::{BigInt, Text};
    const SQL_PG: &str = "INSERT INTO ai_usage (account_id, day, tokens, calls) VALUES ($1, $2, $3, $4) \
                          ON CONFLICT (account_id, day) DO UPDATE SET tokens = ai_usage.tokens + EXCLUDED.tokens, \
                          calls = ai_usage.calls + EXCLUDED.calls";
    const SQL_SQLITE: &str = "INSERT INTO ai_usage (account_id, day, tokens, calls) VALUES (?, ?, ?, ?) \
                              ON CONFLICT (account_id, day) DO UPDATE SET tokens = tokens + excluded.tokens, \
                              calls = calls + excluded.calls";
    macro_rules! upsert {
        ($sql:expr, $conn:expr) => {
            diesel::sql_query($sql)
                .bind::<Text, _>(account_id)
                .bind::<Text, _>(day)
                .bind::<BigInt, _>(tokens)
                .bind::<BigInt, _>(calls)
                .execute($conn)?
        };
    }
    match conn {
        DbConn::Pg(c) => upsert!(SQL_PG, c),
        DbConn::Sqlite(c) => upsert!(SQL_SQLITE, c),
    };
    Ok(())
}

/// An account's own model, when it set one (its key still sealed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Queryable)]
pub struct AccountModel {
    /// Its base URL.
    pub base_url: Option<String>,
    /// Its model.
    pub model: Option<String>,
    /// Its key, sealed.
    pub api_key: Option<String>,
    /// Its daily token budget.
    pub daily_tokens: Option<i64>,
}

/// `account_id`'s own model settings.
pub fn account_model(conn: &mut DbConn, account_id: &str) -> StoreResult<AccountModel> {
    Ok(accounts::table
        .filter(accounts::id.eq(account_id))
        .select((accounts::llm_base_url, accounts::llm_model, accounts::llm_api_key, accounts::llm_daily_tokens))
        .first(conn)
        .optional()?
        .unwrap_or_default())
}

/// Sets `account_id`'s own model settings (the key already sealed by the caller).
pub fn set_account_model(conn: &mut DbConn, account_id: &str, model: &AccountModel) -> StoreResult<()> {
    diesel::update(accounts::table.filter(accounts::id.eq(account_id)))
        .set((
            accounts::llm_base_url.eq(&model.base_url),
            accounts::llm_model.eq(&model.model),
            accounts::llm_api_key.eq(&model.api_key),
            accounts::llm_daily_tokens.eq(model.daily_tokens),
        ))
        .execute(conn)?;
    Ok(())
}

/// Inserts pending verdicts (with their events already inserted in the same transaction).
pub(crate) fn insert_pending(conn: &mut DbConn, rows: &[Verdict]) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let rows = rows.to_vec();
    crate::insert_all!(conn, verdicts::table, rows);
    Ok(())
}

/// Deletes cached verdicts written before `before` and usage counts of days before
/// `before_day`; returns the rows deleted.
pub fn prune(conn: &mut DbConn, before: NaiveDateTime, before_day: &str) -> StoreResult<usize> {
    let cache = diesel::delete(ai_cache::table.filter(ai_cache::created_at.lt(before))).execute(conn)?;
    let usage = diesel::delete(ai_usage::table.filter(ai_usage::day.lt(before_day))).execute(conn)?;
    Ok(cache + usage)
}

/// Seals afresh, under `keyring`'s current key, every account's own model key that is
/// plaintext or sealed under another key (each under a compare-and-set on the value read);
/// returns how many. Accounts are few: one pass.
pub fn reseal_account_keys(conn: &mut DbConn, keyring: &driftwatch_core::Keyring) -> StoreResult<usize> {
    let stored: Vec<(String, String)> = accounts::table
        .filter(accounts::llm_api_key.is_not_null())
        .select((accounts::id, accounts::llm_api_key.assume_not_null()))
        .load(conn)?;
    let mut resealed = 0;
    for (id, value) in stored {
        if value.is_empty() {
            continue;
        }
        let fresh = if driftwatch_core::is_sealed(&value) {
            match keyring.reseal(&value) {
                Ok(Some(fresh)) => fresh,
                Ok(None) => continue,
                Err(e) => {
                    return Err(crate::StoreError::Batch(format!(
                        "the model key of account {id} cannot be opened: {e}"
                    )));
                }
            }
        } else {
            keyring.seal(&value)
        };
        resealed +=
            diesel::update(accounts::table.filter(accounts::id.eq(&id)).filter(accounts::llm_api_key.eq(&value)))
                .set(accounts::llm_api_key.eq(fresh))
                .execute(conn)?;
    }
    Ok(resealed)
}
