//! `GET /api/v1/ws`: the event stream over WebSocket (docs/rules.md, events).
//!
//! One task per connection. It subscribes to the board's hub before the
//! `101` is sent, so nothing published after authentication is missed,
//! sends `hello`, then `resync_required` or the replay after `since`, then
//! live events, each filtered by [`Event::visible_to`] — the core's
//! recipient rule, never a copy of it.
//!
//! Memory per connection is bounded: a subscription is a cursor into the
//! hub's shared memory window (events it fell behind are read from the
//! store in batches), the frames queued for one write are at most `BATCH`
//! and `BATCH_BYTES`, tungstenite's write buffer holds at most
//! `WRITE_BUFFER` plus one frame because the sink is only fed when ready,
//! and a write that makes no progress for `SEND_TIMEOUT` ends the
//! connection. A subscription that falls `event_buffer` events behind
//! ends with `TooSlow`: the client is closed with 4008 and resumes with
//! `since` (docs/rules.md, events). The publisher never waits for a connection.

use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Version};
use hyper_util::rt::TokioIo;
use taskboard_core::events::StreamError;
use taskboard_core::{Actor, Board, Error, ErrorKind, Event, Subscription, Viewer};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tokio_util::task::TaskTracker;

/// Close code for a client too slow to keep up (docs/rules.md, events).
pub const CLOSE_TOO_SLOW: u16 = 4008;
/// Close code when the member's credentials were revoked or the member
/// deleted (docs/decisions.md 7.d): 4000 + the HTTP status a request
/// with those credentials now gets, as 4008 mirrors 408.
pub const CLOSE_REVOKED: u16 = 4001;

/// Default time between two pings (docs/rules.md, events).
const PING_INTERVAL: Duration = Duration::from_secs(30);
/// Environment variable overriding [`PING_INTERVAL`], in milliseconds, so
/// tests and benchmarks need not wait 30 s.
pub const PING_INTERVAL_ENV: &str = "TASKBOARD_WS_PING_INTERVAL_MS";
/// Longest a batch of frames may take to reach the socket. A client that
/// accepts nothing for this long is as slow as one that overran the ring.
const SEND_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest the closing handshake may take before the socket is dropped;
/// bounds graceful shutdown.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a client closed as too slow has to read what was sent before
/// its close frame and answer it; then the connection is dropped.
const SLOW_CLOSE_TIMEOUT: Duration = Duration::from_secs(30);
/// Frames written before one flush: a burst goes out in few syscalls.
const BATCH: usize = 256;
/// Bytes of frames queued before a flush, so a burst of large events
/// does not pin many of them per connection.
const BATCH_BYTES: usize = 1024 * 1024;
/// Least time between two writes of events to one connection. An event
/// after a quiet moment goes out at once; under a steady stream the
/// frames of up to a millisecond share one write. A syscall per frame per
/// connection is what saturates the CPU at 100 clients x 10,000 events/s.
const LINGER: Duration = Duration::from_millis(1);
/// Frames accumulate up to this size before a write to the socket.
const WRITE_BUFFER: usize = 16 * 1024;
/// Clients have nothing to say besides control frames (at most 131
/// bytes each); a small read buffer keeps many connections cheap. It is
/// also what tungstenite zeroes each time the connection is polled, and a
/// session is polled once per event it is woken for.
const READ_BUFFER: usize = 512;
const MAX_INCOMING_MESSAGE: usize = 64 * 1024;

