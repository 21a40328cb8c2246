//! What an endpoint is: one type per endpoint, implementing [`Endpoint`]
//! with its route, its typed inputs, its answer and the scope it needs.
//!
//! These are declarations only. The core performs them (its `Handle`
//! trait, one implementation per endpoint here), and everything else is
//! derived from them: the server's router and dispatch, the typed HTTP
//! client, the MCP tools and the OpenAPI document. A client depends on
//! this crate alone and calls any endpoint through [`Perform`].
//!
//! [`Perform`]: crate::perform::Perform

use uuid::Uuid;

use crate::body::{QueryParams, RawBody, RequestBody};
use crate::error::Result;
use crate::reply::Reply;
use crate::{Paged, Wire};

/// HTTP method of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    /// The scope an endpoint of this method needs when its declaration
    /// names none: reading for GET, administration for the rest.
    pub const fn default_scope(self) -> crate::model::Scope {
        match self {
            Method::Get => crate::model::Scope::Read,
            _ => crate::model::Scope::Admin,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

/// The route and documentation of an endpoint.
#[derive(Debug, Clone, Copy)]
pub struct Info {
    /// Name used in logs, metrics and as the OpenAPI operationId.
    pub name: &'static str,
    pub method: Method,
    /// Path in matchit syntax; every `{parameter}` is a uuid.
    pub path: &'static str,
    /// Whether the endpoint needs credentials.
    pub auth: bool,
    /// Status of a successful answer.
    pub status: u16,
    /// One line for lists and the OpenAPI summary.
    pub summary: &'static str,
    /// What it does, its rules and its errors, for the reference.
    pub description: &'static str,
    /// Error statuses the endpoint can answer besides those every
    /// endpoint can (401 for authenticated ones, 413 and 422 for bodies).
    pub errors: &'static [u16],
}

/// One endpoint's declaration. Implemented by a unit type per endpoint,
/// grouped by resource in the modules of [`crate::api`].
pub trait Endpoint: Send + Sync + 'static {
    const INFO: Info;
    /// The uuids of the path, in order: `()`, `Uuid` or `(Uuid, Uuid)`.
    type Path: PathParams;
    /// The query string: `()` or a struct of optional fields.
    type Query: QueryParams;
    /// The body: `()`, a JSON type or an [`Upload`](crate::Upload).
    type Body: RequestBody;
    /// The answer: a JSON type, a [`Download`](crate::Download) or an
    /// [`Upgrade`](crate::Upgrade).
    type Response: Reply;

    /// The scope an access token needs for this endpoint (docs/rules.md,
    /// access tokens): `read` for a GET, `admin` for any other method
    /// unless the declaration names a narrower one.
    const SCOPE: crate::model::Scope = Self::INFO.method.default_scope();

    /// The endpoint is about the board rather than one project (members,
    /// labels, the list of projects), so a token restricted to projects
    /// may call it. Elsewhere such a token must name a project of its own
    /// (a `{project_id}`, `{task_id}`, `{run_id}` or `{message_id}` in the
    /// path, or a `project_id`, `task_id` or `chat_id` in the query or
    /// body).
    const BOARD_WIDE: bool = false;

    /// The most bytes of JSON body the endpoint must accept, when that is
    /// more than a server's limit for bodies (which then applies to every
    /// other endpoint): a run's changes carry up to two diffs of 2 MB.
    const BODY_LIMIT: Option<usize> = None;

    /// The cookie the endpoint reads; no other endpoint sees the request's
    /// cookies.
    const COOKIE: Option<&'static str> = None;

    /// Whether `If-Match` makes the endpoint conditional: the board then
    /// compares the entity tag of the one resource it changes (the
    /// OpenAPI document lists the header where this is set).
    const CONDITIONAL: bool = false;
}

/// A list endpoint's declaration, from which its [`Endpoint`] follows: the
/// answer is the page asked for ([`Paged`]).
pub trait ListEndpoint: Send + Sync + 'static {
    const INFO: Info;
    /// See [`Endpoint::BOARD_WIDE`].
    const BOARD_WIDE: bool = false;
    type Path: PathParams;
    /// A query holding a [`Page`](crate::Page), with the list's filters.
    type Query: QueryParams;
    type Item: Wire;
}

impl<L: ListEndpoint> Endpoint for L {
    const INFO: Info = L::INFO;
    const BOARD_WIDE: bool = L::BOARD_WIDE;
    type Path = L::Path;
    type Query = L::Query;
    type Body = ();
    type Response = Paged<L::Item>;
}

/// The inputs of one call of `E`.
#[derive(Debug)]
pub struct Call<E: Endpoint + ?Sized> {
    pub path: E::Path,
    pub query: E::Query,
    pub body: E::Body,
}

impl<E: Endpoint> Call<E> {
    pub fn new(path: E::Path, query: E::Query, body: E::Body) -> Call<E> {
        Call { path, query, body }
    }
}

// ---- path ------------------------------------------------------------------

/// The uuids of a path, in path order.
pub trait PathParams: Copy + Send + Sync + 'static {
    /// From the parsed path segments (as many as the path has).
    fn from_ids(ids: &[Uuid]) -> Self;
    fn ids(&self) -> Vec<Uuid>;
}

impl PathParams for () {
    fn from_ids(_: &[Uuid]) {}
    fn ids(&self) -> Vec<Uuid> {
        Vec::new()
    }
}

impl PathParams for Uuid {
    fn from_ids(ids: &[Uuid]) -> Uuid {
        ids[0]
    }
    fn ids(&self) -> Vec<Uuid> {
        vec![*self]
    }
}

impl PathParams for (Uuid, Uuid) {
    fn from_ids(ids: &[Uuid]) -> (Uuid, Uuid) {
        (ids[0], ids[1])
    }
    fn ids(&self) -> Vec<Uuid> {
        vec![self.0, self.1]
    }
}

/// Decodes the body of `E` and names the fields it ignores. A PATCH whose
/// fields are all unknown would change nothing, so it is refused, naming
/// the nearest known field; elsewhere unknown fields are ignored.
pub fn decode_body<E: Endpoint>(raw: RawBody) -> Result<(E::Body, Vec<String>)> {
    let (unknown, known) = E::Body::fields(&raw);
    let body = E::Body::decode(raw)?;
    if E::INFO.method == Method::Patch && !unknown.is_empty() && known.is_empty() {
        return Err(crate::fields::unknown("field", &unknown, &E::Body::known_fields()));
    }
    Ok((body, unknown))
}

// ---- the list ------------------------------------------------------------------

/// Something done once per endpoint type: documenting, listing tools.
pub trait Visitor {
    fn visit<E: Endpoint>(&mut self);
}

macro_rules! visit_each {
    ($($endpoint:path),* $(,)?) => {
        /// Visits every endpoint, in the order of the reference.
        pub fn visit_all(v: &mut impl Visitor) {
            $(v.visit::<$endpoint>();)*
        }
    };
}
crate::every_endpoint!(visit_each);

/// The route and documentation of every endpoint.
pub fn infos() -> Vec<&'static Info> {
    struct Collect(Vec<&'static Info>);
    impl Visitor for Collect {
        fn visit<E: Endpoint>(&mut self) {
            self.0.push(&E::INFO);
        }
    }
    let mut c = Collect(Vec::new());
    visit_all(&mut c);
    c.0
}
