//! Endpoints: where an account's events are delivered.

use diesel::prelude::*;

use crate::schema::endpoints;
use crate::{DbConn, Endpoint, Page, StoreResult};

/// Inserts a new endpoint.
pub fn insert_endpoint(conn: &mut DbConn, endpoint: &Endpoint) -> StoreResult<()> {
    diesel::insert_into(endpoints::table)
        .values(endpoint)
        .execute(conn)?;
    Ok(())
}

/// The account's endpoint `id`.
pub fn get_endpoint(
    conn: &mut DbConn,
    account_id: &str,
    id: &str,
) -> StoreResult<Option<Endpoint>> {
    Ok(endpoints::table
        .filter(endpoints::account_id.eq(account_id))
        .filter(endpoints::id.eq(id))
        .select(Endpoint::as_select())
        .first(conn)
        .optional()?)
}

/// The account's endpoints in creation order.
pub fn list_endpoints(
    conn: &mut DbConn,
    account_id: &str,
    page: &Page,
) -> StoreResult<Vec<Endpoint>> {
    let mut query = endpoints::table
        .filter(endpoints::account_id.eq(account_id))
        .select(Endpoint::as_select())
        .into_boxed();
    if let Some(after) = &page.after {
        query = query.filter(endpoints::id.gt(after));
    }
    Ok(query
        .order(endpoints::id.asc())
        .limit(page.limit)
        .load(conn)?)
}

/// Endpoints by id, whatever their account (for the delivery worker, which acts for all).
pub fn endpoints_by_ids(conn: &mut DbConn, ids: &[String]) -> StoreResult<Vec<Endpoint>> {
    Ok(endpoints::table
        .filter(endpoints::id.eq_any(ids))
        .select(Endpoint::as_select())
        .load(conn)?)
}
