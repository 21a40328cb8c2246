//! The MCP server with a real MCP client (rmcp's): over Streamable HTTP
//! against the server, and over stdio against the `taskboard` binary.

mod http;
mod sessions;
mod stdio;
mod support;
