//! The request cycle, at the top of the server: CORS, routing to the
//! endpoints, MCP, metrics and the web board, panics and the access log.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use taskboard_core::{Error, ErrorKind};
use tracing::Instrument;

use crate::State;
use crate::response::{Reject, ResBody, empty, error};
use crate::router::{Routed, Target};

/// The error of the service: hyper closes the connection on it.
#[derive(Debug)]
pub(crate) struct Aborted(&'static str);

impl std::fmt::Display for Aborted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Aborted {}

/// The query string with credentials hidden, for the access log. Each
/// pair is decoded as the query parser decodes it, so `tok%65n=…` is the
/// `token` it stands for: a parameter named for a credential (the
/// `token` and `access_token` a request may carry, the one-time `code`,
/// `state` and `login_code` of single sign-on) is hidden whole, and any
/// value holding a credential by its form (`taskboard_core::redact`) is
/// hidden under any name (`?q=tba-…`). The log writer redacts the whole
/// line again.
fn redacted_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| {
            let decoded = form_urlencoded::parse(pair.as_bytes()).next();
            match decoded {
                Some((name, value))
                    if CREDENTIAL_NAMES.contains(&&*name)
                        || taskboard_core::redact::holds_credential(&value) =>
                {
                    let name = pair.split_once('=').map_or(pair, |(n, _)| n);
                    format!("{name}={}", taskboard_core::redact::REDACTED)
                }
                _ => pair.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Query parameters that carry a credential: a token, and the one-time
/// codes and state of single sign-on.
const CREDENTIAL_NAMES: &[&str] = &["token", "access_token", "code", "state", "login_code"];

/// Serves one request in a span carrying its id, and echoes the id on
/// the response (`request_id`).
///
/// Not an `async fn`: its future holds the request only inside the future
/// of `serve`, not a second time as an argument of its own; each request's
/// future is moved into place whole, so its size is paid on every request
/// (docs/storage.md, S.46).
pub(crate) fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
    peer: crate::Peer,
) -> impl Future<Output = Result<Response<ResBody>, Aborted>> + Send {
    let id = crate::request_id::of(req.headers());
    let span = tracing::info_span!("http", request_id = id.to_str().unwrap_or_default());
    // `map`, not an async block: a block would hold `serve`'s future
    // twice, as what it captured and as what it awaits.
    serve(state, req, peer).instrument(span).map(move |served| {
        let mut res = served?;
        res.headers_mut().insert(crate::request_id::HEADER, id);
        Ok(res)
    })
}

async fn serve(
    state: Arc<State>,
    req: Request<Incoming>,
    peer: crate::Peer,
) -> Result<Response<ResBody>, Aborted> {
    let started = Instant::now();
    let method = req.method().clone();
    let origin = state.cors.allowed_origin(req.headers());
    let has_origin = req.headers().contains_key(header::ORIGIN);

    if method == hyper::Method::OPTIONS && req.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
        let mut res = empty(StatusCode::NO_CONTENT);
        if let Some(origin) = origin {
            state.cors.preflight(res.headers_mut(), origin, req.headers());
        }
        log(&req, "preflight", res.status(), started);
        state.metrics.record("preflight", res.status(), started);
        return Ok(res);
    }

    let listened = peer.listened;
    if req.uri().path() == crate::metrics::PATH || listened == crate::Listened::Metrics {
        let mut res = crate::metrics::serve(&state, &req, listened).await;
        log(&req, "metrics", res.status(), started);
        state.metrics.record("metrics", res.status(), started);
        if let Some(origin) = origin {
            state.cors.simple(res.headers_mut(), origin);
        }
        return Ok(res);
    }

    if req.uri().path() == crate::mcp::PATH {
        let endpoint = "mcp";
        let line = LogLine::of(&req);
        // Boxed: MCP's future is kilobytes, and held inline it would make
        // every request's future as large, copied on each move
        // (docs/storage.md S.40).
        let mut res = Box::pin(crate::mcp::serve(&state, req)).await;
        line.emit(endpoint, &method, res.status(), started);
        state.metrics.record(endpoint, res.status(), started);
        if let Some(origin) = origin {
            state.cors.simple(res.headers_mut(), origin);
        }
        return Ok(res);
    }

    if let Some(res) = crate::web::serve(&req) {
        log(&req, "web", res.status(), started);
        state.metrics.record("web", res.status(), started);
        return Ok(res);
    }

    let (target, mut res) = match state.router.route(&method, req.uri().path()) {
        Routed::Found(target, ids) => {
            let path_and_query = tracing::enabled!(tracing::Level::INFO).then(|| LogLine::of(&req));
            let span = tracing::info_span!("request", endpoint = target.name());
            let result = AssertUnwindSafe(crate::dispatch::dispatch(&state, &target, ids, req, peer))
                .catch_unwind()
                .instrument(span)
                .await;
            let mut res = match result {
                Ok(Ok(res)) => res,
                Ok(Err(Reject::Api(e))) => error(&e),
                Ok(Err(Reject::Abort(why))) => {
                    tracing::info!(endpoint = target.name(), why, "request aborted");
                    return Err(Aborted(why));
                }
                Err(panic) => {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!(endpoint = target.name(), panic = %what, "handler panicked");
                    error(&Error::new(ErrorKind::Internal, "internal error"))
                }
            };
            if let Some(line) = path_and_query {
                line.emit(target.name(), &method, res.status(), started);
            }
            match &target {
                Target::Api(route) => {
                    state.metrics.record_in(route.info.name, &route.counters, res.status(), started)
                }
                other => state.metrics.record(other.name(), res.status(), started),
            }
            if let Some(origin) = origin {
                state.cors.simple(res.headers_mut(), origin);
            } else if has_origin {
                res.headers_mut().insert(header::VARY, HeaderValue::from_static("origin"));
            }
            return Ok(res);
        }
        Routed::NotFound => (None, error(&Error::not_found(format!("no such path: {}", req.uri().path())))),
        Routed::MethodNotAllowed(allow) => {
            let mut res = error(&Error::new(
                ErrorKind::MethodNotAllowed,
                format!("{method} is not allowed here; allowed: {}", allow.to_str().unwrap_or("")),
            ));
            res.headers_mut().insert(header::ALLOW, allow);
            (None::<Target>, res)
        }
        Routed::BadParam(e) => (None, error(&e)),
    };
    log(&req, target.as_ref().map_or("-", Target::name), res.status(), started);
    state.metrics.record(target.as_ref().map_or("unmatched", Target::name), res.status(), started);
    if let Some(origin) = origin {
        state.cors.simple(res.headers_mut(), origin);
    }
    Ok(res)
}

/// What the access log needs of a request, taken before the request is
/// consumed.
struct LogLine {
    path: String,
    query: Option<String>,
}

impl LogLine {
    fn of(req: &Request<Incoming>) -> LogLine {
        LogLine { path: req.uri().path().to_string(), query: req.uri().query().map(redacted_query) }
    }

    fn emit(&self, endpoint: &str, method: &hyper::Method, status: StatusCode, started: Instant) {
        tracing::info!(
            endpoint,
            %method,
            path = %self.path,
            query = self.query.as_deref().unwrap_or(""),
            status = status.as_u16(),
            latency_us = started.elapsed().as_micros() as u64,
            "request"
        );
    }
}

fn log(req: &Request<Incoming>, endpoint: &str, status: StatusCode, started: Instant) {
    if tracing::enabled!(tracing::Level::INFO) {
        LogLine::of(req).emit(endpoint, req.method(), status, started);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_hidden_in_logged_queries() {
        assert_eq!(super::redacted_query("a=1&token=tbk-xyz&b=2"), "a=1&token=REDACTED&b=2");
        assert_eq!(super::redacted_query("tok%65n=eyJhbGc.eyJzdWI.c2ln"), "tok%65n=REDACTED");
        assert_eq!(super::redacted_query("t%6Fken=abc&q=x"), "t%6Fken=REDACTED&q=x");
        assert_eq!(super::redacted_query("q=tbk%2Dabc"), "q=REDACTED");
        assert_eq!(super::redacted_query("q=a+b&limit=5"), "q=a+b&limit=5");
        // Access tokens, by name and by form.
        assert_eq!(super::redacted_query("access_token=anything&x=1"), "access_token=REDACTED&x=1");
        assert_eq!(super::redacted_query("q=tba-AbC123&limit=5"), "q=REDACTED&limit=5");
        assert_eq!(super::redacted_query("q=see%20tba%2DAbC"), "q=REDACTED");
        assert_eq!(super::redacted_query("q=whsec_abc%2B"), "q=REDACTED");
    }
}
