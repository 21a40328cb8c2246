//! Integration tests of the HTTP server: one binary, one real server per
//! test on port 0 with its own data directory.

mod admin;
mod auth;
mod files;
mod http;
mod lists;
mod members;
mod messages;
mod projects;
pub mod support;
mod tasks;
mod typos;
mod ws;
