//! One run, from start to end: the workspace, the agent's process (a
//! command here, an ACP agent in acp.rs, an answer in answer.rs), the
//! timeout, cancellation, and the report of the run's end; what the run
//! tells the board on the way is in reports.rs.

use std::sync::Arc;

use taskboard_core::api::{
    GetProject, GetRun, GetTask, GetTaskChanges, ListMessages, ListReviews, MessageFilter, RecordChanges,
    RunPatch, UpdateRun,
};
use taskboard_core::model::Task;
use taskboard_core::review::{ChangesReport, MAX_DIFF_BYTES, RunPurpose};
use taskboard_core::runs::{Run, RunState};
use taskboard_core::{Error, ErrorKind, Perform, Result};

use super::agent;
use super::changes;
use super::config::PromptVia;
use super::job::{Job, Outcome, Target, agent_env};
use super::process;
use super::prompt::{self, Brief};
use super::reports::{end_run, ending, keeping_lease, until_answered};
use super::state_dir;
use super::workspace::{self, Repo, Workspace};
use super::{AgentCtx, Live, Origin};

/// Most dependencies named in the task's Markdown.
const DEPENDENCIES: usize = 20;
/// Most characters of the agent's summary in a commit's message.
const SUMMARY_CHARS: usize = 4000;

/// Runs `run` to its end. Errors end the run `failed`, saying why.
pub(super) async fn supervise<C: Perform>(a: Arc<AgentCtx<C>>, run: Run, origin: Origin, live: Live) {
    let id = run.id;
    if let Err(e) = run_once(&a, run, origin, &live).await {
        eprintln!("runner: {}: run {id}: {}", a.me.slug, e.detail());
        let patch = RunPatch {
            state: Some(RunState::Failed),
            runner: Some(a.shared.name.clone()),
            stop_reason: Some(e.detail().chars().take(2000).collect()),
            ..Default::default()
        };
        let _ = a.client.call::<UpdateRun>(id, (), patch).await;
    }
    let _ = std::fs::remove_file(process::pid_file(&a.shared.state, id));
}

async fn run_once<C: Perform>(a: &AgentCtx<C>, run: Run, origin: Origin, live: &Live) -> Result<()> {
    let c = &a.client;
    let shared = &a.shared;
    if origin == Origin::Requested {
        // The first runner to name itself has the run.
        let named = RunPatch { runner: Some(shared.name.clone()), ..Default::default() };
        match c.call::<UpdateRun>(run.id, (), named).await {
            Err(e) if e.kind() == ErrorKind::Conflict => return Ok(()),
            Err(e) => return Err(e),
            Ok(_) => {}
        }
    }
    if run.message_id.is_some() {
        return super::answer::run(a, run, live).await;
    }
    match run.work.purpose {
        RunPurpose::Work => work(a, run, live).await,
        RunPurpose::Review => super::reviewing::run(a, run, live).await,
        RunPurpose::Land => super::landing::land(a, run, live).await,
        RunPurpose::Discard => super::landing::discard(a, run, live).await,
    }
}

/// A run doing its task: the agent in the task's workspace, then the
/// branch pushed and its changes recorded. A round sent back by a review
/// and a repair of a failed landing are such runs, told what to do.
async fn work<C: Perform>(a: &AgentCtx<C>, run: Run, live: &Live) -> Result<()> {
    let c = &a.client;
    let shared = &a.shared;
    let Some(task_ref) = run.task.clone() else {
        return Err(Error::bad_request("this runner runs agents at tasks only"));
    };
    let task = c.call::<GetTask>(task_ref.id, (), ()).await?;
    let project = c.call::<GetProject>(task.project.id, (), ()).await?;
    let mut dependencies = Vec::new();
    for dep in task.depends_on.iter().take(DEPENDENCIES) {
        if let Ok(t) = c.call::<GetTask>(*dep, (), ()).await {
            dependencies.push(t);
        }
    }
    let filter =
        MessageFilter { task_id: Some(task.id), limit: Some(prompt::COMMENTS), ..Default::default() };
    let comments = c.call::<ListMessages>((), filter, ()).await?.items;
    let ws = {
        let _one_at_a_time = shared.git.lock().await;
        let base = project.landing.base_branch.as_deref();
        workspace::prepare(
            &shared.state,
            &project.repo_urls,
            shared.allow_local_repos,
            base,
            &task.key,
            run.id,
        )
        .await?
    };
    shared.live_dirs.lock().unwrap().push(ws.dir.clone());
    let brief = Brief {
        agent: &a.me,
        task: &task,
        project: &project,
        dependencies: &dependencies,
        comments: &comments,
        run: run.id,
        branch: ws.branch.as_deref(),
    };
    let mut markdown = prompt::render(&brief);
    let mut env = agent_env(a, &run, &task, &ws);
    if let Err(e) = round(a, &run, &task, &ws, &mut markdown, &mut env).await {
        shared.live_dirs.lock().unwrap().retain(|d| *d != ws.dir);
        return Err(e);
    }
    let job = Job {
        run: &run,
        target: Target::Task(task.id),
        ws: &ws,
        env,
        markdown,
        prompt_file: (a.entry.prompt.unwrap_or_default() == PromptVia::File)
            .then(|| ws.dir.with_extension("md")),
        lease: Some(task.id),
    };
    let result = match agent::run(a, job, live).await {
        Ok(outcome) => report(a, &run, &task, &ws, outcome).await,
        Err(e) => Err(e),
    };
    shared.live_dirs.lock().unwrap().retain(|d| *d != ws.dir);
    let keep = shared.keep;
    let live = shared.live_dirs.lock().unwrap().clone();
    let _ = workspace::clean(&shared.state, keep, &live).await;
    result
}

