//! A typed HTTP client of the whole Taskboard API.
//!
//! One generic [`Perform::call`] serves every endpoint declared in
//! [`taskboard_wire::api`]: method, path and status come from the
//! declaration, bodies and answers are the wire's types, so the client
//! cannot drift from the server. Error responses are turned back into
//! [`taskboard_wire::Error`] with the server's kind and `detail`.
//!
//! The crate depends on the wire alone, not on the board's core: no
//! storage, password hashing or server code is built into a program that
//! only calls a server.
//!
//! Uploads stream from a file and downloads stream out of the response;
//! neither holds a whole file in memory. [`Events`] follows the WebSocket
//! event stream and resumes with `since` after a disconnect.
//!
//! ```no_run
//! # async fn demo() -> taskboard_wire::Result<()> {
//! use taskboard_client::Client;
//! use taskboard_wire::{ListTasks, Perform, TaskFilter};
//!
//! let client = Client::new("http://127.0.0.1:8080", Some("tbk-…".into()))?;
//! for task in client.call::<ListTasks>((), TaskFilter::default(), ()).await? {
//!     println!("{} {}", task.key, task.title);
//! }
//! # Ok(()) }
//! ```

mod events;
mod sse;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::TryStreamExt;
use reqwest::multipart::{Form, Part};
use taskboard_wire::error::ErrorBody;
use taskboard_wire::{
    Download, Encoded, Endpoint, Error, ErrorKind, PathParams, Perform, QueryParams, RawBody, Reply,
    ReplyKind, RequestBody, Result, Serve, Upload,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::io::{ReaderStream, StreamReader};
use uuid::Uuid;

pub use events::{Events, Reconnect};
pub use sse::SseEvents;

/// Installs ring as the process's rustls provider, once, before the first
/// client is made; a provider installed before (by the embedding program)
/// is left as it is. reqwest is built without a provider of its own
/// (`rustls-no-provider`), so a program must install one. The core has the
/// same six lines (`taskboard_core::tls`): neither crate may depend on the
/// other for them.
pub fn install_provider() {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Reports transfer progress: (bytes done, bytes in all when known).
pub type OnProgress = Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

/// What a download wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// The file name the server gave in `Content-Disposition`.
    pub filename: Option<String>,
    pub mime_type: Option<String>,
    pub size: u64,
}

/// A client of one Taskboard server, with optional credentials (a JWT
/// from login or an agent token). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// The same, not following redirects.
    unfollowed: reqwest::Client,
    base: String,
    token: Option<String>,
    /// The `Idempotency-Key` of the next mutating calls; without one,
    /// each mutating call gets a key of its own.
    idempotency_key: Option<String>,
    /// Sent as `Taskboard-Lease`: the lease this client holds.
    lease: Option<uuid::Uuid>,
}

/// Attempts of a mutating call that fails on the network; each attempt
/// carries the same idempotency key, so the server performs it once.
const NETWORK_ATTEMPTS: u32 = 3;

/// Errors of the transport (server unreachable, connection dropped) are
/// `internal` on our side, but unlike the server's own 500s their detail
/// says what happened, since it is about the caller's machine.
fn transport(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Internal, format!("cannot talk to the server: {e}"))
}

fn local_file(path: &Path, e: std::io::Error) -> Error {
    Error::new(ErrorKind::BadRequest, format!("{}: {e}", path.display()))
}

/// Turns an error response back into the core's error.
pub(crate) fn error_of(status: u16, body: &str) -> Error {
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(b) => {
            Error::new(ErrorKind::from_code(&b.code).unwrap_or(ErrorKind::from_status(status)), b.detail)
        }
        Err(_) if body.trim().is_empty() => {
            Error::new(ErrorKind::from_status(status), format!("HTTP {status}"))
        }
        Err(_) => Error::new(ErrorKind::from_status(status), body.trim().to_string()),
    }
}

