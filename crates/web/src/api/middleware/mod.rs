//! Cross-cutting HTTP behaviour of the API, one concern per file: ETags with `If-None-Match`
//! ([`etag`]), a per-token rate limit ([`rate_limit`]), `Idempotency-Key` replays for `POST`
//! ([`idempotency`]) and the refusal of NUL characters in paths and queries ([`no_nul`]).

mod etag;
mod idempotency;
mod no_nul;
mod rate_limit;

pub use etag::etag;
pub use idempotency::idempotency;
pub use no_nul::no_nul;
pub use rate_limit::{RateLimiter, rate_limit};
