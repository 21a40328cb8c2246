//! A follower of the event stream as the layers above the board see it:
//! something that hands out the next events one member may see.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::event::Event;

/// Events a follower got in one go.
#[derive(Debug, Default)]
pub struct EventBatch {
    /// The events the caller may see, in seq order.
    pub events: Vec<Arc<Event>>,
    /// The seq to resume after: the last event looked at, seen or not.
    pub next: u64,
    /// `since` was outside the retained window: the caller must reload
    /// its state; `next` is then the newest seq.
    pub resync_required: bool,
    /// The caller's credentials ended (token revoked, member deleted).
    pub ended: bool,
}

/// The events after a position that one member may see, batch by batch
/// (the board's `Follower`); what an event-stream answer carries.
pub trait Feed: Send {
    /// Up to `limit` visible events after the position; when there are
    /// none yet, waits up to `wait` for one.
    fn next_batch(
        &mut self,
        limit: usize,
        wait: Duration,
    ) -> Pin<Box<dyn Future<Output = EventBatch> + Send + '_>>;

    /// The seq after which the next batch starts.
    fn position(&self) -> u64;
}
