//! `taskboard agent …`.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum AgentCmd {
    /// Run agents: claim their ready work, start them, supervise them.
    #[command(after_help = "Examples:\n  taskboard agent run --config runner.toml\n  \
taskboard --server http://127.0.0.1:8080 agent run --agent coder --config runner.toml\n  \
taskboard --data-dir ./board agent run --config runner.toml\n\n\
A long-running process acting for the agents of its configuration file (README, \"The runner\"), \
each with its own token. For each agent it follows the event stream, picks up the runs a person \
started for it, claims ready tasks carrying its labels under a lease, and starts the agent on each \
in a git worktree of the project's repository (or an empty directory). An agent of mode \"acp\" \
speaks the Agent Client Protocol: its plan becomes the task's steps, its messages comments, its \
tool calls the transcript, its permission requests the run's question for a person to answer \
unless the file's permissions allow them. An \
agent of mode \"command\" gets the task as Markdown on stdin, and exit 0 succeeds. A run that \
succeeds pushes its branch taskboard/KEY, records its changes and sends the task to review; one that \
fails gives it back. The runner also performs its agents' landings and discards (merge, check, push) \
and their review runs. A run cancelled on the board, or \
whose task is moved away, stops the agent's whole process group. SIGINT or SIGTERM stops the \
runner and its agents. With --data-dir (or --database) the runner opens that local board and serves \
it to its agents on a loopback port of its own until it stops.")]
    Run {
        /// Only this agent of the file (its slug); repeat for more. Default: every agent.
        #[arg(long = "agent", value_name = "SLUG")]
        agents: Vec<String>,
        /// The runner's configuration file (default ~/.config/taskboard/runner.toml).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// The first process of an agent's process group (started by the
    /// runner): runs COMMAND and ends the whole group when the runner is
    /// gone.
    #[command(hide = true)]
    Guard {
        /// The runner's process id.
        #[arg(long, value_name = "PID")]
        parent: u32,
        /// The agent's command and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
}
