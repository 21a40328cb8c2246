//! The words every answer is made of: the body type, why a request got
//! no answer, and the answers the request cycle, dispatch, the streams
//! and the pages share. A leaf: it imports none of the server's modules,
//! so each of them can stand on it.

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{Either, Full};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use taskboard_core::Error;
use taskboard_core::error::ErrorBody;

/// A response body: a buffer, or a stream (downloads).
pub(crate) type ResBody = Either<Full<Bytes>, UnsyncBoxBody<Bytes, std::io::Error>>;

/// Why a request got no answer from the board.
#[derive(Debug)]
pub(crate) enum Reject {
    /// An error to render.
    Api(Error),
    /// Drop the connection without an answer (a client too slow or gone).
    Abort(&'static str),
}

impl From<Error> for Reject {
    fn from(e: Error) -> Reject {
        Reject::Api(e)
    }
}

pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");

pub(crate) fn full(
    status: StatusCode,
    content_type: HeaderValue,
    body: impl Into<Bytes>,
) -> Response<ResBody> {
    let mut res = Response::new(Either::Left(Full::new(body.into())));
    *res.status_mut() = status;
    res.headers_mut().insert(header::CONTENT_TYPE, content_type);
    res
}

/// An answer with no body, and so no content type.
pub(crate) fn empty(status: StatusCode) -> Response<ResBody> {
    let mut res = Response::new(Either::Left(Full::new(Bytes::new())));
    *res.status_mut() = status;
    res
}

/// A body sent chunk by chunk as the core produces it: the channel's
/// bound is the backpressure, so what waits for a slow client is at most
/// the chunks the channel holds and the one hyper is writing. A failure
/// mid-stream ends the body with an error, which closes the connection
/// (the client sees a truncated answer, never a wrong one).
pub(crate) fn streamed(
    status: StatusCode,
    content_type: HeaderValue,
    chunks: taskboard_core::api::JsonStream,
) -> Response<ResBody> {
    use http_body_util::{BodyExt, StreamBody};
    use hyper::body::Frame;
    let stream = futures_util::stream::unfold(chunks, |mut rx| async move {
        let item = rx.next().await?;
        let frame = item.map(Frame::data).map_err(|e| std::io::Error::other(e.to_string()));
        Some((frame, rx))
    });
    let mut res = Response::new(Either::Right(BodyExt::boxed_unsync(StreamBody::new(stream))));
    *res.status_mut() = status;
    res.headers_mut().insert(header::CONTENT_TYPE, content_type);
    res
}

/// The error body (`detail` and `code`) with the status of its kind, and
/// `Retry-After` when the error says how long to wait.
pub(crate) fn error(e: &Error) -> Response<ResBody> {
    let status = StatusCode::from_u16(e.kind().status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::to_vec(&ErrorBody::from(e)).unwrap_or_default();
    let mut res = full(status, JSON, body);
    if let Some(secs) = e.retry_after() {
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    res
}
