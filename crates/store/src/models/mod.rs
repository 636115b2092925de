//! Rows as Rust structs, a file per table (or per pair of tables read together). Times are
//! naive UTC (`TIMESTAMP` on both backends).

mod account;
mod delivery;
mod endpoint;
mod event;
mod recovery;
mod user;
mod verdict;
mod watch;

pub use account::{Account, ApiToken};
pub use delivery::{Delivery, DeliveryAttempt, NewDelivery};
pub use endpoint::{Circuit, Endpoint, receives, routes};
pub use event::Event;
pub use recovery::Recovery;
pub use user::{Session, User};
pub use verdict::{CachedVerdict, Verdict, VerdictState};
pub use watch::{BROWSER_MEMORY, Run, Snapshot, Watch, stored_tags};
