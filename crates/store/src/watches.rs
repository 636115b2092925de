//! Watches: create, read, list, and the lease claims of the schedule runner.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::WatchState;

use crate::schema::watches;
use crate::{DbConn, Page, StoreResult, Watch};

/// Inserts a new watch.
pub fn insert_watch(conn: &mut DbConn, watch: &Watch) -> StoreResult<()> {
    diesel::insert_into(watches::table).values(watch).execute(conn)?;
    Ok(())
}

/// The account's watch `id`.
pub fn get_watch(conn: &mut DbConn, account_id: &str, id: &str) -> StoreResult<Option<Watch>> {
    Ok(watches::table
        .filter(watches::account_id.eq(account_id))
        .filter(watches::id.eq(id))
        .select(Watch::as_select())
        .first(conn)
        .optional()?)
}

diesel::define_sql_function! {
    /// SQL `LOWER`, on both backends.
    fn lower(x: diesel::sql_types::Text) -> diesel::sql_types::Text;
}

/// `%text%` for a `LIKE`, with the pattern characters of `text` escaped (by `\\`).
fn contains_pattern(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("%{escaped}%")
}

/// The account's watches as (id, name), by name, at most `limit` (for pickers).
pub fn watch_names(conn: &mut DbConn, account_id: &str, limit: i64) -> StoreResult<Vec<(String, String)>> {
    Ok(watches::table
        .filter(watches::account_id.eq(account_id))
        .order((watches::name.asc(), watches::id.asc()))
        .limit(limit)
        .select((watches::id, watches::name))
        .load(conn)?)
}

/// The names of the account's watches among `ids` (another account's ids find nothing).
pub fn names_of(conn: &mut DbConn, account_id: &str, ids: &[String]) -> StoreResult<Vec<(String, String)>> {
    Ok(watches::table
        .filter(watches::account_id.eq(account_id))
        .filter(watches::id.eq_any(ids))
        .select((watches::id, watches::name))
        .load(conn)?)
}

/// The account's watches in creation order.
pub fn list_watches(conn: &mut DbConn, account_id: &str, filter: &WatchFilter, page: &Page) -> StoreResult<Vec<Watch>> {
    let mut query = watches::table.filter(watches::account_id.eq(account_id)).select(Watch::as_select()).into_boxed();
    if let Some(state) = filter.state {
        query = query.filter(watches::state.eq(state.as_str()));
    }
    if let Some(health) = filter.health {
        query = query.filter(watches::health.eq(health.as_str()));
    }
    if let Some(muted) = filter.muted {
        query = query.filter(watches::muted.eq(muted));
    }
    if let Some(tag) = &filter.tag {
        query = query.filter(watches::tags.like(contains_pattern(&format!(",{tag},"))).escape('\\'));
    }
    if let Some(q) = &filter.q {
        let pattern = contains_pattern(&q.to_lowercase());
        query = query.filter(
            lower(watches::name).like(pattern.clone()).escape('\\').or(lower(watches::url).like(pattern).escape('\\')),
        );
    }
    let query = match (filter.sort, &page.after) {
        (WatchSort::Oldest, Some(after)) => query.filter(watches::id.gt(after)),
        (WatchSort::Newest, Some(after)) => query.filter(watches::id.lt(after)),
        (WatchSort::Name, Some(after)) => {
            // The keyset is (name, id): the page starts after the cursor's row.
            let name: Option<String> = watches::table
                .filter(watches::account_id.eq(account_id))
                .filter(watches::id.eq(after))
                .select(watches::name)
                .first(conn)
                .optional()?;
            match name {
                Some(name) => {
                    query.filter(watches::name.gt(name.clone()).or(watches::name.eq(name).and(watches::id.gt(after))))
                }
                None => query.filter(watches::id.ne(watches::id)),
            }
        }
        (_, None) => query,
    };
    let query = match filter.sort {
        WatchSort::Oldest => query.order(watches::id.asc()),
        WatchSort::Newest => query.order(watches::id.desc()),
        WatchSort::Name => query.order((watches::name.asc(), watches::id.asc())),
    };
    Ok(query.limit(page.limit).load(conn)?)
}

