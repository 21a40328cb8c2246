//! Server-Sent Events: a [`Feed`] of the board's events written as
//! `id:`/`event:`/`data:` blocks, with a comment line after 15 s without
//! an event so proxies keep the connection open. The stream ends when the
//! server shuts down or the caller's credentials end.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use taskboard_core::Event;
use taskboard_core::events::Feed;
use tokio_util::sync::CancellationToken;

use crate::response::ResBody;

/// How long a stream stays silent before a comment line.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

fn block(events: &[Arc<Event>], resync: bool, next: u64) -> Bytes {
    let mut out = String::new();
    if resync {
        out.push_str(&format!(
            "id: {next}\nevent: resync_required\ndata: {{\"type\":\"resync_required\"}}\n\n"
        ));
    }
    for e in events {
        out.push_str(&format!("id: {}\nevent: {}\ndata: {}\n\n", e.seq, e.kind, e.shared_frame()));
    }
    if out.is_empty() {
        out.push_str(": keep-alive\n\n");
    }
    Bytes::from(out)
}

/// The answer streaming `follower`'s events until `shutdown`.
/// `open` counts the stream as open, in the metrics and among its
/// member's streams, for as long as its body lives.
pub(crate) fn serve(
    follower: Box<dyn Feed>,
    shutdown: CancellationToken,
    open: (crate::metrics::GaugeGuard, crate::streams::StreamSlot),
) -> Response<ResBody> {
    let stream = futures_util::stream::unfold(Some((follower, open)), move |state| {
        let shutdown = shutdown.clone();
        async move {
            let (mut follower, open) = state?;
            let batch = tokio::select! {
                b = follower.next_batch(100, KEEP_ALIVE) => b,
                _ = shutdown.cancelled() => return None,
            };
            let bytes = block(&batch.events, batch.resync_required, batch.next);
            let next = if batch.ended { None } else { Some((follower, open)) };
            Some((Ok::<_, std::io::Error>(Frame::data(bytes)), next))
        }
    });
    let body = http_body_util::StreamBody::new(stream).boxed_unsync();
    let mut res = Response::new(http_body_util::Either::Right(body));
    *res.status_mut() = StatusCode::OK;
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    res
}
