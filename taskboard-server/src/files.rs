//! Multipart uploads streamed into the board, and downloads streamed out
//! of it. Neither side ever holds a whole file: upload chunks go straight
//! to the core's blob writer, which enforces the limit while writing
//! (413 past the limit, nothing kept); downloads are read from disk chunk by chunk.

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
use taskboard_core::api::{Download, LateFields};
use taskboard_core::{Error, ErrorKind, Result};
use tokio_util::io::{ReaderStream, StreamReader};

use crate::response::{Reject, ResBody};

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
    /// The text fields after the file, filled in when `content` ends.
    pub late: LateFields,
}

/// The text fields a multipart body may carry besides `file`.
const TEXT_FIELDS: [&str; 1] = ["description"];

/// What reading the parts after the file found.
#[derive(Default)]
struct Rest {
    /// The first defect of the body, which wins over whatever the core
    /// made of the content stream failing.
    refused: Option<Reject>,
    texts: Vec<(String, String)>,
    /// The body was read to its end without a defect.
    finished: bool,
}

/// A multipart body: its `file` part is streamed into `store`; the text
/// fields seen before or after it are returned by name.
///
/// The body is checked whole before the file's content ends: the stream
/// handed to `store` reads the parts after the file before it reports its
/// end, and fails instead when the body is malformed (truncated, a second
/// `file` or `description` part), so the core never keeps a file from a
/// refused request. Every defect of the body is a 422 naming it; a media
/// type other than multipart/form-data is a 415.
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
    let boundary = crate::parse::multipart_boundary(headers)?;
    let shared = SharedBody::new(body, idle);
    let constraints = multer::Constraints::new().size_limit(
        multer::SizeLimit::new()
            .for_field("description", MAX_TEXT_FIELD)
            .per_field(u64::MAX)
            .whole_stream(u64::MAX),
    );
    let mut parts = multer::Multipart::with_constraints(shared.clone(), boundary, constraints);
    let mut texts = Vec::new();
    let file = loop {
        let field = match parts.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => return Err(Error::invalid("file", "the multipart body has no file part").into()),
            Err(e) => return Err(multipart_error(e)),
        };
        match field.name() {
            Some("file") => break field,
            Some(name) if TEXT_FIELDS.contains(&name) => read_text(field, &mut texts).await?,
            _ => {}
        }
    };
    let rest = Arc::new(Mutex::new(Rest::default()));
    let late = LateFields::default();
    let part = FilePart {
        filename: file.file_name().unwrap_or("").to_string(),
        mime_type: file.content_type().map(|m| m.to_string()),
        content: Box::pin(StreamReader::new(file_content(
            file,
            parts,
            texts.clone(),
            rest.clone(),
            late.clone(),
        ))),
        late,
    };
    let stored = store(part, texts.clone()).await;
    let rest = std::mem::take(&mut *rest.lock().unwrap_or_else(|e| e.into_inner()));
    if let Some(refused) = rest.refused {
        return Err(refused);
    }
    match stored {
        // The core reads the content to its end before it keeps a file,
        // so the rest of the body has been checked.
        Ok(value) if rest.finished => {
            texts.extend(rest.texts);
            Ok((value, texts))
        }
        Ok(_) => Err(Error::internal("the upload was kept before its body was read whole").into()),
        Err(e) => {
            if e.kind() == ErrorKind::PayloadTooLarge {
                shared.drain().await;
            }
            Err(e.into())
        }
    }
}

/// Reads a text part, refusing a second one of the same name.
async fn read_text(field: multer::Field<'static>, texts: &mut Vec<(String, String)>) -> Result<(), Reject> {
    let name = field.name().unwrap_or("").to_string();
    if texts.iter().any(|(n, _)| *n == name) {
        return Err(Error::invalid(&name, "the part is given more than once").into());
    }
    let text = field.text().await.map_err(multipart_error)?;
    texts.push((name, text));
    Ok(())
}

/// The content of the file part, then the rest of the body read and
/// checked; a defect fails the stream and is recorded in `rest`.
fn file_content(
    file: multer::Field<'static>,
    parts: multer::Multipart<'static>,
    texts_before: Vec<(String, String)>,
    rest: Arc<Mutex<Rest>>,
    late: LateFields,
) -> impl Stream<Item = std::io::Result<Bytes>> + Send {
    struct Reading {
        file: Option<multer::Field<'static>>,
        parts: multer::Multipart<'static>,
        texts: Vec<(String, String)>,
        rest: Arc<Mutex<Rest>>,
        late: LateFields,
        done: bool,
    }
    fn fail(reading: &mut Reading, refused: Reject) -> std::io::Error {
        reading.done = true;
        let detail = match &refused {
            Reject::Api(e) => e.detail().to_string(),
            Reject::Abort(why) => why.to_string(),
        };
        reading.rest.lock().unwrap_or_else(|e| e.into_inner()).refused = Some(refused);
        std::io::Error::other(detail)
    }
    let start = Reading { file: Some(file), parts, texts: texts_before, rest, late, done: false };
    futures_util::stream::unfold(start, |mut reading| async move {
        if reading.done {
            return None;
        }
        if let Some(file) = reading.file.as_mut() {
            match file.chunk().await {
                Ok(Some(chunk)) => return Some((Ok(chunk), reading)),
                Ok(None) => reading.file = None,
                Err(e) => {
                    let e = fail(&mut reading, multipart_error(e));
                    return Some((Err(e), reading));
                }
            }
        }
        let before = reading.texts.len();
        let checked: Result<(), Reject> = async {
            while let Some(field) = reading.parts.next_field().await.map_err(multipart_error)? {
                match field.name() {
                    Some("file") => return Err(Error::invalid("file", "only one file may be sent").into()),
                    Some(name) if TEXT_FIELDS.contains(&name) => read_text(field, &mut reading.texts).await?,
                    _ => {}
                }
            }
            Ok(())
        }
        .await;
        match checked {
            Ok(()) => {
                let after = reading.texts.split_off(before);
                reading.late.set(after.clone());
                let mut rest = reading.rest.lock().unwrap_or_else(|e| e.into_inner());
                rest.texts = after;
                rest.finished = true;
                None
            }
            Err(refused) => {
                let e = fail(&mut reading, refused);
                Some((Err(e), reading))
            }
        }
    })
}

/// A defect of a multipart body as a 422 naming it; a body that stopped
/// arriving (the client paused too long or went away) is dropped without
/// an answer.
fn multipart_error(e: multer::Error) -> Reject {
    match e {
        multer::Error::StreamReadFailed(_) => Reject::Abort("the upload was not received"),
        multer::Error::FieldSizeExceeded { field_name, .. } => {
            Error::invalid(field_name.as_deref().unwrap_or("field"), "too long").into()
        }
        multer::Error::IncompleteStream | multer::Error::IncompleteFieldData { .. } => {
            Error::invalid("body", "the multipart body ends before its closing boundary").into()
        }
        multer::Error::IncompleteHeaders | multer::Error::ReadHeaderFailed(_) => {
            Error::invalid("body", "a multipart part has malformed headers").into()
        }
        other => Error::invalid("body", format!("malformed multipart body: {other}")).into(),
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

/// Streams a download with its type, length, disposition and `nosniff`.
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
