//! driftwatch's Prometheus metrics, through `prometheus-client` (the Prometheus project's own
//! Rust client).
//!
//! One [`Metrics`] per application: the schedule runner, the delivery worker and the HTTP server
//! count into it as work happens; the state of the database (outbox depth, scheduler lag,
//! circuits) is read when `/metrics` is scraped and set through [`Metrics::set_state`]. Labels
//! are bounded: outcomes, statuses, route templates; never a watch or an endpoint id.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// The content type of [`Metrics::encode`]'s output (OpenMetrics text, which Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A label set of one `outcome`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    /// For checks: `baseline`, `unchanged`, `changed`, `failed`, `blocked`. For attempts: `2xx`, `3xx`,
    /// `4xx`, `5xx`, or the kind of error (`timeout`, `connect`, `dns`, …).
    pub outcome: &'static str,
}

/// A label set of one `status`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabel {
    /// The status's name.
    pub status: &'static str,
}

/// A label set of one `state`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    /// The state's name.
    pub state: &'static str,
}

/// Labels of an HTTP request: the route template (`/api/v1/watches/{id}`, never the id itself),
/// the method and the status code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    /// The matched route template, or `unmatched`.
    pub route: String,
    /// The request method.
    pub method: String,
    /// The response status code.
    pub status: u16,
}

/// Labels of an HTTP request's duration.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    /// The matched route template, or `unmatched`.
    pub route: String,
    /// The request method.
    pub method: String,
}

/// The state of the database and the pool, read at scrape time.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Seconds since the oldest due, unleased active watch fell due (0 when none is due).
    pub scheduler_lag_seconds: f64,
    /// Deliveries still owed, by status: `pending` (queued), `retrying` (failed, waiting for
    /// its next attempt), `in_flight` (leased now).
    pub outbox: [(&'static str, i64); 3],
    /// Seconds since the oldest due delivery fell due (0 when none is due).
    pub oldest_due_delivery_seconds: f64,
    /// Dead deliveries (the dead-letter queue).
    pub dead_letters: i64,
    /// Endpoints by circuit state: `closed`, `open`, `half_open`, `disabled`.
    pub endpoints: [(&'static str, i64); 4],
    /// Recoveries pending or running.
    pub recoveries_running: i64,
    /// Pool connections checked out, idle, and the pool's maximum.
    pub pool: PoolState,
    /// Memory of the local browser's processes, in bytes (0 while none runs).
    pub browser_memory_bytes: u64,
}

/// Database pool connections.
#[derive(Debug, Clone, Copy, Default)]
pub struct PoolState {
    /// Checked out now.
    pub in_use: u32,
    /// Open and idle.
    pub idle: u32,
    /// The pool's maximum.
    pub max: u32,
}

/// Every metric driftwatch exposes. Durations are in seconds, named `…_seconds`; the optional
/// `# UNIT` lines are left out, which some OpenMetrics parsers refuse on histograms. Cheap to share behind an `Arc`; counting is lock-free.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    checks: Family<OutcomeLabel, Counter>,
    check_duration: Histogram,
    attempts: Family<OutcomeLabel, Counter>,
    attempt_duration: Histogram,
    claimed: Counter,
    given_back: Counter,
    http_requests: Family<HttpLabels, Counter>,
    http_duration: Family<RouteLabels, Histogram>,
    scheduler_lag: Gauge<f64, AtomicU64>,
    outbox: Family<StatusLabel, Gauge>,
    oldest_due_delivery: Gauge<f64, AtomicU64>,
    dead_letters: Gauge,
    endpoints: Family<StateLabel, Gauge>,
    recoveries_running: Gauge,
    pool: Family<StateLabel, Gauge>,
    pool_max: Gauge,
    renders: Family<OutcomeLabel, Counter>,
    render_duration: Histogram,
    browser_memory: Gauge,
    model_calls: Family<OutcomeLabel, Counter>,
    model_duration: Histogram,
    model_tokens: Counter,
    verdicts: Family<OutcomeLabel, Counter>,
    walls: Family<VendorLabel, Counter>,
}

/// A label set of one bot-wall `vendor`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VendorLabel {
    /// Who put the wall up: `cloudflare`, `akamai`, `datadome`, … (a fixed list).
    pub vendor: &'static str,
}

/// Buckets from 1 ms to about 33 s, doubling.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new(env!("CARGO_PKG_VERSION"))
    }
}