/// Which watches a list shows; `None` fields do not filter.
#[derive(Debug, Clone, Default)]
pub struct WatchFilter {
    /// Only watches in this state.
    pub state: Option<driftwatch_core::WatchState>,
    /// Only watches in this health.
    pub health: Option<driftwatch_core::WatchHealth>,
    /// Only muted watches (`true`) or only those not muted (`false`).
    pub muted: Option<bool>,
    /// Only watches with this tag (normalised: lower case).
    pub tag: Option<String>,
    /// Only watches whose name or URL contains this (any case).
    pub q: Option<String>,
    /// The order (and so the keyset of the pages).
    pub sort: WatchSort,
}

/// The order of a list of watches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WatchSort {
    /// Oldest first (by id).
    #[default]
    Oldest,
    /// Newest first.
    Newest,
    /// By name, then id.
    Name,
}

/// Which watches a bulk action takes: these ids, or every watch a filter matches. Other
/// accounts' ids are simply not matched.
#[derive(Debug, Clone)]
pub enum WatchSelection {
    /// These watches.
    Ids(Vec<String>),
    /// Every watch matching.
    Filter(WatchFilter),
}

/// Most watches a bulk action by filter takes in one request.
pub const MAX_BULK: i64 = 100_000;

/// The ids of the account's watches in `selection`.
fn selected_ids(conn: &mut DbConn, account_id: &str, selection: &WatchSelection) -> StoreResult<Vec<String>> {
    match selection {
        WatchSelection::Ids(ids) => Ok(ids
            .chunks(500)
            .map(|chunk| {
                watches::table
                    .filter(watches::account_id.eq(account_id))
                    .filter(watches::id.eq_any(chunk))
                    .select(watches::id)
                    .load::<String>(conn)
            })
            .collect::<Result<Vec<_>, _>>()?
            .concat()),
        WatchSelection::Filter(filter) => {
            Ok(list_watches(conn, account_id, filter, &Page { after: None, limit: MAX_BULK })?
                .into_iter()
                .map(|w| w.id)
                .collect())
        }
    }
}

/// Applies `changes` to every selected watch in one transaction; returns how many changed.
fn bulk_update(
    conn: &mut DbConn,
    account_id: &str,
    selection: &WatchSelection,
    changes: &WatchChanges,
) -> StoreResult<usize> {
    conn.transaction(|c| {
        let ids = selected_ids(c, account_id, selection)?;
        let mut changed = 0;
        for chunk in ids.chunks(500) {
            changed += diesel::update(
                watches::table.filter(watches::account_id.eq(account_id)).filter(watches::id.eq_any(chunk)),
            )
            .set(changes)
            .execute(c)?;
        }
        Ok(changed)
    })
}

/// Pauses or resumes the selected watches (`changes` from the rules of a state change).
pub fn bulk_set_state(
    conn: &mut DbConn,
    account_id: &str,
    selection: &WatchSelection,
    changes: &WatchChanges,
) -> StoreResult<usize> {
    bulk_update(conn, account_id, selection, changes)
}

/// Queues a check of every selected active watch: due now, so the runner takes them promptly
/// (host politeness still applies). Paused watches are left alone.
pub fn bulk_check_now(
    conn: &mut DbConn,
    account_id: &str,
    selection: &WatchSelection,
    now: NaiveDateTime,
) -> StoreResult<usize> {
    conn.transaction(|c| {
        let ids = selected_ids(c, account_id, selection)?;
        let mut queued = 0;
        for chunk in ids.chunks(500) {
            queued += diesel::update(
                watches::table
                    .filter(watches::account_id.eq(account_id))
                    .filter(watches::id.eq_any(chunk))
                    .filter(watches::state.eq(WatchState::Active.as_str())),
            )
            .set(watches::next_run_at.eq(now))
            .execute(c)?;
        }
        Ok(queued)
    })
}

/// Deletes the selected watches with their history; returns how many.
pub fn bulk_delete(conn: &mut DbConn, account_id: &str, selection: &WatchSelection) -> StoreResult<usize> {
    conn.transaction(|c| {
        let ids = selected_ids(c, account_id, selection)?;
        let mut deleted = 0;
        for chunk in ids.chunks(500) {
            deleted += diesel::delete(
                watches::table.filter(watches::account_id.eq(account_id)).filter(watches::id.eq_any(chunk)),
            )
            .execute(c)?;
        }
        Ok(deleted)
    })
}

