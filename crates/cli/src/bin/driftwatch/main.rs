//! `driftwatch`: watch web pages, deliver signed webhooks when they change.

mod args;
mod backup;
mod commands;
mod signals;

use clap::FromArgMatches as _;
use driftwatch::Roles;

use args::{Cli, Command, SecretsCommand};
use signals::run_until_signal;

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let wanted =
        std::env::var("DRIFTWATCH_LOG").or_else(|_| std::env::var("RUST_LOG")).unwrap_or_else(|_| "info".into());
    // The job scheduler narrates its own start at info, and the DevTools client warns of every
    // protocol message newer than it knows and errors when a browser it closed goes away (what
    // matters reaches the run and driftwatch's own log lines): quiet unless asked for.
    let mut directives = wanted.clone();
    for (target, level) in [("tokio_cron_scheduler", "warn"), ("chromiumoxide", "off")] {
        if !wanted.contains(target) {
            directives.push_str(&format!(",{target}={level}"));
        }
    }
    let filter = EnvFilter::try_new(&directives).unwrap_or_else(|e| {
        eprintln!("DRIFTWATCH_LOG `{directives}` is not a valid filter ({e}); logging at info");
        EnvFilter::new("info,tokio_cron_scheduler=warn,chromiumoxide=off")
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
    let matches = driftwatch::config::with_defaults(args::command(), &file).get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    init_tracing();
    match cli.command {
        Command::Config(settings) => {
            let settings_matches = matches.subcommand_matches("config").unwrap_or(&matches);
            print_out(driftwatch::config::describe(settings_matches, &file).trim_end());
            settings.validate()?;
            driftwatch::keys::check_key(&settings)?;
            Ok(())
        }
        Command::Serve(settings) => run_until_signal(&settings, Roles { web: true, background: true }).await,
        Command::Worker(settings) => run_until_signal(&settings, Roles { web: false, background: true }).await,
        Command::Migrate(settings) => {
            let store = driftwatch::open_store(&settings).await?;
            // Sealing what an older version stored in plaintext needs the key; without one
            // (PostgreSQL) the first `serve` or `worker` seals it, as each does at start.
            if driftwatch::keys::has_key(&settings) {
                let (keyring, _) = driftwatch::keys::keyring(&settings)?;
                let sealed = driftwatch::keys::seal_stored(&store, &keyring).await?;
                println!("migrations applied; {sealed} endpoints' secrets encrypted");
            } else {
                println!("migrations applied");
            }
            Ok(())
        }
        Command::Secrets(SecretsCommand::GenerateKey) => {
            print_out(&driftwatch_core::SecretKey::generate().to_base64());
            Ok(())
        }
        Command::Secrets(SecretsCommand::RotateKey(settings)) => {
            let store = driftwatch::open_store(&settings).await?;
            let rotated = driftwatch::keys::rotate(&settings, &store).await?;
            println!("{} endpoints re-encrypted under key {}", rotated.endpoints, rotated.key_id);
            if let Some(file) = rotated.file {
                println!("the new key is in {} (back it up); the old one is beside it as .previous", file.display());
            }
            Ok(())
        }
        Command::Account(command) => commands::account(command).await,
        Command::User(command) => commands::user(command).await,
        Command::Token(command) => commands::token(command).await,
        Command::Verify { secret, headers, tolerance } => commands::verify(&secret, &headers, tolerance),
        Command::Mcp { url, token } => commands::mcp(&url, token).await,
        Command::Openapi => {
            print_out(&format!("{:#}", driftwatch_web::openapi()));
            Ok(())
        }
        Command::Import { account, file, settings } => commands::import(&account, &file, &settings).await,
        Command::Export { account, settings } => commands::export(&account, &settings).await,
        Command::Backup { file, without_key, passphrase_file, settings } => {
            backup::backup(&file, without_key, passphrase_file.as_deref(), &settings).await
        }
        Command::Restore { file, verify, passphrase_file, key_file, settings } => {
            backup::restore(backup::RestoreArgs { file, passphrase_file, key_file, verify }, &settings).await
        }
        Command::Check { url, selector, options, diff_against, allow_private_targets, max_text_bytes } => {
            commands::check(
                &url,
                selector.as_deref(),
                options.as_deref(),
                diff_against.as_deref(),
                allow_private_targets,
                max_text_bytes,
            )
            .await
        }
    }
}

/// Prints a document to standard output; a reader that stops early (`| head`) is not an error.
pub(crate) fn print_out(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}
