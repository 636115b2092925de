//! The commands that are not the server: accounts, users, tokens, import and export, a one-off
//! check, verifying a webhook signature.

use std::io::Read as _;

use anyhow::{Context as _, bail};
use driftwatch::Settings;
use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_store::accounts;

use crate::args::{AccountCommand, TokenCommand, UserCommand};
use crate::print_out;

/// `driftwatch account create|list`.
pub(crate) async fn account(command: AccountCommand) -> anyhow::Result<()> {
    let (name, settings) = match command {
        AccountCommand::Create { name, settings } => (name, settings),
        AccountCommand::List { settings } => return list_accounts(&settings).await,
    };
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

/// `driftwatch account list`: one line per account, with its users and watches.
async fn list_accounts(settings: &Settings) -> anyhow::Result<()> {
    let store = driftwatch::open_store(settings).await?;
    let all = store.read(accounts::list_accounts).await?;
    let width = all.iter().map(|a| a.account.name.chars().count()).max().unwrap_or(0).max("NAME".len());
    let mut out = format!("{:<width$}  {:<30}  {:<19}  {:>7}  USERS\n", "NAME", "ID", "CREATED (UTC)", "WATCHES");
    for a in &all {
        let users = if a.users.is_empty() { "-".to_owned() } else { a.users.join(", ") };
        out.push_str(&format!(
            "{:<width$}  {:<30}  {:<19}  {:>7}  {users}\n",
            a.account.name,
            a.account.id,
            a.account.created_at.format("%Y-%m-%d %H:%M:%S"),
            a.watches,
        ));
    }
    print_out(out.trim_end());
    Ok(())
}

/// `driftwatch token list|revoke|create`.
pub(crate) async fn token(command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::List { account, settings } => {
            let store = driftwatch::open_store(&settings).await?;
            let id = account_id(&store, &account).await?;
            let page = driftwatch_store::Page { after: None, limit: 1000 };
            for t in store.read(move |c| accounts::list_tokens(c, &id, &page)).await? {
                let state = if t.revoked_at.is_some() { "revoked" } else { "live" };
                println!("{}  {}…  {:<20} {:<11} {state}", t.id, t.prefix, t.name, t.scopes);
            }
        }
        TokenCommand::Revoke { account, id, settings } => {
            let store = driftwatch::open_store(&settings).await?;
            let account_id = account_id(&store, &account).await?;
            let now = SystemClock.now().naive_utc();
            let token = id.clone();
            if !store.write(move |c| accounts::revoke_token(c, &account_id, &token, now)).await? {
                bail!("no live token {id} in account {account}");
            }
            println!("revoked {id}");
        }
        TokenCommand::Create { account, name, read_only, settings } => {
            let store = driftwatch::open_store(&settings).await?;
            let now = SystemClock.now().naive_utc();
            let lookup = account.clone();
            let found = store.read(move |c| accounts::find_account_by_name(c, &lookup)).await?;
            let Some(found) = found else {
                bail!("no account named `{account}`; create it with `driftwatch account create`")
            };
            let scopes = if read_only { "read" } else { "read write" };
            let found_id = found.id.clone();
            let (token, plaintext) =
                store.write(move |c| accounts::create_token(c, &found.id, &name, scopes, now)).await?;
            println!("created token {} for account {account} ({}); it is shown only now:", token.id, found_id);
            println!("{plaintext}");
        }
    }
    Ok(())
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

pub(crate) async fn user(command: UserCommand) -> anyhow::Result<()> {
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

/// `driftwatch import`: reads `file` (any format [`driftwatch_import::read_path`] knows),
/// imports it into the account in one transaction, and prints what it did by kind and every
/// field it could not map, by watch.
pub(crate) async fn import(account: &str, file: &std::path::Path, settings: &Settings) -> anyhow::Result<()> {
    let limits = driftwatch_import::ReadLimits::default();
    let path = file.to_owned();
    let plan = tokio::task::spawn_blocking(move || driftwatch_import::read_path(&path, &limits)).await??;
    let store = driftwatch::open_store(settings).await?;
    let account_id = account_id(&store, account).await?;
    let (keyring, _) = driftwatch::keys::keyring(settings)?;
    // Rendered watches are accepted where this node can render: Chromium configured or found.
    let browser_available = settings.browser_ws.is_some()
        || driftwatch_browser::find_chromium(settings.chromium.as_deref(), std::env::var_os("PATH").as_deref())
            .is_some();
    let rules = driftwatch_validate::Limits {
        min_interval_seconds: settings.min_interval_seconds,
        browser_available,
        ..driftwatch_validate::Limits::default()
    };
    let (format, planned, snapshots) = (plan.format, plan.watches.len(), plan.snapshot_count());
    let max_text_bytes = settings.max_text_bytes;
    let allow_private = settings.allow_private_targets;
    let report = store
        .write(move |c| {
            let target = driftwatch_import::Target {
                account_id: &account_id,
                limits: &rules,
                policy: driftwatch_net::TargetPolicy { allow_private },
                now: SystemClock.now(),
                keyring: Some(&keyring),
                max_text_bytes,
            };
            Ok(driftwatch_import::apply(c, plan, &target))
        })
        .await??;
    for problem in &report.problems {
        eprintln!("{problem}");
    }
    let kinds: Vec<String> = report.endpoints_created.iter().map(|(kind, n)| format!("{n} {kind}")).collect();
    let endpoints: usize = report.endpoints_created.values().sum();
    println!("read {}: {planned} watches with {snapshots} snapshots of history", format.label());
    println!(
        "imported {} watches, {} snapshots and {endpoints} endpoints ({}) into {account}; {} problems; {} watches and {} \
         endpoints skipped (already there)",
        report.watches_created,
        report.snapshots,
        if kinds.is_empty() { "none".to_owned() } else { kinds.join(", ") },
        report.problems.len(),
        report.watches_skipped,
        report.endpoints_skipped,
    );
    Ok(())
}

/// Every watch of the account, a page at a time.
async fn all_watches(
    store: &driftwatch_store::Store,
    account_id: &str,
) -> anyhow::Result<Vec<driftwatch_store::Watch>> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let (id, page) = (account_id.to_owned(), driftwatch_store::Page { after: after.clone(), limit: 500 });
        let rows =
            store.read(move |c| driftwatch_store::watches::list_watches(c, &id, &Default::default(), &page)).await?;
        let Some(last) = rows.last() else { break };
        after = Some(last.id.clone());
        all.extend(rows);
    }
    Ok(all)
}

