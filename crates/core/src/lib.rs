//! Domain vocabulary shared by every driftwatch crate: opaque ids, the status enums that are
//! stored as text, event types, the [`Clock`] through which time is read, and the pure rules of
//! time: a watch's [`Timing`] and [`Backoff`], and durations as people write them.
//!
//! This crate does no IO. Everything here is small, copyable and serialisable.

mod clock;
pub mod delivery_time;
pub mod duration;
pub mod expect;
mod field_error;
mod id;
mod options;
pub mod password;
mod regexes;
pub mod render;
mod sealed;
mod secret;
pub mod session;
mod status;
pub mod text;
pub mod timing;
pub mod values;

pub use clock::{Clock, SystemClock};
pub use delivery_time::{DeliveryMode, DigestPeriod, Digesting, HELD_QUIET_HOURS, Quiet, QuietHours, quiet_release};
pub use duration::{format_duration, parse_duration, parse_schedule};
pub use field_error::FieldError;
pub use id::{IdKind, id_at, id_floor, new_id};
pub use options::{
    AiOnError, AiOptions, Compare, DEFAULT_MIN_VISUAL_CHANGE_PERCENT, Engine, ExtractOptions, FetchSpec,
    MAX_INTENT_CHARS, MAX_STEPS, NO_PROXY, NoiseRules, Region, ScreenshotMode, SessionSpec, Step, StepText, TextRules,
    Wait, WaitKind, WatchOptions, WhenBlocked,
};
pub use password::{PasswordError, hash_password, verify_password};
pub use regexes::{REGEX_SIZE_LIMIT, compiled_regex};
pub use sealed::{KeyError, Keyring, SEALED_PREFIX, SealError, SecretKey, is_sealed, sealed_within};
pub use secret::{
    API_TOKEN_PREFIX, WEBHOOK_SECRET_PREFIX, hash_token, hex, new_api_token, new_random_key, new_webhook_secret,
};
pub use session::{SessionCookie, SessionState};
pub use status::{
    AttemptErrorKind, AttemptTrigger, DeliveryStatus, EventType, ParseEnumError, RecoveryState, RunOutcome,
    WatchHealth, WatchState,
};
pub use text::{content_hash, storable, storable_opt};
pub use timing::{Backoff, Timing, TimingError};