static PING_EVERY: LazyLock<Duration> = LazyLock::new(|| {
    std::env::var(PING_INTERVAL_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(PING_INTERVAL, Duration::from_millis)
});

/// What the WebSocket endpoint shares with the server.
pub struct WsContext {
    pub board: Board,
    /// Cancelled on shutdown: every session closes with 1001.
    pub shutdown: CancellationToken,
    /// Every session runs on it, so shutdown can wait for them.
    pub tracker: TaskTracker,
    /// Counts the open sessions.
    pub(crate) metrics: std::sync::Arc<crate::metrics::Metrics>,
    /// Bounds the open streams of each member.
    pub(crate) streams: std::sync::Arc<crate::streams::StreamSlots>,
}

/// Validates the upgrade request (GET, `Upgrade: websocket`,
/// `Sec-WebSocket-Key`, version 13), spawns the session on `ctx.tracker`
/// and returns the `101` response. The caller has authenticated `actor`.
pub fn upgrade(
    ctx: &WsContext,
    actor: Actor,
    since: Option<u64>,
    req: &mut Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Error> {
    let accept = accept_key(req.method(), req.version(), req.headers())?;
    let slot = ctx.streams.take(actor.id())?;
    // Subscribing now, before the 101, and not in the spawned task: every
    // event committed after the caller was authenticated reaches it.
    let subscription = ctx.board.subscribe(since);
    let on_upgrade = hyper::upgrade::on(req);
    let open = ctx.metrics.websockets.hold();
    let session = Session {
        board: ctx.board.clone(),
        viewer: ctx.board.viewer(&actor),
        actor,
        shutdown: Box::pin(ctx.shutdown.clone().cancelled_owned()),
        last_seq: since.unwrap_or(0),
        batch: Vec::with_capacity(BATCH),
        batch_bytes: 0,
        flushed_at: tokio::time::Instant::now(),
    };
    ctx.tracker.spawn(async move {
        session.run(on_upgrade, subscription).await;
        drop((open, slot));
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::UPGRADE, "websocket")
        .header(header::CONNECTION, "Upgrade")
        .header(header::SEC_WEBSOCKET_ACCEPT, accept)
        .body(Full::default())
        .map_err(Error::internal)
}

/// The `Sec-WebSocket-Accept` value for a valid opening handshake
/// (RFC 6455, 4.2.1).
fn accept_key(method: &Method, version: Version, headers: &HeaderMap) -> Result<String, Error> {
    if method != Method::GET {
        return Err(Error::new(ErrorKind::MethodNotAllowed, "the WebSocket endpoint accepts only GET"));
    }
    if version < Version::HTTP_11 {
        return Err(Error::bad_request("a WebSocket upgrade needs HTTP/1.1"));
    }
    let has_token = |name: header::HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    };
    if !has_token(header::UPGRADE, "websocket") || !has_token(header::CONNECTION, "upgrade") {
        return Err(Error::bad_request(
            "this endpoint speaks WebSocket: send Connection: Upgrade and Upgrade: websocket",
        ));
    }
    if headers.get(header::SEC_WEBSOCKET_VERSION).map(HeaderValue::as_bytes) != Some(b"13") {
        return Err(Error::bad_request("Sec-WebSocket-Version must be 13"));
    }
    match headers.get(header::SEC_WEBSOCKET_KEY) {
        // A base64-encoded 16-byte nonce is 24 characters long.
        Some(key) if key.len() == 24 => Ok(derive_accept_key(key.as_bytes())),
        _ => Err(Error::bad_request("Sec-WebSocket-Key is missing or malformed")),
    }
}

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Why a session ends; decides the close frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The client sent a close frame; it is answered.
    ClientClosed,
    /// The connection broke.
    Gone,
    /// No pong (nor anything else) since the last ping.
    Unresponsive,
    Shutdown,
    TooSlow,
    Revoked,
    /// The access token the stream was opened with expired.
    Expired,
}

struct Session {
    board: Board,
    actor: Actor,
    viewer: Viewer,
    /// Registered once: a fresh `cancelled()` per loop turn would take the
    /// token's lock, shared by every connection, twice per event.
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    /// Highest seq handed to this session, delivered or filtered out.
    last_seq: u64,
    /// Frames waiting for the next flush, and their bytes.
    batch: Vec<Message>,
    batch_bytes: usize,
    /// When frames were last written.
    flushed_at: tokio::time::Instant,
}

impl Session {
    async fn run(mut self, on_upgrade: hyper::upgrade::OnUpgrade, subscription: Subscription) {
        let upgraded = tokio::select! {
            upgraded = on_upgrade => match upgraded {
                Ok(upgraded) => upgraded,
                Err(e) => {
                    tracing::debug!(%e, "websocket upgrade failed");
                    return;
                }
            },
            _ = &mut self.shutdown => return,
        };
        let config = WebSocketConfig::default()
            .read_buffer_size(READ_BUFFER)
            .write_buffer_size(WRITE_BUFFER)
            .max_message_size(Some(MAX_INCOMING_MESSAGE))
            .max_frame_size(Some(MAX_INCOMING_MESSAGE));
        let mut ws =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
        let member = self.actor.id();
        tracing::debug!(%member, "websocket opened");
        if let Err(e) = self.board.connected(&self.actor).await {
            tracing::warn!(%e, %member, "recording the connection failed");
        }
        let end = self.serve(&mut ws, subscription).await;
        tracing::debug!(%member, ?end, "websocket closing");
        close(&mut ws, end).await;
        if let Err(e) = self.board.disconnected(&self.actor).await {
            tracing::warn!(%e, %member, "recording the disconnection failed");
        }
    }

    async fn serve(&mut self, ws: &mut Socket, mut subscription: Subscription) -> End {
        let (resync_required, latest) = (subscription.resync_required, subscription.latest);
        // A `since` beyond the newest event (7.c) must not hide the live
        // events up to it.
        self.last_seq = self.last_seq.min(latest);
        // A member deleted between authentication and subscription would
        // otherwise keep its stream: its event was published before we
        // subscribed.
        if self.board.actor(self.actor.id()).await.is_err() {
            return End::Revoked;
        }
        let hello =
            serde_json::json!({"type": "hello", "seq": latest, "data": {"member_id": self.actor.id()}});
        self.batch.push(Message::text(hello.to_string()));
        if resync_required {
            self.batch.push(Message::text(r#"{"type":"resync_required"}"#));
        }
        // Replayed events never end the session: the credentials were
        // checked after them (docs/decisions.md 7.e).
        while subscription.replaying() {
            let replayed = tokio::select! {
                biased;
                _ = &mut self.shutdown => return End::Shutdown,
                replayed = subscription.next() => replayed,
            };
            match replayed {
                Ok(event) => self.admit(&event),
                Err(e) => {
                    // Frames before the end are contiguous: deliver them.
                    return self.flush(ws).await.err().unwrap_or(stream_end(e));
                }
            }
            if self.batch_full()
                && let Err(end) = self.flush(ws).await
            {
                return end;
            }
        }
        if let Err(end) = self.flush(ws).await {
            return end;
        }

        // A stream opened with an expiring token ends when it expires.
        let expiry = match self.board.credential_time_left(&self.actor) {
            Some(left) => tokio::time::sleep(left),
            None => tokio::time::sleep(Duration::MAX / 4),
        };
        tokio::pin!(expiry);
        let period = *PING_EVERY;
        let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Anything received since the last ping proves the peer alive.
        let mut alive = true;
        loop {
            // Biased, with the client's frames and the ping before live
            // events: a steady stream of events must not starve pongs.
            tokio::select! {
                biased;
                _ = &mut self.shutdown => return End::Shutdown,
                _ = &mut expiry => return End::Expired,
                incoming = ws.next() => match incoming {
                    None | Some(Err(_)) => return End::Gone,
                    Some(Ok(Message::Close(_))) => return End::ClientClosed,
                    Some(Ok(Message::Ping(_))) => {
                        alive = true;
                        // tungstenite queued the pong; send it now rather
                        // than with the next event.
                        if let Err(end) = self.flush(ws).await {
                            return end;
                        }
                    }
                    Some(Ok(_)) => alive = true,
                },
                _ = ping.tick() => {
                    if !alive {
                        return End::Unresponsive;
                    }
                    alive = false;
                    self.batch.push(Message::Ping(Bytes::new()));
                    if let Err(end) = self.flush(ws).await {
                        return end;
                    }
                }
                received = subscription.next() => {
                    let mut end = match received {
                        Ok(event) => self.admit_live(&event),
                        Err(e) => Some(stream_end(e)),
                    };
                    // Under a steady stream, linger, then take what was
                    // queued meanwhile, so one write carries many frames.
                    // After a quiet moment the event goes out at once: a
                    // fan-out to many connections is one wake and one
                    // write each (docs/storage.md S.39).
                    if end.is_none() {
                        let due = self.flushed_at + LINGER;
                        if tokio::time::Instant::now() < due {
                            tokio::time::sleep_until(due).await;
                        }
                    }
                    while end.is_none() && !self.batch_full() {
                        end = match subscription.try_next() {
                            Ok(Some(event)) => self.admit_live(&event),
                            Ok(None) => break,
                            Err(e) => Some(stream_end(e)),
                        };
                    }
                    // Frames before a lag are contiguous: deliver them, so
                    // the client resumes from the last one it got.
                    if let Err(e) = self.flush(ws).await {
                        return e;
                    }
                    if let Some(end) = end {
                        return end;
                    }
                }
            }
        }
    }

    /// Queues `event` when this viewer may see it, keeping the viewer's
    /// settings current.
    fn admit(&mut self, event: &Event) {
        // The hub hands out each event once; this guards the invariant
        // "once, in order" against any future change there.
        if event.seq <= self.last_seq {
            return;
        }
        self.last_seq = event.seq;
        self.viewer.observe(event);
        if event.visible_to(&self.viewer) {
            let frame = frame_text(event);
            self.batch_bytes += frame.len();
            self.batch.push(Message::Text(frame));
        }
    }

    fn batch_full(&self) -> bool {
        self.batch.len() >= BATCH || self.batch_bytes >= BATCH_BYTES
    }

    /// [`Session::admit`], then whether the event ends this session.
    fn admit_live(&mut self, event: &Event) -> Option<End> {
        self.admit(event);
        let token = self.actor.grant().map(|g| g.token_id);
        event.ends_stream_of(self.actor.id(), token).then_some(End::Revoked)
    }

    /// Writes the queued frames and flushes them, within `SEND_TIMEOUT`.
    async fn flush(&mut self, ws: &mut Socket) -> Result<(), End> {
        let (batch, shutdown) = (&mut self.batch, &mut self.shutdown);
        let write = async {
            for message in batch.drain(..) {
                ws.feed(message).await?;
            }
            ws.flush().await
        };
        // The write first: one the socket takes at once never looks at
        // the shutdown token (a lock shared by every session).
        tokio::select! {
            biased;
            written = tokio::time::timeout(SEND_TIMEOUT, write) => match written {
                Ok(Ok(())) => Ok(()),
                Ok(Err(_)) => Err(End::Gone),
                Err(_) => Err(End::TooSlow),
            },
            _ = shutdown => Err(End::Shutdown),
        }
        .inspect_err(|_| self.batch.clear())?;
        self.batch_bytes = 0;
        self.flushed_at = tokio::time::Instant::now();
        Ok(())
    }
}

/// How a session ends when its subscription does.
fn stream_end(e: StreamError) -> End {
    match e {
        StreamError::TooSlow => End::TooSlow,
        StreamError::Closed => End::Shutdown,
    }
}

/// An event's shared frame as a text message, without copying it.
fn frame_text(event: &Event) -> Utf8Bytes {
    struct Shared(Arc<str>);
    impl AsRef<[u8]> for Shared {
        fn as_ref(&self) -> &[u8] {
            self.0.as_bytes()
        }
    }
    let frame = event.shared_frame();
    Utf8Bytes::try_from(Bytes::from_owner(Shared(frame.clone()))).unwrap_or_else(|_| Utf8Bytes::from(&*frame))
}

/// Ends the session the way `end` asks, within `CLOSE_TIMEOUT`.
async fn close(ws: &mut Socket, end: End) {
    let (code, reason) = match end {
        End::Gone => return,
        // A peer that answers no ping will not answer a close either.
        End::Unresponsive => return,
        End::ClientClosed => {
            // tungstenite queued the reply to the client's close frame.
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, ws.flush()).await;
            return;
        }
        End::Shutdown => (CloseCode::Away, "server shutting down"),
        End::TooSlow => (CloseCode::from(CLOSE_TOO_SLOW), "too slow to keep up; reconnect with since"),
        End::Revoked => (CloseCode::from(CLOSE_REVOKED), "credentials revoked"),
        End::Expired => (CloseCode::from(CLOSE_REVOKED), "credentials expired"),
    };
    let handshake = async {
        ws.send(Message::Close(Some(CloseFrame { code, reason: reason.into() }))).await?;
        // Wait for the client's answering close frame.
        while ws.next().await.is_some_and(|m| m.is_ok()) {}
        Ok::<_, tokio_tungstenite::tungstenite::Error>(())
    };
    // A client too slow to keep up gets its close frame only behind the
    // frames already in the socket's buffers: it has longer to read them.
    let within = if matches!(end, End::TooSlow) { SLOW_CLOSE_TIMEOUT } else { CLOSE_TIMEOUT };
    let _ = tokio::time::timeout(within, handshake).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upgrade_headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive, Upgrade"));
        h.insert(header::SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        h.insert(header::SEC_WEBSOCKET_KEY, HeaderValue::from_static("dGhlIHNhbXBsZSBub25jZQ=="));
        h
    }

    #[test]
    fn the_accept_key_is_the_one_of_rfc_6455() {
        let key = accept_key(&Method::GET, Version::HTTP_11, &upgrade_headers()).unwrap();
        assert_eq!(key, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn requests_that_are_no_websocket_handshake_are_refused() {
        assert_eq!(
            accept_key(&Method::POST, Version::HTTP_11, &upgrade_headers()).unwrap_err().kind(),
            ErrorKind::MethodNotAllowed
        );
        assert!(accept_key(&Method::GET, Version::HTTP_10, &upgrade_headers()).is_err());
        for (name, value) in [
            (header::UPGRADE, "h2c"),
            (header::CONNECTION, "keep-alive"),
            (header::SEC_WEBSOCKET_VERSION, "8"),
            (header::SEC_WEBSOCKET_KEY, "short"),
        ] {
            let mut h = upgrade_headers();
            h.insert(name.clone(), HeaderValue::from_static(value));
            let e = accept_key(&Method::GET, Version::HTTP_11, &h).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BadRequest, "{name}: {value}");
        }
    }
}
