//! Which commands use which settings (by field name), so that each command's help lists only
//! its own. A test in `settings` holds every name here to a field of [`crate::Settings`].

/// What every command that opens the database uses.
pub const STORE: &[&str] = &["database_url", "pool_size"];
/// The key that seals stored secrets (`migrate` seals what was stored in plaintext).
pub const KEY: &[&str] = &["secret_key", "previous_secret_keys", "secret_key_file"];
/// What only the web server uses: `worker` runs everything else.
pub const SERVER_ONLY: &[&str] = &[
    "listen",
    "header_timeout",
    "body_timeout",
    "max_connections",
    "rate_limit_per_minute",
    "mcp_max_sessions",
    "metrics_token",
    "metrics_listen",
    "secret_rotation_overlap",
];
