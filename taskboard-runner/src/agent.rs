//! An agent started on a run, whichever way it is driven: the one place
//! where the agent's mode is dispatched (a new [`AgentMode`] does not
//! compile until it is handled here). What the run is for (a task, a
//! reply, a review) is the caller's; how the agent is spoken to is its
//! mode's.

use taskboard_core::{Perform, Result};

use super::acp;
use super::command;
use super::config::AgentMode;
use super::job::{Job, Outcome};
use super::{AgentCtx, Live};

/// Starts the agent on `job` and supervises it to its end; its process
/// group is gone when this returns.
pub(crate) async fn run<C: Perform>(a: &AgentCtx<C>, job: Job<'_>, live: &Live) -> Result<Outcome> {
    match a.entry.mode {
        AgentMode::Command => command::run(a, job, live).await,
        AgentMode::Acp => acp::run(a, job, live).await,
    }
}
