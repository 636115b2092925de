//! The recovery loop: requested recoveries processed page by page, on whichever node leases
//! them.

use chrono::TimeDelta;
use driftwatch_core::{IdKind, new_id};
use tokio_util::sync::CancellationToken;

use crate::DeliveryWorker;

impl DeliveryWorker {
    /// Processes requested recoveries page by page until `shutdown`.
    pub(crate) async fn run_recoveries(self, shutdown: CancellationToken) {
        let inner = &self.inner;
        while !shutdown.is_cancelled() {
            let owner = format!("{}:{}", inner.config.node_id, new_id(IdKind::Recovery));
            let now = self.now();
            let until = now + TimeDelta::minutes(5);
            let lease = owner.clone();
            let claimed =
                inner.store.write(move |c| driftwatch_store::recoveries::claim_next(c, &lease, now, until)).await;
            match claimed {
                Ok(Some(recovery)) => {
                    let (budget, page) = (inner.config.retry.max_attempts as i32, inner.config.recovery_page);
                    let now = self.now();
                    let advanced = inner
                        .store
                        .write(move |c| driftwatch_store::recoveries::advance(c, &recovery, &owner, budget, page, now))
                        .await;
                    match advanced {
                        Ok(r) => {
                            tracing::info!(recovery.id = %r.id, state = %r.state, requeued = r.requeued, "recovery advanced");
                            self.wake();
                        }
                        Err(e) => tracing::error!(error = %e, "advancing a recovery failed"),
                    }
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::error!(error = %e, "claiming a recovery failed"),
            }
            tokio::select! {
                () = inner.recovery_wake.notified() => {}
                () = tokio::time::sleep(inner.config.poll_interval) => {}
                () = shutdown.cancelled() => {}
            }
        }
    }
}