/// Fills the `{param}` segments of an endpoint path, in order.
fn fill_path(template: &str, params: &[Uuid]) -> String {
    let mut out = String::with_capacity(template.len() + params.len() * 36);
    let mut rest = template;
    let mut values = params.iter();
    while let Some(start) = rest.find('{') {
        let end = start + rest[start..].find('}').expect("balanced braces in the endpoint table");
        out.push_str(&rest[..start]);
        out.push_str(&values.next().expect("a value for every path parameter").to_string());
        rest = &rest[end + 1..];
    }
    assert!(values.next().is_none(), "more values than path parameters in {template}");
    out.push_str(rest);
    out
}

/// The file name of a `Content-Disposition` header (RFC 6266: `filename*`
/// preferred over `filename`).
fn disposition_filename(header: &str) -> Option<String> {
    let mut plain = None;
    for part in header.split(';').map(str::trim) {
        if let Some(v) = part.strip_prefix("filename*=") {
            let encoded = v.split_once("''").map_or(v, |(_, e)| e);
            return percent_encoding::percent_decode_str(encoded).decode_utf8().ok().map(|s| s.into_owned());
        }
        if let Some(v) = part.strip_prefix("filename=") {
            plain = Some(v.trim_matches('"').to_string());
        }
    }
    plain
}

