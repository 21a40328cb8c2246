//! One generic function serves every endpoint: authenticate, read the
//! path, query and body into the endpoint's types, call the core, render
//! the answer. Nothing here knows one endpoint from another.

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use taskboard_core::api::{
    BodyKind, Call, Caller, Encoded, Handle, PathParams, QueryParams, RawBody, RequestBody, Upload,
    decode_body,
};
use taskboard_core::board::{Conditions, IdempotencyKey, Idempotent};
use taskboard_core::{Actor, Error, api};

use crate::files;
use crate::parse;
use crate::response::{JSON, Reject, ResBody, empty, error, full, streamed};
use crate::router::{PathIds, Route, ServeFn, Served, Serving, Target};
use crate::{Peer, State};

/// Names the fields of a JSON body that were ignored, so a typo next to
/// known fields is seen.
const IGNORED_FIELDS: HeaderName = HeaderName::from_static("taskboard-ignored-fields");

/// The credentials of a request: `Authorization: Bearer …`, else
/// `?token=…`.
fn credentials(req: &Request<Incoming>) -> Result<Option<std::borrow::Cow<'_, str>>, Error> {
    if let Some(value) = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let Some((scheme, token)) = value.trim().split_once(' ') else { return Ok(None) };
        return Ok(scheme.eq_ignore_ascii_case("bearer").then(|| std::borrow::Cow::Borrowed(token.trim())));
    }
    parse::query_token(req.uri().query())
}

/// Whether a GET asks for Server-Sent Events (`Accept:
/// text/event-stream`), with its `Last-Event-ID`.
fn event_stream(req: &Request<Incoming>) -> Option<Option<u64>> {
    if req.method() != hyper::Method::GET {
        return None;
    }
    let accept = req.headers().get(header::ACCEPT)?.to_str().ok()?;
    if !accept.split(',').any(|a| a.trim().split(';').next() == Some("text/event-stream")) {
        return None;
    }
    let last = req.headers().get("last-event-id").and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    Some(last)
}

pub(crate) async fn authenticate(state: &State, req: &Request<Incoming>) -> Result<Actor, Error> {
    match credentials(req)? {
        Some(token) if !token.is_empty() => state.board.authenticate(&token).await,
        _ => Err(Error::unauthorized("credentials are required: a bearer token or ?token=")),
    }
}

/// What every request to an endpoint is read into before its body:
/// the caller, the path and query, and the conditions it sent (its
/// idempotency key is added once the body it fingerprints is read).
struct Prepared<E: Handle> {
    caller: Caller,
    path: E::Path,
    query: E::Query,
    status: StatusCode,
    conditions: Conditions,
}

async fn prepare<E: Handle>(
    state: &State,
    route: &Route,
    ids: PathIds,
    req: &Request<Incoming>,
    peer: Peer,
) -> Result<Prepared<E>, Reject> {
    let actor = if E::INFO.auth { Some(authenticate(state, req).await?) } else { None };
    let lease = parse::lease(req.headers())?;
    let actor = actor.map(|a| a.presenting(lease));
    let address = Some(state.proxies.client(peer.addr, req.headers()));
    let event_stream = event_stream(req);
    let cookie = E::COOKIE.and_then(|name| parse::cookie(req.headers(), name));
    let caller = Caller { actor, address, event_stream, cookie };
    let path = E::Path::from_ids(ids.as_slice());
    let query = E::Query::from_json(parse::query(req.uri().query(), &route.query)?)?;
    let status = StatusCode::from_u16(E::INFO.status).unwrap_or(StatusCode::OK);
    let if_none_match = parse::entity_tags(req.headers(), header::IF_NONE_MATCH)?
        .filter(|_| E::INFO.method == api::Method::Get);
    let if_match = parse::entity_tags(req.headers(), header::IF_MATCH)?.filter(|_| E::CONDITIONAL);
    let conditions = Conditions { if_match, if_none_match, idempotency_key: None };
    Ok(Prepared { caller, path, query, status, conditions })
}

