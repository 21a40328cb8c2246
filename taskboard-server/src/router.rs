//! Paths to endpoints: a matchit router keyed by path, each path holding
//! its method table, so an unknown path is a 404 and a known path with
//! another method a 405 with `Allow` (docs/rules.md, requests and errors).

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response};
use taskboard_core::api::{self, Handle, Info, Method as ApiMethod, QueryParams, RequestBody, Visitor};
use taskboard_core::{Error, Result};
use uuid::Uuid;

use crate::State;
use crate::parse::{self, QueryKinds};
use crate::response::{Reject, ResBody};

/// The future of a served request.
pub(crate) type Served<'a> =
    Pin<Box<dyn Future<Output = std::result::Result<Response<ResBody>, Reject>> + Send + 'a>>;

/// Serves one endpoint.
pub(crate) type ServeFn =
    for<'a> fn(&'a State, &'a Route, PathIds, Request<Incoming>, crate::Peer) -> Served<'a>;

/// How a request to an endpoint is served: given to the router by the
/// layer above it, which reads requests into the endpoint's types.
pub(crate) trait Serving {
    fn serve<E: Handle>() -> ServeFn;
}

/// What the router keeps of an endpoint.
pub(crate) struct Route {
    pub info: &'static Info,
    /// The kinds of the query's fields, read once from its schema.
    pub query: QueryKinds,
    /// The JSON Schema a JSON body is held to before it is read.
    pub body: Option<serde_json::Value>,
    pub serve: ServeFn,
    /// Its requests, counted for the metrics.
    pub counters: crate::metrics::Counters,
}

impl Route {
    fn of<E: Handle>(serve: ServeFn) -> Route {
        let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let query = E::Query::schema(&mut generator).map(|s| parse::kinds_of(&s)).unwrap_or_default();
        let body = E::Body::root_schema().map(|s| s.to_value());
        Route { info: &E::INFO, query, body, serve, counters: crate::metrics::Counters::new() }
    }
}

/// What a request reaches.
#[derive(Clone)]
pub(crate) enum Target {
    Api(Arc<Route>),
    Docs,
    OpenApi,
    Panic,
}

impl Target {
    /// The endpoint name used in logs.
    pub fn name(&self) -> &'static str {
        match self {
            Target::Api(route) => route.info.name,
            Target::Docs => "docs",
            Target::OpenApi => "openapi",
            Target::Panic => "panic",
        }
    }
}

struct PathEntry {
    methods: Vec<(Method, Target)>,
    allow: HeaderValue,
}

pub(crate) struct Router {
    inner: matchit::Router<PathEntry>,
    /// Every endpoint's route, for the metrics.
    routes: Vec<Arc<Route>>,
}

/// The outcome of routing a request.
pub(crate) enum Routed {
    Found(Target, PathIds),
    NotFound,
    MethodNotAllowed(HeaderValue),
    BadParam(Error),
}

/// The path parameters, in path order. Every parameter of the API is a
/// uuid, so they are parsed here, once.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PathIds {
    ids: [Uuid; 2],
    len: usize,
}

impl PathIds {
    pub fn as_slice(&self) -> &[Uuid] {
        &self.ids[..self.len]
    }
}

/// The routes of every endpoint of the core, each served by `S`.
struct Routes<S>(Vec<(&'static str, Method, Target)>, PhantomData<S>);

impl<S: Serving> Visitor for Routes<S> {
    fn visit<E: Handle>(&mut self) {
        let route = Route::of::<E>(S::serve::<E>());
        self.0.push((E::INFO.path, method(E::INFO.method), Target::Api(Arc::new(route))));
    }
}

fn method(m: ApiMethod) -> Method {
    match m {
        ApiMethod::Get => Method::GET,
        ApiMethod::Post => Method::POST,
        ApiMethod::Put => Method::PUT,
        ApiMethod::Patch => Method::PATCH,
        ApiMethod::Delete => Method::DELETE,
    }
}

impl Router {
    pub fn new<S: Serving>(dev: bool, panic_route: bool) -> Router {
        let mut routes = Routes::<S>(Vec::new(), PhantomData);
        api::visit_all(&mut routes);
        let mut routes = routes.0;
        if dev {
            routes.push(("/docs", Method::GET, Target::Docs));
            routes.push(("/openapi.json", Method::GET, Target::OpenApi));
        }
        if panic_route {
            routes.push(("/__panic", Method::GET, Target::Panic));
        }
        let api_routes = routes
            .iter()
            .filter_map(|(_, _, target)| match target {
                Target::Api(route) => Some(route.clone()),
                _ => None,
            })
            .collect();
        let mut paths: Vec<(&'static str, Vec<(Method, Target)>)> = Vec::new();
        for (path, m, target) in routes {
            match paths.iter_mut().find(|(p, _)| *p == path) {
                Some((_, methods)) => methods.push((m, target)),
                None => paths.push((path, vec![(m, target)])),
            }
        }
        let mut inner = matchit::Router::new();
        for (path, methods) in paths {
            let allow = methods.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>().join(", ");
            let allow = HeaderValue::from_str(&allow).expect("method names are valid header text");
            inner.insert(path, PathEntry { methods, allow }).expect("the endpoint paths do not conflict");
        }
        Router { inner, routes: api_routes }
    }

    /// The route of every endpoint.
    pub fn routes(&self) -> &[Arc<Route>] {
        &self.routes
    }

    pub fn route(&self, method: &Method, path: &str) -> Routed {
        let Ok(matched) = self.inner.at(path) else {
            return Routed::NotFound;
        };
        let Some((_, target)) = matched.value.methods.iter().find(|(m, _)| m == method) else {
            return Routed::MethodNotAllowed(matched.value.allow.clone());
        };
        let mut ids = PathIds::default();
        for (i, (name, value)) in matched.params.iter().enumerate().take(2) {
            match parse_id(name, value) {
                Ok(id) => {
                    ids.ids[i] = id;
                    ids.len = i + 1;
                }
                Err(e) => return Routed::BadParam(e),
            }
        }
        Routed::Found(target.clone(), ids)
    }
}

fn parse_id(name: &str, value: &str) -> Result<Uuid> {
    Uuid::try_parse(value).map_err(|_| Error::invalid(name, format!("{value:?} is not a valid uuid")))
}
