//! The worker's settings.

use std::sync::Arc;
use std::time::Duration;

use driftwatch_metrics::Metrics;

use crate::policy::RetryPolicy;

/// Settings of the worker.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Deliveries in flight at once, across all endpoints.
    pub concurrency: usize,
    /// Deliveries in flight at once to one endpoint (per node), unless the endpoint says otherwise.
    pub per_endpoint_concurrency: usize,
    /// Most deliveries claimed per query.
    pub batch_size: i64,
    /// Longest sleep between looks at the outbox (picks up work queued by other nodes).
    pub poll_interval: Duration,
    /// Retry schedule and attempt budget.
    pub retry: RetryPolicy,
    /// Consecutive failures that open an endpoint's circuit.
    pub circuit_threshold: i32,
    /// How long an open circuit holds an endpoint's deliveries before one probe is let through.
    pub circuit_open_for: Duration,
    /// An endpoint failing continuously this long is disabled.
    pub disable_after: Duration,
    /// A lease outlives the request timeout by this much (time to record the attempt).
    pub lease_grace: Duration,
    /// Deliveries re-queued per step of a recovery.
    pub recovery_page: i64,
    /// A name for this node, in lease owners and logs.
    pub node_id: String,
    /// Where attempts are counted.
    pub metrics: Arc<Metrics>,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            concurrency: 64,
            per_endpoint_concurrency: 16,
            batch_size: 100,
            poll_interval: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            circuit_threshold: 5,
            circuit_open_for: Duration::from_secs(300),
            disable_after: Duration::from_secs(5 * 86_400),
            lease_grace: Duration::from_secs(30),
            recovery_page: 200,
            node_id: "node".into(),
            metrics: Arc::new(Metrics::default()),
        }
    }
}
