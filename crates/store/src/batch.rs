//! Group commit: a [`BatchWriter`] takes whatever work accumulated while its previous batch was
//! being written, so one transaction (and one commit) serves many callers. The runner writes
//! finished checks through one, the delivery worker finished attempts through another.

use std::sync::Arc;

use tokio::sync::{Mutex, mpsc, oneshot};

use crate::{DbConn, Store, StoreError, StoreResult};

/// Writes items queued by many callers in batches, with [`Store::writers`] tasks taking turns
/// at the queue. Each batch is one [`Store::write`] call (so one transaction when the write
/// function opens one), and each caller waits for its own item's answer. Cheap to clone.
pub struct BatchWriter<T, R> {
    sender: mpsc::UnboundedSender<Pending<T, R>>,
}

impl<T, R> Clone for BatchWriter<T, R> {
    fn clone(&self) -> Self {
        BatchWriter { sender: self.sender.clone() }
    }
}

/// An item waiting to be written, and who waits for its answer.
struct Pending<T, R> {
    item: T,
    answer: oneshot::Sender<StoreResult<R>>,
}

/// What every writer of one [`BatchWriter`] shares.
struct Shared<T, R, F> {
    queue: Mutex<mpsc::UnboundedReceiver<Pending<T, R>>>,
    write: F,
    max: usize,
}

impl<T: Send + 'static, R: Send + 'static> BatchWriter<T, R> {
    /// Starts the writers (inside a tokio runtime). `write` gets each batch, at most `max` items
    /// in the order they were queued, and answers one `R` per item in the same order. The
    /// writers end when every handle is gone and the queue is empty.
    pub fn spawn<F>(store: &Store, max: usize, write: F) -> BatchWriter<T, R>
    where
        F: Fn(&mut DbConn, &[T]) -> StoreResult<Vec<R>> + Send + Sync + 'static,
    {
        let (sender, queue) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared { queue: Mutex::new(queue), write, max: max.max(1) });
        for _ in 0..store.writers() {
            tokio::spawn(write_batches(store.clone(), Arc::clone(&shared)));
        }
        BatchWriter { sender }
    }

    /// Queues `item` and waits until its batch is committed. A batch that fails as a whole
    /// answers every item in it with [`StoreError::Batch`] and its error's message.
    pub async fn submit(&self, item: T) -> StoreResult<R> {
        let (answer, answered) = oneshot::channel();
        self.sender.send(Pending { item, answer }).map_err(|_| stopped())?;
        answered.await.unwrap_or_else(|_| Err(stopped()))
    }
}

fn stopped() -> StoreError {
    StoreError::Batch("the batch writer stopped".into())
}

/// One writer: waits for the next item, takes whatever else is already queued (up to `max`),
/// writes them in one `Store::write` and answers each caller.
async fn write_batches<T, R, F>(store: Store, shared: Arc<Shared<T, R, F>>)
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(&mut DbConn, &[T]) -> StoreResult<Vec<R>> + Send + Sync + 'static,
{
    while let Some(batch) = next_batch(&shared).await {
        let (items, answers): (Vec<T>, Vec<_>) = batch.into_iter().map(|p| (p.item, p.answer)).unzip();
        let writer = Arc::clone(&shared);
        match store.write(move |c| (writer.write)(c, &items)).await {
            Ok(results) => {
                for (answer, result) in answers.into_iter().zip(results) {
                    let _ = answer.send(Ok(result));
                }
            }
            Err(e) => {
                let message = e.to_string();
                for answer in answers {
                    let _ = answer.send(Err(StoreError::Batch(message.clone())));
                }
            }
        }
    }
}

/// Waits for the next item, then takes whatever else is already queued, up to `max` in all.
/// `None` once every sender is gone and the queue is empty.
async fn next_batch<T, R, F>(shared: &Shared<T, R, F>) -> Option<Vec<Pending<T, R>>> {
    let mut queue = shared.queue.lock().await;
    let first = queue.recv().await?;
    let mut batch = vec![first];
    while batch.len() < shared.max {
        match queue.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
    Some(batch)
}