impl Client {
    /// A client of the server at `base_url` (`http://host:port`).
    pub fn new(base_url: &str, token: Option<String>) -> Result<Client> {
        let base = base_url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::invalid("server", format!("{base_url:?} is not an http:// or https:// URL")));
        }
        install_provider();
        let http = reqwest::Client::builder()
            .user_agent(concat!("taskboard-client/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(transport)?;
        let unfollowed = reqwest::Client::builder()
            .user_agent(concat!("taskboard-client/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(transport)?;
        Ok(Client { http, unfollowed, base, token, idempotency_key: None, lease: None })
    }

    /// The same server, sending `key` as the `Idempotency-Key` of
    /// mutating calls.
    pub fn with_idempotency_key(&self, key: Option<String>) -> Client {
        Client { idempotency_key: key, ..self.clone() }
    }

    /// The same server, presenting `lease` (`Taskboard-Lease`) with every
    /// call, so a change made after the lease was lost (it expired and
    /// another holder took the task) is refused instead of overwriting
    /// the new holder's work.
    pub fn with_lease(&self, lease: Option<uuid::Uuid>) -> Client {
        Client { lease, ..self.clone() }
    }

    /// The lease this client presents, if any.
    pub fn lease(&self) -> Option<uuid::Uuid> {
        self.lease
    }

    /// The HTTP client underneath, for requests outside the API's
    /// declarations (the command line's Server-Sent Events reader).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }
}

/// The server performs the endpoints: one generic call for all of them.
impl<E: Endpoint> Serve<E> for Client {
    async fn serve(&self, path: E::Path, query: E::Query, body: E::Body) -> Result<E::Response> {
        let info = &E::INFO;
        let method = match info.method {
            taskboard_wire::Method::Get => reqwest::Method::GET,
            taskboard_wire::Method::Post => reqwest::Method::POST,
            taskboard_wire::Method::Put => reqwest::Method::PUT,
            taskboard_wire::Method::Patch => reqwest::Method::PATCH,
            taskboard_wire::Method::Delete => reqwest::Method::DELETE,
        };
        let url = format!("{}{}", self.base, fill_path(info.path, &path.ids()));
        let mutating = info.auth
            && matches!(
                info.method,
                taskboard_wire::Method::Post | taskboard_wire::Method::Patch | taskboard_wire::Method::Delete
            );
        let key = mutating.then(|| {
            self.idempotency_key.clone().unwrap_or_else(|| format!("auto-{}", uuid::Uuid::new_v4()))
        });
        let query = match query.to_json()? {
            serde_json::Value::Object(fields) if !fields.is_empty() => Some(fields),
            _ => None,
        };
        let (json, mut upload) = match body.encode()? {
            RawBody::None => (None, None),
            RawBody::Json(bytes) => (Some(bytes), None),
            RawBody::Upload(upload) => (None, Some(upload)),
        };
        // A streamed upload cannot be sent twice.
        let retryable = key.is_some() && upload.is_none();
        let mut attempt = 0;
        let response = loop {
            attempt += 1;
            // A redirect is the answer itself (single sign-on), not followed.
            let http = if E::Response::KIND == ReplyKind::Redirect { &self.unfollowed } else { &self.http };
            let mut builder = http.request(method.clone(), &url);
            if let (Some(token), true) = (&self.token, info.auth) {
                builder = builder.bearer_auth(token);
            }
            if let Some(key) = &key {
                builder = builder.header("idempotency-key", key);
            }
            if let (Some(lease), true) = (self.lease, info.auth) {
                builder = builder.header("taskboard-lease", lease.to_string());
            }
            if let Some(fields) = &query {
                builder = builder.query(fields);
            }
            if let Some(bytes) = &json {
                builder = builder.header("content-type", "application/json").body(bytes.clone());
            } else if let Some(upload) = upload.take() {
                builder = builder.multipart(form(upload)?);
            }
            match builder.send().await {
                Ok(response) => break response,
                Err(e) if retryable && attempt < NETWORK_ATTEMPTS && !e.is_builder() => {
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                }
                Err(e) => return Err(transport(e)),
            }
        };
        let status = response.status().as_u16();
        if E::Response::KIND == ReplyKind::Redirect && (300..400).contains(&status) {
            let location = response.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok());
            let location = location.ok_or_else(|| Error::internal("a redirect without a Location"))?;
            let redirect = taskboard_wire::Redirect { location: location.to_string(), set_cookie: None };
            return E::Response::decode(Encoded::Redirect(redirect));
        }
        if !(200..300).contains(&status) {
            let body = response.text().await.unwrap_or_default();
            return Err(error_of(status, &body));
        }
        let encoded = match E::Response::KIND {
            ReplyKind::Json if status == 204 => Encoded::Empty,
            ReplyKind::Json => {
                let next = next_cursor(response.headers());
                let json = response.bytes().await.map_err(transport)?;
                match next {
                    Some(next) => Encoded::Page { json, next: Some(next) },
                    None => Encoded::Json(json),
                }
            }
            ReplyKind::Download => Encoded::Download(download(response)),
            ReplyKind::Redirect => return Err(Error::internal(format!("expected a redirect, got {status}"))),
            ReplyKind::Upgrade => {
                return Err(Error::invalid("endpoint", "use Client::events for the event stream"));
            }
        };
        E::Response::decode(encoded)
    }
}

impl Perform for Client {
    /// `--lease-id` wins over the lease the connection remembers.
    fn presenting(&self, lease: Uuid) -> Client {
        match self.lease {
            Some(_) => self.clone(),
            None => self.with_lease(Some(lease)),
        }
    }
}

/// A streamed download answer.
fn download(response: reqwest::Response) -> Download {
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let filename =
        header("content-disposition").as_deref().and_then(disposition_filename).unwrap_or_default();
    let mime_type = header("content-type").unwrap_or_else(|| "application/octet-stream".into());
    let size = response.content_length().unwrap_or(0);
    let stream = response.bytes_stream().map_err(std::io::Error::other);
    Download { filename, mime_type, size, content: Box::pin(StreamReader::new(stream)) }
}

/// A multipart body with the upload's `file` part, streamed, and its text
/// fields.
fn form(upload: Upload) -> Result<Form> {
    let stream = reqwest::Body::wrap_stream(ReaderStream::new(upload.content));
    let mut part = match upload.size {
        Some(size) => Part::stream_with_length(stream, size),
        None => Part::stream(stream),
    }
    .file_name(upload.filename);
    if let Some(mime) = upload.mime_type {
        part = part
            .mime_str(&mime)
            .map_err(|_| Error::invalid("mime_type", format!("{mime:?} is not a media type")))?;
    }
    let mut form = Form::new();
    for (name, value) in upload.fields {
        form = form.text(name, value);
    }
    Ok(form.part("file", part))
}

/// A file on this machine as an upload named `filename` (the path's file
/// name when `None`), streamed from disk with a known length, so the
/// server can refuse an oversized upload at once.
pub async fn upload_from_path(
    path: &Path,
    filename: Option<&str>,
    progress: Option<OnProgress>,
) -> Result<Upload> {
    let file = tokio::fs::File::open(path).await.map_err(|e| local_file(path, e))?;
    let total = file.metadata().await.map_err(|e| local_file(path, e))?.len();
    let name = match filename {
        Some(n) => n.to_string(),
        None => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Error::invalid("file", format!("{} has no file name", path.display())))?,
    };
    let content = ProgressReader { inner: file, done: 0, total: Some(total), progress };
    Ok(Upload {
        filename: name,
        mime_type: None,
        size: Some(total),
        content: Box::pin(content),
        fields: Vec::new(),
        late: Default::default(),
    })
}