/// Serves an endpoint without a body. Each kind of body has a function of
/// its own, so the future boxed for a request holds only what its kind
/// needs (a future holds room for all its branches, and the box is
/// allocated and filled for every request: docs/storage.md, S.37).
async fn serve_plain<E: Handle>(
    state: &State,
    route: &Route,
    ids: PathIds,
    req: Request<Incoming>,
    peer: Peer,
) -> Result<Response<ResBody>, Reject> {
    let Prepared { caller, path, query, status, mut conditions } =
        prepare::<E>(state, route, ids, &req, peer).await?;
    let board = &state.board;
    let body = E::Body::decode(RawBody::None)?;
    let path_and_query = req.uri().path_and_query().map_or("", |p| p.as_str());
    conditions.idempotency_key = idempotency_key_text::<E>(req.headers(), &caller)
        .map(|v| IdempotencyKey::new(&v, E::INFO.method.as_str(), path_and_query, b""))
        .transpose()?;
    let call = Call::new(path, query, body);
    let encoded = match api::perform::<E>(board, &caller, &conditions, call).await? {
        Idempotent::Fresh(encoded) => encoded,
        Idempotent::Replayed { status, body } => return Ok(replayed(status, body)),
    };
    if let Encoded::Events(follower) = encoded {
        let slot = state.ws.streams.take(caller.actor()?.id())?;
        let open = state.metrics.sse.hold();
        return Ok(crate::sse::serve(follower, state.ws.shutdown.clone(), (open, slot)));
    }
    if let Encoded::Upgrade(upgrade) = encoded {
        let mut req = req;
        let actor = caller.actor.expect("the event stream needs credentials");
        let res = crate::ws::upgrade(&state.ws, actor, upgrade.since, &mut req)?;
        return Ok(res.map(http_body_util::Either::Left));
    }
    Ok(render(status, encoded, &conditions, req.uri()))
}

/// Serves an endpoint with a JSON body.
async fn serve_json<E: Handle>(
    state: &State,
    route: &Route,
    ids: PathIds,
    req: Request<Incoming>,
    peer: Peer,
) -> Result<Response<ResBody>, Reject> {
    let Prepared { caller, path, query, status, mut conditions } =
        prepare::<E>(state, route, ids, &req, peer).await?;
    let board = &state.board;
    parse::check_json_type(req.headers())?;
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    // Read before the body is; checked, with the body, after it.
    let key_text = idempotency_key_text::<E>(req.headers(), &caller);
    let (parts, incoming) = req.into_parts();
    let path_and_query = parts.uri.path_and_query().map_or("", |p| p.as_str());
    let max = E::BODY_LIMIT.map_or(state.limits.max_json_bytes, |n| n.max(state.limits.max_json_bytes));
    let bytes = parse::read_body(incoming, declared, max, &state.limits).await?;
    let left_out = E::Body::OPTIONAL && bytes.iter().all(u8::is_ascii_whitespace);
    if let Some(schema) = route.body.as_ref().filter(|_| !left_out) {
        parse::check_json(&bytes, schema)?;
    }
    conditions.idempotency_key = key_text
        .map(|v| IdempotencyKey::new(&v, E::INFO.method.as_str(), path_and_query, &bytes))
        .transpose()?;
    let (body, ignored) = decode_body::<E>(RawBody::Json(bytes))?;
    let call = Call::new(path, query, body);
    let encoded = match api::perform::<E>(board, &caller, &conditions, call).await? {
        Idempotent::Fresh(encoded) => encoded,
        Idempotent::Replayed { status, body } => return Ok(replayed(status, body)),
    };
    let mut res = render(status, encoded, &conditions, &parts.uri);
    if !ignored.is_empty()
        && let Ok(v) = HeaderValue::from_str(&ignored.join(", "))
    {
        res.headers_mut().insert(IGNORED_FIELDS, v);
    }
    Ok(res)
}

