//! # taskboard-cli
//!
//! The `taskboard` command, and a typed HTTP client of the Taskboard API
//! ([`client`]) for other Rust programs and agent tools.
//!
//! Every command is written once against the core's
//! [`Perform`](taskboard_core::Perform), which the local board
//! ([`taskboard_core::BoardCaller`], opened by [`backend::open_local`]) and
//! a server ([`client::Client`]) both implement.
#![forbid(unsafe_code)]

pub mod backend;
pub mod cli;
mod commands;
pub mod exit;
pub mod import;
pub mod login;
mod mcp;
mod output;
pub mod runner;

use std::process::ExitCode;

use clap::Parser;
use taskboard_core::ErrorKind;

pub use exit::Failure;
/// The typed HTTP client, also a crate of its own (`taskboard-client`).
pub use taskboard_client as client;

/// Parses the command line, runs it and maps the outcome to the exit code
/// ([`exit::code`]): errors go to stderr, as JSON with `--json`.
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Known before parsing, so that a usage error can be JSON too.
    let json = args.iter().take_while(|a| *a != "--").any(|a| a == "--json");
    let cli = match cli::Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return exit::clap_failure(e, json),
    };
    if let cli::Command::Agent(cli::AgentCmd::Guard { parent, command }) = &cli.command {
        return runner::guard::run(*parent, command);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let e = taskboard_core::Error::new(ErrorKind::Internal, format!("cannot start the runtime: {e}"));
            return Failure::Api(e).report(json);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(json),
    }
}
