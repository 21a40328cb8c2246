//! Several `taskboard-server` processes on one PostgreSQL database: the
//! real binary started three times with `--database` on a throwaway
//! cluster (one per test binary, a fresh schema per test), driven over
//! HTTP, WebSocket and MCP as a load balancer would spread clients.

mod crash;
mod events;
mod logins;
mod mcp;
#[path = "../api/receiver.rs"]
mod receiver;
mod support;
mod work;