/// Serves an endpoint with a multipart upload.
async fn serve_multipart<E: Handle>(
    state: &State,
    route: &Route,
    ids: PathIds,
    req: Request<Incoming>,
    peer: Peer,
) -> Result<Response<ResBody>, Reject> {
    let Prepared { caller, path, query, status, conditions } =
        prepare::<E>(state, route, ids, &req, peer).await?;
    let board = &state.board;
    let key_text = idempotency_key_text::<E>(req.headers(), &caller);
    let (parts, incoming) = req.into_parts();
    let path_and_query = parts.uri.path_and_query().map_or("", |p| p.as_str());
    let caller = &caller;
    let conditions = &conditions;
    let (outcome, _) = files::multipart(
        &parts.headers,
        incoming,
        state.limits.body_read_timeout,
        |part, before| async move {
            let mut upload = Upload {
                filename: part.filename,
                mime_type: part.mime_type,
                size: None,
                content: part.content,
                fields: before,
                late: part.late,
            };
            let key = match key_text {
                Some(v) => {
                    let method = E::INFO.method.as_str();
                    Some(IdempotencyKey::streamed(&v, method, path_and_query, &mut upload)?)
                }
                None => None,
            };
            // A repeat: the body is read through (and hashed) to tell
            // the same upload from another one.
            if let Some(key) = &key
                && let Some((status, body)) = board.replay_upload(caller.actor()?, key, &mut upload).await?
            {
                return Ok(Idempotent::Replayed { status, body });
            }
            let body = E::Body::decode(RawBody::Upload(upload))?;
            let conditions = Conditions { idempotency_key: key, ..conditions.clone() };
            api::perform::<E>(board, caller, &conditions, Call::new(path, query, body)).await
        },
    )
    .await?;
    match outcome {
        Idempotent::Fresh(encoded) => Ok(render(status, encoded, conditions, &parts.uri)),
        Idempotent::Replayed { status, body } => Ok(replayed(status, body)),
    }
}

const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The one reading of `Idempotency-Key`: its text when the request may
/// carry one ([`IdempotencyKey::applies`]), None when there is none or it
/// does not apply. The core checks it (1-255 visible ASCII characters,
/// else 422) as each kind of body makes the key with the request's
/// fingerprint; bytes that are not text reach it as text that fails
/// that check.
fn idempotency_key_text<E: Handle>(headers: &HeaderMap, caller: &Caller) -> Option<String> {
    if !IdempotencyKey::applies(E::INFO.method.as_str(), caller.actor.is_some()) {
        return None;
    }
    let v = headers.get(IDEMPOTENCY_KEY)?;
    Some(String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// A stored answer, sent again as it was.
fn replayed(status: u16, body: Bytes) -> Response<ResBody> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut res = if body.is_empty() {
        empty(status)
    } else {
        // The tag a fresh answer of one resource carries, so a client
        // that retried can make its next change conditional.
        let tag = (body.first() == Some(&b'{')).then(|| api::etag(&body));
        let mut r = full(status, JSON, body);
        if let Some(v) = tag.and_then(|t| HeaderValue::from_str(&t).ok()) {
            r.headers_mut().insert(header::ETAG, v);
        }
        r
    };
    res.headers_mut().insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    res
}

/// The answer as it is sent: 304 for one the client holds, when a read
/// sent `If-None-Match`.
fn render(
    status: StatusCode,
    encoded: Encoded,
    conditions: &Conditions,
    uri: &hyper::Uri,
) -> Response<ResBody> {
    match encoded {
        Encoded::Tagged { json, etag } => tagged(status, json, &etag, conditions),
        Encoded::Json(bytes) if bytes.first() == Some(&b'{') => {
            let tag = api::etag(&bytes);
            tagged(status, bytes, &tag, conditions)
        }
        Encoded::Json(bytes) => full(status, JSON, bytes),
        Encoded::Events(_) => error(&Error::bad_request("this endpoint does not stream events")),
        Encoded::Empty => empty(StatusCode::NO_CONTENT),
        Encoded::Page { json, next } => {
            let mut res = full(status, JSON, json);
            if let Some(link) = next.and_then(|c| HeaderValue::from_str(&next_link(uri, &c)).ok()) {
                res.headers_mut().insert(header::LINK, link);
            }
            res
        }
        Encoded::Stream(chunks) => streamed(status, JSON, chunks),
        Encoded::Download(d) => files::download(d),
        Encoded::Upgrade(_) => error(&Error::bad_request("this endpoint does not upgrade")),
        Encoded::Redirect(redirect) => {
            let cookie = redirect.set_cookie.as_deref().map(HeaderValue::from_str).transpose();
            match (HeaderValue::from_str(&redirect.location), cookie) {
                (Ok(v), Ok(cookie)) => {
                    let mut res = empty(StatusCode::FOUND);
                    res.headers_mut().insert(header::LOCATION, v);
                    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                    if let Some(cookie) = cookie {
                        res.headers_mut().insert(header::SET_COOKIE, cookie);
                    }
                    res
                }
                _ => error(&Error::internal("a redirect no header can hold")),
            }
        }
    }
}

/// One resource's answer with its `ETag`, or 304 when `If-None-Match`
/// lists the tag.
fn tagged(status: StatusCode, json: Bytes, tag: &str, conditions: &Conditions) -> Response<ResBody> {
    let mut res =
        if conditions.not_modified(tag) { empty(StatusCode::NOT_MODIFIED) } else { full(status, JSON, json) };
    if let Ok(v) = HeaderValue::from_str(tag) {
        res.headers_mut().insert(header::ETAG, v);
    }
    res
}

/// The `Link` header value of the next page: this request's path and
/// query, without `offset` and `cursor`, plus the next page's cursor.
fn next_link(uri: &hyper::Uri, cursor: &str) -> String {
    let mut query: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("cursor=") && !p.starts_with("offset="))
        .collect();
    let cursor = format!("cursor={cursor}");
    query.push(&cursor);
    format!("<{}?{}>; rel=\"next\"", uri.path(), query.join("&"))
}

