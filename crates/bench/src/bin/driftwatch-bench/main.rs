//! `driftwatch-bench`: the benchmarks, a binary of their own so the product binary carries
//! none of them (nor the test stand-ins they answer deliveries with). Each subcommand starts
//! what it measures in-process (the runner, the worker, the web app, a page server, a
//! receiver) on a temporary SQLite file or the empty database given, and prints its figures.
//!
//! `cargo run --release -p driftwatch-bench -- checks --watches 1000`

mod args;

use clap::Parser as _;

use args::{Cli, Command};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_tracing(&cli.log);
    run(cli.command).await
}

/// Logs to standard error as the product binary does. The DevTools client warns of every
/// protocol message newer than it knows (as in `driftwatch`): quiet unless asked for.
fn init_tracing(wanted: &str) {
    use tracing_subscriber::EnvFilter;
    let directives =
        if wanted.contains("chromiumoxide") { wanted.to_owned() } else { format!("{wanted},chromiumoxide=off") };
    let filter = EnvFilter::try_new(&directives).unwrap_or_else(|e| {
        eprintln!("--log `{directives}` is not a valid filter ({e}); logging warnings");
        EnvFilter::new("warn,chromiumoxide=off")
    });
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

/// Runs the benchmark `command` names and prints its report.
async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Checks { watches, concurrency, idle_seconds, database_url, values, ai } => {
            let bench = driftwatch_bench::ChecksBench { watches, concurrency, idle_seconds, database_url, values, ai };
            println!("{}", driftwatch_bench::checks(&bench).await?);
        }
        Command::Digest { events, database_url } => {
            let bench = driftwatch_bench::DigestBench { events, database_url };
            println!("{}", driftwatch_bench::digest(&bench).await?);
        }
        Command::Import { watches, snapshots, database_url } => {
            let bench = driftwatch_bench::ImportBench { watches, snapshots, database_url };
            println!("{}", driftwatch_bench::import(&bench).await?);
        }
        Command::Retention { runs, watches, database_url } => {
            let bench = driftwatch_bench::RetentionBench { runs, watches, database_url };
            println!("{}", driftwatch_bench::retention(&bench).await?);
        }
        Command::Pages { watches, requests, database_url } => {
            let bench = driftwatch_bench::PagesBench { watches, requests, database_url };
            println!("{}", driftwatch_bench::pages(&bench).await?);
        }
        Command::Mcp { rounds, pause_ms, database_url } => {
            let bench = driftwatch_bench::McpBench { rounds, pause_ms, database_url };
            println!("{}", driftwatch_bench::mcp(&bench).await?);
        }
        Command::Hostile { case, watches, interval, seconds, database_url } => {
            let bench = driftwatch_bench::HostileBench { case, watches, interval, seconds, database_url };
            println!("{}", driftwatch_bench::hostile_bench(&bench).await?);
        }
        Command::Browser { renders, concurrency, full_page, pages, api_delay_ms, chromium_arg } => {
            let search_path = std::env::var_os("PATH");
            let pages = pages
                .iter()
                .map(|p| driftwatch_bench::PageKind::from_name(p).ok_or_else(|| anyhow::anyhow!("no page {p:?}")))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let api_delay = std::time::Duration::from_millis(api_delay_ms);
            let chromium_args = chromium_arg;
            let bench = driftwatch_bench::BrowserBench {
                renders,
                concurrency,
                full_page,
                search_path,
                pages,
                api_delay,
                chromium_args,
            };
            let report = driftwatch_bench::browser(&bench).await?;
            println!("{report}");
            anyhow::ensure!(report.failures() == 0, "{} renders failed (see above)", report.failures());
        }
        Command::Api { count, clients, endpoints, rate, seconds, database_url } => {
            let bench = driftwatch_bench::ApiBench { count, clients, endpoints, rate, seconds, database_url };
            println!("{}", driftwatch_bench::api(&bench).await?);
        }
        Command::Delivery {
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
            kind,
        } => {
            let bench = driftwatch_bench::DeliveryBench {
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
                kind: kind.parse()?,
            };
            println!("{}", driftwatch_bench::delivery(&bench).await?);
        }
    }
    Ok(())
}
