//! Routes of `/api/v1`, one module per resource.

mod deliveries;
mod endpoints;
mod events;
mod feed;
mod recoveries;
mod tokens;
mod watches;

use axum::Router;
use axum::routing::{get, post};
use serde::Deserialize;

use crate::AppState;
use crate::error::ApiError;
use crate::views::List;

/// Every route of the API, in one place.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/watches", post(watches::create).get(watches::list))
        .route("/watches/{id}", get(watches::get).patch(watches::update).delete(watches::delete))
        .route("/watches/{id}/check", post(watches::check))
        .route("/watches/{id}/pause", post(watches::pause))
        .route("/watches/{id}/resume", post(watches::resume))
        .route("/watches/{id}/runs", get(watches::runs))
        .route("/watches/{id}/snapshots", get(watches::snapshots))
        .route("/watches/{id}/diff", get(watches::diff))
        .route("/snapshots/{id}", get(watches::snapshot))
        .route("/events", get(events::list))
        .route("/changes", get(feed::changes))
        .route("/stats", get(feed::stats))
        .route("/endpoints", post(endpoints::create).get(endpoints::list))
        .route("/endpoints/{id}", get(endpoints::get).patch(endpoints::update).delete(endpoints::delete))
        .route("/endpoints/{id}/enable", post(endpoints::enable))
        .route("/endpoints/{id}/disable", post(endpoints::disable))
        .route("/endpoints/{id}/rotate-secret", post(endpoints::rotate_secret))
        .route("/endpoints/{id}/test", post(endpoints::test))
        .route("/endpoints/{id}/recover", post(endpoints::recover))
        .route("/recoveries/{id}", get(recoveries::get))
        .route("/deliveries", get(deliveries::list))
        .route("/deliveries/{id}", get(deliveries::get))
        .route("/deliveries/{id}/redeliver", post(deliveries::redeliver))
        .route("/dlq", get(deliveries::dlq))
        .route("/tokens", post(tokens::create).get(tokens::list))
        .route("/tokens/{id}", axum::routing::delete(tokens::revoke))
}

/// `limit` and `cursor` of list requests.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageParams {
    limit: Option<i64>,
    cursor: Option<String>,
}

const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 500;

impl PageParams {
    /// The store page: one row more than asked, to know whether another page follows.
    fn to_page(&self) -> Result<(driftwatch_store::Page, usize), ApiError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::invalid("limit", format!("must be between 1 and {MAX_LIMIT}")));
        }
        Ok((driftwatch_store::Page { after: self.cursor.clone(), limit: limit + 1 }, limit as usize))
    }
}

/// Turns rows (one more than the page size when more follow) into a page of views.
fn page_of<R, V>(mut rows: Vec<R>, limit: usize, id: impl Fn(&R) -> &str) -> List<V>
where
    V: From<R>,
{
    let next_cursor = if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(|r| id(r).to_owned())
    } else {
        None
    };
    List { items: rows.into_iter().map(V::from).collect(), next_cursor }
}
