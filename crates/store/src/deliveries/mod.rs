//! The outbox's deliveries, a file per step: `history` (what the API and the UI list), `claim`
//! (the outbox claim, giving back, the next wake-up), `limited` (endpoints whose limits hold
//! across nodes), `complete` (recording attempts), `redeliver` (on request) and `plans` (the
//! query plans tests and benchmarks check). Queueing is in [`crate::outbox`],
//! endpoint health in [`crate::endpoints`], recoveries in [`crate::recoveries`].
//!
//! The steps are private; their public items are re-exported here, so there is one path to
//! each: `deliveries::claim_due`.

mod claim;
mod complete;
mod history;
mod job;
mod limited;
mod plans;
pub(crate) mod redeliver;

pub use claim::{Room, claim_due, hold, next_wake, release};
pub use complete::{AttemptRecord, Completion, complete_all};
pub use history::{
    DeliveryFilter, count_by_status, delivery_body, get_delivery, last_attempts, list_attempts, list_deliveries,
};
pub use job::Job;
pub use limited::{LimitedCaps, LimitedClaim, PacedJob, claim_limited};
pub use plans::{explain_claim, explain_completion, explain_endpoint_claim};
pub use redeliver::{Redelivery, claim_for_redelivery};
