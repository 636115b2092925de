//! Fair shares of the runner: one host's backlog, or one account's slow pages, must not hold
//! the check slots everyone else needs.
//!
//! A claimed watch starts only while its host has fewer checks running than its per-host
//! limit (so no check sits in a slot waiting for its host's turn) and its account fewer than
//! the per-account limit. One that may not start is deferred: its lease is given back and its
//! due time moved to when its host or account can plausibly take it, estimated from how long
//! their recent checks took and how many are ahead of it. The watch is late either way; this
//! way it is late alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Shortest and longest deferral.
const MIN_DEFER: Duration = Duration::from_secs(1);
const MAX_DEFER: Duration = Duration::from_secs(600);

/// What a new host or account's checks are assumed to take until one finished.
const FIRST_GUESS: Duration = Duration::from_secs(1);

/// Checks running per host and per account, and how long their checks take.
#[derive(Debug)]
pub(crate) struct Fairness {
    per_host: usize,
    per_account: usize,
    /// Checks rendering in the browser (waiting for a render slot included).
    browser: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    hosts: HashMap<String, Tally>,
    accounts: HashMap<String, Tally>,
    browser: Tally,
}

/// One host's or account's running checks and a moving average of their durations.
#[derive(Debug, Clone, Copy)]
struct Tally {
    running: usize,
    mean: Duration,
}

impl Default for Tally {
    fn default() -> Self {
        Tally { running: 0, mean: FIRST_GUESS }
    }
}

impl Tally {
    fn record(&mut self, took: Duration) {
        self.running = self.running.saturating_sub(1);
        // An exponentially weighted mean: recent checks count most.
        self.mean = (self.mean * 3 + took) / 4;
    }

    /// When the `ahead`-th watch waiting beyond `limit` running could start.
    fn wait(&self, limit: usize, ahead: usize) -> Duration {
        let rounds = u32::try_from(ahead / limit.max(1) + 1).unwrap_or(u32::MAX);
        self.mean.saturating_mul(rounds).clamp(MIN_DEFER, MAX_DEFER)
    }
}

/// A started check; dropping it counts the check as finished.
#[derive(Debug)]
pub(crate) struct Started {
    fair: Arc<Fairness>,
    host: String,
    account: String,
    browser: bool,
    at: Instant,
}

impl Drop for Started {
    fn drop(&mut self) {
        let took = self.at.elapsed();
        let mut guard = self.fair.lock();
        let state = &mut *guard;
        for (map, key) in [(&mut state.hosts, &self.host), (&mut state.accounts, &self.account)] {
            if let Some(tally) = map.get_mut(key) {
                tally.record(took);
                if tally.running == 0 && map.len() > 10_000 {
                    map.remove(key);
                }
            }
        }
        if self.browser {
            state.browser.record(took);
        }
    }
}

/// Watches turned away in one claim round, per host and account, so each further one waits a
/// round longer than the one before it.
#[derive(Debug, Default)]
pub(crate) struct Round {
    hosts: HashMap<String, usize>,
    accounts: HashMap<String, usize>,
    browser: usize,
}

impl Fairness {
    pub(crate) fn new(per_host: usize, per_account: usize, browser: usize) -> Fairness {
        Fairness {
            per_host: per_host.max(1),
            per_account: per_account.max(1),
            browser: browser.max(1),
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Plain counters: a panic while holding the lock cannot leave them unusable.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts a check of a watch on `host` of `account` (rendering in the browser when
    /// `browser`) if each has room; otherwise says how long to defer it.
    pub(crate) fn admit(
        self: &Arc<Self>,
        host: &str,
        account: &str,
        browser: bool,
        round: &mut Round,
    ) -> Result<Started, Duration> {
        let mut state = self.lock();
        let host_tally = state.hosts.get(host).copied().unwrap_or_default();
        let account_tally = state.accounts.get(account).copied().unwrap_or_default();
        let host_full = host_tally.running >= self.per_host;
        let account_full = account_tally.running >= self.per_account;
        let browser_full = browser && state.browser.running >= self.browser;
        if host_full || account_full || browser_full {
            let mut wait = Duration::ZERO;
            if browser_full {
                wait = wait.max(state.browser.wait(self.browser, round.browser));
                round.browser += 1;
            }
            if host_full {
                let ahead = round.hosts.entry(host.to_owned()).or_default();
                wait = wait.max(host_tally.wait(self.per_host, *ahead));
                *ahead += 1;
            }
            if account_full {
                let ahead = round.accounts.entry(account.to_owned()).or_default();
                wait = wait.max(account_tally.wait(self.per_account, *ahead));
                *ahead += 1;
            }
            return Err(wait);
        }
        state.hosts.entry(host.to_owned()).or_default().running += 1;
        state.accounts.entry(account.to_owned()).or_default().running += 1;
        if browser {
            state.browser.running += 1;
        }
        Ok(Started {
            fair: Arc::clone(self),
            host: host.to_owned(),
            account: account.to_owned(),
            browser,
            at: Instant::now(),
        })
    }
}

/// The host a watch's checks are counted under: `host:port` of its URL.
pub(crate) fn host_key(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(|h| format!("{h}:{}", u.port_or_known_default().unwrap_or(0))))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_host_or_account_defers_longer_the_further_back_a_watch_is() {
        let fair = Arc::new(Fairness::new(2, 3, 1));
        let mut round = Round::default();
        let a = fair.admit("dead:80", "acme", false, &mut round).expect("room");
        let b = fair.admit("dead:80", "acme", false, &mut round).expect("room");
        let first = fair.admit("dead:80", "acme", false, &mut round).expect_err("the host is full");
        let second = fair.admit("dead:80", "acme", false, &mut round).expect_err("the host is full");
        let third = fair.admit("dead:80", "acme", false, &mut round).expect_err("the host is full");
        assert_eq!(first, MIN_DEFER);
        assert!(first <= second && second < third, "{first:?} {second:?} {third:?}");
        // Another host of the same account still has room, up to the account's limit.
        let c = fair.admit("ok:80", "acme", false, &mut round).expect("another host");
        assert!(fair.admit("ok:80", "acme", false, &mut round).is_err(), "the account is full");
        assert!(fair.admit("ok:80", "other", false, &mut round).is_ok(), "another account is not");
        drop((a, b, c));
        assert!(fair.admit("dead:80", "acme", false, &mut round).is_ok(), "finished checks free their host");
    }

    #[test]
    fn browser_checks_beyond_their_share_are_deferred_and_http_checks_are_not() {
        let fair = Arc::new(Fairness::new(10, 10, 2));
        let mut round = Round::default();
        let a = fair.admit("a:80", "acme", true, &mut round).expect("room");
        let _b = fair.admit("b:80", "acme", true, &mut round).expect("room");
        assert!(fair.admit("c:80", "acme", true, &mut round).is_err(), "the browser is full");
        assert!(fair.admit("c:80", "acme", false, &mut round).is_ok(), "HTTP checks still start");
        drop(a);
        assert!(fair.admit("c:80", "acme", true, &mut round).is_ok(), "a finished render frees its place");
    }

    #[test]
    fn slow_checks_push_deferrals_out_within_bounds() {
        let mut tally = Tally { running: 4, mean: Duration::from_secs(10) };
        assert_eq!(tally.wait(4, 0), Duration::from_secs(10));
        assert_eq!(tally.wait(4, 8), Duration::from_secs(30));
        assert_eq!(tally.wait(4, 1_000_000), MAX_DEFER);
        tally.record(Duration::from_secs(2));
        assert_eq!(tally.running, 3);
        assert_eq!(tally.mean, Duration::from_secs(8));
    }
}
