//! Runs answering a message (docs/decisions.md, "Runner"): which
//! messages an agent answers by its `chat_listen` and `task_listen`, and
//! one such run from start to end. A command agent reads the message and
//! the conversation before it on stdin, in a scratch directory; what it
//! writes on stdout is posted as its reply when it exits 0. An ACP agent
//! gets the same as its prompt, and what it says is posted as replies.

use taskboard_core::api::{
    ListMessages, MessageFilter, NewMessage, NewMessageRun, PostMessage, RunPatch, StartMessageRun, UpdateRun,
};
use taskboard_core::model::{AuthorType, Listen, Message};
use taskboard_core::review::RunPurpose;
use taskboard_core::runs::{Run, RunState};
use taskboard_core::{Error, ErrorKind, Perform, Result};

use super::agent;
use super::command::REPLY_CHARS;
use super::job::{Job, Outcome, Target};
use super::message_prompt::{self, Ask};
use super::reports::{self, End};
use super::workspace::Workspace;
use super::{AgentCtx, Live};

/// Messages looked through, newest first, to find the one answered.
const SEARCH_PAGES: usize = 10;

/// Whether the agent answers `m`, a `message.new` of its event stream:
/// never its own; a chat message by `chat_listen`, a comment by
/// `task_listen`: `mentions` when it is mentioned, `all` also every
/// message of a person (not of another agent, so two agents never answer
/// each other without end).
pub(super) fn answers<C>(a: &AgentCtx<C>, m: &Message) -> bool {
    if m.author_id == Some(a.me.id) {
        return false;
    }
    let listen =
        if m.task_id.is_some() { a.me.agent_config.task_listen } else { a.me.agent_config.chat_listen };
    let mentioned = m.mentions.iter().any(|r| r.id == a.me.id);
    mentioned || (listen == Listen::All && m.author_type == AuthorType::Human && m.author_id.is_some())
}

/// Asks the board for a run of the agent answering `m`: named for this
/// runner when it has a free slot (the run is then started here), else
/// unnamed, for the first runner of the agent with a free slot. None when
/// another runner already answers it (409).
pub(super) async fn ask<C: Perform>(a: &AgentCtx<C>, m: &Message, named: bool) -> Result<Option<Run>> {
    let new = NewMessageRun { agent_id: a.me.id, runner: named.then(|| a.shared.name.clone()) };
    match a.client.call::<StartMessageRun>(m.id, (), new).await {
        Ok(run) => Ok(Some(run)),
        Err(e) if e.kind() == ErrorKind::Conflict => Ok(None),
        Err(e) => Err(e),
    }
}