/// What a round adds to the prompt: the review it answers (also in
/// `$TASKBOARD_REVIEW_FILE`, beside the workspace), or the landing whose
/// failure it repairs.
async fn round<C: Perform>(
    a: &AgentCtx<C>,
    run: &Run,
    task: &Task,
    ws: &Workspace,
    markdown: &mut String,
    env: &mut Vec<(String, String)>,
) -> Result<()> {
    let c = &a.client;
    if let Some(id) = run.work.review_id {
        let reviews = c.call::<ListReviews>(task.id, (), ()).await?;
        let review = reviews.iter().find(|r| r.id == id).ok_or_else(|| {
            Error::not_found(format!("review {id}, which this round answers, is not on {}", task.key))
        })?;
        let diff = c.call::<GetTaskChanges>(task.id, (), ()).await.ok().map(|c| c.diff);
        let text = prompt::review(review, diff.as_deref(), ws.branch.as_deref());
        let file = ws.dir.with_extension("review.md");
        state_dir::write(&file, text.as_bytes())?;
        env.push(("TASKBOARD_REVIEW_FILE".to_string(), file.to_string_lossy().into_owned()));
        markdown.push('\n');
        markdown.push_str(&text);
    }
    if let Some(id) = run.work.repairs_run_id {
        let landing = c.call::<GetRun>(id, (), ()).await?;
        let base = ws.repo.as_ref().map_or_else(|| "the base".to_string(), |r| format!("origin/{}", r.base));
        markdown.push('\n');
        markdown.push_str(&prompt::repair(&landing, &base, ws.branch.as_deref()));
    }
    Ok(())
}

/// The message of the runner's commit of what the agent left: the task
/// as its subject, the agent's summary as its body, the run as a
/// trailer.
fn commit_message(task: &Task, run: &Run, summary: &str) -> String {
    let title: String = task.title.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut message = format!("{}: {}\n\n", task.key, title.chars().take(200).collect::<String>());
    let summary: String = summary.trim().chars().take(SUMMARY_CHARS).collect();
    if !summary.is_empty() {
        message.push_str(&summary);
        message.push_str("\n\n");
    }
    message.push_str(&format!("Taskboard-Run: {}\n", run.id));
    message
}

/// Commits what the agent left in its workspace, pushes the branch and
/// records the changes of a run that succeeded, and reports the run's
/// end, unless it already ended on the board.
async fn report<C: Perform>(
    a: &AgentCtx<C>,
    run: &Run,
    task: &Task,
    ws: &Workspace,
    outcome: Outcome,
) -> Result<()> {
    let message = commit_message(task, run, &outcome.summary);
    let commit = match workspace::finish(ws, &a.me.slug, &message).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("runner: {}: run {}: {}", a.me.slug, run.id, e.detail());
            None
        }
    };
    // Over on the board already: what the agent left stays in the clone.
    let Some((mut state, exit_code, mut stop_reason)) = ending(a, outcome.end) else { return Ok(()) };
    if let (Some(head), Some(repo)) = (&commit, &ws.repo) {
        let delivered = keeping_lease(a, task.id, deliver(a, run, ws, repo, head, state)).await;
        if let Err(why) = delivered {
            state = RunState::Failed;
            stop_reason = Some(match stop_reason {
                Some(first) => format!("{first}; and {why}"),
                None => why,
            });
        }
    }
    let done = RunPatch {
        state: Some(state),
        exit_code,
        stop_reason: stop_reason.map(|r| r.chars().take(2000).collect()),
        branch: ws.branch.clone(),
        commit,
        ..Default::default()
    };
    end_run(a, run.id, done).await
}

/// Pushes the branch to the repository and, for a run that succeeded,
/// records its changes with the board; else says why the run fails.
async fn deliver<C: Perform>(
    a: &AgentCtx<C>,
    run: &Run,
    ws: &Workspace,
    repo: &Repo,
    head: &str,
    state: RunState,
) -> std::result::Result<(), String> {
    let branch = ws.branch.clone().unwrap_or_default();
    {
        let _one_at_a_time = a.shared.git.lock().await;
        let refused = match workspace::push(ws).await {
            Ok(Ok(())) => None,
            Ok(Err(git)) => Some(git),
            Err(e) => Some(e.detail().to_string()),
        };
        if let Some(git) = refused {
            let git: String = git.chars().take(1000).collect();
            return Err(format!(
                "the repository refused the branch {branch}: {git}\nThe work is in runner {}'s clone {}, \
                 branch {branch} at commit {head}; the task's next run there goes on from it",
                a.shared.name,
                repo.cache.display(),
            ));
        }
    }
    if state != RunState::Succeeded {
        return Ok(());
    }
    let base = format!("refs/remotes/origin/{}", repo.base);
    let read = async {
        let task = changes::of_task(&repo.cache, &base, head, &branch).await?;
        let own = changes::between(&repo.cache, &repo.start, head, &branch, MAX_DIFF_BYTES).await?;
        Ok::<_, taskboard_core::Error>(ChangesReport { task, run: Some(own) })
    };
    let report = read.await.map_err(|e| format!("its changes could not be read: {}", e.detail()))?;
    let record = || a.client.call::<RecordChanges>(run.id, (), report.clone());
    match until_answered(&a.shared, record).await {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("the board did not take its changes: {}", e.detail())),
    }
}
