//! Wakes across nodes: on PostgreSQL a statement that queues deliveries notifies
//! [`OUTBOX_CHANNEL`] (a trigger on `deliveries`, so every path that queues is covered), and each
//! node's worker listens on a connection of its own, so a delivery queued by one node's API is
//! claimed by whichever node is free, at once rather than at its next poll. SQLite is one node:
//! its worker is woken in-process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use diesel::prelude::*;

use crate::{DatabaseUrl, Store, StoreError, StoreResult};

/// The channel the outbox's trigger notifies (`migrations/postgres/*_outbox_notify`).
pub const OUTBOX_CHANNEL: &str = "driftwatch_outbox";

/// How often the listening connection's socket is read for notifications. Reading one that
/// has none is a non-blocking `recv` and no round trip to the server.
const READ_EVERY: Duration = Duration::from_millis(10);

impl Store {
    /// This store's pool's name in the outbox's notifications: the payload of those its own
    /// writes cause on PostgreSQL (`driftwatch.origin` on each of its sessions).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Whether this database has other nodes to hear from (PostgreSQL).
    pub fn can_listen(&self) -> bool {
        matches!(*self.url, DatabaseUrl::Postgres(_))
    }

    /// Blocks, listening on `channel` on a connection of its own, and calls `notified` once per
    /// read that found notifications from elsewhere, until `stop` is set (seen within 10 ms).
    /// Notifications this store's own pool caused (their payload is its origin) are skipped:
    /// whatever queued there woke its worker in-process already. Returns at once on SQLite;
    /// an error when the connection fails (the caller reconnects).
    pub fn listen(&self, channel: &str, stop: &AtomicBool, notified: &dyn Fn()) -> StoreResult<()> {
        let DatabaseUrl::Postgres(url) = &*self.url else { return Ok(()) };
        let mut conn = PgConnection::establish(url).map_err(|e| StoreError::Config(e.to_string()))?;
        // A channel name is an identifier, not a parameter; ours is a constant of letters.
        if !channel.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
            return Err(StoreError::Config(format!("not a channel name: {channel}")));
        }
        diesel::sql_query(format!("LISTEN {channel}")).execute(&mut conn)?;
        while !stop.load(Ordering::Relaxed) {
            let mut heard = false;
            for notification in conn.notifications_iter() {
                heard |= notification?.payload != *self.origin;
            }
            if heard {
                notified();
            }
            std::thread::sleep(READ_EVERY);
        }
        Ok(())
    }
}
