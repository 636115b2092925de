//! Settings, from flags or `DRIFTWATCH_*` environment variables.

mod validate;

use std::time::Duration;

/// Every setting of a driftwatch process. Each flag can also be set through the environment
/// variable named beside it.
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// Database: sqlite://PATH (created when missing) or postgres://USER@HOST/DB.
    #[arg(long, env = "DRIFTWATCH_DATABASE_URL", default_value = "sqlite://driftwatch.db", hide_env_values = true)]
    pub database_url: String,

    /// Address of the HTTP server.
    #[arg(long, env = "DRIFTWATCH_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// Time a client has to send a request's headers, counted from when its connection is
    /// ready for one (new, or kept alive after a response): so also the idle timeout.
    #[arg(long, env = "DRIFTWATCH_HEADER_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub header_timeout: HumanDuration,

    /// Time a client has to send a request's body once its headers arrived (then 408).
    #[arg(long, env = "DRIFTWATCH_BODY_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub body_timeout: HumanDuration,

    /// HTTP connections open at once (each takes a file descriptor); more wait to be accepted.
    #[arg(long, env = "DRIFTWATCH_MAX_CONNECTIONS", default_value_t = 512)]
    pub max_connections: usize,

    /// The URL people open driftwatch at (e.g. `https://watch.example.com`): used in the setup
    /// URL and in messages' links, and an https URL makes session cookies `Secure`. Default:
    /// `http://` and the listen address; unset, messages link to the watched page instead.
    /// Payloads' screenshot links are paths either way (put this URL in front of them).
    #[arg(long, env = "DRIFTWATCH_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Allow watches and endpoints on private, loopback and link-local addresses.
    #[arg(long, env = "DRIFTWATCH_ALLOW_PRIVATE_TARGETS", default_value_t = false, action = clap::ArgAction::Set)]
    pub allow_private_targets: bool,

    /// An HTTP(S) proxy for every outbound request (pages and webhooks), e.g.
    /// `http://proxy.internal:3128`. Proxies in the environment (`HTTP_PROXY`, ...) are ignored.
    /// Behind the proxy, names are still vetted against private addresses (resolved here first);
    /// the proxy resolves them again, so give it egress rules of its own for full protection.
    #[arg(long, env = "DRIFTWATCH_OUTBOUND_PROXY", value_parser = parse_proxy)]
    pub outbound_proxy: Option<url::Url>,

    /// Let accounts' proxies (a watch's `options.fetch.proxy`, the Proxies page) be on private,
    /// loopback or link-local addresses. Off by default: a proxy on the inside is a way around
    /// the address guard. The operator's own proxy is always allowed.
    #[arg(long, env = "DRIFTWATCH_ALLOW_PRIVATE_PROXIES", default_value_t = false, action = clap::ArgAction::Set)]
    pub allow_private_proxies: bool,

    /// A PEM file of certificates to trust for SMTP TLS beside the system's: for a mail relay
    /// whose certificate an internal authority signed. Read at start; a bad file stops it.
    #[arg(long, env = "DRIFTWATCH_SMTP_CA_FILE")]
    pub smtp_ca_file: Option<std::path::PathBuf>,

    /// Delays between webhook attempts, e.g. 1m,5m,30m,2h,12h (units ms, s, m, h, d).
    #[arg(long, env = "DRIFTWATCH_RETRY_SCHEDULE", default_value = "1m,5m,30m,2h,12h")]
    pub retry_schedule: String,

    /// Attempts before a delivery is dead-lettered.
    #[arg(long, env = "DRIFTWATCH_MAX_ATTEMPTS", default_value_t = 5)]
    pub max_attempts: u32,

    /// Relative jitter on retry delays (0.2 = +-20%).
    #[arg(long, env = "DRIFTWATCH_RETRY_JITTER", default_value_t = 0.2)]
    pub retry_jitter: f64,

    /// Webhooks in flight at once to one endpoint, per node (endpoints may set their own).
    #[arg(long, env = "DRIFTWATCH_PER_ENDPOINT_CONCURRENCY", default_value_t = 16)]
    pub per_endpoint_concurrency: usize,

    /// Consecutive failures that open an endpoint's circuit.
    #[arg(long, env = "DRIFTWATCH_CIRCUIT_THRESHOLD", default_value_t = 5)]
    pub circuit_threshold: i32,

    /// How long an open circuit holds an endpoint's deliveries before one probe goes out.
    #[arg(long, env = "DRIFTWATCH_CIRCUIT_OPEN_FOR", default_value = "5m", value_parser = parse_duration)]
    pub circuit_open_for: HumanDuration,

    /// An endpoint failing continuously this long is disabled.
    #[arg(long, env = "DRIFTWATCH_DISABLE_AFTER", default_value = "5d", value_parser = parse_duration)]
    pub disable_after: HumanDuration,

    /// The key that encrypts stored secrets (bot tokens, passwords, signing secrets): 32 bytes
    /// in base64 (`driftwatch secrets generate-key`). Required with PostgreSQL (every node must
    /// share it); with SQLite a key file beside the database is used when it is not set.
    #[arg(long, env = "DRIFTWATCH_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,

    /// Keys that encrypted secrets before a rotation, comma-separated: they still decrypt until
    /// `driftwatch secrets rotate-key` has re-encrypted everything.
    #[arg(long, env = "DRIFTWATCH_PREVIOUS_SECRET_KEYS", hide_env_values = true, value_delimiter = ',')]
    pub previous_secret_keys: Vec<String>,

    /// The key file used when DRIFTWATCH_SECRET_KEY is not set (created on first run). Default:
    /// the SQLite database's path with `.key` added.
    #[arg(long, env = "DRIFTWATCH_SECRET_KEY_FILE")]
    pub secret_key_file: Option<std::path::PathBuf>,

    /// How long a rotated-out endpoint secret keeps signing.
    #[arg(long, env = "DRIFTWATCH_SECRET_ROTATION_OVERLAP", default_value = "24h", value_parser = parse_duration)]
    pub secret_rotation_overlap: HumanDuration,

    /// Longest `Retry-After` honoured.
    #[arg(long, env = "DRIFTWATCH_MAX_RETRY_AFTER", default_value = "6h", value_parser = parse_duration)]
    pub max_retry_after: HumanDuration,

    /// A delivery's lease outlives the webhook timeout by this much; after a crash, deliveries
    /// in flight are retried once their leases expire.
    #[arg(long, env = "DRIFTWATCH_LEASE_GRACE", default_value = "30s", value_parser = parse_duration)]
    pub lease_grace: HumanDuration,

    /// Webhook connect timeout.
    #[arg(long, env = "DRIFTWATCH_WEBHOOK_CONNECT_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    pub webhook_connect_timeout: HumanDuration,

    /// Bodies of sent deliveries are purged after this.
    #[arg(long, env = "DRIFTWATCH_RETAIN_SENT", default_value = "30d", value_parser = parse_duration)]
    pub retain_sent: HumanDuration,

    /// Bodies of dead deliveries are purged after this.
    #[arg(long, env = "DRIFTWATCH_RETAIN_DEAD", default_value = "90d", value_parser = parse_duration)]
    pub retain_dead: HumanDuration,

    /// Delivery attempts are deleted after this.
    #[arg(long, env = "DRIFTWATCH_RETAIN_ATTEMPTS", default_value = "30d", value_parser = parse_duration)]
    pub retain_attempts: HumanDuration,

    /// Runs kept per watch whatever their age (the newest is always kept).
    #[arg(long, env = "DRIFTWATCH_KEEP_RUNS", default_value_t = 100)]
    pub keep_runs: i64,

    /// Runs older than this are deleted, beyond each watch's newest DRIFTWATCH_KEEP_RUNS.
    #[arg(long, env = "DRIFTWATCH_RETAIN_RUNS", default_value = "1d", value_parser = parse_duration)]
    pub retain_runs: HumanDuration,

    /// Events older than this are deleted with their deliveries and attempts, unless a delivery
    /// is still owed to its receiver.
    #[arg(long, env = "DRIFTWATCH_RETAIN_EVENTS", default_value = "180d", value_parser = parse_duration)]
    pub retain_events: HumanDuration,

    /// Snapshots kept per watch (the newest is always kept).
    #[arg(long, env = "DRIFTWATCH_KEEP_SNAPSHOTS", default_value_t = 100)]
    pub keep_snapshots: i64,

    /// Snapshots older than this are deleted (except each watch's newest).
    #[arg(long, env = "DRIFTWATCH_RETAIN_SNAPSHOTS", default_value = "365d", value_parser = parse_duration)]
    pub retain_snapshots: HumanDuration,

    /// When retention runs (cron with seconds, UTC).
    #[arg(long, env = "DRIFTWATCH_RETENTION_CRON", default_value = "0 17 3 * * *")]
    pub retention_cron: String,

    /// When the safety-net sweep wakes the loops (cron with seconds, UTC).
    #[arg(long, env = "DRIFTWATCH_SWEEP_CRON", default_value = "*/30 * * * * *")]
    pub sweep_cron: String,

    /// Webhook request timeout.
    #[arg(long, env = "DRIFTWATCH_WEBHOOK_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub webhook_timeout: HumanDuration,

    /// Page fetch timeout.
    #[arg(long, env = "DRIFTWATCH_FETCH_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub fetch_timeout: HumanDuration,

    /// Largest page body read, in bytes.
    #[arg(long, env = "DRIFTWATCH_MAX_PAGE_BYTES", default_value_t = 5 * 1024 * 1024)]
    pub max_page_bytes: usize,

    /// Bytes of a page's extracted text kept; the rest is cut, and the text ends with a line
    /// saying so.
    #[arg(long, env = "DRIFTWATCH_MAX_TEXT_BYTES", default_value_t = 1024 * 1024)]
    pub max_text_bytes: usize,

    /// Webhooks in flight at once.
    #[arg(long, env = "DRIFTWATCH_DELIVERY_CONCURRENCY", default_value_t = 64)]
    pub delivery_concurrency: usize,

    /// Chromium's executable, for watches rendered in a browser (default: `chromium`,
    /// `chromium-browser` or `google-chrome` on `PATH`).
    #[arg(long, env = "DRIFTWATCH_CHROMIUM")]
    pub chromium: Option<std::path::PathBuf>,

    /// A remote browser's DevTools address (`ws://host:3000`, or `http://host:9222`), used
    /// instead of a local Chromium. It must reach the guard proxy (`--browser-proxy-listen`).
    #[arg(long, env = "DRIFTWATCH_BROWSER_WS")]
    pub browser_ws: Option<String>,

    /// Pages rendered in the browser at once.
    #[arg(long, env = "DRIFTWATCH_BROWSER_CONCURRENCY", default_value_t = 2)]
    pub browser_concurrency: usize,

    /// The local browser is restarted after this many renders.
    #[arg(long, env = "DRIFTWATCH_BROWSER_RECYCLE_AFTER", default_value_t = 200)]
    pub browser_recycle_after: u32,

    /// The local browser is restarted once its processes use more memory than this (MiB).
    #[arg(long, env = "DRIFTWATCH_BROWSER_MEMORY_MB", default_value_t = 1536)]
    pub browser_memory_mb: u64,

    /// Where the proxy that guards the browser's requests listens (default: 127.0.0.1 on a
    /// free port). Set it when a remote browser must reach it.
    #[arg(long, env = "DRIFTWATCH_BROWSER_PROXY_LISTEN")]
    pub browser_proxy_listen: Option<std::net::SocketAddr>,

    /// Screenshots larger than this (bytes, encoded) are not kept; the run says so.
    #[arg(long, env = "DRIFTWATCH_MAX_SCREENSHOT_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_screenshot_bytes: usize,

    /// An OpenAI-compatible server that judges changes of watches with `options.ai` (Ollama:
    /// `http://127.0.0.1:11434/v1`; llama.cpp's server, vLLM, LM Studio, a cloud API). Allowed
    /// even when loopback or private: the operator chose it. Accounts may set their own.
    #[arg(long, env = "DRIFTWATCH_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,

    /// The model's name on that server (`qwen2.5:3b`, `gpt-4o-mini`).
    #[arg(long, env = "DRIFTWATCH_LLM_MODEL")]
    pub llm_model: Option<String>,

    /// The server's API key, sent as `Authorization: Bearer` to that host only.
    #[arg(long, env = "DRIFTWATCH_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,

    /// How long a change may wait for a verdict before it goes out without one (or is held,
    /// for a watch with `on_error: hold`), in seconds.
    #[arg(long, env = "DRIFTWATCH_LLM_DEADLINE_SECONDS", default_value_t = 600)]
    pub llm_deadline_seconds: u64,

    /// AI on or off. Off, changes of watches with `options.ai` are delivered at once, without
    /// a verdict, as if they had none.
    #[arg(long, env = "DRIFTWATCH_LLM_ENABLED", default_value_t = true, action = clap::ArgAction::Set)]
    pub llm_enabled: bool,

    /// Tokens one account may spend a UTC day on the operator's model; past it changes go out
    /// without a verdict, saying so (0: no limit).
    #[arg(long, env = "DRIFTWATCH_LLM_DAILY_TOKENS", default_value_t = 1_000_000)]
    pub llm_daily_tokens: u64,

    /// Model calls in flight at once on this node.
    #[arg(long, env = "DRIFTWATCH_LLM_CONCURRENCY", default_value_t = 4)]
    pub llm_concurrency: usize,

    /// Longest one verdict may take (a slow local model on a CPU may need minutes), in seconds.
    #[arg(long, env = "DRIFTWATCH_LLM_TIMEOUT_SECONDS", default_value_t = 120)]
    pub llm_timeout_seconds: u64,

    /// Page checks in flight at once.
    #[arg(long, env = "DRIFTWATCH_CHECK_CONCURRENCY", default_value_t = 32)]
    pub check_concurrency: usize,

    /// Longest idle sleep of the loops (work queued by other nodes is seen within this).
    #[arg(long, env = "DRIFTWATCH_POLL_INTERVAL", default_value = "5s", value_parser = parse_duration)]
    pub poll_interval: HumanDuration,

    /// Page requests in flight to one host at once.
    #[arg(long, env = "DRIFTWATCH_PER_HOST_CONCURRENCY", default_value_t = 4)]
    pub per_host_concurrency: usize,

    /// Checks of one account in flight at once (default: three quarters of the check
    /// concurrency), so one account's slow pages leave slots to the others.
    #[arg(long, env = "DRIFTWATCH_PER_ACCOUNT_CONCURRENCY")]
    pub per_account_concurrency: Option<usize>,

    /// Least time between the starts of two page requests to one host.
    #[arg(long, env = "DRIFTWATCH_PER_HOST_GAP", default_value = "100ms", value_parser = parse_duration)]
    pub per_host_gap: HumanDuration,

    /// Failed checks in a row that make a watch `failing` and raise `check.failed`.
    #[arg(long, env = "DRIFTWATCH_FAILURE_THRESHOLD", default_value_t = 3)]
    pub failure_threshold: i32,

    /// Longest wait between two checks of a failing watch: past the failure threshold each
    /// failed check doubles the wait, up to this, until a check succeeds.
    #[arg(long, env = "DRIFTWATCH_FAILING_BACKOFF_MAX", default_value = "24h", value_parser = parse_duration)]
    pub failing_backoff_max: HumanDuration,

    /// Shortest check interval a watch may have, in seconds.
    #[arg(long, env = "DRIFTWATCH_MIN_INTERVAL_SECONDS", default_value_t = 30)]
    pub min_interval_seconds: i64,

    /// API requests a minute per token, in bursts of as many (0: no limit).
    #[arg(long, env = "DRIFTWATCH_RATE_LIMIT_PER_MINUTE", default_value_t = 600)]
    pub rate_limit_per_minute: u32,

    /// Open MCP sessions at most (each idle one lapses after 5 minutes); past it, opening one
    /// is refused until another closes.
    #[arg(long, env = "DRIFTWATCH_MCP_MAX_SESSIONS", default_value_t = 1000)]
    pub mcp_max_sessions: usize,

    /// Database connections kept in the pool.
    #[arg(long, env = "DRIFTWATCH_POOL_SIZE", default_value_t = 16)]
    pub pool_size: u32,

    /// Name of this node in leases and logs (default: host name and process id).
    #[arg(long, env = "DRIFTWATCH_NODE_ID")]
    pub node_id: Option<String>,

    /// A file holding an offset added to the wall clock (`+26h`, `-5m`, `0`), read again as it
    /// changes: for rehearsing schedules of days (digests, quiet hours, expectations) in
    /// seconds, and for tests. Every node given the same file keeps the same time. Never set it
    /// in production.
    #[arg(long, env = "DRIFTWATCH_CLOCK_FILE")]
    pub clock_file: Option<std::path::PathBuf>,

    /// Bearer token that `/metrics` asks for (unset: `/metrics` is open to whoever reaches it).
    #[arg(long, env = "DRIFTWATCH_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,

    /// Serve `/metrics` on this address only (e.g. 127.0.0.1:9464) instead of the main one.
    #[arg(long, env = "DRIFTWATCH_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,

    /// On SIGTERM or SIGINT, how long checks and deliveries in flight may take to finish and
    /// be recorded before the process gives up on them and exits.
    #[arg(long, env = "DRIFTWATCH_SHUTDOWN_GRACE", default_value = "30s", value_parser = parse_duration)]
    pub shutdown_grace: HumanDuration,
}

