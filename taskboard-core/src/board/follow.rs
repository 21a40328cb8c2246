//! Following the event stream over plain HTTP (long-poll and Server-Sent
//! Events): the same recipient rule and the same "every event once, in
//! order" guarantee as the WebSocket, built on [`Board::subscribe`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use uuid::Uuid;

use super::{Actor, Board};
use crate::events::{Event, Subscription, Viewer};

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

/// A position in the event stream of one member.
pub struct Follower {
    board: Board,
    member: Uuid,
    viewer: Viewer,
    /// The last seq looked at.
    last: u64,
    pending: VecDeque<Arc<Event>>,
    live: Option<tokio::sync::broadcast::Receiver<Arc<Event>>>,
    resync: bool,
    ended: bool,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower").field("member", &self.member).field("last", &self.last).finish()
    }
}

impl Board {
    /// Follows the events after `since` (from now when `None`) that
    /// `actor` may see.
    pub fn follow(&self, actor: &Actor, since: Option<u64>) -> Follower {
        let mut f = Follower {
            board: self.clone(),
            member: actor.id(),
            viewer: self.viewer(actor),
            last: 0,
            pending: VecDeque::new(),
            live: None,
            resync: false,
            ended: false,
        };
        f.resubscribe(since);
        f
    }
}

impl Follower {
    fn resubscribe(&mut self, since: Option<u64>) {
        let Subscription { resync_required, latest, replay, live } = self.board.subscribe(since);
        if resync_required || since.is_none() {
            self.resync |= resync_required;
            self.last = latest;
            self.pending.clear();
        } else {
            self.last = since.unwrap_or(latest);
            self.pending = replay.into();
        }
        self.live = Some(live);
    }

    /// The seq after which the next batch starts.
    pub fn position(&self) -> u64 {
        self.last
    }

    fn admit(&mut self, event: &Arc<Event>, frames: &mut Vec<Arc<Event>>) {
        if event.seq <= self.last {
            return;
        }
        self.last = event.seq;
        self.viewer.observe(event);
        if event.visible_to(&self.viewer) {
            frames.push(event.clone());
        }
        if event.ends_session_of(self.member) {
            self.ended = true;
        }
    }

    /// Up to `limit` visible events after the position; when there are
    /// none yet, waits up to `wait` for one.
    pub async fn next_batch(&mut self, limit: usize, wait: Duration) -> EventBatch {
        let mut frames = Vec::new();
        let deadline = tokio::time::Instant::now() + wait;
        'batch: loop {
            if self.resync {
                self.resync = false;
                return EventBatch {
                    events: Vec::new(),
                    next: self.last,
                    resync_required: true,
                    ended: false,
                };
            }
            while frames.len() < limit && !self.ended {
                let Some(e) = self.pending.pop_front() else { break };
                self.admit(&e, &mut frames);
            }
            if frames.len() >= limit || self.ended {
                break;
            }
            // What has already arrived comes along without waiting.
            loop {
                let Some(live) = self.live.as_mut() else { break 'batch };
                match live.try_recv() {
                    Ok(e) => {
                        self.admit(&e, &mut frames);
                        if frames.len() >= limit || self.ended {
                            break 'batch;
                        }
                    }
                    Err(TryRecvError::Lagged(_)) => {
                        // Fell behind the live ring: resume from the
                        // retained window, which still holds what was
                        // skipped (or says it does not).
                        self.resubscribe(Some(self.last));
                        continue 'batch;
                    }
                    Err(TryRecvError::Closed) => {
                        self.live = None;
                        break 'batch;
                    }
                    Err(TryRecvError::Empty) => break,
                }
            }
            if !frames.is_empty() {
                break;
            }
            let Some(live) = self.live.as_mut() else { break };
            match tokio::time::timeout_at(deadline, live.recv()).await {
                Err(_) => break,
                Ok(Ok(e)) => self.admit(&e, &mut frames),
                Ok(Err(RecvError::Lagged(_))) => self.resubscribe(Some(self.last)),
                Ok(Err(RecvError::Closed)) => {
                    self.live = None;
                    break;
                }
            }
        }
        EventBatch { events: frames, next: self.last, resync_required: false, ended: self.ended }
    }
}
