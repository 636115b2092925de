//! Recording finished attempts: each delivery moves on under a compare-and-set on its lease,
//! its attempt row is inserted and its endpoint's health updated, a batch in one transaction.

use std::collections::HashSet;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::{AttemptTrigger, DeliveryStatus, storable_opt};

use crate::endpoints::{DisabledEvent, Health};
use crate::schema::{deliveries, delivery_attempts};
use crate::{DbConn, DeliveryAttempt, StoreResult};

/// How an attempt leaves its delivery.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The new status.
    pub status: DeliveryStatus,
    /// Attempts made, this one included.
    pub attempts: i32,
    /// When to try again (ignored unless `failed`).
    pub next_attempt_at: NaiveDateTime,
    /// The receiver's status code.
    pub last_status_code: Option<i32>,
    /// Why it failed.
    pub last_error: Option<String>,
    /// Now.
    pub now: NaiveDateTime,
    /// Attempt budget of deliveries of an `endpoint.disabled` event this may raise.
    pub default_max_attempts: i32,
}

/// One finished attempt, to be recorded.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    /// The delivery.
    pub delivery_id: String,
    /// Its endpoint.
    pub endpoint_id: String,
    /// The lease under which the attempt was made.
    pub owner: String,
    /// How the delivery moves on.
    pub completion: Completion,
    /// The attempt row.
    pub attempt: DeliveryAttempt,
    /// What the attempt says about the endpoint.
    pub health: Health,
}

/// Records finished attempts in one transaction: for each, moves its delivery on, inserts the
/// attempt row and updates its endpoint's health, releasing the lease. Only the lease holder
/// can record (compare-and-set on the owner); the result says, per record, whether it was
/// recorded (false: the lease was lost and nothing was written for it).
///
/// Batching is what makes the outbox fast: one commit for many attempts, and few statements.
/// On PostgreSQL one statement moves every delivery on and inserts the attempts of those whose
/// lease held (arrays bound as parameters, `UNNEST`ed); on SQLite, which has no round trips,
/// cached per-row statements do the same. Endpoints whose attempts in the batch all succeeded
/// get one statement between them; an endpoint with a failure in the batch has its attempts'
/// health applied one by one, in order, exactly as if recorded alone. When an endpoint gets
/// disabled, `on_disabled` renders an `endpoint.disabled` event, queued for the account's other
/// enabled endpoints in the same transaction.
pub fn complete_all(
    conn: &mut DbConn,
    records: &[AttemptRecord],
    on_disabled: DisabledEvent<'_>,
) -> StoreResult<Vec<bool>> {
    // One global order (endpoint, delivery) for every lock taken, so concurrent batches on
    // PostgreSQL cannot deadlock on each other's rows.
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by(|&a, &b| {
        (&records[a].endpoint_id, &records[a].delivery_id).cmp(&(&records[b].endpoint_id, &records[b].delivery_id))
    });
    conn.transaction(|conn| {
        let recorded = move_on(conn, records, &order)?;
        // Health: endpoints whose recorded attempts all succeeded, at once; the others in order.
        let mut healthy: Vec<&str> = Vec::new();
        let mut mixed: HashSet<&str> = HashSet::new();
        for &i in &order {
            let record = &records[i];
            if !recorded[i] {
                continue;
            }
            match record.health {
                Health::Unchanged => {}
                Health::Success => healthy.push(&record.endpoint_id),
                Health::Failure { .. } | Health::Gone => {
                    mixed.insert(&record.endpoint_id);
                }
            }
        }
        healthy.retain(|id| !mixed.contains(id));
        healthy.dedup();
        if !healthy.is_empty() {
            crate::endpoints::record_successes(conn, &healthy)?;
        }
        for &i in &order {
            let record = &records[i];
            if recorded[i] && mixed.contains(record.endpoint_id.as_str()) {
                let completion = &record.completion;
                crate::endpoints::record_health(
                    conn,
                    &record.endpoint_id,
                    &record.health,
                    (completion.now, completion.default_max_attempts),
                    on_disabled,
                )?;
            }
        }
        Ok(recorded)
    })
}

