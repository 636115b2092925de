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
    /// Write every table's rows, and the key that seals stored secrets, to one file: one
    /// consistent snapshot, taken while `serve` runs; readable by its owner only.
    Backup {
        /// The file to write (replaced when it exists, once the new one is complete).
        file: std::path::PathBuf,
        /// Leave the secret key out (the stored secrets then need `restore --key-file`).
        #[arg(long)]
        without_key: bool,
        /// Encrypt the whole file with the passphrase in this file.
        #[arg(long, value_name = "FILE")]
        passphrase_file: Option<std::path::PathBuf>,
        #[command(flatten)]
        settings: Settings,
    },
    /// Restore a backup into an empty database of either kind (a new SQLite file or a new
    /// PostgreSQL database), re-sealing its secrets under this database's key; or, with
    /// `--verify`, only check the file.
    Restore {
        /// The backup.
        file: std::path::PathBuf,
        /// Check the file (manifest, checksums, rows, counts, that its key opens its secrets)
        /// and write nothing.
        #[arg(long)]
        verify: bool,
        /// The passphrase of an encrypted backup, in this file.
        #[arg(long, value_name = "FILE")]
        passphrase_file: Option<std::path::PathBuf>,
        /// A file holding the key (base64) that sealed the secrets of a backup made `--without-key`.
        #[arg(long, value_name = "FILE")]
        key_file: Option<std::path::PathBuf>,
        #[command(flatten)]
        settings: Settings,
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
pub(crate) enum AccountCommand {
    /// Create an account.
    Create {
        /// Its unique name.
        name: String,
        #[command(flatten)]
        settings: Settings,
    },
    /// List every account: its name, id, users, creation time and number of watches (the
    /// first-run setup makes one too: its users see only its watches).
    List {
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

/// The command line, each command's help listing only the settings it uses (`user create
/// --help` and `migrate --help` listed every setting of `serve`). Commands still take every
/// setting, since a config file or the environment may carry any, but show only their own:
/// the one-shot commands the database (and `--config`), `migrate` the database and the key
/// that seals stored secrets, `worker` everything but the web server's.
pub(crate) fn command() -> clap::Command {
    use clap::CommandFactory as _;
    use driftwatch::used_by::{KEY, SERVER_ONLY, STORE};
    let store_only = |id: &str| !STORE.contains(&id);
    let migrate = |id: &str| !STORE.contains(&id) && !KEY.contains(&id);
    let worker = |id: &str| SERVER_ONLY.contains(&id);
    let cli = Cli::command();
    let cli = cli.mut_subcommand("account", |c| hide_in(c, &["create", "list"], store_only));
    let cli = cli.mut_subcommand("user", |c| hide_in(c, &["create", "list", "set-password"], store_only));
    let cli = cli.mut_subcommand("token", |c| hide_in(c, &["create", "list", "revoke"], store_only));
    let cli = hide_in(cli, &["import", "export"], store_only);
    let cli = hide_in(cli, &["migrate", "backup", "restore"], migrate);
    hide_in(cli, &["worker"], worker)
}

/// `command` with the settings that `hide` names hidden from the help of its `subcommands`.
fn hide_in(command: clap::Command, subcommands: &[&str], hide: impl Fn(&str) -> bool + Clone) -> clap::Command {
    use clap::Args as _;
    let settings: Vec<String> = Settings::augment_args(clap::Command::new("settings"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    subcommands.iter().fold(command, |command, name| {
        let (settings, hide) = (settings.clone(), hide.clone());
        command.mut_subcommand(name, move |sub| {
            sub.mut_args(move |arg| {
                let id = arg.get_id().as_str();
                if settings.iter().any(|s| s == id) {
                    let hidden = hide(id);
                    arg.hide(hidden)
                } else {
                    arg
                }
            })
        })
    })
}
