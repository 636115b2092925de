//! What this node has in flight per endpoint, and what admission decides for each claimed
//! delivery.

use std::collections::HashMap;

/// What this node has in flight per endpoint without a limit of its own, for fairness: at most
/// `per_endpoint_concurrency` each. (Endpoints with `max_in_flight`, a rate limit or a
/// half-open circuit are limited across the cluster by `claim_limited` instead.)
#[derive(Default)]
pub(crate) struct EndpointLoad {
    pub(crate) in_flight: HashMap<String, usize>,
    /// Where the next `claim_limited` starts looking (the last limited endpoint it looked at).
    pub(crate) limited_cursor: String,
    /// Whether the next claim serves limited endpoints before the outbox claim: they take turns
    /// going first, so a backlog on either side never starves the other.
    pub(crate) limited_first: bool,
}

impl EndpointLoad {
    /// Endpoints this node does not claim for now: those with less than a quarter of the
    /// per-node cap free (at least one). A busy endpoint is claimed for a few deliveries at a
    /// time as its attempts finish, rather than once per finished attempt: it has most of its
    /// cap in flight meanwhile, so its deliveries wait no longer for it.
    pub(crate) fn saturated(&self, cap: usize) -> Vec<String> {
        let least = (cap / 4).max(1);
        let mut ids: Vec<String> =
            self.in_flight.iter().filter(|(_, n)| cap.saturating_sub(**n) < least).map(|(id, _)| id.clone()).collect();
        ids.sort();
        ids
    }

    /// Endpoints with deliveries in flight on this node, and how many each.
    pub(crate) fn busy(&self) -> Vec<(String, i64)> {
        self.in_flight.iter().map(|(id, n)| (id.clone(), *n as i64)).collect()
    }

    pub(crate) fn start(&mut self, endpoint_id: &str) {
        *self.in_flight.entry(endpoint_id.to_owned()).or_default() += 1;
    }

    pub(crate) fn finish(&mut self, endpoint_id: &str) {
        if let Some(n) = self.in_flight.get_mut(endpoint_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.in_flight.remove(endpoint_id);
            }
        }
    }
}

/// What becomes of a delivery the outbox claim leased.
pub(crate) enum Admission {
    /// Send it now.
    Send,
    /// Give it back: its endpoint is disabled, its circuit open, or this node at its cap.
    Wait,
    /// Give it back flagged `limited`: its endpoint has a limit that holds across nodes.
    Limited,
}

/// What admission refused: deliveries to release, and endpoints whose pending deliveries must
/// be flagged `limited` first.
#[derive(Default)]
pub(crate) struct GiveBack {
    pub(crate) released: Vec<String>,
    pub(crate) unflagged: Vec<String>,
}
