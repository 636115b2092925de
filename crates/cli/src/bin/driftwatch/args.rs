//! The command line: every subcommand and its flags (clap).

use clap::{Parser, Subcommand};
use driftwatch::Settings;

#[derive(Parser)]
#[command(name = "driftwatch", version, about = "Watch web pages; deliver signed webhooks when they change.")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// A TOML file of settings, under the environment and the flags (see `driftwatch config`).
    #[arg(long, global = true, env = "DRIFTWATCH_CONFIG", value_name = "FILE")]
    config: Option<std::path::PathBuf>,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run the web server, the schedule runner and the delivery worker.
    Serve(#[command(flatten)] Settings),
    /// Run the schedule runner and the delivery worker without the web server (extra nodes).
    Worker(#[command(flatten)] Settings),
    /// Apply pending database migrations and exit.
    Migrate(#[command(flatten)] Settings),
    /// Print the effective settings, where each comes from (file, environment, flag or
    /// default), secrets masked; exits non-zero when one is invalid.
    Config(#[command(flatten)] Settings),
    /// Manage accounts.
    #[command(subcommand)]
    Account(AccountCommand),
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Manage the people who sign in to the browser UI.
    #[command(subcommand)]
    User(UserCommand),
    /// The key that encrypts stored secrets (bot tokens, passwords, signing secrets).
    #[command(subcommand)]
    Secrets(SecretsCommand),
    /// Create watches from a plain URL list, urlwatch's urls.yaml or a driftwatch export.
    Import {
        /// The account the watches belong to.
        #[arg(long)]
        account: String,
        /// The file to read.
        file: std::path::PathBuf,
        #[command(flatten)]
        settings: Settings,
    },
    /// Print an account's watches as JSON (for `import`).
    Export {
        /// The account.
        #[arg(long)]
        account: String,
        #[command(flatten)]
        settings: Settings,
    },
    /// Read a page once as a scheduled check would and print what a watch would compare: the
    /// text (or its diff against a file), then its values, to tune a selector, rules and values
    /// before saving a watch.
    Check {
        /// The page.
        url: String,
        /// CSS selector of the part that matters.
        #[arg(long)]
        selector: Option<String>,
        /// Watch options as JSON (`{"extract": ..., "rules": ..., "fetch": ...}`), or `@FILE`.
        #[arg(long)]
        options: Option<String>,
        /// Print the unified diff of this file's text against the page's instead of the text.
        #[arg(long)]
        diff_against: Option<std::path::PathBuf>,
        /// Allow private, loopback and link-local addresses.
        #[arg(long, env = "DRIFTWATCH_ALLOW_PRIVATE_TARGETS", default_value_t = false, action = clap::ArgAction::Set)]
        allow_private_targets: bool,
        /// Bytes of the page's text kept, as a watch keeps them (the server's setting of the same name).
        #[arg(long, env = "DRIFTWATCH_MAX_TEXT_BYTES", default_value_t = 1024 * 1024)]
        max_text_bytes: usize,
    },
    /// Print the API's OpenAPI 3.1 document (as served at `/api/v1/openapi.json`).
    Openapi,
    /// Serve the MCP tools on standard input and output, for a local agent: each tool calls the
    /// driftwatch server at `--url` with the agent's token, as any API client would.
    Mcp {
        /// The driftwatch server (without `/api/v1`).
        #[arg(long, env = "DRIFTWATCH_URL", default_value = "http://127.0.0.1:8080")]
        url: String,
        /// The API token the tools act with (a `read` token gets the read tools only).
        #[arg(long, env = "DRIFTWATCH_TOKEN", hide_env_values = true)]
        token: String,
    },
    /// Measure the pipeline against a local receiver.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Verify a webhook as a receiver would: exit 0 when the signature is valid.
    ///
    /// The body is read from standard input; headers are given as `--header 'name: value'`.
    Verify {
        /// The endpoint's signing secret (`whsec_...`).
        #[arg(long, env = "DRIFTWATCH_WEBHOOK_SECRET", hide_env_values = true)]
        secret: String,
        /// A request header, `name: value`; give webhook-id, webhook-timestamp and webhook-signature.
        #[arg(long = "header", short = 'H')]
        headers: Vec<String>,
        /// Accepted clock skew, in seconds.
        #[arg(long, default_value_t = 300)]
        tolerance: i64,
    },
}

#[derive(Subcommand)]
pub(crate) enum BenchCommand {
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
    /// Pages rendered in headless Chromium (a static page and a scripted one, screenshot off
    /// and of the viewport), each in a fresh context: renders per second, CPU per render of
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

#[derive(Subcommand)]
pub(crate) enum AccountCommand {
    /// Create an account.
    Create {
        /// Its unique name.
        name: String,
        #[command(flatten)]
        settings: Settings,
    },
}

#[derive(Subcommand)]
pub(crate) enum UserCommand {
    /// Create a user of an account (the account is created when missing). The password is
    /// asked for on the terminal, or read as the first line of standard input; never from
    /// the command line.
    Create {
        /// The account the user belongs to.
        #[arg(long)]
        account: String,
        /// The email the user signs in with.
        #[arg(long)]
        email: String,
        #[command(flatten)]
        settings: Settings,
    },
    /// List every user with their account.
    List {
        #[command(flatten)]
        settings: Settings,
    },
    /// Set a user's password (asked for, or read from standard input) and end their sessions.
    SetPassword {
        /// The user's email.
        #[arg(long)]
        email: String,
        #[command(flatten)]
        settings: Settings,
    },
}

#[derive(Subcommand)]
pub(crate) enum SecretsCommand {
    /// Print a new random key (base64) for DRIFTWATCH_SECRET_KEY.
    GenerateKey,
    /// Re-encrypt every stored secret under a new key, in batches, losing none.
    ///
    /// With a key file (SQLite's default): stop driftwatch, run this, start it again; a new key
    /// replaces the file's (the old one is kept beside it as `.previous`). With
    /// DRIFTWATCH_SECRET_KEY: set the new key there and the old one in
    /// DRIFTWATCH_PREVIOUS_SECRET_KEYS on every node, restart them, run this, then drop the
    /// previous key.
    RotateKey(#[command(flatten)] Box<Settings>),
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum TokenCommand {
    /// Create an API token; the token is printed once, as the last line.
    Create {
        /// The account the token acts for.
        #[arg(long)]
        account: String,
        /// A label for the token.
        #[arg(long, default_value = "cli")]
        name: String,
        /// A token that can only read (no changes, no actions).
        #[arg(long)]
        read_only: bool,
        #[command(flatten)]
        settings: Settings,
    },
    /// List an account's tokens.
    List {
        /// The account.
        #[arg(long)]
        account: String,
        #[command(flatten)]
        settings: Settings,
    },
    /// Revoke a token.
    Revoke {
        /// The account.
        #[arg(long)]
        account: String,
        /// The token's id (`tok_...`).
        id: String,
        #[command(flatten)]
        settings: Settings,
    },
}

/// The command line, with the server's settings kept out of the help of commands that only
/// open the database (`user create --help` listed every setting of `serve`): they still take
/// them (a config file or the environment may carry any), but show only `--database-url` and
/// `--config`.
pub(crate) fn command() -> clap::Command {
    use clap::{Args as _, CommandFactory as _};
    let server: Vec<String> = Settings::augment_args(clap::Command::new("settings"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .filter(|id| id != "database_url" && id != "config")
        .collect();
    let quiet = move |command: clap::Command| {
        let server = server.clone();
        command.mut_args(move |arg| {
            let hide = server.iter().any(|id| id == arg.get_id().as_str());
            arg.hide(hide)
        })
    };
    let for_store = |command: clap::Command, subcommands: &[&str]| {
        subcommands.iter().fold(command, |command, name| command.mut_subcommand(name, quiet.clone()))
    };
    let cli = Cli::command();
    let cli = cli.mut_subcommand("account", |c| for_store(c, &["create"]));
    let cli = cli.mut_subcommand("user", |c| for_store(c, &["create", "list", "set-password"]));
    let cli = cli.mut_subcommand("token", |c| for_store(c, &["create", "list", "revoke"]));
    for_store(cli, &["import", "export"])
}
