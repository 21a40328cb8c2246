//! The HTTP tests of `tests/api` with every board kept in PostgreSQL
//! (see `support::on_postgres`), and what only a shared database has:
//! several servers on one board.

#[path = "../api/admin.rs"]
mod admin;
#[path = "../api/auth.rs"]
mod auth;
#[path = "../api/files.rs"]
mod files;
#[path = "../api/fuzz.rs"]
mod fuzz;
#[path = "../api/http.rs"]
mod http;
#[path = "../api/lists.rs"]
mod lists;
#[path = "../api/members.rs"]
mod members;
#[path = "../api/messages.rs"]
mod messages;
#[path = "../api/metrics.rs"]
mod metrics;
#[path = "../api/oidc.rs"]
mod oidc;
#[path = "../api/openapi.rs"]
mod openapi;
#[path = "../api/parsing.rs"]
mod parsing;
#[path = "../api/projects.rs"]
mod projects;
#[path = "../api/ready.rs"]
mod ready;
#[path = "../api/receiver.rs"]
mod receiver;
#[path = "../api/security.rs"]
mod security;
mod shared_database;
#[path = "../api/start.rs"]
mod start;
#[path = "../api/support.rs"]
pub mod support;
#[path = "../api/tasks.rs"]
mod tasks;
#[path = "../api/tokens.rs"]
mod tokens;
#[path = "../api/typos.rs"]
mod typos;
#[path = "../api/webhooks.rs"]
mod webhooks;
#[path = "../api/work.rs"]
mod work;
#[path = "../api/ws.rs"]
mod ws;
