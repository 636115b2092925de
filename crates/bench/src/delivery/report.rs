//! What a delivery run reports, and how it prints.

use std::time::Duration;

use driftwatch_channels::EndpointKind;

/// Which shape a run had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Enqueue in batches while the worker drains.
    Throughput,
    /// Enqueue everything, then drain.
    Backlog,
    /// A fixed offered rate.
    OpenLoop,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct Report {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// The run's shape.
    pub shape: Shape,
    /// Deliveries measured.
    pub count: usize,
    /// Endpoints per event.
    pub endpoints: usize,
    /// Whether the endpoints had no `max_in_flight`.
    pub unlimited: bool,
    /// The endpoints' kind.
    pub kind: EndpointKind,
    /// Raw requests per second, no database.
    pub raw_per_second: f64,
    /// Deliveries enqueued per second.
    pub enqueue_per_second: f64,
    /// Durable deliveries per second: first enqueue to last 2xx (throughput), first to last 2xx
    /// of the drain (backlog), deliveries offered per second (open loop).
    pub durable_per_second: f64,
    /// Enqueue commit -> 2xx percentiles (p50, p90, p99, max); not measured for a backlog.
    pub latency: Option<[Duration; 4]>,
    /// Process CPU per raw request, in microseconds (client and in-process receiver).
    pub raw_cpu_us: f64,
    /// Process CPU per durable delivery, in microseconds (enqueue, worker, client, receiver).
    pub durable_cpu_us: f64,
    /// PostgreSQL's own CPU per durable delivery (its processes on this machine), if it is the store.
    pub database_cpu_us: Option<f64>,
    /// Peak anonymous resident memory while draining, and before the drain (backlog only), in MiB.
    pub rss_mib: Option<(f64, f64)>,
    /// The claim's query plan, as the database planned it with the queue full (backlog only).
    pub claim_plan: Option<String>,
    /// Requests the durable run's receiver accepted (it refused none, or the run failed).
    pub accepted: usize,
    /// Mean bytes of a delivery's body as stored (what the renderer made for the kind).
    pub body_bytes: usize,
    /// Microseconds of CPU the stand-in spends checking and answering one request, timed alone
    /// on requests built as the sender builds them: the harness's own share of the CPU figures
    /// (it runs in this process, on the same cores), HTTP parsing aside.
    pub receiver_us: f64,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shape = match self.shape {
            Shape::Throughput => "throughput (enqueue while draining)",
            Shape::Backlog => "backlog (enqueue all, then drain)",
            Shape::OpenLoop => "open loop (fixed offered rate, one event per transaction)",
        };
        writeln!(f, "backend            {}", self.backend)?;
        writeln!(f, "shape              {shape}")?;
        let limit = if self.unlimited { "no limits: outbox claim" } else { "max_in_flight: cluster-wide claim" };
        writeln!(
            f,
            "deliveries         {} ({} {} endpoint(s) per event, {limit}; {} B bodies)",
            self.count, self.endpoints, self.kind, self.body_bytes
        )?;
        writeln!(f, "raw request rate   {:.0}/s (same client and receiver, no database)", self.raw_per_second)?;
        writeln!(f, "enqueue rate       {:.0} deliveries/s", self.enqueue_per_second)?;
        let what = match self.shape {
            Shape::Throughput => "first enqueue to last 2xx",
            Shape::Backlog => "drain: first claim to last 2xx",
            Shape::OpenLoop => "offered",
        };
        writeln!(f, "durable rate       {:.0}/s ({what})", self.durable_per_second)?;
        writeln!(f, "durable / raw      {:.2}", self.durable_per_second / self.raw_per_second)?;
        writeln!(
            f,
            "CPU per delivery   {:.0} us raw, {:.0} us durable (whole process, receiver included)",
            self.raw_cpu_us, self.durable_cpu_us
        )?;
        if let Some(db) = self.database_cpu_us {
            writeln!(f, "database CPU       {db:.0} us per durable delivery (PostgreSQL processes)")?;
        }
        if let Some((peak, before)) = self.rss_mib {
            writeln!(
                f,
                "anonymous RSS      {before:.1} MiB before the drain, {peak:.1} MiB peak while draining (heap; mapped database pages excluded)"
            )?;
        }
        if let Some([p50, p90, p99, max]) = self.latency {
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            writeln!(
                f,
                "enqueue -> 2xx     p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                ms(p50),
                ms(p90),
                ms(p99),
                ms(max)
            )?;
        }
        writeln!(
            f,
            "receiver           {} stand-in: {} requests accepted, none refused ({})",
            self.kind,
            self.accepted,
            super::receiver::checked(self.kind)
        )?;
        writeln!(
            f,
            "receiver cost      {:.1} us per request to check and answer (timed alone; in-process, so inside the CPU figures)",
            self.receiver_us
        )?;
        if let Some(plan) = &self.claim_plan {
            writeln!(f, "claim plan:")?;
            for line in plan.lines() {
                writeln!(f, "  {line}")?;
            }
        }
        Ok(())
    }
}