/// The message `id`, looked for among the newest messages of the board.
async fn find_message<C: Perform>(a: &AgentCtx<C>, id: uuid::Uuid) -> Result<Message> {
    let mut cursor = None;
    for _ in 0..SEARCH_PAGES {
        let filter = MessageFilter { limit: Some(MessageFilter::MAX_LIMIT), cursor, ..Default::default() };
        let page = a.client.call::<ListMessages>((), filter, ()).await?;
        if let Some(m) = page.items.iter().find(|m| m.id == id) {
            return Ok(m.clone());
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Err(Error::not_found(format!("message {id} is not among the board's newest messages")))
}

/// Runs `run`, which answers a message, to its end.
pub(super) async fn run<C: Perform>(a: &AgentCtx<C>, run: Run, live: &Live) -> Result<()> {
    let Some(message_id) = run.message_id else { return Err(Error::internal("a run without a message")) };
    let message = find_message(a, message_id).await?;
    let filter = MessageFilter {
        chat_id: message.chat_id,
        task_id: message.task_id,
        limit: Some(message_prompt::CONTEXT + 1),
        ..Default::default()
    };
    let context = a.client.call::<ListMessages>((), filter, ()).await?.items;
    let markdown = message_prompt::render(&Ask {
        agent: &a.me,
        message: &message,
        task: run.task.as_ref(),
        context: &context,
        run: run.id,
    });
    let dir = a.shared.state.join("answers").join(run.id.to_string());
    super::state_dir::dir(&dir)?;
    let result = answer(a, &run, &message, &dir, markdown, live).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn answer<C: Perform>(
    a: &AgentCtx<C>,
    run: &Run,
    message: &Message,
    dir: &std::path::Path,
    markdown: String,
    live: &Live,
) -> Result<()> {
    let mut env: Vec<(String, String)> = a.entry.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    env.extend([
        ("TASKBOARD_SERVER".to_string(), a.shared.server.clone()),
        ("TASKBOARD_TOKEN".to_string(), a.token.clone()),
        ("TASKBOARD_RUN".to_string(), run.id.to_string()),
        ("TASKBOARD_MESSAGE".to_string(), message.id.to_string()),
        ("TASKBOARD_WORKSPACE".to_string(), dir.to_string_lossy().into_owned()),
    ]);
    if let Some(chat) = message.chat_id {
        env.push(("TASKBOARD_CHAT".to_string(), chat.to_string()));
    }
    if let Some(t) = &run.task {
        env.push(("TASKBOARD_TASK".to_string(), t.key.clone()));
        env.push(("TASKBOARD_TASK_ID".to_string(), t.id.to_string()));
    }
    if let Some(model) = a.entry.model.clone().or_else(|| a.me.agent_config.model.clone()) {
        env.push(("TASKBOARD_MODEL".to_string(), model));
    }
    let ws = Workspace::scratch(dir.to_path_buf());
    let job = Job {
        run,
        target: Target::Reply(message.clone()),
        ws: &ws,
        env,
        markdown,
        prompt_file: None,
        lease: None,
    };
    let Outcome { end, tail, reply, .. } = agent::run(a, job, live).await?;
    let (state, exit_code, stop_reason) = match (end, reply) {
        // A command agent's standard output is its reply; an ACP agent's
        // words were posted as replies while it spoke.
        (End::Exited(Some(0)), Some(reply)) => {
            let content: String = reply.trim().chars().take(REPLY_CHARS).collect();
            let posted = if content.is_empty() {
                Some("the agent wrote no answer".to_string())
            } else {
                let new = NewMessage {
                    chat_id: message.chat_id,
                    task_id: message.task_id,
                    parent_id: Some(message.id),
                    content,
                    ..Default::default()
                };
                match a.client.call::<PostMessage>((), (), new).await {
                    Ok(_) => None,
                    Err(e) => {
                        return Err(Error::bad_request(format!("the reply was refused: {}", e.detail())));
                    }
                }
            };
            (RunState::Succeeded, Some(0), posted)
        }
        (End::Exited(code), Some(_)) => {
            let why = if code.is_none() { "killed by a signal" } else { "exited" };
            let reason = if tail.is_empty() {
                format!("the agent {why}, without output")
            } else {
                format!("the agent {why}; the end of its output:\n{tail}")
            };
            (RunState::Failed, code, Some(reason))
        }
        (End::Exited(_), None) => {
            (RunState::Failed, None, Some("the agent ended before its turn did".to_string()))
        }
        (End::TimedOut, _) => {
            (RunState::TimedOut, None, Some(format!("no end after {} seconds", a.entry.timeout_seconds)))
        }
        (End::Stopped, _) => (RunState::Failed, None, Some("the runner stopped".to_string())),
        (End::Failed(reason), _) => (RunState::Failed, None, Some(reason)),
        (End::Turn { state, reason }, _) => (state, None, reason),
        (End::Cancelled | End::LeaseLost(_), _) => return Ok(()),
    };
    let done = RunPatch {
        state: Some(state),
        exit_code,
        stop_reason: stop_reason.map(|r| r.chars().take(2000).collect()),
        ..Default::default()
    };
    reports::end_run(a, run.id, done).await
}

/// Ends the runs holding no lease that a predecessor runner (of the same
/// state directory) left open: runs answering a message, reviewing,
/// landing or discarding. Their agent's process is gone and, without a
/// lease, nothing else would end them. `runs` are the runs its pid files
/// named.
pub(super) async fn end_left_open<C: Perform>(a: &AgentCtx<C>, runs: &[uuid::Uuid]) {
    for id in runs {
        let Ok(run) = a.client.call::<taskboard_core::api::GetRun>(*id, (), ()).await else { continue };
        if run.agent.id != a.me.id || run.state.is_final() {
            continue;
        }
        let reason = match (run.message_id, run.work.purpose) {
            (Some(_), _) => "the runner stopped before the agent answered",
            (None, RunPurpose::Work) => continue,
            (None, RunPurpose::Review) => "the runner stopped before the reviewer ended",
            (None, RunPurpose::Land) => "the runner stopped during the landing; merge again",
            (None, RunPurpose::Discard) => "the runner stopped before the branch was deleted; discard again",
        };
        let patch = RunPatch {
            state: Some(RunState::Failed),
            stop_reason: Some(reason.to_string()),
            ..Default::default()
        };
        let _ = a.client.call::<UpdateRun>(*id, (), patch).await;
    }
}