/// A setting refused at start-up: which one, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{env} (--{flag}): {message}")]
pub struct SettingError {
    /// Its environment variable.
    pub env: &'static str,
    /// Its flag, without the dashes.
    pub flag: &'static str,
    /// What is wrong, and the value given.
    pub message: String,
}

impl Settings {
    /// Checks of one account in flight at once: the setting, or three quarters of the check
    /// concurrency.
    pub fn per_account(&self) -> usize {
        self.per_account_concurrency.unwrap_or((self.check_concurrency * 3 / 4).max(1))
    }

    /// The node id, or one made from the host name and process id.
    pub fn node_id(&self) -> String {
        self.node_id.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_owned()).unwrap_or_default();
            let host = if host.is_empty() { "node".to_owned() } else { host };
            format!("{host}-{}", std::process::id())
        })
    }

    /// Every setting at its default, ignoring the environment (for embedding and tests).
    pub fn defaults() -> Settings {
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            settings: Settings,
        }
        // Parse with no flags; defaults fill everything. Environment variables still apply
        // here, so clear the ones a test must control after calling this.
        use clap::Parser as _;
        Wrapper::parse_from(["driftwatch"]).settings
    }
}

/// A duration given as `500ms`, `30s`, `5m`, `2h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl From<HumanDuration> for Duration {
    fn from(d: HumanDuration) -> Duration {
        d.0
    }
}

