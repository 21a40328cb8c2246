//! Following the event stream over Server-Sent Events, for places where a
//! WebSocket is not wanted: reconnects with `Last-Event-ID` after the
//! last event delivered, so every event comes once, in order.

use std::collections::VecDeque;

use taskboard_wire::{Error, ErrorKind, Result};

use crate::{Client, Reconnect};

/// A Server-Sent Events follower of one server.
pub struct SseEvents {
    client: Client,
    last: Option<u64>,
    response: Option<reqwest::Response>,
    buffer: String,
    ready: VecDeque<serde_json::Value>,
}

impl Client {
    /// Follows the events after `since` (from now when `None`) over
    /// Server-Sent Events.
    pub async fn sse_events(&self, since: Option<u64>) -> Result<SseEvents> {
        let mut events = SseEvents {
            client: self.clone(),
            last: since,
            response: None,
            buffer: String::new(),
            ready: VecDeque::new(),
        };
        events.connect().await?;
        Ok(events)
    }
}

impl SseEvents {
    async fn connect(&mut self) -> Result<()> {
        let mut req = self
            .client
            .http()
            .get(format!("{}/api/v1/events", self.client.base_url()))
            .header("accept", "text/event-stream");
        if let Some(token) = self.client.token() {
            req = req.bearer_auth(token);
        }
        if let Some(last) = self.last {
            req = req.header("last-event-id", last.to_string());
        }
        let res = req
            .send()
            .await
            .map_err(|e| Error::new(ErrorKind::Internal, format!("cannot talk to the server: {e}")))?;
        let status = res.status().as_u16();
        if status != 200 {
            let body = res.text().await.unwrap_or_default();
            return Err(crate::error_of(status, &body));
        }
        self.response = Some(res);
        self.buffer.clear();
        Ok(())
    }

    /// The seq of the last event delivered.
    pub fn last_seq(&self) -> Option<u64> {
        self.last
    }

    fn parse_blocks(&mut self) {
        while let Some(end) = self.buffer.find("\n\n") {
            let block: String = self.buffer.drain(..end + 2).collect();
            let (mut id, mut data) = (None, None);
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.trim().parse::<u64>().ok();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = serde_json::from_str::<serde_json::Value>(v).ok();
                }
            }
            if let Some(data) = data {
                if id.is_some() {
                    self.last = id;
                }
                self.ready.push_back(data);
            }
        }
    }

    /// The next event frame; reconnects after network failures. Fails
    /// only on errors that reconnecting cannot fix (401, 403, 404).
    pub async fn next(&mut self) -> Result<serde_json::Value> {
        let mut reconnect = Reconnect::default();
        loop {
            if let Some(frame) = self.ready.pop_front() {
                return Ok(frame);
            }
            let chunk = match self.response.as_mut() {
                Some(res) => res.chunk().await,
                None => {
                    match self.connect().await {
                        Err(e) => reconnect.wait(e).await?,
                        Ok(()) => reconnect = Reconnect::default(),
                    }
                    continue;
                }
            };
            match chunk {
                Ok(Some(bytes)) => {
                    self.buffer.push_str(&String::from_utf8_lossy(&bytes));
                    self.parse_blocks();
                }
                // The stream ended (server restart) or broke: resume.
                Ok(None) | Err(_) => self.response = None,
            }
        }
    }
}
