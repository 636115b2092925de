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