impl Metrics {
    /// Every metric, registered under the `driftwatch_` prefix, with build info for `version`.
    pub fn new(version: &str) -> Metrics {
        let mut registry = Registry::with_prefix("driftwatch");
        let metrics = Metrics {
            checks: Family::default(),
            check_duration: duration_histogram(),
            attempts: Family::default(),
            attempt_duration: duration_histogram(),
            claimed: Counter::default(),
            given_back: Counter::default(),
            http_requests: Family::default(),
            http_duration: Family::new_with_constructor(duration_histogram),
            scheduler_lag: Gauge::default(),
            outbox: Family::default(),
            oldest_due_delivery: Gauge::default(),
            dead_letters: Gauge::default(),
            endpoints: Family::default(),
            recoveries_running: Gauge::default(),
            pool: Family::default(),
            pool_max: Gauge::default(),
            renders: Family::default(),
            render_duration: duration_histogram(),
            browser_memory: Gauge::default(),
            model_calls: Family::default(),
            model_duration: Histogram::new(exponential_buckets(0.05, 2.0, 14)),
            model_tokens: Counter::default(),
            verdicts: Family::default(),
            walls: Family::default(),
            registry: Registry::default(),
        };
        registry.register("checks", "Checks finished, by outcome", metrics.checks.clone());
        registry.register(
            "check_duration_seconds",
            "Time from a check's start (fetch) to its result being ready to record",
            metrics.check_duration.clone(),
        );
        registry.register(
            "delivery_attempts",
            "Webhook and Slack attempts, by outcome class (2xx, 4xx, 5xx, or the error kind)",
            metrics.attempts.clone(),
        );
        registry.register(
            "delivery_attempt_duration_seconds",
            "Duration of one delivery attempt's HTTP request",
            metrics.attempt_duration.clone(),
        );
        registry.register(
            "deliveries_claimed",
            "Deliveries the worker leased from the outbox to send",
            metrics.claimed.clone(),
        );
        registry.register(
            "deliveries_given_back",
            "Leased deliveries given back unsent (their endpoint busy, limited or disabled since)",
            metrics.given_back.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests answered, by route template, method and status",
            metrics.http_requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by route template and method",
            metrics.http_duration.clone(),
        );
        registry.register(
            "scheduler_lag_seconds",
            "How long the oldest due watch has been waiting for its check",
            metrics.scheduler_lag.clone(),
        );
        registry.register(
            "outbox_deliveries",
            "Deliveries still owed to a receiver, by status",
            metrics.outbox.clone(),
        );
        registry.register(
            "outbox_oldest_due_age_seconds",
            "How long the oldest due delivery has been waiting",
            metrics.oldest_due_delivery.clone(),
        );
        registry.register(
            "dead_letters",
            "Deliveries that used up their attempts (dead)",
            metrics.dead_letters.clone(),
        );
        registry.register("endpoints", "Endpoints by circuit state", metrics.endpoints.clone());
        registry.register("recoveries_running", "Recoveries pending or running", metrics.recoveries_running.clone());
        registry.register("db_pool_connections", "Database pool connections, by state", metrics.pool.clone());
        registry.register("db_pool_max_connections", "The database pool's maximum size", metrics.pool_max.clone());
        registry.register(
            "browser_renders",
            "Pages rendered in the browser, by result (ok, or the failure kind: browser, timeout, step, ...)",
            metrics.renders.clone(),
        );
        registry.register(
            "browser_render_duration_seconds",
            "Time to render a page: a render slot, load, wait, steps, reading and the screenshot",
            metrics.render_duration.clone(),
        );
        registry.register(
            "browser_memory_bytes",
            "Memory (PSS) of the local browser's processes; 0 while none runs",
            metrics.browser_memory.clone(),
        );
        registry.register(
            "model_calls",
            "Language-model calls, by outcome (ok, status, timeout, transport, answer, truncated, too_large)",
            metrics.model_calls.clone(),
        );
        registry.register(
            "model_call_duration_seconds",
            "Time a language model took to give a verdict (every HTTP call it took)",
            metrics.model_duration.clone(),
        );
        registry.register(
            "model_tokens",
            "Tokens language models counted, prompt and answer",
            metrics.model_tokens.clone(),
        );
        registry.register(
            "verdicts",
            "Changes decided (important, unimportant, summarised, cached, unjudged, held)",
            metrics.verdicts.clone(),
        );
        registry.register(
            "bot_walls",
            "Checks a bot wall answered instead of the page, by who put it up",
            metrics.walls.clone(),
        );
        registry.register("build", "The running build", Info::new(vec![("version".to_owned(), version.to_owned())]));
        Metrics { registry, ..metrics }
    }

    /// Counts a finished check (`outcome`: the run's status) that took `elapsed`.
    pub fn check_finished(&self, outcome: &'static str, elapsed: Duration) {
        self.checks.get_or_create(&OutcomeLabel { outcome }).inc();
        self.check_duration.observe(elapsed.as_secs_f64());
    }

