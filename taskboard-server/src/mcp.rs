//! The Model Context Protocol at `/mcp` (Streamable HTTP): rmcp's
//! streamable HTTP service, called from the request cycle, serving the
//! tools, resources and prompt of taskboard-mcp as the member of the
//! request's bearer credentials.
//!
//! Before a request reaches the service: an `Origin` other than the
//! server's own or a configured web origin is 403 (a web page must not
//! drive a local agent's tools), and credentials are checked as for the
//! API (401 without or with bad ones). Sessions (`Mcp-Session-Id`),
//! resumption of an SSE stream (`Last-Event-ID`) and the protocol-version
//! header are the service's; a session stays with the member that opened
//! it.

use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::{BodyExt, Either};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response};
use rmcp::model::Extensions;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use taskboard_core::api::{self, Caller, Endpoint};
use taskboard_core::board::Actor;
use taskboard_core::{Board, Error, Result};
use taskboard_mcp::{Connect, McpServer, Perform, Profile};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::State;
use crate::http::{ResBody, error};

/// The path of the MCP endpoint.
pub(crate) const PATH: &str = "/mcp";

pub(crate) type Service = StreamableHttpService<McpServer<SessionConnect>, LocalSessionManager>;

/// One service per profile (`/mcp?profile=worker|full`, full by default):
/// a session lives in the service that opened it, and its later requests
/// name the same profile.
pub(crate) struct Services {
    full: Service,
    worker: Service,
}

impl Services {
    pub(crate) fn new(board: Board, shutdown: &CancellationToken, max_json_bytes: usize) -> Services {
        Services {
            full: service(board.clone(), shutdown, max_json_bytes, Profile::Full),
            worker: service(board, shutdown, max_json_bytes, Profile::Worker),
        }
    }
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
fn service(board: Board, shutdown: &CancellationToken, max_json_bytes: usize, profile: Profile) -> Service {
    let config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(max_json_bytes)
        // Hosts are not limited to loopback names: the server is reached
        // by whatever name it is deployed under, and requests without
        // credentials never reach the tools.
        .disable_allowed_hosts()
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_cancellation_token(shutdown.child_token());
    StreamableHttpService::new(
        move || {
            Ok(McpServer::new(SessionConnect { board: board.clone(), member: OnceLock::new() })
                .with_profile(profile))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// The board as the member of each request of one session.
pub(crate) struct SessionConnect {
    board: Board,
    member: OnceLock<Uuid>,
}

impl Connect for SessionConnect {
    type Backend = BoardCaller;

    fn backend(&self, extensions: &Extensions) -> Result<BoardCaller> {
        let actor = extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Actor>())
            .cloned()
            .ok_or_else(|| Error::unauthorized("credentials are required"))?;
        let owner = *self.member.get_or_init(|| actor.id());
        if owner != actor.id() {
            return Err(Error::forbidden(
                "this MCP session belongs to another member; start a session of your own",
            ));
        }
        Ok(BoardCaller { board: self.board.clone(), caller: Caller::member(actor) })
    }
}

/// The board, performing endpoints as one member.
#[derive(Clone)]
pub(crate) struct BoardCaller {
    board: Board,
    caller: Caller,
}

impl Perform for BoardCaller {
    fn call<E: Endpoint>(
        &self,
        path: E::Path,
        query: E::Query,
        body: E::Body,
    ) -> impl Future<Output = Result<E::Response>> + Send {
        let this = self.clone();
        async move { api::call::<E>(&this.board, &this.caller, path, query, body).await }
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

/// Serves one request to `/mcp`.
pub(crate) async fn serve(state: &State, mut req: Request<Incoming>) -> Response<ResBody> {
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
    let service = match profile_of(&req) {
        Ok(Profile::Full) => &state.mcp.full,
        Ok(Profile::Worker) => &state.mcp.worker,
        Err(e) => return error(&e),
    };
    req.extensions_mut().insert(actor);
    let res = service.handle(req).await;
    res.map(|body| Either::Right(body.map_err(|never: Infallible| match never {}).boxed_unsync()))
}
