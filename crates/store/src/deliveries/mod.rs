//! The outbox's deliveries, a file per step: [`history`] (what the API and the UI list),
//! [`claim`] (the outbox claim, giving back, the next wake-up), [`limited`] (endpoints whose
//! limits hold across nodes), [`complete`] (recording attempts), [`redeliver`] (on request) and
//! [`plans`] (the query plans tests and benchmarks check). Queueing is in [`crate::outbox`],
//! endpoint health in [`crate::endpoints`], recoveries in [`crate::recoveries`].
//!
//! Every step's public items are re-exported here, so callers name `deliveries::claim_due`.

pub mod claim;
pub mod complete;
pub mod history;
mod job;
pub mod limited;
pub mod plans;
pub mod redeliver;

pub use claim::{claim_due, next_wake, release};
pub use complete::{AttemptRecord, Completion, complete_all};
pub use history::{
    DeliveryFilter, count_by_status, delivery_body, get_delivery, last_attempts, list_attempts, list_deliveries,
};
pub use job::Job;
pub use limited::{LimitedCaps, LimitedClaim, PacedJob, claim_limited};
pub use plans::{explain_claim, explain_completion, explain_endpoint_claim};
pub use redeliver::{Redelivery, claim_for_redelivery};