/// The endpoints served by `serve`, for the router.
pub(crate) struct Endpoints;

impl Serving for Endpoints {
    fn serve<E: Handle>() -> ServeFn {
        match E::Body::KIND {
            BodyKind::None => {
                |state, route, ids, req, peer| Box::pin(serve_plain::<E>(state, route, ids, req, peer))
            }
            BodyKind::Json => {
                |state, route, ids, req, peer| Box::pin(serve_json::<E>(state, route, ids, req, peer))
            }
            BodyKind::Multipart => {
                |state, route, ids, req, peer| Box::pin(serve_multipart::<E>(state, route, ids, req, peer))
            }
        }
    }
}

/// Serves a routed request. Not an `async fn`: an endpoint's future is
/// boxed by its route, and returned as it is rather than held inside
/// another future, which would be moved with the request in it.
pub(crate) fn dispatch<'a>(
    state: &'a State,
    target: &'a Target,
    ids: PathIds,
    req: Request<Incoming>,
    peer: Peer,
) -> Served<'a> {
    match target {
        Target::Api(route) => (route.serve)(state, route, ids, req, peer),
        Target::Docs => Box::pin(std::future::ready(Ok(full(
            StatusCode::OK,
            HeaderValue::from_static("text/html; charset=utf-8"),
            Bytes::from_static(crate::openapi::DOCS_PAGE.as_bytes()),
        )))),
        Target::OpenApi => {
            Box::pin(std::future::ready(Ok(full(StatusCode::OK, JSON, crate::openapi::document_bytes()))))
        }
        Target::Panic => Box::pin(async { panic!("the test route panics") }),
    }
}

#[cfg(test)]
mod tests {
    use hyper::Method;

    use crate::router::{Routed, Router, Target};

    #[test]
    fn literal_me_wins_over_a_member_id() {
        let r = Router::new::<super::Endpoints>(false, false);
        assert!(matches!(
            r.route(&Method::GET, "/api/v1/members/me"),
            Routed::Found(Target::Api(route), _) if route.info.name == "get_me"
        ));
        assert!(matches!(r.route(&Method::GET, "/api/v1/members/nope"), Routed::BadParam(_)));
        assert!(matches!(r.route(&Method::PUT, "/api/v1/tasks"), Routed::MethodNotAllowed(_)));
        assert!(matches!(r.route(&Method::GET, "/api/v2/tasks"), Routed::NotFound));
        assert!(matches!(r.route(&Method::GET, "/docs"), Routed::NotFound));
    }
}
