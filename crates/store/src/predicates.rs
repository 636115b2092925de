//! The SQL predicates the planners need written out literally, in one place.
//!
//! `status IN ('queued', 'failed')` is spelled as SQL rather than bound: only a literal lets
//! SQLite and PostgreSQL match the partial indexes over pending deliveries (`deliveries_due`,
//! `deliveries_endpoint_due`). With bound parameters both planners fall back to
//! `deliveries_endpoint` and walk every delivery the endpoint ever had. The raw claim statements
//! (`deliveries::claim`, `deliveries::limited`) write the same text inside their SQL.

use diesel::prelude::*;
use driftwatch_core::DeliveryStatus;

use crate::schema::endpoints;

/// A pending delivery: `deliveries.status IN ('queued', 'failed')`, as the partial indexes write it.
pub(crate) fn pending() -> diesel::expression::SqlLiteral<diesel::sql_types::Bool> {
    const _: () = assert!(
        matches!(DeliveryStatus::Queued.as_str().as_bytes(), b"queued")
            && matches!(DeliveryStatus::Failed.as_str().as_bytes(), b"failed")
    );
    diesel::dsl::sql("deliveries.status IN ('queued', 'failed')")
}

/// [`pending`] and flagged `limited`: the predicate of `deliveries_endpoint_due`, written as the
/// index writes it.
pub(crate) fn pending_limited() -> diesel::expression::SqlLiteral<diesel::sql_types::Bool> {
    diesel::dsl::sql("deliveries.status IN ('queued', 'failed') AND deliveries.limited = TRUE")
}

/// Whether an endpoint has a limit that holds across nodes: `max_in_flight`, a rate limit, or a
/// circuit that is open or past its open period and not yet closed (half-open). Its deliveries
/// carry `limited` and are claimed by `deliveries::claim_limited`.
#[diesel::dsl::auto_type]
pub(crate) fn is_limited() -> _ {
    endpoints::max_in_flight
        .is_not_null()
        .or(endpoints::rate_limit_per_second.is_not_null())
        .or(endpoints::circuit_open_until.is_not_null())
}
