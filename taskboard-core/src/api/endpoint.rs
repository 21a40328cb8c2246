//! How the core performs an endpoint: [`Handle`], one implementation per
//! endpoint declared in the wire (`taskboard_wire::api`), holding the
//! core function that performs it, and [`Caller`], who calls.
//!
//! The server's router and dispatch and the command line's local mode
//! call these; the declarations themselves (route, inputs, answer, scope)
//! are the wire's, so a client needs only that crate.

use std::net::IpAddr;

use crate::board::{Actor, Board, List, Resource};
use crate::error::{Error, Result};

pub use crate::wire::body::{BodyKind, Optional, QueryParams, RawBody, RequestBody};
pub use crate::wire::endpoint::{Call, Endpoint, Info, ListEndpoint, Method, PathParams, decode_body};
pub use crate::wire::{
    Download, Encoded, LateFields, Redirect, Reply, ReplyKind, Upgrade, Upload, Wire, schema_of,
};

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
    /// [`Endpoint::COOKIE`](crate::wire::endpoint::Endpoint::COOKIE), when the request sent it.
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

/// How the board performs an endpoint. Implemented for every endpoint
/// type of `taskboard_wire::api`, grouped by resource in the modules of
/// [`crate::api`].
pub trait Handle: Endpoint {
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

    /// For a PATCH or DELETE of one resource: the resource, whose entity
    /// tag the board reads inside the transaction of the change and
    /// checks `If-Match` against; `None` where the endpoint has no single
    /// resource to compare (an endpoint that returns one here declares
    /// [`Endpoint::CONDITIONAL`]).
    fn resource(path: Self::Path) -> Option<Resource> {
        let _ = path;
        None
    }
}

/// How the board performs a list endpoint: the list a call reads, from
/// which its [`Handle`] follows. The typed answer is the page asked for
/// ([`Paged`]); the server sends [`List::encode`]: a page, or a whole list
/// that turns out small, in one go, a longer whole list streamed.
///
/// [`Paged`]: super::Paged
pub trait ListHandler: ListEndpoint {
    /// The list a call reads.
    fn list(board: &Board, caller: &Caller, path: Self::Path, query: Self::Query)
    -> Result<List<Self::Item>>;
}

impl<L: ListHandler> Handle for L {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<super::Paged<L::Item>> {
        L::list(board, caller, call.path, call.query)?.await
    }

    async fn handle_encoded(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Encoded> {
        L::list(board, caller, call.path, call.query)?.encode().await
    }
}

// ---- the list ------------------------------------------------------------------

/// Something done once per endpoint type with its handler: building
/// routes. (What needs only the declarations visits them in the wire:
/// `taskboard_wire::endpoint::visit_all`.)
pub trait Visitor {
    fn visit<E: Handle>(&mut self);
}

macro_rules! visit_each {
    ($($endpoint:path),* $(,)?) => {
        /// Visits every endpoint, in the order of the reference.
        pub fn visit_all(v: &mut impl Visitor) {
            $(v.visit::<$endpoint>();)*
        }
    };
}
crate::wire::every_endpoint!(visit_each);