/// Adds `add` and removes `remove` (normalised tags) on every selected watch; returns how many
/// changed.
pub fn bulk_tag(
    conn: &mut DbConn,
    account_id: &str,
    selection: &WatchSelection,
    add: &[String],
    remove: &[String],
    now: NaiveDateTime,
) -> StoreResult<usize> {
    conn.transaction(|c| {
        let ids = selected_ids(c, account_id, selection)?;
        let mut changed = 0;
        for chunk in ids.chunks(500) {
            let rows: Vec<(String, String)> = watches::table
                .filter(watches::account_id.eq(account_id))
                .filter(watches::id.eq_any(chunk))
                .select((watches::id, watches::tags))
                .load(c)?;
            for (id, tags) in rows {
                let mut set: std::collections::BTreeSet<&str> = tags.split(',').filter(|t| !t.is_empty()).collect();
                set.extend(add.iter().map(String::as_str));
                set.retain(|t| !remove.iter().any(|r| r == t));
                let stored = crate::stored_tags(&set.into_iter().collect::<Vec<_>>());
                if stored != tags {
                    diesel::update(watches::table.find(&id))
                        .set((watches::tags.eq(&stored), watches::updated_at.eq(now)))
                        .execute(c)?;
                    changed += 1;
                }
            }
        }
        Ok(changed)
    })
}

/// Every tag used by the account's watches, sorted.
pub fn account_tags(conn: &mut DbConn, account_id: &str) -> StoreResult<Vec<String>> {
    let stored: Vec<String> = watches::table
        .filter(watches::account_id.eq(account_id))
        .filter(watches::tags.ne(""))
        .select(watches::tags)
        .distinct()
        .load(conn)?;
    let mut tags: Vec<String> =
        stored.iter().flat_map(|s| s.split(',')).filter(|t| !t.is_empty()).map(str::to_owned).collect();
    tags.sort();
    tags.dedup();
    Ok(tags)
}

/// Leases up to `limit` due, active, unleased watches to `owner` until `lease_until` and returns
/// them. One statement, so two runners never claim the same watch; on PostgreSQL the candidate
/// rows are locked with `SKIP LOCKED`, so runners on several nodes take disjoint batches.
pub fn claim_due(
    conn: &mut DbConn,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
    limit: i64,
) -> StoreResult<Vec<Watch>> {
    let condition = format!("state = '{}'", WatchState::Active.as_str());
    let mut claimed: Vec<Watch> = crate::lease_due_returning(
        conn,
        "watches",
        &condition,
        "next_run_at",
        &crate::Lease { owner, now, until: lease_until, limit },
    )?;
    claimed.sort_by(|a, b| (a.next_run_at, &a.id).cmp(&(b.next_run_at, &b.id)));
    Ok(claimed)
}

/// Leases the account's watch `id` to `owner` for a check on demand, unless a check of it is
/// already under way. `Ok(None)` when there is no such watch; `Ok(Some(None))` when it is busy.
pub fn claim_one(
    conn: &mut DbConn,
    account_id: &str,
    id: &str,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
) -> StoreResult<Option<Option<Watch>>> {
    let claimed = diesel::update(
        watches::table
            .filter(watches::account_id.eq(account_id))
            .filter(watches::id.eq(id))
            .filter(watches::lease_until.is_null().or(watches::lease_until.lt(now))),
    )
    .set((watches::lease_owner.eq(owner), watches::lease_until.eq(lease_until)))
    .execute(conn)?;
    let watch = get_watch(conn, account_id, id)?;
    Ok(watch.map(|w| (claimed == 1).then_some(w)))
}

/// Extends `owner`'s lease on watch `id` to `lease_until` (for a check that may run long);
/// `false` when the lease is no longer `owner`'s.
pub fn extend_lease(conn: &mut DbConn, id: &str, owner: &str, lease_until: NaiveDateTime) -> StoreResult<bool> {
    let extended = diesel::update(watches::table.filter(watches::id.eq(id)).filter(watches::lease_owner.eq(owner)))
        .set(watches::lease_until.eq(lease_until))
        .execute(conn)?;
    Ok(extended == 1)
}

/// Gives a claimed watch back unchecked (its node is stopping): the lease is cleared and its
/// due time kept, so the next node or the restarted one checks it at once. Only the lease
/// holder can; returns whether it held it.
pub fn release(conn: &mut DbConn, id: &str, owner: &str) -> StoreResult<bool> {
    let released = diesel::update(watches::table.filter(watches::id.eq(id)).filter(watches::lease_owner.eq(owner)))
        .set((watches::lease_owner.eq(None::<String>), watches::lease_until.eq(None::<NaiveDateTime>)))
        .execute(conn)?;
    Ok(released == 1)
}

