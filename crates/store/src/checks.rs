//! Writing the result of one check: the run, and on a change the snapshot, the event and its
//! deliveries, all in one transaction.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::outbox::Target;
use crate::render::Render;
use crate::schema::{events, runs, snapshots, watches};
use crate::{DbConn, Event, Run, Snapshot, StoreError, StoreResult};

/// Everything one check produced.
#[derive(Debug, Clone)]
pub struct CheckResult {
    /// The watch checked.
    pub watch_id: String,
    /// Its owner.
    pub account_id: String,
    /// The lease under which the check ran; the write happens only if it is still held.
    pub lease_owner: String,
    /// The run row.
    pub run: Run,
    /// A new snapshot (first check or changed content).
    pub snapshot: Option<Snapshot>,
    /// The new snapshot's screenshot, stored unless an identical one is.
    pub screenshot: Option<crate::screenshots::StoredScreenshot>,
    /// An `auto` watch's new `browser_since` (`Some(None)` clears it; `None` leaves it).
    pub browser_since: Option<Option<NaiveDateTime>>,
    /// Whether the watch's conditions held, when they were judged (`None` leaves it).
    pub conditions_met: Option<bool>,
    /// Checks in a row whose values were not all read, when that changed (`None` leaves it).
    pub value_failures: Option<i32>,
    /// The watch's expectation state, when it changed (`None` leaves it).
    pub expect: Option<ExpectState>,
    /// Events to deliver, each to every enabled endpoint of the owner (a change, a health
    /// change, or both).
    pub events: Vec<Event>,
    /// Events kept in the history but delivered to no endpoint, as a muted watch's are: a
    /// change whose alert is the `condition.met` it caused.
    pub undelivered: Vec<Event>,
    /// Verdicts a language model is to give on changes in `undelivered` (of a watch with
    /// `options.ai`): their deliveries are queued once it does.
    pub verdicts: Vec<crate::Verdict>,
    /// The watch's health after this check ([`driftwatch_core::WatchHealth`]).
    pub health: String,
    /// Validators of the page fetched, for the next conditional GET (unchanged when `None`).
    pub validators: Option<(Option<String>, Option<String>)>,
    /// Attempt budget for the deliveries created.
    pub max_attempts: i32,
    /// Failed checks in a row, this one included (the lease holder is the only writer).
    pub consecutive_failures: i32,
    /// When the watch is due next.
    pub next_run_at: NaiveDateTime,
    /// The watch's `updated_at` when the check began.
    pub watch_updated_at: NaiveDateTime,
    /// Now.
    pub now: NaiveDateTime,
}

/// Where a watch's expectation stands (`watches.expect_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpectState {
    /// The change deadline armed.
    pub due_at: Option<NaiveDateTime>,
    /// When the change deadline was missed (not met since).
    pub missed_at: Option<NaiveDateTime>,
    /// Whether the value expectation held when last judged.
    pub holds: Option<bool>,
}

/// Writes a check's result and releases the watch's lease. Returns the number of deliveries
/// queued (one per enabled endpoint of the owner when there is an event).
///
/// Fails with [`StoreError::LeaseLost`], writing nothing, if the lease was taken over.
pub fn record(conn: &mut DbConn, render: &dyn Render, result: &CheckResult) -> StoreResult<usize> {
    conn.transaction(|conn| record_in(conn, render, result))
}

/// Writes many checks' results in one transaction (one commit for all of them), each under a
/// savepoint of its own: a check whose lease was lost, or whose write fails, writes nothing and
/// gets its error, while the others are written. Returns each check's answer, in the order given;
/// an error of the whole transaction (the commit, the connection) is returned alone and means
/// none was written.
///
/// Watches are written in id order, so concurrent batches on PostgreSQL cannot deadlock.
pub fn record_all(
    conn: &mut DbConn,
    render: &dyn Render,
    results: &[CheckResult],
) -> StoreResult<Vec<StoreResult<usize>>> {
    if let DbConn::Pg(_) = conn {
        // A handful of set-wise statements for the whole batch; should any of them fail (an
        // endpoint deleted mid-batch, say), the batch is written again check by check below,
        // so one check's error stays its own.
        match conn.transaction(|conn| record_set_pg(conn, render, results)) {
            Ok(answers) => return Ok(answers),
            Err(e) => tracing::debug!(error = %e, "set-wise check batch failed; writing check by check"),
        }
    }
    let mut order: Vec<usize> = (0..results.len()).collect();
    order.sort_by(|&a, &b| results[a].watch_id.cmp(&results[b].watch_id));
    conn.transaction(|conn| {
        let mut answers: Vec<(usize, StoreResult<usize>)> =
            order.into_iter().map(|i| (i, conn.transaction(|conn| record_in(conn, render, &results[i])))).collect();
        answers.sort_by_key(|(i, _)| *i);
        Ok(answers.into_iter().map(|(_, answer)| answer).collect())
    })
}

