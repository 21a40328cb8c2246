//! Integration tests of the HTTP server: one binary, one real server per
//! test on port 0 with its own data directory.

mod admin;
mod auth;
mod files;
mod fuzz;
mod http;
mod lease_crash;
mod lists;
mod members;
mod messages;
mod metrics;
mod oidc;
mod openapi;
mod parsing;
mod projects;
mod protocol;
mod ready;
mod receiver;
mod runs;
mod security;
mod start;
pub mod support;
mod tasks;
mod tokens;
mod typos;
mod webhook_crash;
mod webhooks;
mod work;
mod ws;
