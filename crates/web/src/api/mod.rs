//! The REST API under `/api/v1`: the routes, one module per resource, and what only the API
//! uses: its JSON views, problem+json errors, extractors, bearer-token auth and middleware.

mod account;
mod bulk;
mod deliveries;
mod endpoints;
mod events;
mod feed;
mod preview;
mod proxies;
mod quiet_hours;
mod recoveries;
mod secrets;
mod tokens;
pub(crate) mod values;
mod watches;

mod openapi;
mod webhooks;

pub(crate) mod auth;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod middleware;
pub(crate) mod views;

use serde::Deserialize;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::error::ApiError;
use crate::api::views::List;

pub use openapi::document;

/// Every route of the API, in one place, each documented: `routes!` accepts only handlers with
/// a `#[utoipa::path]`, and the OpenAPI document is built from the same list.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(openapi::serve))
        .routes(routes!(watches::create, watches::list))
        .routes(routes!(watches::get, watches::update, watches::delete))
        .routes(routes!(watches::check))
        .routes(routes!(preview::preview))
        .routes(routes!(bulk::check))
        .routes(routes!(bulk::pause))
        .routes(routes!(bulk::resume))
        .routes(routes!(bulk::delete))
        .routes(routes!(bulk::tag))
        .routes(routes!(watches::pause))
        .routes(routes!(watches::resume))
        .routes(routes!(watches::history::runs))
        .routes(routes!(watches::history::snapshots))
        .routes(routes!(values::list))
        .routes(routes!(values::backtest))
        .routes(routes!(watches::history::screenshot))
        .routes(routes!(watches::history::diff))
        .routes(routes!(watches::history::snapshot))
        .routes(routes!(events::list))
        .routes(routes!(events::get))
        .routes(routes!(events::release))
        .routes(routes!(feed::changes))
        .routes(routes!(feed::stats))
        .routes(routes!(endpoints::create, endpoints::list))
        .routes(routes!(endpoints::import))
        .routes(routes!(endpoints::get, endpoints::update, endpoints::delete))
        .routes(routes!(endpoints::actions::enable))
        .routes(routes!(endpoints::actions::disable))
        .routes(routes!(endpoints::actions::rotate_secret))
        .routes(routes!(endpoints::actions::test))
        .routes(routes!(endpoints::actions::recover))
        .routes(routes!(endpoints::digest::get))
        .routes(routes!(recoveries::list))
        .routes(routes!(recoveries::get))
        .routes(routes!(deliveries::list))
        .routes(routes!(deliveries::get))
        .routes(routes!(deliveries::redeliver))
        .routes(routes!(deliveries::dlq))
        .routes(routes!(proxies::create, proxies::list))
        .routes(routes!(proxies::get, proxies::set, proxies::delete))
        .routes(routes!(proxies::test))
        .routes(routes!(tokens::create, tokens::list))
        .routes(routes!(tokens::revoke))
        .routes(routes!(account::get, account::set, account::delete))
        .routes(routes!(account::models))
        .routes(routes!(quiet_hours::get, quiet_hours::set))
        .routes(routes!(secrets::list, secrets::create))
        .routes(routes!(secrets::replace, secrets::delete))
        .routes(routes!(watches::session::get, watches::session::import, watches::session::delete))
}

/// `limit` and `cursor` of list requests.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Items per page, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// `next_cursor` of the previous page.
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
        Ok((
            driftwatch_store::Page { after: self.cursor.clone().filter(|c| !c.is_empty()), limit: limit + 1 },
            limit as usize,
        ))
    }
}

/// Turns rows (one more than the page size when more follow) into a page of views.
fn page_of<R, V>(rows: Vec<R>, limit: usize, id: impl Fn(&R) -> &str) -> List<V>
where
    V: From<R>,
{
    page_of_with(rows, limit, id, V::from)
}

/// [`page_of`] with the view made by `view` (for views that need more than the row, such as the
/// time).
fn page_of_with<R, V>(mut rows: Vec<R>, limit: usize, id: impl Fn(&R) -> &str, view: impl Fn(R) -> V) -> List<V> {
    let next_cursor = next_cursor(&mut rows, limit, id);
    List { items: rows.into_iter().map(view).collect(), next_cursor }
}

/// Drops the extra row fetched to know whether another page follows; returns the cursor of
/// the next page, if one follows.
fn next_cursor<R>(rows: &mut Vec<R>, limit: usize, id: impl Fn(&R) -> &str) -> Option<String> {
    if rows.len() <= limit {
        return None;
    }
    rows.truncate(limit);
    rows.last().map(|r| id(r).to_owned())
}
