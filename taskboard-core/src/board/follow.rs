//! Following the event stream over plain HTTP (long-poll and Server-Sent
//! Events): the same recipient rule and the same "every event once, in
//! order" guarantee as the WebSocket, built on [`Board::subscribe`].

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::{Actor, Board};
use crate::events::{Event, EventBatch, Feed, StreamError, Subscription, Viewer};

/// A position in the event stream of one member.
pub struct Follower {
    board: Board,
    member: Uuid,
    /// The access token the stream was opened with, if any.
    token: Option<Uuid>,
    /// When that token expires: the stream ends then (docs/decisions.md, 20.d).
    expires_at: Option<tokio::time::Instant>,
    viewer: Viewer,
    stream: Subscription,
    resync: bool,
    ended: bool,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower").field("member", &self.member).field("last", &self.position()).finish()
    }
}

impl Board {
    /// The process serving the board is stopping: every long poll
    /// (`next_batch` with a wait) answers now with what it has, and later
    /// ones do not wait.
    pub fn stop_waiting(&self) {
        self.inner.stopping.send_replace(true);
    }

    /// How long `actor`'s credential still works: None for one without an
    /// expiry; zero once it has expired. A stream opened with it ends then
    /// (docs/decisions.md, 20.d).
    pub fn credential_time_left(&self, actor: &Actor) -> Option<Duration> {
        let at = actor.grant()?.expires_at?;
        let left = at.duration_since(self.inner.options.clock.timestamp());
        Some(Duration::try_from(left).unwrap_or(Duration::ZERO))
    }

    /// Follows the events after `since` (from now when `None`) that
    /// `actor` may see.
    pub fn follow(&self, actor: &Actor, since: Option<u64>) -> Follower {
        let stream = self.subscribe(since);
        Follower {
            board: self.clone(),
            member: actor.id(),
            token: actor.grant().map(|g| g.token_id),
            expires_at: self.credential_time_left(actor).map(|left| tokio::time::Instant::now() + left),
            viewer: self.viewer(actor),
            resync: stream.resync_required,
            stream,
            ended: false,
        }
    }
}

impl Follower {
    /// Subscribes again after the last event looked at, when the stream
    /// fell too far behind; a `since` no longer retained asks for a resync.
    fn resubscribe(&mut self) {
        self.stream = self.board.subscribe(Some(self.position()));
        self.resync |= self.stream.resync_required;
    }

    /// The seq after which the next batch starts.
    pub fn position(&self) -> u64 {
        self.stream.position()
    }

    fn admit(&mut self, event: &Arc<Event>, frames: &mut Vec<Arc<Event>>) {
        self.viewer.observe(event);
        if event.visible_to(&self.viewer) {
            frames.push(event.clone());
        }
        if event.ends_stream_of(self.member, self.token) {
            self.ended = true;
        }
    }

    /// How long until the stream's credential expires: None for one that
    /// does not; zero once it has (the stream has ended).
    fn time_left(&mut self) -> Option<Duration> {
        let left = self.expires_at?.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            self.ended = true;
        }
        Some(left)
    }

    /// Up to `limit` visible events after the position; when there are
    /// none yet, waits up to `wait` for one.
    pub async fn next_batch(&mut self, limit: usize, wait: Duration) -> EventBatch {
        let mut frames = Vec::new();
        let wait = self.time_left().map_or(wait, |left| wait.min(left));
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if self.resync {
                self.resync = false;
                return EventBatch {
                    events: Vec::new(),
                    next: self.position(),
                    resync_required: true,
                    ended: false,
                };
            }
            // What is at hand comes along without waiting.
            while frames.len() < limit && !self.ended {
                match self.stream.try_next() {
                    Ok(Some(e)) => self.admit(&e, &mut frames),
                    Ok(None) => break,
                    Err(StreamError::TooSlow) => self.resubscribe(),
                    Err(StreamError::Closed) => return self.batch(frames),
                }
            }
            if !frames.is_empty() || self.ended {
                break;
            }
            let mut stopping = self.board.inner.stopping.subscribe();
            let next = tokio::select! {
                next = tokio::time::timeout_at(deadline, self.stream.next()) => next,
                _ = stopping.wait_for(|s| *s) => break,
            };
            match next {
                Err(_) => {
                    self.time_left();
                    break;
                }
                Ok(Ok(e)) => self.admit(&e, &mut frames),
                Ok(Err(StreamError::TooSlow)) => self.resubscribe(),
                Ok(Err(StreamError::Closed)) => break,
            }
        }
        self.batch(frames)
    }

    fn batch(&self, events: Vec<Arc<Event>>) -> EventBatch {
        EventBatch { events, next: self.position(), resync_required: false, ended: self.ended }
    }
}

impl Feed for Follower {
    fn next_batch(
        &mut self,
        limit: usize,
        wait: Duration,
    ) -> Pin<Box<dyn Future<Output = EventBatch> + Send + '_>> {
        Box::pin(Follower::next_batch(self, limit, wait))
    }

    fn position(&self) -> u64 {
        Follower::position(self)
    }
}
