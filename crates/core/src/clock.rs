use chrono::{DateTime, SubsecRound, Utc};

/// The source of "now" for everything that schedules or stamps rows.
///
/// Loops and handlers read time only through this trait so that the rules that depend on time
/// (due watches, retry spacing) stay testable without faking sleeps.
pub trait Clock: Send + Sync + 'static {
    /// The current instant, truncated to microseconds (the precision both databases keep).
    fn now(&self) -> DateTime<Utc>;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now().trunc_subsecs(6)
    }
}
