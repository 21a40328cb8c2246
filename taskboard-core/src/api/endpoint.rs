//! What an endpoint is: one type per endpoint, implementing [`Endpoint`]
//! with its route, its typed inputs, its response and the core function
//! that performs it.
//!
//! The server's router and dispatch, the typed HTTP client, the command
//! line's local and remote modes and the OpenAPI document are all derived
//! from these declarations, so none of them can drift from another: a new
//! endpoint is one declaration and one core function.

use std::net::IpAddr;

use uuid::Uuid;

use crate::board::{Actor, Board, List, Resource};
use crate::error::{Error, Result};

pub use crate::wire::body::{BodyKind, Optional, QueryParams, RawBody, RequestBody};
pub use crate::wire::{
    Download, Encoded, LateFields, Redirect, Reply, ReplyKind, Upgrade, Upload, Wire, schema_of,
};

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

/// Who calls an endpoint: the member its credentials resolved to (none for
/// the endpoints without authentication) and the client's address.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    pub actor: Option<Actor>,
    pub address: Option<IpAddr>,
    /// The caller asked for a Server-Sent Events stream
    /// (`Accept: text/event-stream`), resuming after `Last-Event-ID`
    /// when it sent one.
    pub event_stream: Option<Option<u64>>,
    /// The value of the cookie the endpoint declares in
    /// [`Endpoint::COOKIE`], when the request sent it.
    pub cookie: Option<String>,
}

impl Caller {
    /// A caller acting as `actor`.
    pub fn member(actor: Actor) -> Caller {
        Caller { actor: Some(actor), ..Default::default() }
    }

    /// The same caller acting as `actor` (the same member, now carrying
    /// what its request asks of its writes).
    pub fn acting(&self, actor: Actor) -> Caller {
        Caller { actor: Some(actor), ..self.clone() }
    }

    /// The acting member; 401 for an anonymous caller.
    pub fn actor(&self) -> Result<&Actor> {
        self.actor.as_ref().ok_or_else(|| Error::unauthorized("credentials are required"))
    }
}

/// One endpoint. Implemented by a unit type per endpoint, grouped by
/// resource in the modules of [`crate::api`].
pub trait Endpoint: Send + Sync + 'static {
    const INFO: Info;
    /// The uuids of the path, in order: `()`, `Uuid` or `(Uuid, Uuid)`.
    type Path: PathParams;
    /// The query string: `()` or a struct of optional fields.
    type Query: QueryParams;
    /// The body: `()`, a JSON type or an [`Upload`].
    type Body: RequestBody;
    /// The answer: a JSON type, a [`Download`] or an [`Upgrade`].
    type Response: Reply;

    /// Performs the endpoint on the board.
    fn handle(
        board: &Board,
        caller: &Caller,
        call: Call<Self>,
    ) -> impl Future<Output = Result<Self::Response>> + Send;

    /// The answer in its wire form. The server calls this one; an endpoint
    /// whose answer the board keeps rendered overrides it to skip
    /// rendering again.
    fn handle_encoded(
        board: &Board,
        caller: &Caller,
        call: Call<Self>,
    ) -> impl Future<Output = Result<Encoded>> + Send {
        async move { Self::handle(board, caller, call).await?.encode() }
    }

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

    /// The cookie the endpoint reads, into [`Caller::cookie`]; no other
    /// endpoint sees the request's cookies.
    const COOKIE: Option<&'static str> = None;

    /// Whether the endpoint overrides [`Endpoint::resource`], so
    /// `If-Match` makes it conditional (the OpenAPI document lists the
    /// header where this is set).
    const CONDITIONAL: bool = false;

    /// For a PATCH or DELETE of one resource: the resource, whose entity
    /// tag the board reads inside the transaction of the change and
    /// checks `If-Match` against; `None` where the endpoint has no single
    /// resource to compare.
    fn resource(path: Self::Path) -> Option<Resource> {
        let _ = path;
        None
    }
}

/// A list endpoint: its declaration and the list a call reads, from
/// which its [`Endpoint`] follows. The typed answer is the page asked for
/// ([`Paged`]); the server sends [`List::encode`]: a page, or a whole list
/// that turns out small, in one go, a longer whole list streamed.
///
/// [`Paged`]: super::Paged
pub trait ListEndpoint: Send + Sync + 'static {
    const INFO: Info;
    /// See [`Endpoint::BOARD_WIDE`].
    const BOARD_WIDE: bool = false;
    type Path: PathParams;
    /// A query holding a [`Page`](super::Page), with the list's filters.
    type Query: QueryParams;
    type Item: Wire;

    /// The list a call reads.
    fn list(board: &Board, caller: &Caller, path: Self::Path, query: Self::Query)
    -> Result<List<Self::Item>>;
}

impl<L: ListEndpoint> Endpoint for L {
    const INFO: Info = L::INFO;
    const BOARD_WIDE: bool = L::BOARD_WIDE;
    type Path = L::Path;
    type Query = L::Query;
    type Body = ();
    type Response = super::Paged<L::Item>;

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<super::Paged<L::Item>> {
        L::list(board, caller, call.path, call.query)?.await
    }

    async fn handle_encoded(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Encoded> {
        L::list(board, caller, call.path, call.query)?.encode().await
    }
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
        return Err(super::fields::unknown("field", &unknown, &E::Body::known_fields()));
    }
    Ok((body, unknown))
}

// ---- the list ------------------------------------------------------------------

/// Something done once per endpoint type: building routes, documenting.
pub trait Visitor {
    fn visit<E: Endpoint>(&mut self);
}
