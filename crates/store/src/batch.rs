//! Group commit: writers that take whatever work accumulated while the previous batch was
//! being written, so one transaction (and one commit) serves many callers.

use tokio::sync::{Mutex, mpsc};

/// A queue shared by the writers of one kind of work.
pub type Queue<T> = std::sync::Arc<Mutex<mpsc::UnboundedReceiver<T>>>;

/// Waits for the next item, then takes whatever else is already queued, up to `max` in all.
/// `None` once every sender is gone and the queue is empty.
pub async fn next_batch<T>(queue: &Queue<T>, max: usize) -> Option<Vec<T>> {
    let mut queue = queue.lock().await;
    let first = queue.recv().await?;
    let mut batch = vec![first];
    while batch.len() < max {
        match queue.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
    Some(batch)
}
