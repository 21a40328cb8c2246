//! The Model Context Protocol at `/mcp` (Streamable HTTP): rmcp's
//! streamable HTTP service, called from the request cycle, serving the
//! tools, resources and prompt of taskboard-mcp as the member of the
//! request's bearer credentials.
//!
//! Before a request reaches the service: an `Origin` other than the
//! server's own or a configured web origin is 403 (a web page must not
//! drive a local agent's tools), credentials are checked as for the API
//! (401 without or with bad ones), a message is read and checked as JSON-RPC
//! (a transport error is a JSON-RPC error object or a JSON `detail`, never
//! text), and a request naming a session must name one its member opened
//! (404 otherwise, whatever the verb).
//!
//! Sessions live in the memory of the process that opened them and are
//! bounded ([`McpLimits`]): per member (a new `initialize` closes that
//! member's least recently used idle session), per process (429 beyond),
//! and in time (closed once idle). Requests of the sessionless revision
//! (2026-07-28) carry everything they need, so any process of a board
//! serves them: that is how a client works behind a balancer that spreads
//! requests (docs/decisions.md, MCP sessions).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, Extensions};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use taskboard_core::api::Caller;
use taskboard_core::error::ErrorBody;
use taskboard_core::{Board, BoardCaller, Error, Result};
use taskboard_mcp::{Connect, McpServer, Profile};
use tokio_util::sync::CancellationToken;

mod sessions;

pub use sessions::McpLimits;
use sessions::{InUse, Sessions, actor_of};

use crate::State;
use crate::response::{JSON, Reject, ResBody, error, full};

/// The path of the MCP endpoint.
pub(crate) const PATH: &str = "/mcp";

/// The header naming a session.
const SESSION_HEADER: &str = "mcp-session-id";

type Service = StreamableHttpService<McpServer<SessionConnect>, Sessions>;

/// The endpoint: one rmcp service per profile (`/mcp?profile=worker|full`,
/// full by default) over one table of sessions. A session keeps the
/// profile of the `initialize` that opened it.
pub(crate) struct Mcp {
    full: Service,
    worker: Service,
    reviewer: Service,
    sessions: Arc<Sessions>,
}

/// The profile a request's query names; `Err` with the problem otherwise.
fn profile_of(req: &Request<Incoming>) -> Result<Profile> {
    let mut profile = Profile::Full;
    for (name, value) in form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes()) {
        if name == "profile" {
            profile = value.parse().map_err(|e: String| Error::invalid("profile", e))?;
        }
    }
    Ok(profile)
}

/// The service, its sessions ending when `shutdown` is cancelled; a
/// message body is limited like any JSON body of the API.
pub(crate) fn service(board: Board, shutdown: &CancellationToken, limits: McpLimits) -> Mcp {
    let config = StreamableHttpServerConfig::default()
        // Hosts are not limited to loopback names: the server is reached
        // by whatever name it is deployed under, and requests without
        // credentials never reach the tools.
        .disable_allowed_hosts()
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_cancellation_token(shutdown.child_token());
    let sessions = Sessions::open(limits, shutdown);
    let service = |profile: Profile| {
        let board = board.clone();
        StreamableHttpService::new(
            move || Ok(McpServer::new(SessionConnect { board: board.clone() }).with_profile(profile)),
            sessions.clone(),
            config.clone(),
        )
    };
    Mcp {
        full: service(Profile::Full),
        worker: service(Profile::Worker),
        reviewer: service(Profile::Reviewer),
        sessions,
    }
}

/// The board as the member of each request.
pub(crate) struct SessionConnect {
    board: Board,
}

impl Connect for SessionConnect {
    type Backend = BoardCaller;

    fn backend(&self, extensions: &Extensions) -> Result<BoardCaller> {
        let actor = actor_of(extensions).ok_or_else(|| Error::unauthorized("credentials are required"))?;
        Ok(BoardCaller { board: self.board.clone(), caller: Caller::member(actor) })
    }

    fn scopes(&self, extensions: &Extensions) -> Option<Vec<taskboard_core::model::Scope>> {
        actor_of(extensions)?.grant().map(|g| g.scopes.clone())
    }
}

/// Whether the request's `Origin`, if it has one, may use the endpoint:
/// the server's own origin (its `Host`) or a configured web origin.
fn origin_allowed(state: &State, req: &Request<Incoming>) -> bool {
    let Some(origin) = req.headers().get(header::ORIGIN) else { return true };
    if state.cors.allowed_origin(req.headers()).is_some() {
        return true;
    }
    let (Ok(origin), Some(host)) =
        (origin.to_str(), req.headers().get(header::HOST).and_then(|h| h.to_str().ok()))
    else {
        return false;
    };
    let authority = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    authority.is_some_and(|a| a.eq_ignore_ascii_case(host))
}

/// A JSON-RPC error answering a message that could not be read (400).
fn jsonrpc_error(id: Value, code: ErrorCode, message: String) -> Response<ResBody> {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code.0, "message": message}});
    full(StatusCode::BAD_REQUEST, JSON, serde_json::to_vec(&body).unwrap_or_default())
}

