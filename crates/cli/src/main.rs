//! `driftwatch`: watch web pages, deliver signed webhooks when they change.

use std::io::Read as _;

use anyhow::{Context as _, bail};
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use driftwatch::{App, Roles, Settings};
use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_store::accounts;

#[derive(Parser)]
#[command(name = "driftwatch", version, about = "Watch web pages; deliver signed webhooks when they change.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// A TOML file of settings, under the environment and the flags (see `driftwatch config`).
    #[arg(long, global = true, env = "DRIFTWATCH_CONFIG", value_name = "FILE")]
    config: Option<std::path::PathBuf>,
}

#[derive(Subcommand)]
enum Command {
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
    /// Fetch a page once and print the text a watch would compare (or its diff against a file),
    /// to tune a selector and rules before saving a watch.
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
    },
    /// Print the API's OpenAPI 3.1 document (as served at `/api/v1/openapi.json`).
    Openapi,
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
enum BenchCommand {
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
    },
}

#[derive(Subcommand)]
enum AccountCommand {
    /// Create an account.
    Create {
        /// Its unique name.
        name: String,
        #[command(flatten)]
        settings: Settings,
    },
}

#[derive(Subcommand)]
enum UserCommand {
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
enum TokenCommand {
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

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let wanted =
        std::env::var("DRIFTWATCH_LOG").or_else(|_| std::env::var("RUST_LOG")).unwrap_or_else(|_| "info".into());
    // The job scheduler narrates its own start at info; keep it to warnings unless asked for.
    let directives =
        if wanted.contains("tokio_cron_scheduler") { wanted } else { format!("{wanted},tokio_cron_scheduler=warn") };
    let filter = EnvFilter::try_new(&directives).unwrap_or_else(|e| {
        eprintln!("DRIFTWATCH_LOG `{directives}` is not a valid filter ({e}); logging at info");
        EnvFilter::new("info,tokio_cron_scheduler=warn")
    });
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if std::env::var("DRIFTWATCH_LOG_FORMAT").is_ok_and(|f| f == "json") {
        builder.json().init();
    } else {
        builder.init();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let file = match driftwatch::config::path_from(&args, std::env::var_os("DRIFTWATCH_CONFIG")) {
        Some(path) => driftwatch::config::load(&path, &driftwatch::config::setting_names())?,
        None => driftwatch::config::FileSettings::default(),
    };
    let matches = driftwatch::config::with_defaults(Cli::command(), &file).get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    init_tracing();
    match cli.command {
        Command::Config(settings) => {
            let settings_matches = matches.subcommand_matches("config").unwrap_or(&matches);
            print_out(driftwatch::config::describe(settings_matches, &file).trim_end());
            settings.validate()?;
            Ok(())
        }
        Command::Serve(settings) => run_until_signal(&settings, Roles { web: true, background: true }).await,
        Command::Worker(settings) => run_until_signal(&settings, Roles { web: false, background: true }).await,
        Command::Migrate(settings) => {
            driftwatch::open_store(&settings).await?;
            println!("migrations applied");
            Ok(())
        }
        Command::Account(AccountCommand::Create { name, settings }) => {
            let name = name.trim().to_owned();
            if name.is_empty() {
                bail!("the account name must not be empty");
            }
            let store = driftwatch::open_store(&settings).await?;
            let now = SystemClock.now().naive_utc();
            let account = store.write(move |c| accounts::create_account(c, &name, now)).await?;
            println!("created account {} ({})", account.name, account.id);
            Ok(())
        }
        Command::User(command) => user(command).await,
        Command::Token(TokenCommand::List { account, settings }) => {
            let store = driftwatch::open_store(&settings).await?;
            let id = account_id(&store, &account).await?;
            let page = driftwatch_store::Page { after: None, limit: 1000 };
            for t in store.read(move |c| accounts::list_tokens(c, &id, &page)).await? {
                let state = if t.revoked_at.is_some() { "revoked" } else { "live" };
                println!("{}  {}…  {:<20} {:<11} {state}", t.id, t.prefix, t.name, t.scopes);
            }
            Ok(())
        }
        Command::Token(TokenCommand::Revoke { account, id, settings }) => {
            let store = driftwatch::open_store(&settings).await?;
            let account_id = account_id(&store, &account).await?;
            let now = SystemClock.now().naive_utc();
            let token = id.clone();
            if !store.write(move |c| accounts::revoke_token(c, &account_id, &token, now)).await? {
                bail!("no live token {id} in account {account}");
            }
            println!("revoked {id}");
            Ok(())
        }
        Command::Token(TokenCommand::Create { account, name, read_only, settings }) => {
            let store = driftwatch::open_store(&settings).await?;
            let now = SystemClock.now().naive_utc();
            let lookup = account.clone();
            let found = store.read(move |c| accounts::find_account_by_name(c, &lookup)).await?;
            let Some(found) = found else {
                bail!("no account named `{account}`; create it with `driftwatch account create`")
            };
            let scopes = if read_only { "read" } else { "read write" };
            let (token, plaintext) =
                store.write(move |c| accounts::create_token(c, &found.id, &name, scopes, now)).await?;
            println!("created token {} for account {account}; it is shown only now:", token.id);
            println!("{plaintext}");
            Ok(())
        }
        Command::Verify { secret, headers, tolerance } => verify(&secret, &headers, tolerance),
        Command::Openapi => {
            print_out(&format!("{:#}", driftwatch_web::openapi()));
            Ok(())
        }
        Command::Import { account, file, settings } => import(&account, &file, &settings).await,
        Command::Export { account, settings } => export(&account, &settings).await,
        Command::Check { url, selector, options, diff_against, allow_private_targets } => {
            check(&url, selector.as_deref(), options.as_deref(), diff_against.as_deref(), allow_private_targets).await
        }
        Command::Bench(BenchCommand::Checks { watches, concurrency, idle_seconds, database_url }) => {
            let bench = driftwatch_bench::ChecksBench { watches, concurrency, idle_seconds, database_url };
            let report = driftwatch_bench::checks(&bench).await?;
            println!("{report}");
            Ok(())
        }
        Command::Bench(BenchCommand::Retention { runs, watches, database_url }) => {
            let bench = driftwatch_bench::RetentionBench { runs, watches, database_url };
            println!("{}", driftwatch_bench::retention(&bench).await?);
            Ok(())
        }
        Command::Bench(BenchCommand::Pages { watches, requests, database_url }) => {
            let report =
                driftwatch_bench::pages(&driftwatch_bench::PagesBench { watches, requests, database_url }).await?;
            println!("{report}");
            Ok(())
        }
        Command::Bench(BenchCommand::Delivery {
            count,
            concurrency,
            batch,
            producers,
            database_url,
            endpoints,
            unlimited,
            backlog,
            open_loop,
            seconds,
        }) => {
            let report = driftwatch_bench::delivery(&driftwatch_bench::DeliveryBench {
                count,
                concurrency,
                database_url,
                batch,
                producers,
                endpoints,
                unlimited,
                backlog,
                open_loop,
                seconds,
            })
            .await?;
            println!("{report}");
            Ok(())
        }
    }
}

/// Prints a document to standard output; a reader that stops early (`| head`) is not an error.
fn print_out(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}

async fn run_until_signal(settings: &Settings, roles: Roles) -> anyhow::Result<()> {
    let mut signals = Signals::new();
    let app = App::start(settings, roles).await?;
    if let Some(addr) = app.addr {
        // `print_out`, not `println!`: a supervisor that closed our stdout must not panic the server.
        print_out(&format!("driftwatch listening on http://{addr}"));
    }
    if let Some(url) = &app.setup_url {
        print_out(&format!("No user yet. Open this one-time setup link to create the first account:\n  {url}"));
    }
    signals.next().await;
    let grace: std::time::Duration = settings.shutdown_grace.into();
    tracing::info!(grace = ?grace, "shutting down: finishing work in flight (a second signal exits at once)");
    tokio::spawn(async move {
        signals.next().await;
        tracing::warn!("second signal: exiting now; work in flight is retried after its leases expire");
        std::process::exit(130);
    });
    if app.shutdown_within(Some(grace)).await {
        tracing::info!("shut down cleanly");
        Ok(())
    } else {
        anyhow::bail!("DRIFTWATCH_SHUTDOWN_GRACE ({grace:?}) ran out before the work in flight finished")
    }
}

/// SIGTERM and SIGINT (Ctrl-C), listened for from start-up to exit so that none is missed.
struct Signals {
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals { terminate: signal(SignalKind::terminate()).ok(), interrupt: signal(SignalKind::interrupt()).ok() }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Resolves at the next SIGTERM or SIGINT.
    async fn next(&mut self) {
        #[cfg(unix)]
        {
            async fn recv(signal: Option<&mut tokio::signal::unix::Signal>) {
                match signal {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                () = recv(self.terminate.as_mut()) => {}
                () = recv(self.interrupt.as_mut()) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// A new password: asked twice on a terminal, else the first line of standard input; hashed
/// with Argon2id before anything else sees it.
fn read_password() -> anyhow::Result<String> {
    use std::io::IsTerminal as _;
    let password = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("Password: ")?;
        let again = rpassword::prompt_password("Password again: ")?;
        if first != again {
            bail!("the two passwords differ");
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        line.trim_end_matches(['\r', '\n']).to_owned()
    };
    driftwatch_core::hash_password(&password).map_err(|e| anyhow::anyhow!("the password {e}"))
}

async fn user(command: UserCommand) -> anyhow::Result<()> {
    use driftwatch_store::users;
    match command {
        UserCommand::Create { account, email, settings } => {
            let email = email.trim().to_lowercase();
            if !email.contains('@') || email.chars().any(char::is_whitespace) {
                bail!("`{email}` is not an email address");
            }
            let password_hash = read_password()?;
            let store = driftwatch::open_store(&settings).await?;
            let now = SystemClock.now().naive_utc();
            let name = account.trim().to_owned();
            let user = store
                .write(move |c| {
                    let account = match accounts::find_account_by_name(c, &name)? {
                        Some(account) => account,
                        None => accounts::create_account(c, &name, now)?,
                    };
                    users::create_user(c, &account.id, &email, &password_hash, now)
                })
                .await?;
            println!("created user {} ({}) in account {account}", user.email, user.id);
        }
        UserCommand::List { settings } => {
            let store = driftwatch::open_store(&settings).await?;
            for (user, account) in store.read(users::list_all_users).await? {
                println!("{}  {:<32} {account}", user.id, user.email);
            }
        }
        UserCommand::SetPassword { email, settings } => {
            let password_hash = read_password()?;
            let store = driftwatch::open_store(&settings).await?;
            let lookup = email.clone();
            let Some(user) = store.read(move |c| users::find_user_by_email(c, &lookup)).await? else {
                bail!("no user {email}")
            };
            let now = SystemClock.now().naive_utc();
            let id = user.id.clone();
            store.write(move |c| users::set_password(c, &id, &password_hash, None, now)).await?;
            println!("password set for {}; their sessions were ended", user.email);
        }
    }
    Ok(())
}

async fn account_id(store: &driftwatch_store::Store, name: &str) -> anyhow::Result<String> {
    let lookup = name.to_owned();
    match store.read(move |c| accounts::find_account_by_name(c, &lookup)).await? {
        Some(account) => Ok(account.id),
        None => bail!("no account named `{name}`; create it with `driftwatch account create`"),
    }
}

async fn import(account: &str, file: &std::path::Path, settings: &Settings) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let parsed = driftwatch::import::parse(&text)?;
    let store = driftwatch::open_store(settings).await?;
    let account_id = account_id(&store, account).await?;
    let policy = driftwatch_net::TargetPolicy { allow_private: settings.allow_private_targets };
    let limits = driftwatch_validate::Limits {
        min_interval_seconds: settings.min_interval_seconds,
        ..driftwatch_validate::Limits::default()
    };
    let mut problems = parsed.problems;
    let mut created = 0;
    for watch in parsed.watches {
        match driftwatch::import::to_watch(&watch, &account_id, &limits, policy, SystemClock.now()) {
            Ok(row) => {
                store.write(move |c| driftwatch_store::watches::insert_watch(c, &row)).await?;
                created += 1;
            }
            Err(reason) => problems.push(format!("{}: {reason}; skipped", watch.url)),
        }
    }
    for problem in &problems {
        eprintln!("{problem}");
    }
    println!("imported {created} watches into {account}; {} problems", problems.len());
    Ok(())
}

async fn export(account: &str, settings: &Settings) -> anyhow::Result<()> {
    let store = driftwatch::open_store(settings).await?;
    let account_id = account_id(&store, account).await?;
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let (id, page) = (account_id.clone(), driftwatch_store::Page { after: after.clone(), limit: 500 });
        let rows =
            store.read(move |c| driftwatch_store::watches::list_watches(c, &id, &Default::default(), &page)).await?;
        let Some(last) = rows.last() else { break };
        after = Some(last.id.clone());
        all.extend(rows.iter().map(driftwatch::import::from_watch));
    }
    print_out(&serde_json::to_string_pretty(&all)?);
    Ok(())
}

async fn check(
    url: &str,
    selector: Option<&str>,
    options: Option<&str>,
    diff_against: Option<&std::path::Path>,
    allow_private: bool,
) -> anyhow::Result<()> {
    use driftwatch_scrape::Fetcher;
    let options: driftwatch_core::WatchOptions = match options {
        Some(text) => {
            let json = match text.strip_prefix('@') {
                Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?,
                None => text.to_owned(),
            };
            serde_json::from_str(&json).context("--options")?
        }
        None => driftwatch_core::WatchOptions::default(),
    };
    if let Some(selector) = selector {
        driftwatch_scrape::validate_selector(selector)?;
    }
    let fetcher = Fetcher::new(driftwatch_scrape::FetchOptions {
        policy: driftwatch_net::TargetPolicy { allow_private },
        ..driftwatch_scrape::FetchOptions::default()
    })?;
    let text = driftwatch_scrape::read_page(&fetcher, url, selector, &options).await?;
    match diff_against {
        None => print!("{text}"),
        Some(path) => {
            let old = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let change = driftwatch_diff::diff_texts(&old, &text, &path.display().to_string(), url);
            if change.is_change() {
                print!("{}", change.unified);
            } else {
                eprintln!("no change");
            }
        }
    }
    Ok(())
}

fn verify(secret: &str, headers: &[String], tolerance: i64) -> anyhow::Result<()> {
    let header = |name: &str| {
        headers
            .iter()
            .filter_map(|h| h.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
            .with_context(|| format!("missing --header '{name}: ...'"))
    };
    let (id, timestamp, signature) =
        (header("webhook-id")?, header("webhook-timestamp")?, header("webhook-signature")?);
    let mut body = Vec::new();
    std::io::stdin().read_to_end(&mut body).context("reading the body from standard input")?;
    let now = SystemClock.now().timestamp();
    driftwatch_delivery::verify(secret, &id, &timestamp, &signature, &body, now, tolerance)
        .context("the webhook does not verify")?;
    println!("valid");
    Ok(())
}
