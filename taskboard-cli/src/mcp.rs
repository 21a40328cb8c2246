//! `taskboard mcp`: the board's MCP server (taskboard-mcp) over stdio,
//! performing the endpoints through this command line's backends, so it
//! works on a local board (acting `--as` a member) and against a server
//! (as the token's member) alike.

use std::sync::Arc;

use rmcp::ServiceExt;
use taskboard_core::Error;
use taskboard_core::api::Endpoint;
use taskboard_mcp::{Fixed, McpServer, Perform};
use uuid::Uuid;

use crate::backend::{LocalBackend, RemoteBackend};
use crate::exit::Failure;

/// A local board, shared by the tools of the one connection.
#[derive(Debug, Clone)]
pub(crate) struct Local(pub Arc<LocalBackend>);

impl Perform for Local {
    fn call<E: Endpoint>(
        &self,
        path: E::Path,
        query: E::Query,
        body: E::Body,
    ) -> impl Future<Output = taskboard_core::Result<E::Response>> + Send {
        let this = self.0.clone();
        async move { taskboard_core::api::call::<E>(&this.board, &this.caller, path, query, body).await }
    }

    /// `--lease-id` wins over the lease the connection remembers.
    fn presenting(&self, lease: Uuid) -> Local {
        let mut backend = (*self.0).clone();
        backend.caller.actor = backend.caller.actor.map(|a| match a.lease() {
            Some(_) => a,
            None => a.presenting(Some(lease)),
        });
        Local(Arc::new(backend))
    }
}

impl Perform for RemoteBackend {
    fn call<E: Endpoint>(
        &self,
        path: E::Path,
        query: E::Query,
        body: E::Body,
    ) -> impl Future<Output = taskboard_core::Result<E::Response>> + Send {
        let client = self.client.clone();
        async move { client.call::<E>(path, query, body).await }
    }

    /// `--lease-id` wins over the lease the connection remembers.
    fn presenting(&self, lease: Uuid) -> RemoteBackend {
        match self.client.lease() {
            Some(_) => self.clone(),
            None => RemoteBackend { client: self.client.with_lease(Some(lease)) },
        }
    }
}

/// Serves MCP on standard input and output until the client closes them.
pub(crate) async fn serve_stdio<B: Perform>(
    backend: B,
    profile: taskboard_mcp::Profile,
) -> Result<(), Failure> {
    let server = McpServer::new(Fixed(backend)).with_profile(profile);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Error::bad_request(format!("MCP session did not start: {e}")))?;
    running.waiting().await.map_err(|e| Error::internal(format!("MCP session failed: {e}")))?;
    Ok(())
}
