//! `taskboard mcp`: the board's MCP server (taskboard-mcp) over stdio,
//! performing the endpoints through this command line's backends, so it
//! works on a local board (acting `--as` a member) and against a server
//! (as the token's member) alike.

use rmcp::ServiceExt;
use taskboard_core::{Error, Perform};
use taskboard_mcp::{Fixed, McpServer};

use crate::exit::Failure;

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
