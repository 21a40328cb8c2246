//! One generic function serves every endpoint: authenticate, read the
//! path, query and body into the endpoint's types, call the core, render
//! the answer. Nothing here knows one endpoint from another.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use taskboard_core::api::{
    BodyKind, Call, Caller, Encoded, Endpoint, Info, PathParams, QueryParams, RawBody, Reply, RequestBody,
    Upload, decode_body,
};
use taskboard_core::{Actor, Error};

use crate::State;
use crate::files;
use crate::http::{JSON, Reject, ResBody, full};
use crate::parse::{self, QueryKinds};
use crate::router::{PathIds, Target};

/// Names the fields of a JSON body that were ignored, so a typo next to
/// known fields is seen.
const IGNORED_FIELDS: HeaderName = HeaderName::from_static("taskboard-ignored-fields");

/// The future of a served request.
pub(crate) type Served<'a> = Pin<Box<dyn Future<Output = Result<Response<ResBody>, Reject>> + Send + 'a>>;

/// Serves one endpoint.
pub(crate) type ServeFn = for<'a> fn(&'a State, &'a Route, PathIds, Request<Incoming>) -> Served<'a>;

/// What the router keeps of an endpoint.
pub(crate) struct Route {
    pub info: &'static Info,
    /// The kinds of the query's fields, read once from its schema.
    pub query: QueryKinds,
    pub serve: ServeFn,
}

impl Route {
    pub fn of<E: Endpoint>() -> Route {
        let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let query = E::Query::schema(&mut generator).map(|s| parse::kinds_of(&s)).unwrap_or_default();
        Route {
            info: &E::INFO,
            query,
            serve: |state, route, ids, req| Box::pin(serve::<E>(state, route, ids, req)),
        }
    }
}

/// The credentials of a request: `Authorization: Bearer …`, else
/// `?token=…`.
fn credentials(req: &Request<Incoming>) -> Option<std::borrow::Cow<'_, str>> {
    if let Some(value) = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let (scheme, token) = value.trim().split_once(' ')?;
        return scheme.eq_ignore_ascii_case("bearer").then(|| std::borrow::Cow::Borrowed(token.trim()));
    }
    parse::query_token(req.uri().query())
}

async fn authenticate(state: &State, req: &Request<Incoming>) -> Result<Actor, Error> {
    match credentials(req) {
        Some(token) if !token.is_empty() => state.board.authenticate(&token).await,
        _ => Err(Error::unauthorized("credentials are required: a bearer token or ?token=")),
    }
}

async fn serve<E: Endpoint>(
    state: &State,
    route: &Route,
    ids: PathIds,
    req: Request<Incoming>,
) -> Result<Response<ResBody>, Reject> {
    let actor = if E::INFO.auth { Some(authenticate(state, &req).await?) } else { None };
    let uri = req.uri().clone();
    let address = req.extensions().get::<crate::ClientAddr>().map(|a| a.0);
    let caller = Caller { actor, address };
    let path = E::Path::from_ids(ids.as_slice());
    let query = E::Query::from_json(parse::query(req.uri().query(), &route.query)?)?;
    let status = StatusCode::from_u16(E::INFO.status).unwrap_or(StatusCode::OK);
    let board = &state.board;
    match E::Body::KIND {
        BodyKind::None => {
            let body = E::Body::decode(RawBody::None)?;
            let encoded = E::handle_encoded(board, &caller, Call::new(path, query, body)).await?;
            if let Encoded::Upgrade(upgrade) = encoded {
                let mut req = req;
                let actor = caller.actor.expect("the event stream needs credentials");
                let res = crate::ws::upgrade(&state.ws, actor, upgrade.since, &mut req)?;
                return Ok(res.map(http_body_util::Either::Left));
            }
            Ok(render(status, encoded, &uri))
        }
        BodyKind::Json => {
            let declared =
                req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
            let bytes = parse::read_body(req.into_body(), declared, &state.limits).await?;
            let (body, ignored) = decode_body::<E>(RawBody::Json(bytes))?;
            let encoded = E::handle_encoded(board, &caller, Call::new(path, query, body)).await?;
            let mut res = render(status, encoded, &uri);
            if !ignored.is_empty()
                && let Ok(v) = HeaderValue::from_str(&ignored.join(", "))
            {
                res.headers_mut().insert(IGNORED_FIELDS, v);
            }
            Ok(res)
        }
        BodyKind::Multipart => {
            let (parts, incoming) = req.into_parts();
            let caller = &caller;
            let (response, late) = files::multipart(
                &parts.headers,
                incoming,
                state.limits.body_read_timeout,
                |part, before| async move {
                    let upload = Upload {
                        filename: part.filename,
                        mime_type: part.mime_type,
                        size: None,
                        content: part.content,
                        fields: before,
                    };
                    let body = E::Body::decode(RawBody::Upload(upload))?;
                    E::handle(board, caller, Call::new(path, query, body)).await
                },
            )
            .await?;
            let response = E::late_fields(board, caller, path, response, late).await?;
            Ok(render(status, response.encode()?, &uri))
        }
    }
}

fn render(status: StatusCode, encoded: Encoded, uri: &hyper::Uri) -> Response<ResBody> {
    match encoded {
        Encoded::Json(bytes) => full(status, JSON, bytes),
        Encoded::Page { json, next } => {
            let mut res = full(status, JSON, json);
            if let Some(link) = next.and_then(|c| HeaderValue::from_str(&next_link(uri, &c)).ok()) {
                res.headers_mut().insert(header::LINK, link);
            }
            res
        }
        Encoded::Stream(chunks) => crate::http::streamed(status, JSON, chunks),
        Encoded::Download(d) => files::download(d),
        Encoded::Upgrade(_) => crate::http::error(&Error::bad_request("this endpoint does not upgrade")),
    }
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

/// Serves a routed request.
pub(crate) async fn dispatch(
    state: &State,
    target: Target,
    ids: PathIds,
    req: Request<Incoming>,
) -> Result<Response<ResBody>, Reject> {
    match target {
        Target::Api(route) => (route.serve)(state, &route, ids, req).await,
        Target::Docs => Ok(full(
            StatusCode::OK,
            HeaderValue::from_static("text/html; charset=utf-8"),
            Bytes::from_static(crate::openapi::DOCS_PAGE.as_bytes()),
        )),
        Target::OpenApi => Ok(full(StatusCode::OK, JSON, crate::openapi::document_bytes())),
        Target::Panic => panic!("the test route panics"),
    }
}