/// Copies a download into `out`, reporting progress.
pub async fn save_download<W: AsyncWrite + Unpin + ?Sized>(
    d: Download,
    out: &mut W,
    progress: Option<OnProgress>,
) -> Result<Downloaded> {
    let total = Some(d.size);
    let mut reader = ProgressReader { inner: d.content, done: 0, total, progress };
    let size = tokio::io::copy(&mut reader, out).await.map_err(Error::from)?;
    out.flush().await.map_err(Error::from)?;
    Ok(Downloaded { filename: Some(d.filename), mime_type: Some(d.mime_type), size })
}

/// A reader that reports how much has been read.
struct ProgressReader<R> {
    inner: R,
    done: u64,
    total: Option<u64>,
    progress: Option<OnProgress>,
}

impl<R: AsyncRead + Unpin> AsyncRead for ProgressReader<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = (buf.filled().len() - before) as u64;
        if read > 0 {
            self.done += read;
            if let Some(p) = &self.progress {
                p(self.done, self.total);
            }
        }
        polled
    }
}

/// The cursor of the next page, from a `Link: <…cursor=…>; rel="next"`
/// header.
fn next_cursor(headers: &reqwest::header::HeaderMap) -> Option<String> {
    headers
        .get_all(reqwest::header::LINK)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|link| {
            let (target, params) = link.trim().split_once(';')?;
            let is_next = params.split(';').any(|p| {
                let p = p.trim().replace(' ', "");
                p == "rel=\"next\"" || p == "rel=next"
            });
            if !is_next {
                return None;
            }
            let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
            let (_, query) = target.split_once('?')?;
            query.split('&').find_map(|p| p.strip_prefix("cursor=")).map(str::to_string)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_path_fills() {
        for info in taskboard_wire::endpoint::infos() {
            let n = info.path.matches('{').count();
            let ids: Vec<Uuid> = (0..n).map(|_| Uuid::nil()).collect();
            let path = fill_path(info.path, &ids);
            assert!(!path.contains('{'), "{path}");
        }
        let id = Uuid::nil();
        assert_eq!(
            fill_path("/api/v1/tasks/{task_id}/steps/{step_id}", &[id, id]),
            format!("/api/v1/tasks/{id}/steps/{id}")
        );
    }

    #[test]
    fn errors_come_back_with_their_kind_and_detail() {
        let e = error_of(409, r#"{"detail":"slug \"web\" is already taken","code":"conflict"}"#);
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert_eq!(e.detail(), "slug \"web\" is already taken");
        assert_eq!(error_of(422, "").kind(), ErrorKind::Validation);
        assert_eq!(error_of(502, "bad gateway").detail(), "bad gateway");
    }

    #[test]
    fn content_disposition_names() {
        assert_eq!(
            disposition_filename("attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf").as_deref(),
            Some("résumé.pdf")
        );
        assert_eq!(disposition_filename("inline; filename=\"a.png\"").as_deref(), Some("a.png"));
        assert_eq!(disposition_filename("attachment"), None);
    }
}
