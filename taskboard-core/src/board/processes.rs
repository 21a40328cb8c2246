//! A board served by several processes on one database: each process
//! learns of the events the others commit and publishes them into its own
//! hub, so its subscribers, caches and sessions follow every process.
//!
//! The store's listener (`storage::postgres::listen`) is the wake-up; the
//! events table is the truth. On a wake-up, when own events wait for a
//! lower seq (`events::hub`), and at the latest every second, the events
//! after the hub's newest seq are read from the store and published, with
//! the caches cleared by the same rules as for own events.

use std::sync::Arc;
use std::time::Duration;

use super::{Board, Inner, cache};
use crate::error::Result;
use crate::records::event_log as log;

/// The longest a process goes without reading the events table: the
/// bound on how late it learns of an event whose notification was lost.
pub const FOLLOW_INTERVAL: Duration = Duration::from_secs(1);
/// Most events read from the store at once.
const BATCH: usize = 256;
const BATCH_BYTES: usize = 1 << 20;
/// How long a write waits for its events to be published after lower
/// seqs of other processes; past it, the write answers all the same (it
/// is durable) and its events follow.
const PUBLISH_WAIT: Duration = Duration::from_secs(5);

impl Board {
    /// Starts following the events other processes commit, for a store
    /// they write too; nothing for a store of this process alone. The
    /// task ends with the board.
    pub(super) fn follow_other_processes(&self) {
        let Some(mut commits) = self.inner.store.commits_elsewhere() else { return };
        let gap = self.inner.hub.gap();
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut every_second = tokio::time::interval(FOLLOW_INTERVAL);
            every_second.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let notified = tokio::select! {
                    changed = commits.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        true
                    }
                    _ = gap.notified() => false,
                    _ = every_second.tick() => false,
                };
                let Some(inner) = weak.upgrade() else { return };
                // This process's own commits notify it too: nothing to read
                // when the newest notified seq is published already.
                if notified && *commits.borrow_and_update() <= inner.hub.latest() {
                    continue;
                }
                match tokio::task::spawn_blocking(move || catch_up(&inner)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!(%e, "reading events of other processes failed"),
                    Err(e) => tracing::warn!(%e, "reading events of other processes failed"),
                }
            }
        });
    }

    /// Waits until the events up to `seq` are published here (at most
    /// [`PUBLISH_WAIT`]).
    pub(super) async fn published(&self, seq: u64) {
        if self.inner.hub.latest() >= seq {
            return;
        }
        let mut changes = self.inner.hub.watch();
        let reached = tokio::time::timeout(PUBLISH_WAIT, changes.wait_for(|latest| *latest >= seq)).await;
        if reached.is_err() {
            tracing::warn!(seq, "the events of a write wait for events of other processes");
        }
    }
}

/// Reads the events after the hub's newest from the store and publishes
/// them, clearing the caches they make stale first. Blocking.
fn catch_up(inner: &Inner) -> Result<()> {
    loop {
        let from = inner.hub.latest() + 1;
        let events = {
            let r = inner.store.read()?;
            log::load(&*r, from, u64::MAX, BATCH, BATCH_BYTES)?
        };
        // Own events held back wait for lower seqs, which are stored
        // (they committed first): an empty read means none is missing yet
        // as of this snapshot.
        if events.is_empty() {
            return Ok(());
        }
        let latest = inner.hub.latest();
        let fresh: Vec<_> = events.into_iter().filter(|e| e.seq > latest).collect();
        cache::invalidate(inner, &fresh);
        inner.hub.publish_stored(fresh);
    }
}
