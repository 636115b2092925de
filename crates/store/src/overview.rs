//! What the watches page shows beside each watch, for a whole page of watches in a few
//! queries: when each last changed, and how many changes it had each day of a window.

use std::collections::HashMap;

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text, Timestamp};
use driftwatch_core::EventType;

use crate::schema::events;
use crate::{DbConn, StoreResult};

/// The time of each watch's newest `change.detected` event (watches without one are absent).
pub fn last_changes(conn: &mut DbConn, watch_ids: &[String]) -> StoreResult<HashMap<String, NaiveDateTime>> {
    Ok(events::table
        .filter(events::watch_id.eq_any(watch_ids))
        .filter(events::event_type.eq(EventType::ChangeDetected.as_str()))
        .group_by(events::watch_id)
        .select((events::watch_id, diesel::dsl::max(events::created_at)))
        .load::<(Option<String>, Option<NaiveDateTime>)>(conn)?
        .into_iter()
        .filter_map(|(watch, at)| Some((watch?, at?)))
        .collect())
}

#[derive(QueryableByName)]
struct DayCount {
    #[diesel(sql_type = Text)]
    watch_id: String,
    #[diesel(sql_type = Text)]
    day: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Changes per watch and UTC day since `since`: one grouped query, so the rows returned are
/// bounded by watches × days however often a page changes.
pub fn changes_per_day(
    conn: &mut DbConn,
    watch_ids: &[String],
    since: NaiveDateTime,
) -> StoreResult<HashMap<String, Vec<(NaiveDate, i64)>>> {
    if watch_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let change = EventType::ChangeDetected.as_str();
    let rows: Vec<DayCount> = match conn {
        DbConn::Pg(pg) => {
            let placeholders: Vec<String> = (0..watch_ids.len()).map(|i| format!("${}", i + 3)).collect();
            let sql = format!(
                "SELECT watch_id, to_char(created_at, 'YYYY-MM-DD') AS day, COUNT(*) AS n FROM events \
                 WHERE event_type = $1 AND created_at >= $2 AND watch_id IN ({}) GROUP BY watch_id, day",
                placeholders.join(", ")
            );
            let mut query = diesel::sql_query(sql).into_boxed().bind::<Text, _>(change).bind::<Timestamp, _>(since);
            for id in watch_ids {
                query = query.bind::<Text, _>(id.clone());
            }
            query.load(pg)?
        }
        DbConn::Sqlite(sqlite) => {
            let placeholders = vec!["?"; watch_ids.len()].join(", ");
            let sql = format!(
                "SELECT watch_id, strftime('%Y-%m-%d', created_at) AS day, COUNT(*) AS n FROM events \
                 WHERE event_type = ? AND created_at >= ? AND watch_id IN ({placeholders}) GROUP BY watch_id, day"
            );
            let mut query = diesel::sql_query(sql).into_boxed().bind::<Text, _>(change).bind::<Timestamp, _>(since);
            for id in watch_ids {
                query = query.bind::<Text, _>(id.clone());
            }
            query.load(sqlite)?
        }
    };
    let mut per_watch: HashMap<String, Vec<(NaiveDate, i64)>> = HashMap::new();
    for row in rows {
        if let Ok(day) = NaiveDate::parse_from_str(&row.day, "%Y-%m-%d") {
            per_watch.entry(row.watch_id).or_default().push((day, row.n));
        }
    }
    Ok(per_watch)
}

/// An endpoint's delivery health over a window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointHealth {
    /// Attempts in the window.
    pub attempts: i64,
    /// Of them, answered 2xx.
    pub successes: i64,
    /// Median attempt duration in the window.
    pub median_ms: Option<i64>,
    /// The last successful delivery, at any time.
    pub last_success: Option<NaiveDateTime>,
}

#[derive(QueryableByName)]
struct AttemptStats {
    #[diesel(sql_type = Text)]
    endpoint_id: String,
    #[diesel(sql_type = BigInt)]
    attempts: i64,
    #[diesel(sql_type = BigInt)]
    successes: i64,
    #[diesel(sql_type = BigInt)]
    median_ms: i64,
}

/// Attempts, successes and the median duration of each endpoint's attempts since `since`
/// (one windowed query: the middle row by duration per endpoint), and each endpoint's last
/// success.
pub fn endpoint_health(
    conn: &mut DbConn,
    endpoint_ids: &[String],
    since: NaiveDateTime,
) -> StoreResult<HashMap<String, EndpointHealth>> {
    use crate::schema::deliveries;
    if endpoint_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let inner = |placeholders: &str, since: &str| {
        format!(
            "SELECT endpoint_id, cnt AS attempts, ok AS successes, duration_ms AS median_ms FROM (\
               SELECT d.endpoint_id, a.duration_ms, \
                 ROW_NUMBER() OVER (PARTITION BY d.endpoint_id ORDER BY a.duration_ms) AS rn, \
                 COUNT(*) OVER (PARTITION BY d.endpoint_id) AS cnt, \
                 SUM(CASE WHEN a.status_code BETWEEN 200 AND 299 THEN 1 ELSE 0 END) \
                   OVER (PARTITION BY d.endpoint_id) AS ok \
               FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id \
               WHERE a.started_at >= {since} AND d.endpoint_id IN ({placeholders})) t \
             WHERE rn = (cnt + 1) / 2"
        )
    };
    let rows: Vec<AttemptStats> = match conn {
        DbConn::Pg(pg) => {
            let placeholders: Vec<String> = (0..endpoint_ids.len()).map(|i| format!("${}", i + 2)).collect();
            let mut query =
                diesel::sql_query(inner(&placeholders.join(", "), "$1")).into_boxed().bind::<Timestamp, _>(since);
            for id in endpoint_ids {
                query = query.bind::<Text, _>(id.clone());
            }
            query.load(pg)?
        }
        DbConn::Sqlite(sqlite) => {
            let placeholders = vec!["?"; endpoint_ids.len()].join(", ");
            let mut query = diesel::sql_query(inner(&placeholders, "?")).into_boxed().bind::<Timestamp, _>(since);
            for id in endpoint_ids {
                query = query.bind::<Text, _>(id.clone());
            }
            query.load(sqlite)?
        }
    };
    let mut health: HashMap<String, EndpointHealth> = rows
        .into_iter()
        .map(|r| {
            let stats = EndpointHealth {
                attempts: r.attempts,
                successes: r.successes,
                median_ms: Some(r.median_ms),
                last_success: None,
            };
            (r.endpoint_id, stats)
        })
        .collect();
    let last: Vec<(String, Option<NaiveDateTime>)> = deliveries::table
        .filter(deliveries::endpoint_id.eq_any(endpoint_ids))
        .filter(deliveries::status.eq(driftwatch_core::DeliveryStatus::Sent.as_str()))
        .group_by(deliveries::endpoint_id)
        .select((deliveries::endpoint_id, diesel::dsl::max(deliveries::finished_at)))
        .load(conn)?;
    for (id, at) in last {
        health.entry(id).or_default().last_success = at;
    }
    Ok(health)
}
