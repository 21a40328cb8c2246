//! An agent started on a run, whichever way it is driven: the one place
//! where the agent's mode is dispatched (a new [`AgentMode`] does not
//! compile until it is handled here). What the run is for (a task, a
//! reply, a review) is the caller's; how the agent is spoken to is its
//! mode's.

use std::path::PathBuf;

use taskboard_core::runs::Run;
use taskboard_core::{Perform, Result};
use uuid::Uuid;

use super::acp::{self, Target};
use super::command;
use super::config::AgentMode;
use super::reports::End;
use super::workspace::Workspace;
use super::{AgentCtx, Live};

/// What an agent is started on.
pub(crate) struct Job<'a> {
    pub run: &'a Run,
    /// Where what an ACP agent says goes.
    pub target: Target,
    pub ws: &'a Workspace,
    pub env: Vec<(String, String)>,
    /// The prompt: an ACP agent's `session/prompt`, a command agent's
    /// stdin (or file).
    pub markdown: String,
    /// A command agent reads its prompt from this file (its path in
    /// `TASKBOARD_PROMPT_FILE`) instead of stdin.
    pub prompt_file: Option<PathBuf>,
    /// The task whose lease the run holds, renewed while the agent runs;
    /// None for a run that holds none.
    pub lease: Option<Uuid>,
}

/// How the agent's run went.
pub(crate) struct Outcome {
    pub end: End,
    /// What the agent said last: an ACP agent's last message, the last
    /// lines of a command agent's standard output.
    pub summary: String,
    /// The last lines of a command agent's whole output (stdout and
    /// stderr), for a failure's reason.
    pub tail: String,
    /// A command agent's standard output, which a run answering a
    /// message posts; None for an ACP agent, whose words are posted as
    /// it speaks.
    pub reply: Option<String>,
}

/// Starts the agent on `job` and supervises it to its end; its process
/// group is gone when this returns.
pub(crate) async fn run<C: Perform>(a: &AgentCtx<C>, job: Job<'_>, live: &Live) -> Result<Outcome> {
    match a.entry.mode {
        AgentMode::Command => command::run(a, job, live).await,
        AgentMode::Acp => acp::run(a, job, live).await,
    }
}