/// The watches' new state for a whole batch in one statement, each row only under its lease;
/// returns the ids written.
const RELEASE_PG: &str = "\
UPDATE watches AS w SET
  last_run_at = v.last_run_at, consecutive_failures = v.failures, health = v.health,
  lease_owner = NULL, lease_until = NULL,
  next_run_at = CASE WHEN w.updated_at = v.updated_at THEN v.next_run_at ELSE w.next_run_at END,
  rebaseline = CASE WHEN w.updated_at = v.updated_at THEN FALSE ELSE w.rebaseline END,
  etag = CASE WHEN w.updated_at = v.updated_at AND v.fetched THEN v.etag ELSE w.etag END,
  last_modified = CASE WHEN w.updated_at = v.updated_at AND v.fetched THEN v.last_modified ELSE w.last_modified END
FROM UNNEST($1::text[], $2::text[], $3::timestamp[], $4::int[], $5::text[], $6::timestamp[], $7::timestamp[],
            $8::bool[], $9::text[], $10::text[])
  AS v(id, owner, last_run_at, failures, health, next_run_at, updated_at, fetched, etag, last_modified)
WHERE w.id = v.id AND w.lease_owner = v.owner
RETURNING w.id";

/// [`record_all`] on PostgreSQL in a few statements for the whole batch (inside the caller's
/// transaction): the watches released under their leases, then the snapshots, events,
/// deliveries and runs of the checks whose lease held, each kind in one multi-row insert.
fn record_set_pg(
    conn: &mut DbConn,
    render: &dyn Render,
    results: &[CheckResult],
) -> StoreResult<Vec<StoreResult<usize>>> {
    use diesel::sql_types::{Array, Bool, Integer, Nullable, Text, Timestamp};
    #[derive(QueryableByName)]
    struct Written {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let DbConn::Pg(pg) = conn else { return Err(StoreError::Config("not PostgreSQL".into())) };
    let col = |f: fn(&CheckResult) -> String| results.iter().map(f).collect::<Vec<_>>();
    let times = |f: fn(&CheckResult) -> NaiveDateTime| results.iter().map(f).collect::<Vec<_>>();
    let etags: Vec<Option<String>> = results.iter().map(|r| r.validators.as_ref().and_then(|v| v.0.clone())).collect();
    let last_modified: Vec<Option<String>> =
        results.iter().map(|r| r.validators.as_ref().and_then(|v| v.1.clone())).collect();
    let written: Vec<Written> = diesel::sql_query(RELEASE_PG)
        .bind::<Array<Text>, _>(col(|r| r.watch_id.clone()))
        .bind::<Array<Text>, _>(col(|r| r.lease_owner.clone()))
        .bind::<Array<Timestamp>, _>(times(|r| r.run.started_at))
        .bind::<Array<Integer>, _>(results.iter().map(|r| r.consecutive_failures).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(col(|r| r.health.clone()))
        .bind::<Array<Timestamp>, _>(times(|r| r.next_run_at))
        .bind::<Array<Timestamp>, _>(times(|r| r.watch_updated_at))
        .bind::<Array<Bool>, _>(results.iter().map(|r| r.validators.is_some()).collect::<Vec<_>>())
        .bind::<Array<Nullable<Text>>, _>(etags)
        .bind::<Array<Nullable<Text>>, _>(last_modified)
        .load(pg)?;
    let written: std::collections::HashSet<String> = written.into_iter().map(|w| w.id).collect();
    let kept: Vec<&CheckResult> = results.iter().filter(|r| written.contains(&r.watch_id)).collect();
    for result in &kept {
        extras(conn, result)?;
    }
    let DbConn::Pg(pg) = conn else { return Err(StoreError::Config("not PostgreSQL".into())) };
    let snapshots: Vec<Snapshot> =
        kept.iter().filter_map(|r| r.snapshot.as_ref().map(|s| s.storable().into_owned())).collect();
    if !snapshots.is_empty() {
        diesel::insert_into(snapshots::table).values(&snapshots).execute(pg)?;
    }
    let events: Vec<(&Event, i32, NaiveDateTime)> =
        kept.iter().flat_map(|r| r.events.iter().map(|e| (e, r.max_attempts, r.now))).collect();
    let queued = crate::outbox::enqueue_many(conn, render, &events)?;
    let undelivered: Vec<Event> = kept.iter().flat_map(|r| r.undelivered.iter().cloned()).collect();
    crate::insert_all!(conn, events::table, undelivered);
    let verdicts: Vec<crate::Verdict> = kept.iter().flat_map(|r| r.verdicts.iter().cloned()).collect();
    crate::verdicts::insert_pending(conn, &verdicts)?;
    let DbConn::Pg(pg) = conn else { return Err(StoreError::Config("not PostgreSQL".into())) };
    let runs: Vec<Run> = kept.iter().map(|r| r.run.storable().into_owned()).collect();
    if !runs.is_empty() {
        diesel::insert_into(runs::table).values(&runs).execute(pg)?;
    }
    Ok(results
        .iter()
        .map(|r| match written.contains(&r.watch_id) {
            true => Ok(r.events.iter().map(|e| queued.get(e.id.as_str()).copied().unwrap_or(0)).sum()),
            false => Err(StoreError::LeaseLost),
        })
        .collect())
}

/// [`record`]'s writes, inside a transaction or savepoint of the caller's.
fn record_in(conn: &mut DbConn, render: &dyn Render, result: &CheckResult) -> StoreResult<usize> {
    use diesel::dsl::case_when;
    use diesel::sql_types::{Bool, Nullable, Text, Timestamp};
    // One statement, written first: on SQLite it takes the write lock before any read, so the
    // transaction waits for other writers instead of failing on a stale read snapshot. The
    // schedule and the validators follow from the watch as it was when the check began; if it
    // was updated meanwhile (a new schedule, URL, selector or options), the update's own next
    // run and cleared validators stand.
    let current = watches::updated_at.eq(result.watch_updated_at);
    let leased =
        watches::table.filter(watches::id.eq(&result.watch_id)).filter(watches::lease_owner.eq(&result.lease_owner));
    let state = (
        watches::last_run_at.eq(result.run.started_at),
        watches::consecutive_failures.eq(result.consecutive_failures),
        watches::health.eq(&result.health),
        watches::lease_owner.eq(None::<String>),
        watches::lease_until.eq(None::<NaiveDateTime>),
        watches::next_run_at
            .eq(case_when(current, result.next_run_at.into_sql::<Timestamp>()).otherwise(watches::next_run_at)),
        watches::rebaseline.eq(case_when(current, false.into_sql::<Bool>()).otherwise(watches::rebaseline)),
    );
    let updated = match &result.validators {
        Some((etag, last_modified)) => diesel::update(leased)
            .set((
                state,
                watches::etag
                    .eq(case_when(current, etag.clone().into_sql::<Nullable<Text>>()).otherwise(watches::etag)),
                watches::last_modified.eq(case_when(current, last_modified.clone().into_sql::<Nullable<Text>>())
                    .otherwise(watches::last_modified)),
            ))
            .execute(conn)?,
        None => diesel::update(leased).set(state).execute(conn)?,
    };
    if updated != 1 {
        return Err(StoreError::LeaseLost);
    }
    extras(conn, result)?;
    if let Some(snapshot) = &result.snapshot {
        diesel::insert_into(snapshots::table).values(&*snapshot.storable()).execute(conn)?;
    }
    let mut queued = 0;
    for event in &result.events {
        queued += crate::outbox::enqueue(conn, render, event, Target::AllEnabled, result.max_attempts, result.now)?;
    }
    for event in &result.undelivered {
        diesel::insert_into(events::table).values(event).execute(conn)?;
    }
    crate::verdicts::insert_pending(conn, &result.verdicts)?;
    diesel::insert_into(runs::table).values(&*result.run.storable()).execute(conn)?;
    Ok(queued)
}

/// The rarer parts of a check, written row by row: the screenshot (before the snapshot that
/// refers to it), an `auto` watch's browser memory, its values missing in a row, whether
/// its conditions held and where its expectation stands.
fn extras(conn: &mut DbConn, result: &CheckResult) -> StoreResult<()> {
    if let Some(shot) = &result.screenshot {
        crate::screenshots::put(conn, shot)?;
    }
    if let Some(since) = result.browser_since {
        diesel::update(watches::table.filter(watches::id.eq(&result.watch_id)))
            .set(watches::browser_since.eq(since))
            .execute(conn)?;
    }
    if let Some(failures) = result.value_failures {
        diesel::update(watches::table.filter(watches::id.eq(&result.watch_id)))
            .set(watches::value_failures.eq(failures))
            .execute(conn)?;
    }
    if let Some(state) = result.expect {
        // As the conditions: unless the watch was changed meanwhile (which re-armed it).
        diesel::update(
            watches::table
                .filter(watches::id.eq(&result.watch_id))
                .filter(watches::updated_at.eq(result.watch_updated_at)),
        )
        .set((
            watches::expect_due_at.eq(state.due_at),
            watches::expect_missed_at.eq(state.missed_at),
            watches::expect_holds.eq(state.holds),
        ))
        .execute(conn)?;
    }
    if let Some(met) = result.conditions_met {
        // Unless the conditions were changed meanwhile (which cleared the column for a fresh
        // judgement): the check judged the old ones.
        diesel::update(
            watches::table
                .filter(watches::id.eq(&result.watch_id))
                .filter(watches::updated_at.eq(result.watch_updated_at)),
        )
        .set(watches::conditions_met.eq(Some(met)))
        .execute(conn)?;
    }
    Ok(())
}