pub(crate) async fn export(account: &str, settings: &Settings) -> anyhow::Result<()> {
    let store = driftwatch::open_store(settings).await?;
    let account_id = account_id(&store, account).await?;
    let all: Vec<_> = all_watches(&store, &account_id).await?.iter().map(driftwatch_import::from_watch).collect();
    print_out(&serde_json::to_string_pretty(&all)?);
    Ok(())
}

/// `driftwatch check`: reads `url` now as a watch with these settings would, through the same
/// [`driftwatch_schedule::PageReader`] as a scheduled check (engine, extraction, line rules,
/// values and the text cap `max_text_bytes`), and prints what the watch would compare: the text
/// (or its diff against a file), then its values, if it has some.
pub(crate) async fn check(
    url: &str,
    selector: Option<&str>,
    options: Option<&str>,
    diff_against: Option<&std::path::Path>,
    allow_private: bool,
    max_text_bytes: usize,
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
    let policy = driftwatch_net::TargetPolicy { allow_private };
    let fetcher =
        Fetcher::new(driftwatch_scrape::FetchOptions { policy, ..driftwatch_scrape::FetchOptions::default() })?;
    let config = driftwatch_schedule::RunnerConfig { max_text_bytes, ..driftwatch_schedule::RunnerConfig::default() };
    let mut reader = driftwatch_schedule::PageReader::new(fetcher, std::sync::Arc::new(SystemClock), config);
    // Chromium (found on `PATH`) only when the watch may render; started on its first render.
    let browsers = (options.fetch.engine != driftwatch_core::Engine::Http).then(|| {
        driftwatch_browser::Browsers::new(driftwatch_browser::BrowserConfig {
            policy,
            concurrency: 1,
            search_path: std::env::var_os("PATH"),
            ..driftwatch_browser::BrowserConfig::default()
        })
    });
    if let Some(browsers) = &browsers {
        reader = reader.with_browsers(browsers.clone());
    }
    // No account: the operator's proxy, no secrets.
    let read = reader.preview(url, selector, &options, &reader.operator_access()).await;
    if let Some(browsers) = &browsers {
        browsers.shutdown(std::time::Duration::from_secs(2)).await;
    }
    let read = read.map_err(anyhow::Error::msg)?;
    if let Some(note) = &read.note {
        eprintln!("note: {note}");
    }
    // The values as the API's preview answers them: plain, by name.
    let values = read.values.map(|values| {
        let plain: serde_json::Map<String, serde_json::Value> =
            values.iter().map(|(name, value)| (name.clone(), value.plain())).collect();
        format!("values: {}", serde_json::Value::Object(plain))
    });
    match diff_against {
        None => {
            print!("{}", read.text);
            if let Some(values) = values {
                println!("{values}");
            }
        }
        Some(path) => {
            let old = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let change = driftwatch_diff::diff_texts(&old, &read.text, &path.display().to_string(), url);
            if change.is_change() {
                print!("{}", change.unified);
            } else {
                eprintln!("no change");
            }
            if let Some(values) = values {
                eprintln!("{values}");
            }
        }
    }
    Ok(())
}

pub(crate) fn verify(secret: &str, headers: &[String], tolerance: i64) -> anyhow::Result<()> {
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

/// `driftwatch mcp`: the MCP tools on stdio, calling the server at `url` with `token`.
pub(crate) async fn mcp(url: &str, token: String) -> anyhow::Result<()> {
    use rmcp::ServiceExt as _;
    let api = driftwatch_mcp::HttpApi::new(url).map_err(anyhow::Error::msg)?;
    let tools = driftwatch_mcp::tools::tools(&driftwatch_web::openapi()).map_err(anyhow::Error::msg)?;
    // A read token is offered the read tools only; when its scopes cannot be told (the server
    // is down), every tool is listed and the server refuses what the token may not do.
    let may_write = api.may_write(&token).await.unwrap_or(true);
    tracing::info!(url, may_write, "serving MCP on stdio");
    // No subscriptions on stdio (nothing to push from): the account is not needed.
    let grant = driftwatch_mcp::Grant { token, account_id: String::new(), may_write };
    let api = std::sync::Arc::new(api);
    let hub = std::sync::Arc::new(driftwatch_mcp::push::Hub::default());
    // Push on stdio: the server's changes feed, asked while the agent listens.
    let feed = {
        let (api, hub, token) = (std::sync::Arc::clone(&api), std::sync::Arc::clone(&hub), grant.token.clone());
        tokio::spawn(async move { api.feed(&token, &hub, || SystemClock.now()).await })
    };
    let server = driftwatch_mcp::Server::for_caller(api, std::sync::Arc::new(tools), grant, hub);
    let running = server.serve(rmcp::transport::stdio()).await.context("the MCP session did not start")?;
    let _feed = AbortOnDrop(feed);
    running.waiting().await.context("the MCP session ended badly")?;
    Ok(())
}

/// Stops a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
