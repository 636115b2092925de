//! Politeness per host: at most so many requests in flight to one host, and a minimum gap
//! between the starts of two requests to it, so a thousand watches on one site do not hammer it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Per-host limits shared by all checks of a runner.
#[derive(Debug)]
pub(crate) struct Hosts {
    per_host: usize,
    gap: Duration,
    state: Mutex<HashMap<String, HostState>>,
}

#[derive(Debug)]
struct HostState {
    slots: Arc<Semaphore>,
    next_start: Instant,
}

impl Hosts {
    pub(crate) fn new(per_host: usize, gap: Duration) -> Hosts {
        Hosts { per_host: per_host.max(1), gap, state: Mutex::new(HashMap::new()) }
    }

    /// Waits for a slot on `host` and for its turn after the previous request's start; the
    /// returned permit holds the slot until dropped.
    pub(crate) async fn enter(&self, host: &str) -> Option<OwnedSemaphorePermit> {
        let slots = {
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let entry = state.entry(host.to_owned()).or_insert_with(|| HostState {
                slots: Arc::new(Semaphore::new(self.per_host)),
                next_start: Instant::now(),
            });
            Arc::clone(&entry.slots)
        };
        let permit = slots.acquire_owned().await.ok()?;
        if !self.gap.is_zero() {
            let start = {
                let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let entry = state.get_mut(host)?;
                let start = entry.next_start.max(Instant::now());
                entry.next_start = start + self.gap;
                start
            };
            tokio::time::sleep_until(start).await;
        }
        Some(permit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_to_one_host_are_spaced_and_capped() {
        let hosts = Arc::new(Hosts::new(2, Duration::from_millis(50)));
        let started = Instant::now();
        let mut starts = Vec::new();
        let mut held = Vec::new();
        for _ in 0..2 {
            held.push(hosts.enter("a.example").await.expect("permit"));
            starts.push(started.elapsed());
        }
        assert!(starts[1] >= Duration::from_millis(50), "the second start waits the gap: {starts:?}");
        // The cap: a third request waits until one of the two is done.
        let third = tokio::spawn({
            let hosts = Arc::clone(&hosts);
            async move { hosts.enter("a.example").await.map(|_| Instant::now()) }
        });
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert!(!third.is_finished(), "two in flight: the third waits");
        let released = Instant::now();
        drop(held.pop());
        let entered = third.await.expect("join").expect("permit");
        assert!(entered >= released);
    }

    /// Another host is not held up by one whose next turn is an hour away. The bound is there
    /// only so that a failure ends the test: no machine is slow enough to reach it otherwise.
    #[tokio::test]
    async fn another_host_is_not_held_up() {
        let hosts = Arc::new(Hosts::new(2, Duration::from_secs(3600)));
        let _first = hosts.enter("a.example").await.expect("permit");
        let waiting = tokio::spawn({
            let hosts = Arc::clone(&hosts);
            async move { hosts.enter("a.example").await.is_some() }
        });
        let other = tokio::time::timeout(Duration::from_secs(60), hosts.enter("b.example")).await;
        assert!(other.expect("b.example does not wait for a.example's turn").is_some());
        assert!(!waiting.is_finished(), "a.example's second request waits its turn");
        waiting.abort();
    }
}