/// Moves each record's delivery on and inserts its attempt, where its lease still holds;
/// returns which did, by index into `records`.
fn move_on(conn: &mut DbConn, records: &[AttemptRecord], order: &[usize]) -> StoreResult<Vec<bool>> {
    let mut recorded = vec![false; records.len()];
    match conn {
        DbConn::Pg(pg) => {
            use diesel::sql_types::{Array, BigInt, Integer, Nullable, Text, Timestamp};
            let ordered = || order.iter().map(|&i| &records[i]);
            let ids: Vec<&str> = ordered().map(|r| r.delivery_id.as_str()).collect();
            let owners: Vec<&str> = ordered().map(|r| r.owner.as_str()).collect();
            let statuses: Vec<&str> = ordered().map(|r| r.completion.status.as_str()).collect();
            let attempts: Vec<i32> = ordered().map(|r| r.completion.attempts).collect();
            let next: Vec<NaiveDateTime> = ordered().map(|r| r.completion.next_attempt_at).collect();
            let codes: Vec<Option<i32>> = ordered().map(|r| r.completion.last_status_code).collect();
            let errors: Vec<Option<String>> =
                ordered().map(|r| storable_opt(r.completion.last_error.clone())).collect();
            let nows: Vec<NaiveDateTime> = ordered().map(|r| r.completion.now).collect();
            let finished: Vec<Option<NaiveDateTime>> = ordered()
                .map(|r| {
                    matches!(r.completion.status, DeliveryStatus::Sent | DeliveryStatus::Dead)
                        .then_some(r.completion.now)
                })
                .collect();
            let attempt_ids: Vec<&str> = ordered().map(|r| r.attempt.id.as_str()).collect();
            let numbers: Vec<i32> = ordered().map(|r| r.attempt.attempt_number).collect();
            let attempt_codes: Vec<Option<i32>> = ordered().map(|r| r.attempt.status_code).collect();
            let attempt_errors: Vec<Option<String>> =
                ordered().map(|r| storable_opt(r.attempt.error.clone())).collect();
            let started: Vec<NaiveDateTime> = ordered().map(|r| r.attempt.started_at).collect();
            let durations: Vec<i64> = ordered().map(|r| r.attempt.duration_ms).collect();
            let kinds: Vec<Option<String>> = ordered().map(|r| r.attempt.error_kind.clone()).collect();
            let snippets: Vec<Option<String>> =
                ordered().map(|r| storable_opt(r.attempt.response_snippet.clone())).collect();
            let triggers: Vec<&str> = ordered().map(|r| r.attempt.trigger.as_str()).collect();
            #[derive(QueryableByName)]
            struct Moved {
                #[diesel(sql_type = Text)]
                attempt_id: String,
            }
            let moved: Vec<Moved> = diesel::sql_query(MOVE_ON_PG)
                .bind::<Array<Text>, _>(&ids)
                .bind::<Array<Text>, _>(&owners)
                .bind::<Array<Text>, _>(&statuses)
                .bind::<Array<Integer>, _>(&attempts)
                .bind::<Array<Timestamp>, _>(&next)
                .bind::<Array<Nullable<Integer>>, _>(&codes)
                .bind::<Array<Nullable<Text>>, _>(&errors)
                .bind::<Array<Timestamp>, _>(&nows)
                .bind::<Array<Nullable<Timestamp>>, _>(&finished)
                .bind::<Array<Text>, _>(&attempt_ids)
                .bind::<Array<Timestamp>, _>(&started)
                .bind::<Array<BigInt>, _>(&durations)
                .bind::<Array<Nullable<Text>>, _>(&kinds)
                .bind::<Array<Nullable<Text>>, _>(&snippets)
                .bind::<Array<Text>, _>(&triggers)
                .bind::<Array<Integer>, _>(&numbers)
                .bind::<Array<Nullable<Integer>>, _>(&attempt_codes)
                .bind::<Array<Nullable<Text>>, _>(&attempt_errors)
                .load(pg)?;
            // By attempt id: two records of one delivery (one under a lost lease) stay apart.
            let moved: HashSet<String> = moved.into_iter().map(|m| m.attempt_id).collect();
            for (i, record) in records.iter().enumerate() {
                recorded[i] = moved.contains(&record.attempt.id);
            }
        }
        DbConn::Sqlite(sqlite) => {
            let mut ids: Vec<&str> = records.iter().map(|r| r.delivery_id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            if ids.len() < records.len() {
                // Two records of one delivery (one under a lost lease): one at a time keeps
                // them apart.
                for &i in order {
                    recorded[i] = move_on_one(conn, &records[i])?;
                }
                return Ok(recorded);
            }
            recorded = move_on_sqlite(sqlite, records, order)?;
        }
    }
    Ok(recorded)
}

/// One statement for a batch on PostgreSQL: the deliveries move on under a compare-and-set on
/// their lease owner, and the attempts of those that moved are inserted.
pub(super) const MOVE_ON_PG: &str = "\
WITH v AS (
  SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int4[], $5::timestamp[], $6::int4[], $7::text[],
                       $8::timestamp[], $9::timestamp[], $10::text[], $11::timestamp[], $12::int8[], $13::text[],
                       $14::text[], $15::text[], $16::int4[], $17::int4[], $18::text[])
    AS v(id, owner, status, attempts, next_attempt_at, last_status_code, last_error, now, finished_at,
         attempt_id, started_at, duration_ms, error_kind, response_snippet, trigger, attempt_number,
         status_code, error)
), moved AS (
  UPDATE deliveries d SET status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
    last_status_code = v.last_status_code, last_error = v.last_error, lease_owner = NULL, lease_until = NULL,
    next_trigger = 'scheduled', updated_at = v.now, finished_at = v.finished_at
  FROM v WHERE d.id = v.id AND d.lease_owner = v.owner
  RETURNING v.attempt_id
), attempts AS (
  INSERT INTO delivery_attempts (id, delivery_id, attempt_number, started_at, duration_ms, status_code, error_kind,
                                 error, response_snippet, trigger)
  SELECT v.attempt_id, v.id, v.attempt_number, v.started_at, v.duration_ms, v.status_code, v.error_kind,
         v.error, v.response_snippet, v.trigger
  FROM v JOIN moved ON moved.attempt_id = v.attempt_id
)
SELECT attempt_id FROM moved";

