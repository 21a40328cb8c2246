//! Following the event stream over a WebSocket, resumed after
//! disconnects with `since`, and the wait between attempts to reach a
//! server again.

use std::time::Duration;

use futures_util::StreamExt;
use taskboard_wire::{Endpoint, Error, ErrorKind, Result};
use tokio_tungstenite::tungstenite;

use crate::{Client, error_of, transport};

impl Client {
    /// Follows the event stream from after `since` (from now when `None`).
    /// Connects once before returning, so wrong credentials or an
    /// unreachable server are reported here.
    pub async fn events(&self, since: Option<u64>) -> Result<Events> {
        let socket = self.connect_events(since).await?;
        Ok(Events { client: self.clone(), since, socket: Some(socket) })
    }

    async fn connect_events(&self, since: Option<u64>) -> Result<Socket> {
        use tungstenite::client::IntoClientRequest;
        let ws_base = if let Some(rest) = self.base.strip_prefix("https://") {
            format!("wss://{rest}")
        } else {
            format!("ws://{}", self.base.trim_start_matches("http://"))
        };
        let mut url = format!("{ws_base}{}", taskboard_wire::EventStream::INFO.path);
        if let Some(since) = since {
            url.push_str(&format!("?since={since}"));
        }
        let mut request = url.into_client_request().map_err(transport)?;
        if let Some(token) = &self.token {
            let value = format!("Bearer {token}")
                .parse()
                .map_err(|_| Error::invalid("token", "not a header value"))?;
            request.headers_mut().insert("authorization", value);
        }
        match tokio_tungstenite::connect_async(request).await {
            Ok((socket, _)) => Ok(socket),
            Err(tungstenite::Error::Http(response)) => {
                let body = response.body().as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
                Err(error_of(response.status().as_u16(), &body.unwrap_or_default()))
            }
            Err(e) => Err(transport(e)),
        }
    }
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The event stream of a server (docs/rules.md, events), resumed after disconnects.
///
/// Each item is one frame as JSON (`{"type", "seq", "ts", "data"}` or
/// `{"type": "resync_required"}`); the `hello` frame of each connection is
/// consumed here. After a disconnect (server restart, close code 4008 for
/// a slow reader) it reconnects with `since` set to the last seq seen, so
/// nothing is lost or repeated while the server retains the events.
pub struct Events {
    client: Client,
    since: Option<u64>,
    socket: Option<Socket>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").field("since", &self.since).finish()
    }
}

impl Events {
    /// The seq of the last event delivered (or of the server's latest
    /// event when connected without `since`).
    pub fn last_seq(&self) -> Option<u64> {
        self.since
    }

    /// The next event. Fails only on errors that reconnecting cannot fix:
    /// credentials refused (401, 403) or an unknown address (404).
    pub async fn next(&mut self) -> Result<serde_json::Value> {
        let mut reconnect = Reconnect::default();
        loop {
            let Some(socket) = self.socket.as_mut() else {
                match self.client.connect_events(self.since).await {
                    Ok(socket) => {
                        self.socket = Some(socket);
                        reconnect = Reconnect::default();
                    }
                    Err(e) => reconnect.wait(e).await?,
                }
                continue;
            };
            let frame = match socket.next().await {
                Some(Ok(tungstenite::Message::Text(text))) => text,
                // Pings are answered by tungstenite while reading.
                Some(Ok(tungstenite::Message::Close(_))) | Some(Err(_)) | None => {
                    self.socket = None;
                    continue;
                }
                Some(Ok(_)) => continue,
            };
            let Ok(value) = serde_json::from_str::<serde_json::Value>(frame.as_str()) else { continue };
            let seq = value.get("seq").and_then(|s| s.as_u64());
            if value.get("type").and_then(|t| t.as_str()) == Some("hello") {
                // Without `since` the stream starts now: resume from the
                // server's latest seq if this connection drops.
                if self.since.is_none() {
                    self.since = seq;
                }
                continue;
            }
            if let Some(seq) = seq {
                self.since = Some(seq);
            }
            return Ok(value);
        }
    }
}

/// The wait between attempts to reach a server again (the event stream
/// here, the board for the runner): 100 ms, doubling up to 5 s.
#[derive(Debug)]
pub struct Reconnect {
    delay: Duration,
}

impl Default for Reconnect {
    fn default() -> Reconnect {
        Reconnect { delay: Duration::from_millis(100) }
    }
}

impl Reconnect {
    /// After a failed attempt: the error back when reconnecting cannot
    /// fix it (credentials refused, an unknown address), else a wait.
    pub async fn wait(&mut self, e: Error) -> Result<()> {
        if matches!(e.kind(), ErrorKind::Unauthorized | ErrorKind::Forbidden | ErrorKind::NotFound) {
            return Err(e);
        }
        tokio::time::sleep(self.delay).await;
        self.delay = (self.delay * 2).min(Duration::from_secs(5));
        Ok(())
    }
}
