//! What `bench api` prints.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::harness::Posted;

/// What a run measured, before it is summed up.
pub(super) struct Figures<'a> {
    pub(super) backend: &'static str,
    pub(super) count: usize,
    pub(super) clients: usize,
    pub(super) endpoints: usize,
    pub(super) rate: Option<f64>,
    pub(super) raw_per_second: f64,
    pub(super) requests_per_second: f64,
    pub(super) delivered_per_second: f64,
    pub(super) posted: &'a [Posted],
    pub(super) arrivals: &'a HashMap<String, Instant>,
    pub(super) claimed: u64,
    pub(super) given_back: u64,
    pub(super) driftwatch_cpu: f64,
    pub(super) harness_cpu: f64,
    pub(super) database_cpu: Option<f64>,
    pub(super) transactions: Option<f64>,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct ApiReport {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// Requests (and deliveries).
    pub count: usize,
    /// Clients side by side.
    pub clients: usize,
    /// Endpoints the events went to, in turn.
    pub endpoints: usize,
    /// The offered rate, events a second, when paced.
    pub rate: Option<f64>,
    /// The same clients straight at the receiver, requests a second.
    pub raw_per_second: f64,
    /// Accepted API requests a second.
    pub requests_per_second: f64,
    /// Deliveries a second, from the first request to the last arrival.
    pub delivered_per_second: f64,
    /// Request latency (p50, p99), client side, milliseconds.
    pub request_ms: [f64; 2],
    /// From a POST being sent to its delivery's arrival at the receiver (p50, p90, p99, max),
    /// milliseconds.
    pub arrival_ms: [f64; 4],
    /// Deliveries that arrived after one to the same endpoint accepted later.
    pub out_of_order: usize,
    /// Deliveries the worker leased, per delivery made.
    pub claimed_per_delivered: f64,
    /// Leased deliveries given back unsent.
    pub given_back: u64,
    /// driftwatch's CPU per delivery (server and worker), microseconds.
    pub cpu_us: f64,
    /// The clients' and receiver's CPU per delivery, microseconds.
    pub harness_cpu_us: f64,
    /// PostgreSQL's CPU per delivery, microseconds.
    pub database_cpu_us: Option<f64>,
    /// PostgreSQL transactions per delivery (committed and rolled back).
    pub transactions: Option<f64>,
}

impl ApiReport {
    pub(super) fn new(f: Figures<'_>) -> ApiReport {
        let n = f.count as f64;
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mut took: Vec<Duration> = f.posted.iter().map(|p| p.answered - p.sent).collect();
        let mut arrival: Vec<Duration> = f
            .posted
            .iter()
            .filter_map(|p| Some(f.arrivals.get(&p.delivery_id)?.saturating_duration_since(p.sent)))
            .collect();
        ApiReport {
            backend: f.backend,
            count: f.count,
            clients: f.clients,
            endpoints: f.endpoints,
            rate: f.rate,
            raw_per_second: f.raw_per_second,
            requests_per_second: f.requests_per_second,
            delivered_per_second: f.delivered_per_second,
            request_ms: [quantile(&mut took, 0.5), quantile(&mut took, 0.99)].map(ms),
            arrival_ms: [0.5, 0.9, 0.99, 1.0].map(|q| ms(quantile(&mut arrival, q))),
            out_of_order: out_of_order(f.posted, f.arrivals),
            claimed_per_delivered: f.claimed as f64 / n,
            given_back: f.given_back,
            cpu_us: f.driftwatch_cpu * 1e6 / n,
            harness_cpu_us: f.harness_cpu * 1e6 / n,
            database_cpu_us: f.database_cpu.map(|c| c * 1e6 / n),
            transactions: f.transactions,
        }
    }
}

fn quantile(values: &mut [Duration], q: f64) -> Duration {
    values.sort_unstable();
    values.get(((values.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default()
}

/// Per endpoint, deliveries that arrived after one accepted (answered by the API) later than
/// them had already arrived.
fn out_of_order(posted: &[Posted], arrivals: &HashMap<String, Instant>) -> usize {
    let mut by_endpoint: HashMap<usize, Vec<(Instant, Instant)>> = HashMap::new();
    for p in posted {
        if let Some(at) = arrivals.get(&p.delivery_id) {
            by_endpoint.entry(p.endpoint).or_default().push((*at, p.answered));
        }
    }
    by_endpoint
        .into_values()
        .map(|mut seen| {
            seen.sort_unstable();
            let mut latest: Option<Instant> = None;
            seen.iter()
                .filter(|(_, answered)| {
                    let late = latest.is_some_and(|l| *answered < l);
                    latest = latest.max(Some(*answered));
                    late
                })
                .count()
        })
        .sum()
}

impl std::fmt::Display for ApiReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let offered = self.rate.map_or_else(|| "as fast as answered".to_owned(), |r| format!("offered at {r:.0}/s"));
        writeln!(
            f,
            "api on {}: {} test events through POST /api/v1/endpoints/{{id}}/test to {} endpoint(s), {} keep-alive clients, {offered}",
            self.backend, self.count, self.endpoints, self.clients
        )?;
        writeln!(f, "raw (same clients -> receiver) {:>9.0}/s", self.raw_per_second)?;
        writeln!(
            f,
            "api requests accepted          {:>9.0}/s   p50 {:.2} ms   p99 {:.2} ms",
            self.requests_per_second, self.request_ms[0], self.request_ms[1]
        )?;
        writeln!(
            f,
            "delivered                      {:>9.0}/s   {:.2} of raw",
            self.delivered_per_second,
            self.delivered_per_second / self.raw_per_second
        )?;
        let [p50, p90, p99, max] = self.arrival_ms;
        writeln!(
            f,
            "POST to arrival                p50 {p50:.1} ms   p90 {p90:.1} ms   p99 {p99:.1} ms   max {max:.1} ms"
        )?;
        writeln!(
            f,
            "claimed per delivered          {:>9.2}   ({} given back unsent)",
            self.claimed_per_delivered, self.given_back
        )?;
        writeln!(f, "arrived after a later one      {:>9}   (per endpoint)", self.out_of_order)?;
        write!(
            f,
            "cpu per delivery               {:>9.0} us driftwatch   {:.0} us clients and receiver",
            self.cpu_us, self.harness_cpu_us
        )?;
        if let Some(db) = self.database_cpu_us {
            write!(f, "\n                               {db:>9.0} us postgres")?;
        }
        if let Some(t) = self.transactions {
            write!(f, "\ntransactions per delivery      {t:>9.2}")?;
        }
        Ok(())
    }
}
