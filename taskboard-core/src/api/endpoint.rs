//! What an endpoint is: one type per endpoint, implementing [`Endpoint`]
//! with its route, its typed inputs, its response and the core function
//! that performs it.
//!
//! The server's router and dispatch, the typed HTTP client, the command
//! line's local and remote modes and the OpenAPI document are all derived
//! from these declarations, so none of them can drift from another: a new
//! endpoint is one declaration and one core function.

use std::net::IpAddr;

use bytes::Bytes;
use schemars::{Schema, SchemaGenerator};
use uuid::Uuid;

use crate::board::{Actor, Board, List, Resource};
use crate::error::{Error, Result};

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

// ---- query -------------------------------------------------------------------

/// A query string type.
pub trait QueryParams: Send + Sync + 'static + Sized {
    /// The JSON Schema of the query as an object, `None` for no query.
    fn schema(g: &mut SchemaGenerator) -> Option<Schema>;
    /// From the query as a JSON object (values typed by the schema).
    fn from_json(value: serde_json::Value) -> Result<Self>;
    /// The query's fields, for a URL.
    fn to_json(&self) -> Result<serde_json::Value>;
}

impl QueryParams for () {
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    fn from_json(value: serde_json::Value) -> Result<()> {
        match value {
            serde_json::Value::Object(map) if !map.is_empty() => {
                let names: Vec<String> = map.keys().cloned().collect();
                Err(super::fields::unknown("query parameter", &names, &[]))
            }
            _ => Ok(()),
        }
    }
    fn to_json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::Value::Object(Default::default()))
    }
}

impl<T: Wire> QueryParams for T {
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        });
        Some(settings.into_generator().into_root_schema_for::<T>())
    }
    fn from_json(value: serde_json::Value) -> Result<T> {
        if let serde_json::Value::Object(map) = &value {
            let known = super::fields::known::<T>();
            let names: Vec<String> = map.keys().filter(|k| !known.contains(k)).cloned().collect();
            if !names.is_empty() {
                return Err(super::fields::unknown("query parameter", &names, &known));
            }
        }
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let message = e.into_inner().to_string();
            if let Some(missing) = message.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
                return Error::invalid(missing, "missing query parameter");
            }
            Error::invalid(if path == "." { "query" } else { &path }, message)
        })
    }
    fn to_json(&self) -> Result<serde_json::Value> {
        serde_json::to_value(self).map_err(Error::internal)
    }
}

// ---- bodies ------------------------------------------------------------------

/// What an endpoint takes as its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    None,
    Json,
    Multipart,
}

/// A body as it travels.
pub enum RawBody {
    None,
    Json(Bytes),
    Upload(Upload),
}

/// A request body type.
pub trait RequestBody: Send + 'static + Sized {
    const KIND: BodyKind;
    /// Whether the body may be left out.
    const OPTIONAL: bool = false;
    fn schema(g: &mut SchemaGenerator) -> Option<Schema>;
    fn decode(raw: RawBody) -> Result<Self>;
    fn encode(self) -> Result<RawBody>;
    /// The top-level fields of a JSON object body: those the type does
    /// not know, and those it knows.
    fn fields(raw: &RawBody) -> (Vec<String>, Vec<String>) {
        let _ = raw;
        (Vec::new(), Vec::new())
    }
    /// Every field the type knows.
    fn known_fields() -> std::sync::Arc<[String]> {
        std::sync::Arc::new([])
    }
    /// The body as JSON, for the fields that name a project
    /// (`scopes::permit`); `None` for no JSON body.
    fn json_view(&self) -> Option<serde_json::Value> {
        None
    }
    /// The JSON Schema of a JSON body as a document of its own, with its
    /// definitions.
    fn root_schema() -> Option<Schema> {
        None
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

impl RequestBody for () {
    const KIND: BodyKind = BodyKind::None;
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    fn decode(_: RawBody) -> Result<()> {
        Ok(())
    }
    fn encode(self) -> Result<RawBody> {
        Ok(RawBody::None)
    }
}

impl<T: Wire> RequestBody for T {
    const KIND: BodyKind = BodyKind::Json;
    fn schema(g: &mut SchemaGenerator) -> Option<Schema> {
        Some(schema_of::<T>(g))
    }
    fn decode(raw: RawBody) -> Result<T> {
        match raw {
            RawBody::Json(bytes) => crate::api::json::from_slice(&bytes),
            _ => Err(Error::invalid("body", "a JSON body is required")),
        }
    }
    fn encode(self) -> Result<RawBody> {
        serde_json::to_vec(&self).map(|v| RawBody::Json(v.into())).map_err(Error::internal)
    }
    fn fields(raw: &RawBody) -> (Vec<String>, Vec<String>) {
        let RawBody::Json(bytes) = raw else { return (Vec::new(), Vec::new()) };
        type Fields = std::collections::BTreeMap<String, serde::de::IgnoredAny>;
        let Ok(map) = serde_json::from_slice::<Fields>(bytes) else {
            return (Vec::new(), Vec::new());
        };
        let known = super::fields::known::<T>();
        map.into_keys().partition(|k| !known.contains(k))
    }
    fn known_fields() -> std::sync::Arc<[String]> {
        super::fields::known::<T>()
    }
    fn json_view(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self).ok()
    }
    fn root_schema() -> Option<Schema> {
        let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.meta_schema = None);
        Some(settings.into_generator().into_root_schema_for::<T>())
    }
}

/// A JSON body that may be left out: an absent or empty body is `None`.
#[derive(Debug, Clone, Default)]
pub struct Optional<T>(pub Option<T>);

impl<T: Wire> RequestBody for Optional<T> {
    const KIND: BodyKind = BodyKind::Json;
    const OPTIONAL: bool = true;
    fn schema(g: &mut SchemaGenerator) -> Option<Schema> {
        Some(schema_of::<T>(g))
    }
    fn decode(raw: RawBody) -> Result<Optional<T>> {
        match raw {
            RawBody::Json(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Optional(None)),
            RawBody::None => Ok(Optional(None)),
            raw => <T as RequestBody>::decode(raw).map(|t| Optional(Some(t))),
        }
    }
    fn encode(self) -> Result<RawBody> {
        match self.0 {
            Some(t) => RequestBody::encode(t),
            None => Ok(RawBody::None),
        }
    }
    fn fields(raw: &RawBody) -> (Vec<String>, Vec<String>) {
        <T as RequestBody>::fields(raw)
    }
    fn known_fields() -> std::sync::Arc<[String]> {
        <T as RequestBody>::known_fields()
    }
    fn json_view(&self) -> Option<serde_json::Value> {
        self.0.as_ref().and_then(RequestBody::json_view)
    }
    /// The schema a body that is there must fit.
    fn root_schema() -> Option<Schema> {
        <T as RequestBody>::root_schema()
    }
}

impl RequestBody for Upload {
    const KIND: BodyKind = BodyKind::Multipart;
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    fn decode(raw: RawBody) -> Result<Upload> {
        match raw {
            RawBody::Upload(u) => Ok(u),
            _ => Err(Error::invalid("body", "expected multipart/form-data with a file part")),
        }
    }
    fn encode(self) -> Result<RawBody> {
        Ok(RawBody::Upload(self))
    }
}

// ---- the list ------------------------------------------------------------------

/// Something done once per endpoint type: building routes, documenting.
pub trait Visitor {
    fn visit<E: Endpoint>(&mut self);
}
