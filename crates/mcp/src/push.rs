//! Push: an agent subscribed to a watch (`driftwatch://watches/{id}`) or to all of its watches
//! (`driftwatch://watches`) is told when an event about one is recorded (a change, a crossing,
//! a health change), through `notifications/resources/updated` with the event in `_meta`
//! (`event_id`, `event_type`, `watch_id`, and `cursor` for `list_changes`), so it can fetch the
//! diff and, after a disconnection, get back what it missed from the changes feed.
//!
//! Both ways a client may subscribe are served: `subscriptions/listen` (protocol 2026-07-28)
//! and the session's `resources/subscribe` (earlier versions). The host feeds [`Hub::publish`]
//! with the events it records; the hub tells only subscribers of the event's own account.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{
    MetaObject, NotificationMetaObject, ResourceUpdatedNotification, ResourceUpdatedNotificationParam,
    ServerNotification,
};
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};
use serde_json::json;

use crate::resources::WATCHES;

/// An event to tell subscribers about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// `evt_...`, also the changes feed's cursor.
    pub event_id: String,
    /// Its owner.
    pub account_id: String,
    /// The watch it is about, if any.
    pub watch_id: Option<String>,
    /// `change.detected`, `condition.met`, ...
    pub event_type: String,
}

enum Target {
    /// A session's `resources/subscribe` to `uri`.
    Session { session: u64, uri: String, peer: Peer<RoleServer> },
    /// A `subscriptions/listen` stream (its filter holds the URIs).
    Listen { id: u64, sink: SubscriptionSink },
}

struct Listener {
    account_id: String,
    target: Target,
}

/// Who is subscribed to what, across sessions.
#[derive(Default)]
pub struct Hub {
    listeners: Mutex<Vec<Listener>>,
    next: AtomicU64,
}

impl Hub {
    /// Whether anyone listens (the host skips looking for events when no one does).
    pub fn is_listened_to(&self) -> bool {
        !self.lock().is_empty()
    }

    /// A fresh id for a session or a listen stream.
    pub(crate) fn id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Listener>> {
        self.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A session's subscription to `uri`, for `account_id`.
    pub(crate) fn subscribe(&self, account_id: &str, session: u64, uri: &str, peer: Peer<RoleServer>) {
        let mut listeners = self.lock();
        let known = listeners
            .iter()
            .any(|l| matches!(&l.target, Target::Session { session: s, uri: u, .. } if *s == session && u == uri));
        if !known {
            let target = Target::Session { session, uri: uri.to_owned(), peer };
            listeners.push(Listener { account_id: account_id.to_owned(), target });
        }
    }

    /// Ends a session's subscription to `uri`.
    pub(crate) fn unsubscribe(&self, session: u64, uri: &str) {
        self.lock()
            .retain(|l| !matches!(&l.target, Target::Session { session: s, uri: u, .. } if *s == session && u == uri));
    }

    /// A listen stream, for `account_id`, until [`Hub::stop_listening`].
    pub(crate) fn listen(&self, account_id: &str, id: u64, sink: SubscriptionSink) {
        self.lock().push(Listener { account_id: account_id.to_owned(), target: Target::Listen { id, sink } });
    }

    /// Ends a listen stream.
    pub(crate) fn stop_listening(&self, id: u64) {
        self.lock().retain(|l| !matches!(&l.target, Target::Listen { id: i, .. } if *i == id));
    }

    /// Tells each event's subscribers (of its account) that its watch changed; drops the
    /// subscribers whose connection is gone.
    pub async fn publish(&self, events: &[Pushed]) {
        for event in events {
            let Some(watch_id) = &event.watch_id else { continue };
            let uris = [format!("{WATCHES}/{watch_id}"), WATCHES.to_owned()];
            let meta = json!({
                "event_id": event.event_id,
                "event_type": event.event_type,
                "watch_id": watch_id,
                "cursor": event.event_id,
            });
            let meta = NotificationMetaObject(MetaObject(meta.as_object().cloned().unwrap_or_default()));
            let param = |uri: &str| {
                let mut param = ResourceUpdatedNotificationParam::new(uri);
                param.meta = Some(meta.clone());
                param
            };
            // Sent outside the lock: a slow client does not hold up subscribing.
            let (sessions, sinks): (Vec<_>, Vec<_>) = {
                let listeners = self.lock();
                let mine = listeners.iter().filter(|l| l.account_id == event.account_id);
                let sessions: Vec<(Peer<RoleServer>, String)> = mine
                    .clone()
                    .filter_map(|l| match &l.target {
                        Target::Session { uri, peer, .. } if uris.contains(uri) => Some((peer.clone(), uri.clone())),
                        _ => None,
                    })
                    .collect();
                let sinks: Vec<(u64, SubscriptionSink)> = mine
                    .filter_map(|l| match &l.target {
                        Target::Listen { id, sink } => Some((*id, sink.clone())),
                        Target::Session { .. } => None,
                    })
                    .collect();
                (sessions, sinks)
            };
            let mut gone = false;
            for (peer, uri) in sessions {
                if peer.is_transport_closed() || peer.notify_resource_updated(param(&uri)).await.is_err() {
                    gone = true;
                }
            }
            for (id, sink) in sinks {
                for uri in &uris {
                    let notification =
                        ServerNotification::ResourceUpdatedNotification(ResourceUpdatedNotification::new(param(uri)));
                    // Any other error: not asked for by this stream (another watch), or a failed send.
                    if let Err(rmcp::service::SubscriptionSendError::SubscriptionClosed) = sink.send(notification).await
                    {
                        self.stop_listening(id);
                    }
                }
            }
            if gone {
                self.lock().retain(|l| match &l.target {
                    Target::Session { peer, .. } => !peer.is_transport_closed(),
                    Target::Listen { .. } => true,
                });
            }
        }
    }
}
