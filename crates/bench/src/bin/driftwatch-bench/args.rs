//! The command line: one subcommand per benchmark, with the flags `driftwatch bench` had, so
//! figures stay comparable across the move.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "driftwatch-bench",
    version,
    about = "Measure driftwatch's pipeline on this machine: checks, delivery, pages, retention, the API, hostile pages, Chromium, MCP."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// What to log to standard error, as a tracing filter (`info`, `driftwatch_delivery=debug`).
    /// Warnings only by default: a run shows its progress and then its figures, not a line per
    /// request and delivery.
    #[arg(long, global = true, env = "DRIFTWATCH_BENCH_LOG", default_value = "warn")]
    pub(crate) log: String,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Page checks per second (baseline and with change detection), CPU per check, peak memory
    /// and idle CPU, against a local page server, on a temporary SQLite file or the database
    /// given.
    Checks {
        /// Watches, each its own ~20 KB page with a selector.
        #[arg(long, default_value_t = 1_000)]
        watches: usize,
        /// Checks in flight at once.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// Seconds of idle over which the scheduler's CPU is measured.
        #[arg(long, default_value_t = 10)]
        idle_seconds: u64,
        /// An empty database to use (default: a temporary SQLite file).
        #[arg(long)]
        database_url: Option<String>,
        /// Give every watch two values (price by selector, availability from JSON-LD) and a
        /// condition, to measure what values cost.
        #[arg(long)]
        values: bool,
        /// Give every watch an intent for a language model, answered by a stand-in that takes
        /// 60 s per answer: checks must keep their pace while verdicts wait.
        #[arg(long)]
        ai: bool,
    },
    /// An endpoint in digest mode gathers many change events, then its period is closed as the
    /// digest loop closes it: gathering's rate, and the closing transaction's time.
    Digest {
        /// Events gathered before the period closes.
        #[arg(long, default_value_t = 10_000)]
        events: usize,
        /// An empty database to use (default: a temporary SQLite file).
        #[arg(long)]
        database_url: Option<String>,
    },
    /// A changedetection.io backup (made as cd makes one) read and imported as `driftwatch
    /// import` does: the read, the one transaction, snapshots a second.
    Import {
        /// Watches in the backup.
        #[arg(long, default_value_t = 200)]
        watches: usize,
        /// Snapshots of history per watch.
        #[arg(long, default_value_t = 100)]
        snapshots: usize,
        /// An empty database to use (default: a temporary SQLite file).
        #[arg(long)]
        database_url: Option<String>,
    },
    /// Purging old runs (a million by default) in batches while the runner checks every
    /// watch each second: purge rate, and the write latency checks see before and during it.
    Retention {
        /// Old runs to seed, past the retention age.
        #[arg(long, default_value_t = 1_000_000)]
        runs: usize,
        /// Watches (the runs are spread over them; each keeps its newest 100).
        #[arg(long, default_value_t = 1_000)]
        watches: usize,
        /// An empty database to use (default: a temporary SQLite file).
        #[arg(long)]
        database_url: Option<String>,
    },
    /// Render time of the browser UI's watches page (50 of many watches, with their change
    /// strips), in-process through the router.
    Pages {
        /// Watches in the account.
        #[arg(long, default_value_t = 10_000)]
        watches: usize,
        /// Requests measured per page.
        #[arg(long, default_value_t = 100)]
        requests: usize,
        /// An empty database to use (default: a temporary SQLite file).
        #[arg(long)]
        database_url: Option<String>,
    },
    /// The API path: keep-alive clients post test events through the HTTP API while the worker
    /// delivers them; next to the same client's raw rate, with PostgreSQL's cost per delivery.
    Api {
        /// Test events to post.
        #[arg(long, default_value_t = 10_000)]
        count: usize,
        /// Clients side by side.
        #[arg(long, default_value_t = 64)]
        clients: usize,
        /// Endpoints the events go to, in turn (fan-out across endpoints).
        #[arg(long, default_value_t = 1)]
        endpoints: usize,
        /// Offer this many events a second (open loop) instead of as many as the API takes;
        /// `--count` is then rate x `--seconds`.
        #[arg(long)]
        rate: Option<f64>,
        /// How long `--rate` is offered.
        #[arg(long, default_value_t = 20.0)]
        seconds: f64,
        /// An empty database to use (default: a temporary SQLite file).
        #[arg(long)]
        database_url: Option<String>,
    },
    /// From a page change to a subscribed MCP agent's notification, round after round at idle.
    Mcp {
        /// Page changes.
        #[arg(long, default_value_t = 50)]
        rounds: usize,
        /// Pause between changes, milliseconds.
        #[arg(long, default_value_t = 200)]
        pause_ms: u64,
        /// An empty database to use (default: a temporary SQLite file).
        #[arg(long)]
        database_url: Option<String>,
    },
    /// Normal watches beside one hostile case (dead-host, trickle, nested, diff-bomb or
    /// none): their scheduling lag and `/healthz` latency throughout.
    Hostile {
        /// The hostile case.
        #[arg(long, default_value = "dead-host")]
        case: driftwatch_bench::Hostile,
        /// Normal watches.
        #[arg(long, default_value_t = 1_000)]
        watches: usize,
        /// Their interval, seconds.
        #[arg(long, default_value_t = 30)]
        interval: u64,
        /// How long to run, seconds.
        #[arg(long, default_value_t = 75)]
        seconds: u64,
        /// An empty database to use (default: a temporary SQLite file).
        #[arg(long)]
        database_url: Option<String>,
    },
    /// Pages rendered in headless Chromium (a static page, a scripted one and one whose price a
    /// script fetches; screenshot off and of the viewport), each in a fresh context: renders per second, CPU per render of
    /// driftwatch and of the browser, and the browser's peak memory.
    Browser {
        /// Renders measured per page and screenshot mode, after 3 warm-up renders.
        #[arg(long, default_value_t = 40)]
        renders: usize,
        /// Renders in flight at once, comma-separated; a fresh browser for each.
        #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4])]
        concurrency: Vec<usize>,
        /// Also measure full-page screenshots.
        #[arg(long)]
        full_page: bool,
        /// The pages rendered, comma-separated: static, js, fetch (default: all).
        #[arg(long, value_delimiter = ',')]
        pages: Vec<String>,
        /// How long the fetch page's JSON takes to answer, milliseconds.
        #[arg(long, default_value_t = 0)]
        api_delay_ms: u64,
        /// A flag added to Chromium's command line (repeatable), to try one out.
        #[arg(long, allow_hyphen_values = true)]
        chromium_arg: Vec<String>,
    },
    /// Durable delivery rate and enqueue-to-2xx latency, next to the raw HTTP rate.
    Delivery {
        /// Deliveries to send.
        #[arg(long, default_value_t = 20_000)]
        count: usize,
        /// Requests in flight at once.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// Deliveries enqueued per transaction.
        #[arg(long, default_value_t = 100)]
        batch: usize,
        /// Tasks enqueueing side by side.
        #[arg(long, default_value_t = 4)]
        producers: usize,
        /// An empty database to use (default: a temporary SQLite file).
        #[arg(long)]
        database_url: Option<String>,
        /// Endpoints each event fans out to (all at the local receiver).
        #[arg(long, default_value_t = 1)]
        endpoints: usize,
        /// Endpoints without `max_in_flight` (the outbox claim and the per-node cap, instead of
        /// the cluster-wide claim of limited endpoints).
        #[arg(long)]
        unlimited: bool,
        /// Enqueue all `--count` deliveries first, then start the worker and time the drain.
        #[arg(long, conflicts_with = "open_loop")]
        backlog: bool,
        /// Offer this many events per second, one per transaction, and report latency
        /// percentiles at that rate (instead of a throughput run).
        #[arg(long, value_name = "RATE")]
        open_loop: Option<f64>,
        /// How long the open loop offers events.
        #[arg(long, default_value_t = 10.0, requires = "open_loop")]
        seconds: f64,
        /// The endpoints' kind: each body rendered by the channels renderer for it and sent to a
        /// local stand-in for the provider's API that checks each request and fails the run if
        /// it refuses any.
        #[arg(long, default_value = "webhook", value_parser = ["webhook", "discord", "telegram", "ntfy"])]
        kind: String,
    },
}
