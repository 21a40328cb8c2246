//! Multipart uploads streamed into the board, and downloads streamed out
//! of it. Neither side ever holds a whole file: upload chunks go straight
//! to the core's blob writer, which enforces the limit while writing
//! (docs/rules.md, messages and files); downloads are read from disk chunk by chunk.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, TryStreamExt};
use http_body_util::{BodyExt, Either, StreamBody};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Response, StatusCode};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use taskboard_core::api::Download;
use taskboard_core::{Error, ErrorKind, Result};
use tokio_util::io::{ReaderStream, StreamReader};

use crate::http::{Reject, ResBody};

/// Largest multipart text field (a description: 100,000 characters of up
/// to 4 bytes).
const MAX_TEXT_FIELD: u64 = 400_000;

/// How much of a refused upload is read and thrown away so the client can
/// read the 413 instead of a reset connection.
const MAX_DRAIN: u64 = 256 * 1024 * 1024;

/// The request body, shared so that what multer has not read can still be
/// drained after a refusal. The lock is only ever taken by one poller at a
/// time, so it never waits.
struct SharedBody {
    body: Arc<Mutex<Incoming>>,
    idle: Duration,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Clone for SharedBody {
    fn clone(&self) -> SharedBody {
        SharedBody { body: self.body.clone(), idle: self.idle, sleep: None }
    }
}

impl SharedBody {
    fn new(body: Incoming, idle: Duration) -> SharedBody {
        SharedBody { body: Arc::new(Mutex::new(body)), idle, sleep: None }
    }

    /// Reads and discards the rest of the body, within bounds.
    async fn drain(mut self) {
        let mut seen = 0u64;
        while let Ok(Some(Ok(chunk))) = tokio::time::timeout(self.idle, self.try_next_chunk()).await {
            seen += chunk.len() as u64;
            if seen > MAX_DRAIN {
                break;
            }
        }
    }

    async fn try_next_chunk(&mut self) -> Option<std::io::Result<Bytes>> {
        futures_util::StreamExt::next(self).await
    }
}

/// Chunks of the body; a client that pauses longer than `idle` between two
/// chunks fails the stream.
impl Stream for SharedBody {
    type Item = std::io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            let polled = {
                let mut body = self.body.lock().unwrap();
                Pin::new(&mut *body).poll_frame(cx)
            };
            match polled {
                Poll::Ready(Some(Ok(frame))) => {
                    self.sleep = None;
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(std::io::Error::other(e)))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => {
                    let idle = self.idle;
                    let sleep = self.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                    return match sleep.as_mut().poll(cx) {
                        Poll::Ready(()) => Poll::Ready(Some(Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "the client stopped sending the upload",
                        )))),
                        Poll::Pending => Poll::Pending,
                    };
                }
            }
        }
    }
}

/// One file of a multipart body, as the core wants it.
pub(crate) struct FilePart {
    pub filename: String,
    pub mime_type: Option<String>,
    pub content: Pin<Box<dyn tokio::io::AsyncRead + Send>>,
}

/// A multipart body: its `file` field is streamed into `store`; the
/// other text fields seen before or after it are returned by name.
pub(crate) async fn multipart<T, F, Fut>(
    headers: &HeaderMap,
    body: Incoming,
    idle: Duration,
    store: F,
) -> Result<(T, Vec<(String, String)>), Reject>
where
    F: FnOnce(FilePart, Vec<(String, String)>) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| Error::invalid("body", "expected multipart/form-data with a boundary"))?;
    let shared = SharedBody::new(body, idle);
    let constraints = multer::Constraints::new().size_limit(
        multer::SizeLimit::new()
            .for_field("description", MAX_TEXT_FIELD)
            .per_field(u64::MAX)
            .whole_stream(u64::MAX),
    );
    let mut parts = multer::Multipart::with_constraints(shared.clone(), boundary, constraints);
    let mut texts = Vec::new();
    let mut stored = None;
    let result: Result<()> = async {
        let mut store = Some(store);
        while let Some(field) = parts.next_field().await.map_err(multipart_error)? {
            let name = field.name().unwrap_or("").to_string();
            if name == "file" {
                let Some(store) = store.take() else {
                    return Err(Error::invalid("file", "only one file may be sent"));
                };
                let part = FilePart {
                    filename: field.file_name().unwrap_or("").to_string(),
                    mime_type: field.content_type().map(|m| m.to_string()),
                    content: Box::pin(StreamReader::new(field.map_err(std::io::Error::other))),
                };
                stored = Some(store(part, texts.clone()).await?);
            } else if name == "description" {
                let text = field.text().await.map_err(multipart_error)?;
                texts.push((name, text));
            }
        }
        Ok(())
    }
    .await;
    drop(parts);
    match (result, stored) {
        (Ok(()), Some(value)) => Ok((value, texts)),
        (Ok(()), None) => Err(Error::invalid("file", "missing file field").into()),
        (Err(e), _) => {
            if e.kind() == ErrorKind::PayloadTooLarge {
                shared.drain().await;
            }
            Err(e.into())
        }
    }
}

fn multipart_error(e: multer::Error) -> Error {
    match e {
        multer::Error::FieldSizeExceeded { field_name, .. } => {
            Error::invalid(field_name.as_deref().unwrap_or("field"), "too long")
        }
        other => Error::invalid("body", format!("malformed multipart body: {other}")),
    }
}

/// Characters kept as they are in an RFC 5987 `filename*` value.
const ATTR_CHAR: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// `inline` or `attachment`, an ASCII fallback name and the exact name as
/// RFC 6266 `filename*`.
pub(crate) fn content_disposition(disposition: &str, filename: &str) -> String {
    let fallback: String = filename
        .chars()
        .map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' })
        .collect();
    format!(
        "{disposition}; filename=\"{fallback}\"; filename*=UTF-8''{}",
        utf8_percent_encode(filename, ATTR_CHAR)
    )
}

/// Streams a download with the headers docs/rules.md lists (messages and files).
pub(crate) fn download(d: Download) -> Response<ResBody> {
    let disposition = content_disposition(d.disposition(), &d.filename);
    let stream = ReaderStream::with_capacity(d.content, 64 * 1024).map_ok(Frame::data);
    let mut res = Response::new(Either::Right(BodyExt::boxed_unsync(StreamBody::new(stream))));
    *res.status_mut() = StatusCode::OK;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&d.mime_type).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(d.size));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    res
}

#[cfg(test)]
mod tests {
    #[test]
    fn dispositions_carry_the_exact_name() {
        assert_eq!(
            super::content_disposition("attachment", "résumé \"v2\".pdf"),
            "attachment; filename=\"r_sum_ _v2_.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22.pdf"
        );
    }
}
