//! Webhook delivery: Standard Webhooks signing, the HTTP sender, the retry policy and the
//! worker loop that drains the outbox.
//!
//! The worker claims due deliveries under a lease, sends each without holding any database
//! transaction, and records the attempt with a compare-and-set on the lease, so at most one
//! attempt per delivery is in flight and a crash loses nothing (an expired lease makes the
//! delivery claimable again).

mod attempt;
mod config;
mod digests;
mod load;
mod policy;
mod recoveries;
mod requests;
mod sender;
mod signing;
mod smtp;
mod worker;

pub use config::DeliveryConfig;
pub use digests::Summarize;
pub use policy::SendResult;
pub use policy::{Decision, Outcome, RetryPolicy};
pub use requests::{RedeliverError, RequestError};
pub use sender::{Sender, SenderOptions};
pub use signing::{VerifyError, sign, verify};
pub use smtp::SmtpRoots;
pub use worker::DeliveryWorker;
