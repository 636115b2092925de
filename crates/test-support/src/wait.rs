//! Waiting for something to become true, polling briefly.

use std::future::Future;
use std::time::Duration;

/// Awaits `probe` returning `Some`, polling briefly, for at most 15 seconds.
pub async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    eventually_within(what, Duration::from_secs(15), probe).await
}

/// Awaits `probe` returning `Some`, polling briefly, for at most `limit`; panics naming `what`
/// when it runs out.
pub async fn eventually_within<T, F, Fut>(what: &str, limit: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