/// The batch on SQLite in two statements: the records travel as one JSON parameter, the
/// deliveries move on under a compare-and-set on their owner (`UPDATE … FROM json_each`), and
/// the attempts of those that moved are inserted. Delivery ids must be distinct.
fn move_on_sqlite(
    conn: &mut diesel::SqliteConnection,
    records: &[AttemptRecord],
    order: &[usize],
) -> StoreResult<Vec<bool>> {
    use diesel::sql_types::Text;
    // Times as diesel writes them on SQLite, so comparisons with other rows hold.
    let time = |t: NaiveDateTime| t.format("%F %T%.f").to_string();
    let rows: Vec<serde_json::Value> = order
        .iter()
        .map(|&i| {
            let r = &records[i];
            let c = &r.completion;
            let done = matches!(c.status, DeliveryStatus::Sent | DeliveryStatus::Dead);
            serde_json::json!({
                "id": r.delivery_id, "owner": r.owner, "status": c.status.as_str(), "attempts": c.attempts,
                "next": time(c.next_attempt_at), "code": c.last_status_code, "error": storable_opt(c.last_error.clone()),
                "now": time(c.now), "finished": done.then(|| time(c.now)),
            })
        })
        .collect();
    #[derive(QueryableByName)]
    struct Moved {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let moved: Vec<Moved> =
        diesel::sql_query(MOVE_ON_SQLITE).bind::<Text, _>(serde_json::Value::Array(rows).to_string()).load(conn)?;
    let moved: HashSet<String> = moved.into_iter().map(|m| m.id).collect();
    let recorded: Vec<bool> = records.iter().map(|r| moved.contains(&r.delivery_id)).collect();
    let attempts: Vec<serde_json::Value> = order
        .iter()
        .filter(|&&i| recorded[i])
        .map(|&i| {
            let a = &records[i].attempt;
            serde_json::json!({
                "id": a.id, "delivery_id": a.delivery_id, "number": a.attempt_number, "started": time(a.started_at),
                "ms": a.duration_ms, "code": a.status_code, "kind": a.error_kind, "error": storable_opt(a.error.clone()),
                "snippet": storable_opt(a.response_snippet.clone()), "trigger": a.trigger,
            })
        })
        .collect();
    if !attempts.is_empty() {
        diesel::sql_query(INSERT_ATTEMPTS_SQLITE)
            .bind::<Text, _>(serde_json::Value::Array(attempts).to_string())
            .execute(conn)?;
    }
    Ok(recorded)
}

pub(super) const MOVE_ON_SQLITE: &str = "\
UPDATE deliveries SET status = v.status, attempts = v.attempts, next_attempt_at = v.next,
  last_status_code = v.code, last_error = v.error, lease_owner = NULL, lease_until = NULL,
  next_trigger = 'scheduled', updated_at = v.now, finished_at = v.finished
FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.owner') AS owner,
        json_extract(value, '$.status') AS status, json_extract(value, '$.attempts') AS attempts,
        json_extract(value, '$.next') AS next, json_extract(value, '$.code') AS code,
        json_extract(value, '$.error') AS error, json_extract(value, '$.now') AS now,
        json_extract(value, '$.finished') AS finished
      FROM json_each(?1)) AS v
