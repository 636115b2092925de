//! A claimed delivery with its body and endpoint, as every claim hands it to the worker.

use std::collections::HashMap;

use diesel::prelude::*;

use crate::schema::{accounts, deliveries, endpoints};
use crate::{DbConn, Delivery, Endpoint, StoreResult};

/// A claimed delivery with what it takes to send it.
#[derive(Debug, Clone)]
pub struct Job {
    /// The outbox row (under this worker's lease).
    pub delivery: Delivery,
    /// The exact bytes to POST.
    pub body: Vec<u8>,
    /// Where to.
    pub endpoint: Endpoint,
    /// The quiet hours that hold it (the endpoint's, else its account's), as stored JSON.
    pub quiet_hours: Option<String>,
}

/// A claimed outbox row as `UPDATE … RETURNING *` gives it.
#[derive(QueryableByName)]
#[diesel(table_name = deliveries)]
pub(super) struct ClaimedRow {
    #[diesel(embed)]
    pub delivery: Delivery,
    pub body: Vec<u8>,
}

/// Delivery `id` with its body and endpoint, when `owner` holds its lease.
pub(super) fn leased_job(conn: &mut DbConn, id: &str, owner: &str) -> StoreResult<Option<Job>> {
    let rows: Vec<(Delivery, Vec<u8>)> = deliveries::table
        .filter(deliveries::id.eq(id))
        .filter(deliveries::lease_owner.eq(owner))
        .select((Delivery::as_select(), deliveries::body))
        .load(conn)?;
    Ok(with_endpoints(conn, rows)?.pop())
}

/// Pairs claimed rows with their endpoints (one query for the batch).
pub(super) fn with_endpoints(conn: &mut DbConn, rows: Vec<(Delivery, Vec<u8>)>) -> StoreResult<Vec<Job>> {
    let mut endpoint_ids: Vec<String> = rows.iter().map(|(d, _)| d.endpoint_id.clone()).collect();
    endpoint_ids.sort();
    endpoint_ids.dedup();
    // The account's quiet hours ride the same query: they apply where the endpoint has none.
    let endpoints: HashMap<String, (Endpoint, Option<String>)> = endpoints::table
        .inner_join(accounts::table)
        .filter(endpoints::id.eq_any(&endpoint_ids))
        .select((Endpoint::as_select(), accounts::quiet_hours))
        .load::<(Endpoint, Option<String>)>(conn)?
        .into_iter()
        .map(|(e, account_quiet)| (e.id.clone(), (e, account_quiet)))
        .collect();
    Ok(rows
        .into_iter()
        .filter_map(|(delivery, body)| {
            let (endpoint, account_quiet) = endpoints.get(&delivery.endpoint_id)?;
            let quiet_hours = endpoint.quiet_hours.clone().or_else(|| account_quiet.clone());
            Some(Job { delivery, body, endpoint: endpoint.clone(), quiet_hours })
        })
        .collect())
}
