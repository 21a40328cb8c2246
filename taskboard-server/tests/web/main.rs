//! The web board: how it is served, and browser tests in headless Chromium
//! against a real server (docs/decisions.md, web board).

mod agents;
mod changes;
mod details;
mod driver;
mod files;
mod harness;
mod hooks;
mod imports;
mod member;
mod people;
#[path = "../api/receiver.rs"]
mod receiver;
mod scenarios;
mod serving;
mod sso;