fn parse_duration(text: &str) -> Result<HumanDuration, String> {
    driftwatch_core::parse_duration(text).map(HumanDuration)
}

/// An outbound proxy URL: `http://` or `https://` with a host.
fn parse_proxy(value: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(value).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err("use http://HOST:PORT or https://HOST:PORT".into());
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_each_command_uses_are_settings() {
        use clap::Args as _;
        let command = Settings::augment_args(clap::Command::new("settings"));
        let ids: Vec<&str> = command.get_arguments().map(|a| a.get_id().as_str()).collect();
        for name in crate::used_by::STORE.iter().chain(crate::used_by::KEY).chain(crate::used_by::SERVER_ONLY) {
            assert!(ids.contains(name), "`{name}` is not a setting");
        }
    }

    #[test]
    fn a_proxy_is_an_http_url_with_a_host() {
        assert_eq!(
            parse_proxy("http://proxy.internal:3128").map(|u| u.to_string()),
            Ok("http://proxy.internal:3128/".into())
        );
        for bad in ["proxy:3128", "socks5://proxy:1080", "http://", "file:///etc/passwd"] {
            assert!(parse_proxy(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn defaults_are_valid_and_bad_values_are_refused_by_name() {
        let defaults = Settings::defaults();
        assert_eq!(defaults.validate(), Ok(()));
        let refused = |change: fn(&mut Settings)| {
            let mut settings = Settings::defaults();
            change(&mut settings);
            settings.validate().expect_err("refused").to_string()
        };
        let message = refused(|s| s.max_attempts = 0);
        assert_eq!(message, "DRIFTWATCH_MAX_ATTEMPTS (--max-attempts): must be at least 1; got 0");
        assert!(refused(|s| s.retry_jitter = 1.5).starts_with("DRIFTWATCH_RETRY_JITTER"));
        assert!(refused(|s| s.retry_schedule = "1m,soon".into()).starts_with("DRIFTWATCH_RETRY_SCHEDULE"));
        assert!(refused(|s| s.delivery_concurrency = 0).starts_with("DRIFTWATCH_DELIVERY_CONCURRENCY"));
        assert!(refused(|s| s.poll_interval = HumanDuration(Duration::ZERO)).starts_with("DRIFTWATCH_POLL_INTERVAL"));
        assert!(refused(|s| s.public_url = Some("watch.example.com".into())).starts_with("DRIFTWATCH_PUBLIC_URL"));
        assert!(refused(|s| s.sweep_cron = "every minute".into()).starts_with("DRIFTWATCH_SWEEP_CRON"));
        assert!(refused(|s| s.metrics_listen = Some(s.listen.clone())).starts_with("DRIFTWATCH_METRICS_LISTEN"));
    }
}
