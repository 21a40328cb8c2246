//! The event stream over plain HTTP: long-poll JSON, or Server-Sent
//! Events, for agents that cannot hold a WebSocket.

use super::endpoint::Handle;
use super::endpoint::{Call, Caller, Encoded};
use crate::board::Board;
use crate::error::{Error, Result};
use crate::events::EventBatch;
use crate::wire::api::PollEvents;
use crate::wire::{EventPage, EventsQuery};

async fn batch(board: &Board, caller: &Caller, query: &EventsQuery) -> Result<EventBatch> {
    let (limit, wait) = query.checked()?;
    // Presence is kept as well as it can be: a poll is not refused for it.
    let _ = board.polled(caller.actor()?, wait, query.runner.as_deref()).await;
    let mut follower = board.follow(caller.actor()?, query.since);
    Ok(follower.next_batch(limit, wait).await)
}

impl Handle for PollEvents {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<EventPage> {
        let b = batch(board, caller, &call.query).await?;
        let events = b
            .events
            .iter()
            .map(|e| serde_json::from_str(&e.shared_frame()).map_err(Error::internal))
            .collect::<Result<_>>()?;
        Ok(EventPage { events, next: b.next, resync_required: b.resync_required, ended: b.ended })
    }

    /// Frames are copied into the answer as they are, not parsed again.
    async fn handle_encoded(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Encoded> {
        if let Some(last_event_id) = caller.event_stream {
            call.query.checked()?;
            let since = last_event_id.or(call.query.since);
            return Ok(Encoded::Events(Box::new(board.follow(caller.actor()?, since))));
        }
        let b = batch(board, caller, &call.query).await?;
        let frames: Vec<_> = b.events.iter().map(|e| e.shared_frame()).collect();
        let mut out = String::with_capacity(64 + frames.iter().map(|f| f.len() + 1).sum::<usize>());
        out.push_str("{\"events\":[");
        for (i, f) in frames.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(f);
        }
        out.push_str("],\"next\":");
        out.push_str(&b.next.to_string());
        if b.resync_required {
            out.push_str(",\"resync_required\":true");
        }
        if b.ended {
            out.push_str(",\"ended\":true");
        }
        out.push('}');
        Ok(Encoded::Json(out.into()))
    }
}
