//! What driftwatch's test suites share: a database of its own per test on SQLite or
//! PostgreSQL ([`TestDb`]), a webhook receiver ([`Receiver`]), stand-ins for the chat and push
//! services notifications go to ([`ChatServer`]: Discord, Telegram, Teams, ntfy, Pushover,
//! Gotify, Matrix, plain HTTP), a real SMTP server that keeps what it receives
//! ([`SmtpServer`]), a web page whose content a test changes ([`PageServer`]), waiting for
//! something to become true ([`eventually`]), forward proxies that count what passes
//! ([`ProxyServer`]: HTTP and SOCKS5), and child processes that die with their test
//! ([`KillOnDrop`]).
//!
//! Used by the end-to-end suite (`tests/`), the binary's process tests (`crates/cli/tests/`)
//! and the benchmarks (`driftwatch-bench`, which answers its deliveries with the chat
//! stand-ins through [`ChatServer::answer`]); never linked into the product binary.

mod cd_backup;
mod chat;
mod db;
pub mod llm;
mod mcp_client;
mod page;
mod process;
mod proxy;
mod receiver;
mod smtp;
mod wait;

pub use cd_backup::{CdBackup, CdSnapshot};
pub use chat::{ChatAnswer, ChatRequest, ChatServer, Mode, Provider};
pub use db::{Backend, TestDb};
pub use mcp_client::{McpClient, Subscribed};
pub use page::{PageRequest, PageServer, Wall};
pub use process::KillOnDrop;
pub use proxy::{ProxyKind, ProxyServer};
pub use receiver::{BodyCheck, Received, Receiver, check_every_request};
pub use smtp::{ParsedMail, ReceivedMail, SmtpLogin, SmtpServer, SmtpTls};
pub use wait::{eventually, eventually_within};

use std::net::SocketAddr;

/// Serves `app` on a loopback port of its own for the rest of the test.
pub async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}