WHERE deliveries.id = v.id AND deliveries.lease_owner = v.owner
RETURNING deliveries.id";

const INSERT_ATTEMPTS_SQLITE: &str = "\
INSERT INTO delivery_attempts (id, delivery_id, attempt_number, started_at, duration_ms, status_code, error_kind,
                               error, response_snippet, trigger)
SELECT json_extract(value, '$.id'), json_extract(value, '$.delivery_id'), json_extract(value, '$.number'),
       json_extract(value, '$.started'), json_extract(value, '$.ms'), json_extract(value, '$.code'),
       json_extract(value, '$.kind'), json_extract(value, '$.error'), json_extract(value, '$.snippet'),
       json_extract(value, '$.trigger')
FROM json_each(?1)";

/// Moves one delivery on and inserts its attempt, if its lease holds.
fn move_on_one(conn: &mut DbConn, record: &AttemptRecord) -> StoreResult<bool> {
    let completion = &record.completion;
    let done = matches!(completion.status, DeliveryStatus::Sent | DeliveryStatus::Dead);
    let updated = diesel::update(
        deliveries::table
            .filter(deliveries::id.eq(&record.delivery_id))
            .filter(deliveries::lease_owner.eq(&record.owner)),
    )
    .set((
        deliveries::status.eq(completion.status.as_str()),
        deliveries::attempts.eq(completion.attempts),
        deliveries::next_attempt_at.eq(completion.next_attempt_at),
        deliveries::last_status_code.eq(completion.last_status_code),
        deliveries::last_error.eq(storable_opt(completion.last_error.clone())),
        deliveries::lease_owner.eq(None::<String>),
        deliveries::lease_until.eq(None::<NaiveDateTime>),
        deliveries::next_trigger.eq(AttemptTrigger::Scheduled.as_str()),
        deliveries::updated_at.eq(completion.now),
        deliveries::finished_at.eq(done.then_some(completion.now)),
    ))
    .execute(conn)?;
    if updated != 1 {
        return Ok(false);
    }
    diesel::insert_into(delivery_attempts::table).values(&*record.attempt.storable()).execute(conn)?;
    Ok(true)
}
