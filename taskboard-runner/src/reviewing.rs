//! Review runs (docs/decisions.md, 19.6): a reviewer agent of the project
//! reviews a task's changes. It gets the task and its changes as its
//! prompt, the whole diff as `CHANGES.diff` in a scratch directory (it
//! needs no clone: the board serves the changes), and files one review
//! through the board, with MCP `review_submit` or REST. It holds no
//! lease: the task is its worker's.

use taskboard_core::api::{
    GetProject, GetTask, GetTaskChanges, ListMessages, ListReviews, MessageFilter, RunPatch,
};
use taskboard_core::runs::{Run, RunState};
use taskboard_core::{Error, Perform, Result};

use super::agent;
use super::config::PromptVia;
use super::job::{Job, Target, agent_env};
use super::prompt::{self, Brief};
use super::reports::{end_run, ending};
use super::workspace::{self, Workspace};
use super::{AgentCtx, Live, state_dir};

pub(super) async fn run<C: Perform>(a: &AgentCtx<C>, run: Run, live: &Live) -> Result<()> {
    let c = &a.client;
    let Some(task_ref) = run.task.clone() else {
        return Err(Error::bad_request("a review run reviews a task; this run has none"));
    };
    let task = c.call::<GetTask>(task_ref.id, (), ()).await?;
    let project = c.call::<GetProject>(task.project.id, (), ()).await?;
    let changes = c.call::<GetTaskChanges>(task.id, (), ()).await?;
    let filter =
        MessageFilter { task_id: Some(task.id), limit: Some(prompt::COMMENTS), ..Default::default() };
    let comments = c.call::<ListMessages>((), filter, ()).await?.items;
    let work = a.shared.state.join("work");
    state_dir::dir(&work)?;
    let dir = work.join(format!("{}-{}", task.key, &run.id.simple().to_string()[..12]));
    state_dir::dir(&dir)?;
    state_dir::write(&dir.join("CHANGES.diff"), changes.diff.as_bytes())?;
    let ws = Workspace::scratch(dir);
    a.shared.live_dirs.lock().unwrap().push(ws.dir.clone());
    let brief = Brief {
        agent: &a.me,
        task: &task,
        project: &project,
        dependencies: &[],
        comments: &comments,
        run: run.id,
        branch: Some(&changes.branch),
    };
    let mut markdown = prompt::render(&brief);
    markdown.push_str(&prompt::to_review(&task, &changes, &a.shared.server));
    let mut env = agent_env(a, &run, &task, &ws);
    env.push((
        "TASKBOARD_CHANGES_FILE".to_string(),
        ws.dir.join("CHANGES.diff").to_string_lossy().into_owned(),
    ));
    let job = Job {
        run: &run,
        target: Target::Review(task.id),
        ws: &ws,
        env,
        markdown,
        prompt_file: (a.entry.prompt.unwrap_or_default() == PromptVia::File)
            .then(|| ws.dir.with_extension("md")),
        lease: None,
    };
    let result = match agent::run(a, job, live).await {
        Ok(outcome) => match ending(a, outcome.end) {
            None => Ok(()),
            Some((state, exit_code, stop_reason)) => {
                let (state, stop_reason) = match state {
                    RunState::Succeeded if !filed(a, &run).await => (
                        RunState::Failed,
                        Some(format!(
                            "the reviewer ended without filing a review of {} (review_submit, or POST \
                             /api/v1/tasks/{}/reviews)",
                            task.key, task.id
                        )),
                    ),
                    _ => (state, stop_reason),
                };
                let done = RunPatch {
                    state: Some(state),
                    exit_code,
                    stop_reason: stop_reason.map(|r| r.chars().take(2000).collect()),
                    ..Default::default()
                };
                end_run(a, run.id, done).await
            }
        },
        Err(e) => Err(e),
    };
    a.shared.live_dirs.lock().unwrap().retain(|d| *d != ws.dir);
    let live = a.shared.live_dirs.lock().unwrap().clone();
    let _ = workspace::clean(&a.shared.state, a.shared.keep, &live).await;
    result
}

/// Whether the reviewer filed a review of the run's task since the run
/// was made.
async fn filed<C: Perform>(a: &AgentCtx<C>, run: &Run) -> bool {
    let Some(task) = &run.task else { return false };
    match a.client.call::<ListReviews>(task.id, (), ()).await {
        Ok(reviews) => reviews.iter().any(|r| r.author.id == a.me.id && r.created_at >= run.created_at),
        // Unknown: the run's own end says how it went.
        Err(_) => true,
    }
}
