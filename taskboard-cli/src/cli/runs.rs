//! `taskboard run …`.

use clap::{ArgGroup, Subcommand};
use taskboard_core::runs::RunState;

use super::parse;

#[derive(Debug, Subcommand)]
pub enum RunCmd {
    /// List runs, newest first.
    #[command(after_help = "Examples:\n  taskboard run list\n  taskboard run list --task WEB-12\n  \
taskboard run list --agent coder --state running")]
    List {
        /// Only the runs of this task (key or id).
        #[arg(long)]
        task: Option<String>,
        /// Only the runs of this agent (slug or id).
        #[arg(long)]
        agent: Option<String>,
        /// Only runs in this state (starting, running, awaiting_input, succeeded, failed,
        /// cancelled, timed_out, lost).
        #[arg(long, value_parser = parse::<RunState>)]
        state: Option<RunState>,
        /// At most this many (1–1000, default 50).
        #[arg(long)]
        limit: Option<u32>,
        /// Where the page starts (printed after a full page).
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Show a run.
    #[command(after_help = "Example:\n  taskboard run show 01a2…")]
    Show {
        /// Run id, whole or as `run list` shows it.
        run: String,
    },
    /// Start a run of an agent on a task: the task goes to the agent under a lease, and the
    /// agent's runner starts it.
    #[command(after_help = "Example:\n  taskboard run start WEB-12 --agent coder")]
    Start {
        /// Task key or id.
        task: String,
        /// The agent (slug or id).
        #[arg(long)]
        agent: String,
        /// Seconds of the lease the run holds the task under (default 300).
        #[arg(long)]
        lease_seconds: Option<u32>,
    },
    /// Cancel a run: it ends at once, its task is given back, its runner stops the agent.
    #[command(after_help = "Example:\n  taskboard run cancel 01a2…")]
    Cancel {
        /// Run id, whole or as `run list` shows it.
        run: String,
    },
    /// Answer the question of a run awaiting input.
    #[command(
        after_help = "Examples:\n  taskboard run answer 01a2… --option allow\n  taskboard run answer 01a2… --text 'use the staging database'",
        group(ArgGroup::new("answer").required(true).args(["option", "text"]))
    )]
    Answer {
        /// Run id, whole or as `run list` shows it.
        run: String,
        /// The id of one of the question's options.
        #[arg(long)]
        option: Option<String>,
        /// An answer in words.
        #[arg(long)]
        text: Option<String>,
    },
    /// Print a run's transcript.
    #[command(after_help = "Examples:\n  taskboard run logs 01a2…\n  taskboard run logs 01a2… --follow\n\n\
With --follow, new entries are printed as the run writes them, until the run ends. With --json, \
each entry is a JSON line.")]
    Logs {
        /// Run id, whole or as `run list` shows it.
        run: String,
        /// Only entries after this number.
        #[arg(long, default_value_t = 0)]
        after: u64,
        /// Keep printing new entries until the run ends.
        #[arg(long, short)]
        follow: bool,
    },
}
