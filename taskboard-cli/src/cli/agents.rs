//! `taskboard agent …`.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum AgentCmd {
    /// Run agents: claim their ready work, start them, supervise them.
    #[command(after_help = "Examples:\n  taskboard agent run --config runner.toml\n  \
taskboard --server http://127.0.0.1:8080 agent run --agent coder --config runner.toml\n\n\
A long-running process acting for the agents of its configuration file (README, \"The runner\"), \
each with its own token. For each agent it follows the event stream, picks up the runs a person \
started for it, claims ready tasks carrying its labels under a lease, and starts the agent's \
command on each with the task as Markdown on stdin, in a git worktree of the project's repository \
(or an empty directory). Exit 0 ends the run succeeded and the task goes to review; anything else \
ends it failed and gives the task back. A run cancelled on the board, or whose task is moved away, \
stops the agent's whole process group. SIGINT or SIGTERM stops the runner and its agents.")]
    Run {
        /// Only this agent of the file (its slug); repeat for more. Default: every agent.
        #[arg(long = "agent", value_name = "SLUG")]
        agents: Vec<String>,
        /// The runner's configuration file (default ~/.config/taskboard/runner.toml).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}
