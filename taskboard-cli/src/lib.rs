//! # taskboard-cli
//!
//! The `taskboard` command, and a typed HTTP client of the Taskboard API
//! ([`client`]) for other Rust programs and agent tools.
//!
//! Every command is written once against [`backend::Backend`], which the
//! local board ([`backend::LocalBackend`], through taskboard-core) and a
//! server ([`backend::RemoteBackend`], through the client) both implement.
#![forbid(unsafe_code)]

pub mod backend;
pub mod cli;
pub mod client;
mod commands;
pub mod login;
mod output;
pub mod sse;

use std::process::ExitCode;

use clap::Parser;

pub use commands::Failure;

/// Parses the command line, runs it and maps the outcome to the exit code:
/// 0 success, 1 an error of the board (its `detail` on stderr), 2 a usage
/// error.
pub fn main() -> ExitCode {
    // clap exits with 2 on usage errors by itself.
    let cli = cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(text)) => {
            eprintln!("error: {text}");
            ExitCode::from(2)
        }
        Err(Failure::Api(e)) => {
            eprintln!("error: {}", e.detail());
            ExitCode::from(1)
        }
    }
}