/// Gives claimed watches back unchecked with a later due time each (their host or account
/// has no room now): only where `owner` still holds the lease. Returns how many it held.
pub fn defer(conn: &mut DbConn, owner: &str, deferred: &[(String, NaiveDateTime)]) -> StoreResult<usize> {
    conn.transaction(|conn| {
        let mut held = 0;
        for (id, until) in deferred {
            held += diesel::update(watches::table.filter(watches::id.eq(id)).filter(watches::lease_owner.eq(owner)))
                .set((
                    watches::lease_owner.eq(None::<String>),
                    watches::lease_until.eq(None::<NaiveDateTime>),
                    watches::next_run_at.eq(until),
                ))
                .execute(conn)?;
        }
        Ok(held)
    })
}

/// When the runner next has something to do: the earliest due time of an unleased active
/// watch. (A lease abandoned by a crashed node is not looked for here: leases last minutes,
/// and the runner's poll interval, a few seconds, picks the watch up once it expires.)
pub fn next_wake(conn: &mut DbConn, now: NaiveDateTime) -> StoreResult<Option<NaiveDateTime>> {
    // The first row in `watches_due` order rather than `min()`, which would read every row to
    // test the lease.
    Ok(watches::table
        .filter(watches::state.eq(WatchState::Active.as_str()))
        .filter(watches::lease_until.is_null().or(watches::lease_until.lt(now)))
        .select(watches::next_run_at)
        .order(watches::next_run_at.asc())
        .first(conn)
        .optional()?)
}

/// The changes `PATCH /watches/{id}` may make; `None` leaves a column as it is.
#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = watches)]
pub struct WatchChanges {
    /// New name.
    pub name: Option<String>,
    /// New URL.
    pub url: Option<String>,
    /// New selector (`Some(None)` clears it).
    pub selector: Option<Option<String>>,
    /// New interval (`Some(None)` when switching to cron).
    pub interval_seconds: Option<Option<i64>>,
    /// New cron expression (`Some(None)` when switching to an interval).
    pub cron: Option<Option<String>>,
    /// New time zone.
    pub time_zone: Option<Option<String>>,
    /// New state (pause, resume).
    pub state: Option<String>,
    /// New options (JSON).
    pub options: Option<String>,
    /// Cleared when what is fetched or extracted changes, so the next check fetches in full.
    pub etag: Option<Option<String>>,
    /// Cleared with `etag`.
    pub last_modified: Option<Option<String>>,
    /// Set when the next check should record a new baseline.
    pub rebaseline: Option<bool>,
    /// When it is due next (recomputed when the schedule changes or it resumes).
    pub next_run_at: Option<NaiveDateTime>,
    /// Now.
    pub updated_at: Option<NaiveDateTime>,
    /// New tags (stored form).
    pub tags: Option<String>,
    /// Muted or not.
    pub muted: Option<bool>,
    /// `Some(None)` when the conditions changed: the next check judges them afresh.
    pub conditions_met: Option<Option<bool>>,
    /// A new expectation's first deadline (`Some(None)`: none).
    pub expect_due_at: Option<Option<NaiveDateTime>>,
    /// `Some(None)` when the expectation changed: not missed.
    pub expect_missed_at: Option<Option<NaiveDateTime>>,
    /// `Some(None)` when the expectation changed: its values are judged afresh.
    pub expect_holds: Option<Option<bool>>,
}

/// Applies `changes` to the account's watch `id`; `None` when there is no such watch.
pub fn update_watch(
    conn: &mut DbConn,
    account_id: &str,
    id: &str,
    changes: &WatchChanges,
) -> StoreResult<Option<Watch>> {
    let updated = diesel::update(watches::table.filter(watches::account_id.eq(account_id)).filter(watches::id.eq(id)))
        .set(changes)
        .execute(conn)?;
    if updated == 0 {
        return Ok(None);
    }
    get_watch(conn, account_id, id)
}

/// Deletes the account's watch `id` with its snapshots, runs and events (and their
/// deliveries); false when there is no such watch.
pub fn delete_watch(conn: &mut DbConn, account_id: &str, id: &str) -> StoreResult<bool> {
    let deleted = diesel::delete(watches::table.filter(watches::account_id.eq(account_id)).filter(watches::id.eq(id)))
        .execute(conn)?;
    Ok(deleted == 1)
}
