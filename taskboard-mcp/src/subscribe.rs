//! Subscriptions to task resources: one follower per connection reads the
//! board's event stream (the long poll of the events endpoint, as the
//! subscriber's member) and sends `notifications/resources/updated` for
//! each subscribed task an event is about.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::Peer;
use serde_json::Value;
use taskboard_wire::{EventsQuery, PollEvents};
use taskboard_wire::{Perform, Result};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// How long one poll of the follower waits for an event.
const POLL_SECONDS: u32 = 25;

#[derive(Default)]
struct Inner {
    /// Subscribed tasks and their resource URIs.
    tasks: HashMap<Uuid, String>,
    following: bool,
}

/// The subscriptions of one connection (one MCP session).
#[derive(Default)]
pub(crate) struct Subscriptions {
    inner: Mutex<Inner>,
    /// Cancelled when the connection's handler goes.
    pub stop: CancellationToken,
}

impl Subscriptions {
    /// Subscribes to `task`, starting the follower on the first
    /// subscription. The follower starts from the stream's position now,
    /// so every change after the subscription is told.
    pub async fn subscribe<B: Perform>(
        self: &Arc<Self>,
        b: B,
        peer: Peer<RoleServer>,
        uri: String,
        task: Uuid,
    ) -> Result<()> {
        let start = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            inner.tasks.insert(task, uri);
            !std::mem::replace(&mut inner.following, true)
        };
        if start {
            let now = EventsQuery { since: None, limit: Some(1), wait: Some(0), runner: None };
            let since = match b.call::<PollEvents>((), now, ()).await {
                Ok(page) => page.next,
                Err(e) => {
                    self.inner.lock().unwrap_or_else(|e| e.into_inner()).following = false;
                    return Err(e);
                }
            };
            tokio::spawn(follow(self.clone(), b, peer, since));
        }
        Ok(())
    }

    pub fn unsubscribe(&self, uri: &str) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).tasks.retain(|_, u| u != uri);
    }

    /// The URIs of the subscribed tasks the events are about; `None` when no
    /// subscription is left (the follower stops).
    fn matching(&self, events: &[Value], missed: bool) -> Option<BTreeSet<String>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.tasks.is_empty() {
            inner.following = false;
            return None;
        }
        let mut uris = BTreeSet::new();
        if missed {
            // Events were lost: any subscribed task may have changed.
            return Some(inner.tasks.values().cloned().collect());
        }
        for event in events {
            let data = &event["data"];
            for field in ["id", "task_id", "source_id", "target_id"] {
                if let Some(uri) =
                    data[field].as_str().and_then(|s| s.parse().ok()).and_then(|id| inner.tasks.get(&id))
                {
                    uris.insert(uri.clone());
                }
            }
        }
        Some(uris)
    }

    fn stopped(&self) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).following = false;
    }
}

async fn follow<B: Perform>(subs: Arc<Subscriptions>, b: B, peer: Peer<RoleServer>, mut since: u64) {
    loop {
        if peer.is_transport_closed() {
            break;
        }
        let query =
            EventsQuery { since: Some(since), limit: Some(1000), wait: Some(POLL_SECONDS), runner: None };
        let page = tokio::select! {
            _ = subs.stop.cancelled() => break,
            page = b.call::<PollEvents>((), query, ()) => page,
        };
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = %e, "resource subscriptions stopped: the event stream failed");
                break;
            }
        };
        since = page.next;
        let Some(uris) = subs.matching(&page.events, page.resync_required) else { return };
        for uri in uris {
            if peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await.is_err() {
                subs.stopped();
                return;
            }
        }
        if page.ended {
            // The subscriber's credentials ended: it hears nothing more.
            tracing::info!("resource subscriptions stopped: the subscriber's credentials ended");
            break;
        }
    }
    subs.stopped();
}
