//! Redelivery on request, and the fresh attempt budget a finished delivery gets when it is sent
//! again (by a redelivery or a recovery).

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::{AttemptTrigger, DeliveryStatus};

use super::history::get_delivery;
use super::job::{Job, leased_job};
use crate::schema::{deliveries, endpoints};
use crate::{DbConn, StoreResult};

/// What a redelivery request found.
#[derive(Debug)]
pub enum Redelivery {
    /// No such delivery in the account.
    NotFound,
    /// An attempt of it is in flight.
    Busy,
    /// Its endpoint is disabled.
    EndpointDisabled,
    /// Retention removed its body.
    Purged,
    /// It waits for its endpoint's digest, or went out in one (that digest's delivery): it has
    /// no body of its own.
    InDigest(Option<String>),
    /// Leased to the caller, to be attempted now.
    Claimed(Box<Job>),
}

/// Leases the account's delivery `id` for a redelivery on request, whatever its status, unless
/// an attempt is in flight, its endpoint is disabled or its body was purged (then nothing is
/// written). A `sent` or `dead` delivery gets a fresh attempt budget (the endpoint's, else
/// `budget`).
pub fn claim_for_redelivery(
    conn: &mut DbConn,
    account_id: &str,
    id: &str,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
    budget: i32,
) -> StoreResult<Redelivery> {
    conn.transaction(|conn| {
        let enabled_endpoints = endpoints::table.select(endpoints::id).filter(endpoints::enabled.eq(true));
        let claimed = diesel::update(
            deliveries::table
                .filter(deliveries::account_id.eq(account_id))
                .filter(deliveries::id.eq(id))
                .filter(deliveries::body_purged_at.is_null())
                .filter(
                    deliveries::status.ne_all([DeliveryStatus::Gathering.as_str(), DeliveryStatus::Digested.as_str()]),
                )
                .filter(deliveries::endpoint_id.eq_any(enabled_endpoints))
                .filter(deliveries::lease_until.is_null().or(deliveries::lease_until.lt(now))),
        )
        .set((
            deliveries::lease_owner.eq(owner),
            deliveries::lease_until.eq(lease_until),
            deliveries::next_trigger.eq(AttemptTrigger::Manual.as_str()),
        ))
        .execute(conn)?;
        let Some(delivery) = get_delivery(conn, account_id, id)? else { return Ok(Redelivery::NotFound) };
        if claimed == 0 {
            let enabled: bool = endpoints::table.find(&delivery.endpoint_id).select(endpoints::enabled).first(conn)?;
            return Ok(if in_digest(&delivery.status) {
                Redelivery::InDigest(delivery.digest_id)
            } else if delivery.body_purged_at.is_some() {
                Redelivery::Purged
            } else if !enabled {
                Redelivery::EndpointDisabled
            } else {
                Redelivery::Busy
            });
        }
        if finished(&delivery.status) {
            fresh_budget(conn, &delivery.id, delivery.attempts, budget, now)?;
        }
        Ok(match leased_job(conn, &delivery.id, owner)? {
            Some(job) => Redelivery::Claimed(Box::new(job)),
            None => Redelivery::NotFound,
        })
    })
}

/// Whether a delivery waits for, or went out in, its endpoint's digest: it has no body of its
/// own to send.
fn in_digest(status: &str) -> bool {
    status == DeliveryStatus::Gathering.as_str() || status == DeliveryStatus::Digested.as_str()
}

/// Whether a delivery's status is final (`sent` or `dead`): sending it again needs a fresh budget.
pub(crate) fn finished(status: &str) -> bool {
    status == DeliveryStatus::Sent.as_str() || status == DeliveryStatus::Dead.as_str()
}

/// Re-opens a finished delivery with its endpoint's attempt budget (or `default_budget`) more
/// attempts, numbered on from `attempts`.
pub(crate) fn fresh_budget(
    conn: &mut DbConn,
    id: &str,
    attempts: i32,
    default_budget: i32,
    now: NaiveDateTime,
) -> StoreResult<()> {
    let own: Option<i32> = deliveries::table
        .inner_join(endpoints::table)
        .filter(deliveries::id.eq(id))
        .select(endpoints::max_attempts)
        .first(conn)?;
    let budget = own.unwrap_or(default_budget);
    diesel::update(deliveries::table.find(id))
        .set((
            deliveries::status.eq(DeliveryStatus::Failed.as_str()),
            deliveries::retry_base.eq(attempts),
            deliveries::max_attempts.eq(attempts + budget.max(1)),
            deliveries::finished_at.eq(None::<NaiveDateTime>),
            deliveries::next_attempt_at.eq(now),
            deliveries::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}
