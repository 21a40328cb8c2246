//! The board over the Model Context Protocol: the tools, the task
//! resources and the `work_loop` prompt a language-model agent uses,
//! written once for both transports.
//!
//! Every tool performs the core's endpoint declarations
//! ([`taskboard_wire::api`]) through a [`Perform`]: the command line
//! performs them on a local board or through its HTTP client (`taskboard
//! mcp`, over stdio), the server performs them on its board as the member
//! of the request's bearer token (Streamable HTTP at `/mcp`). The tools'
//! input schemas are the JSON Schemas of the endpoints' own query and body
//! types, with arguments that name tasks, members and projects by key or
//! slug in place of ids; their output schemas are those of the answers.
//! A refused call is a tool result with `isError` and the API's detail.

use rmcp::model::Extensions;
use taskboard_wire::{Perform, Result};

mod handler;
mod leases;
mod refs;
mod render;
mod schema;
mod subscribe;
mod tools;

pub use handler::{McpServer, PROTOCOL_VERSIONS};
pub use tools::{Profile, REVIEWER_TOOL_NAMES, TOOL_NAMES, WAIT_CAP_SECONDS, WORKER_TOOL_NAMES};

/// Where a request's [`Perform`] comes from: the command line has one for
/// the whole process; the server makes one per request, for the member
/// of the request's credentials (found in the request's extensions).
pub trait Connect: Send + Sync + 'static {
    type Backend: Perform;
    /// The backend acting for the request whose extensions are given.
    fn backend(&self, extensions: &Extensions) -> Result<Self::Backend>;

    /// The scopes of the access token of that request, when it presented
    /// one: `tools/list` then lists only the tools they allow. `None`
    /// (the default) lists every tool, whose calls the board still checks.
    fn scopes(&self, _extensions: &Extensions) -> Option<Vec<taskboard_wire::model::Scope>> {
        None
    }
}

/// A [`Connect`] with one backend for every request (stdio).
#[derive(Debug, Clone)]
pub struct Fixed<B>(pub B);

impl<B: Perform> Connect for Fixed<B> {
    type Backend = B;
    fn backend(&self, _: &Extensions) -> Result<B> {
        Ok(self.0.clone())
    }
}
