//! Domain vocabulary shared by every driftwatch crate: opaque ids, the status enums that are
//! stored as text, event types, and the [`Clock`] through which time is read.
//!
//! This crate does no IO. Everything here is small, copyable and serialisable.

mod clock;
mod id;
mod options;
pub mod password;
mod regexes;
mod secret;
mod status;

pub use clock::{Clock, SystemClock};
pub use id::{IdKind, id_floor, new_id};
pub use options::{ExtractOptions, FetchSpec, NoiseRules, TextRules, WatchOptions};
pub use password::{PasswordError, hash_password, verify_password};
pub use regexes::{REGEX_SIZE_LIMIT, compiled_regex};
pub use secret::{
    API_TOKEN_PREFIX, WEBHOOK_SECRET_PREFIX, hash_token, hex, new_api_token, new_random_key, new_webhook_secret,
};
pub use status::{
    AttemptErrorKind, AttemptTrigger, DeliveryStatus, EndpointKind, EventType, ParseEnumError, RecoveryState,
    RunOutcome, WatchHealth, WatchState,
};