    /// Counts a delivery attempt: `outcome` is its class (`2xx`…`5xx`) or its error kind.
    pub fn attempt_finished(&self, outcome: &'static str, elapsed: Duration) {
        self.attempts.get_or_create(&OutcomeLabel { outcome }).inc();
        self.attempt_duration.observe(elapsed.as_secs_f64());
    }

    /// Counts deliveries leased by one claim, and how many of them went back unsent.
    pub fn claimed(&self, claimed: u64, given_back: u64) {
        self.claimed.inc_by(claimed);
        self.given_back.inc_by(given_back);
    }

    /// Deliveries claimed and given back since the start: (claimed, given back).
    pub fn claims(&self) -> (u64, u64) {
        (self.claimed.get(), self.given_back.get())
    }

    /// Counts a language-model call that ended with `outcome` (`ok` or the error kind) after
    /// `elapsed`, and the tokens it used.
    pub fn model_call(&self, outcome: &'static str, elapsed: Duration, tokens: u64) {
        self.model_calls.get_or_create(&OutcomeLabel { outcome }).inc();
        self.model_duration.observe(elapsed.as_secs_f64());
        self.model_tokens.inc_by(tokens);
    }

    /// Counts a decided change: `result` is `important`, `unimportant`, `summarised`,
    /// `unjudged` or `held`.
    pub fn verdict(&self, result: &'static str) {
        self.verdicts.get_or_create(&OutcomeLabel { outcome: result }).inc();
    }

    /// Counts a check that met a bot wall `vendor` put up (a name from a fixed list).
    pub fn wall_met(&self, vendor: &'static str) {
        self.walls.get_or_create(&VendorLabel { vendor }).inc();
    }

    /// Counts a finished render: `result` is `ok` or the failure kind.
    pub fn render_finished(&self, result: &'static str, elapsed: Duration) {
        self.renders.get_or_create(&OutcomeLabel { outcome: result }).inc();
        self.render_duration.observe(elapsed.as_secs_f64());
    }

    /// Counts an answered HTTP request.
    pub fn http_request(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        let (route, method) = (route.to_owned(), method.to_owned());
        self.http_duration
            .get_or_create(&RouteLabels { route: route.clone(), method: method.clone() })
            .observe(elapsed.as_secs_f64());
        self.http_requests.get_or_create(&HttpLabels { route, method, status }).inc();
    }

    /// Sets the gauges read from the database and the pool.
    pub fn set_state(&self, state: &State) {
        self.scheduler_lag.set(state.scheduler_lag_seconds);
        for (status, n) in state.outbox {
            self.outbox.get_or_create(&StatusLabel { status }).set(n);
        }
        self.oldest_due_delivery.set(state.oldest_due_delivery_seconds);
        self.dead_letters.set(state.dead_letters);
        for (state_name, n) in state.endpoints {
            self.endpoints.get_or_create(&StateLabel { state: state_name }).set(n);
        }
        self.recoveries_running.set(state.recoveries_running);
        self.pool.get_or_create(&StateLabel { state: "in_use" }).set(i64::from(state.pool.in_use));
        self.pool.get_or_create(&StateLabel { state: "idle" }).set(i64::from(state.pool.idle));
        self.pool_max.set(i64::from(state.pool.max));
        self.browser_memory.set(i64::try_from(state.browser_memory_bytes).unwrap_or(i64::MAX));
    }

    /// The exposition, in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_appear_in_the_exposition() {
        let metrics = Metrics::new("1.2.3");
        metrics.check_finished("changed", Duration::from_millis(3));
        metrics.check_finished("changed", Duration::from_millis(3));
        metrics.attempt_finished("5xx", Duration::from_millis(20));
        metrics.http_request("/api/v1/watches/{id}", "GET", 404, Duration::from_millis(1));
        metrics.set_state(&State { dead_letters: 7, ..State::default() });
        metrics.wall_met("cloudflare");
        let text = metrics.encode();
        assert!(text.contains("driftwatch_bot_walls_total{vendor=\"cloudflare\"} 1"), "{text}");
        assert!(text.contains("driftwatch_checks_total{outcome=\"changed\"} 2"), "{text}");
        assert!(text.contains("driftwatch_delivery_attempts_total{outcome=\"5xx\"} 1"), "{text}");
        assert!(text.contains("route=\"/api/v1/watches/{id}\""), "{text}");
        assert!(text.contains("driftwatch_dead_letters 7"), "{text}");
        assert!(text.contains("driftwatch_build_info{version=\"1.2.3\"} 1"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
