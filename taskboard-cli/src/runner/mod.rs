//! `taskboard agent run` and `taskboard agent guard`: the runner
//! (taskboard-runner) given this command line's HTTP client, and local
//! mode, where the runner serves the board it opens.

pub mod local;

pub use taskboard_runner::{guard, pid_dir};

use std::path::PathBuf;

use taskboard_core::Result;

use crate::client::Client;

/// What `taskboard agent run` was given.
pub struct Options {
    pub config: Option<PathBuf>,
    pub agents: Vec<String>,
    /// `--server`, `TASKBOARD_SERVER` or the stored login's server; in
    /// local mode, where this process serves the board.
    pub server: Option<String>,
    /// Local mode: `server` is this process's, whatever the file says.
    pub local: bool,
}

/// Runs until interrupted (SIGINT or SIGTERM): the agents' processes are
/// then stopped and their runs end `failed`.
pub async fn run(o: Options) -> Result<()> {
    let Options { config, agents, server, local } = o;
    taskboard_runner::run(taskboard_runner::Options { config, agents, server, local, connect: Client::new })
        .await
}
