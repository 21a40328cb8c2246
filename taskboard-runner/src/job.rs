//! What an agent is started on and how its run went, whichever way the
//! agent is driven: the words `agent` dispatches with and each mode
//! (`acp`, `command`) and each purpose (`supervise`, `reviewing`,
//! `answer`) shares, below all of them.

use std::path::PathBuf;

use taskboard_core::model::{Message, Task};
use taskboard_core::runs::Run;
use uuid::Uuid;

use super::AgentCtx;
use super::reports::End;
use super::workspace::Workspace;

/// Where what the agent says goes.
#[derive(Clone)]
pub(crate) enum Target {
    /// A run at a task: comments on it, the plan as its steps.
    Task(Uuid),
    /// A run answering a message: replies to it in its chat or thread;
    /// the plan stays in the transcript.
    Reply(Message),
    /// A reviewer's run: comments on the task it reviews; its plan stays
    /// in the transcript (the task's steps are its worker's).
    Review(Uuid),
}

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

/// The agent's environment: the runner file's `env`, then where the
/// board is, who the agent is and what it works on.
pub(crate) fn agent_env<C>(a: &AgentCtx<C>, run: &Run, task: &Task, ws: &Workspace) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = a.entry.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    env.extend([
        ("TASKBOARD_SERVER".to_string(), a.shared.server.clone()),
        ("TASKBOARD_TOKEN".to_string(), a.token.clone()),
        ("TASKBOARD_TASK".to_string(), task.key.clone()),
        ("TASKBOARD_TASK_ID".to_string(), task.id.to_string()),
        ("TASKBOARD_RUN".to_string(), run.id.to_string()),
        ("TASKBOARD_WORKSPACE".to_string(), ws.dir.to_string_lossy().into_owned()),
    ]);
    if let Some(model) = a.entry.model.clone().or_else(|| a.me.agent_config.model.clone()) {
        env.push(("TASKBOARD_MODEL".to_string(), model));
    }
    if let Some(lease) = task.lease.as_ref().filter(|l| l.holder.id == a.me.id) {
        env.push(("TASKBOARD_LEASE".to_string(), lease.id.to_string()));
    }
    env
}