/// Reads a POSTed message: JSON (415 otherwise), within the size of a
/// JSON body (413), and a JSON-RPC message (a JSON-RPC parse error or
/// invalid request otherwise).
async fn read_message(
    parts: &hyper::http::request::Parts,
    body: Incoming,
    limits: &crate::Limits,
) -> Result<(Bytes, ClientJsonRpcMessage), Response<ResBody>> {
    if !parts.headers.contains_key(header::CONTENT_TYPE) {
        return Err(error(&Error::unsupported_media_type(
            "content-type: an MCP message is JSON; send Content-Type: application/json",
        )));
    }
    crate::parse::check_json_type(&parts.headers).map_err(|e| error(&e))?;
    let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok());
    let bytes = match crate::parse::read_body(body, declared, limits.max_json_bytes, limits).await {
        Ok(bytes) => bytes,
        Err(Reject::Api(e)) => return Err(error(&e)),
        Err(Reject::Abort(why)) => return Err(error(&Error::bad_request(why))),
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        jsonrpc_error(Value::Null, ErrorCode::PARSE_ERROR, format!("Parse error: the body is not JSON: {e}"))
    })?;
    let message = serde_json::from_value::<ClientJsonRpcMessage>(value.clone()).map_err(|e| {
        let id = match value.get("id") {
            Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
            _ => Value::Null,
        };
        let what = if value.is_array() {
            "a batch; send one message per request".to_string()
        } else {
            format!("not a JSON-RPC 2.0 request, notification or response of MCP: {e}")
        };
        jsonrpc_error(id, ErrorCode::INVALID_REQUEST, format!("Invalid Request: the message is {what}"))
    })?;
    Ok((bytes, message))
}

fn is_initialize(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::InitializeRequest(_)))
}

/// Serves one request to `/mcp`.
pub(crate) async fn serve(state: &State, req: Request<Incoming>) -> Response<ResBody> {
    if !origin_allowed(state, &req) {
        return error(&Error::forbidden(
            "this Origin may not use the MCP endpoint; configure it as the web origin, or connect without a browser",
        ));
    }
    let actor = match crate::dispatch::authenticate(state, &req).await {
        Ok(actor) => actor,
        Err(e) => {
            let mut res = error(&e);
            res.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return res;
        }
    };
    let profile = match profile_of(&req) {
        Ok(profile) => profile,
        Err(e) => return error(&e),
    };
    let mcp = &state.mcp;
    let member = actor.id();
    let lease = match crate::parse::lease(req.headers()) {
        Ok(lease) => lease,
        Err(e) => return error(&e),
    };
    let (mut parts, body) = req.into_parts();
    parts.extensions.insert(actor.presenting(lease));
    let in_use = match parts.headers.get(SESSION_HEADER) {
        Some(id) => match mcp.sessions.enter(id, member) {
            Ok(in_use) => Some(in_use),
            Err(e) => return error(&e),
        },
        None => None,
    };
    let mut opening = None;
    let body = if parts.method == Method::POST {
        let (bytes, message) = match read_message(&parts, body, &state.limits).await {
            Ok(read) => read,
            Err(res) => return res,
        };
        if in_use.is_none() && is_initialize(&message) {
            match mcp.sessions.admit(member).await {
                Ok(admitted) => opening = Some(admitted),
                Err(e) => return error(&e),
            }
        }
        bytes
    } else {
        Bytes::new()
    };
    let ending = parts.method == Method::DELETE;
    let service = match profile {
        Profile::Full => &mcp.full,
        Profile::Worker => &mcp.worker,
        Profile::Reviewer => &mcp.reviewer,
    };
    let mut res = service.handle(Request::from_parts(parts, Full::new(body))).await;
    drop(opening);
    if ending && res.status() == StatusCode::ACCEPTED {
        // An ended session is answered 204 No Content, as MCP clients
        // expect (rmcp says 202, which the Python SDK reports as a
        // failed termination).
        *res.status_mut() = StatusCode::NO_CONTENT;
    }
    answer(res, in_use).await
}

/// rmcp's answer as ours: a transport error it words as text becomes a
/// JSON `detail` with the same status; a session's answer keeps the
/// session in use until its body ends.
async fn answer(
    res: Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>,
    in_use: Option<InUse>,
) -> Response<ResBody> {
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if (res.status().is_client_error() || res.status().is_server_error()) && !is_json {
        let (parts, body) = res.into_parts();
        let text = match Limited::new(body, 16 * 1024).collect().await {
            Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).trim().to_string(),
            Err(_) => String::new(),
        };
        return transport_error(parts.status, &parts.headers, text);
    }
    res.map(|body| {
        let body = Tracked { inner: body, _in_use: in_use };
        Either::Right(body.map_err(|never: Infallible| match never {}).boxed_unsync())
    })
}

/// A transport error of rmcp's, worded as text, as a JSON `detail`.
fn transport_error(status: StatusCode, headers: &hyper::HeaderMap, text: String) -> Response<ResBody> {
    let code = match status {
        StatusCode::NOT_ACCEPTABLE => "not_acceptable",
        s => taskboard_core::ErrorKind::from_status(s.as_u16()).code(),
    };
    let detail = match status {
        StatusCode::NOT_FOUND => {
            "no MCP session has this Mcp-Session-Id any more; start a new session with initialize".to_string()
        }
        _ if text.is_empty() => status.canonical_reason().unwrap_or("error").to_string(),
        _ => text,
    };
    let body = ErrorBody { detail, code: code.to_string() };
    let mut res = full(status, JSON, serde_json::to_vec(&body).unwrap_or_default());
    if let Some(allow) = headers.get(header::ALLOW) {
        res.headers_mut().insert(header::ALLOW, allow.clone());
    }
    res
}

/// A response body that keeps its session in use while it is read.
struct Tracked<B> {
    inner: B,
    _in_use: Option<InUse>,
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
