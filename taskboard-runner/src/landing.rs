//! Landing and discarding a task's branch (docs/decisions.md, 19.5): runs
//! the board makes of the task's agent when a person merges or discards
//! its work, which the agent's runner performs with the repository
//! itself. No agent is started; the project's `check_command` is the only
//! program run, under the same guard and clean environment as an agent.
//! Such a run holds no lease: the task stays where it is until the run
//! ends, and the board then moves it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use taskboard_core::api::{GetProject, GetTask, NewEntry, RunPatch};
use taskboard_core::model::{Project, Task};
use taskboard_core::review::MergeMethod;
use taskboard_core::runs::{EntryKind, Run, RunState};
use taskboard_core::{Error, Perform, Result};
use tokio::sync::mpsc;

use super::command::Tail;
use super::git::{self, commit_of, git};
use super::process::{self, Spawn};
use super::repo_url::RepoUrl;
use super::reports::{Output, end_run, mark_running};
use super::workspace::{self, base_of, branch_of, cached_clone};
use super::{AgentCtx, Live, state_dir};

/// How a landing went.
enum Landing {
    /// The base is at `commit`, which holds the branch's work.
    Landed {
        commit: String,
    },
    /// The branch does not apply to the base: these files conflict.
    Conflicts {
        files: Vec<String>,
        reason: String,
    },
    /// It failed for `0` (a failing check, a refused push, a branch that
    /// moved since it was reviewed).
    Failed(String),
    /// The run ended on the board meanwhile, or the runner stops.
    Cancelled,
    Stopped,
}

/// The runner's own lines in the run's transcript.
struct Log(mpsc::Sender<NewEntry>);

impl Log {
    async fn say(&self, text: impl Into<String>) {
        let entry =
            NewEntry { kind: EntryKind::Output, text: text.into(), data: Some(json!({"stream": "runner"})) };
        let _ = self.0.send(entry).await;
    }
}

async fn task_and_project<C: Perform>(a: &AgentCtx<C>, run: &Run) -> Result<(Task, Project)> {
    let Some(task_ref) = &run.task else {
        return Err(Error::bad_request("a landing or a discard is of a task; this run has none"));
    };
    let task = a.client.call::<GetTask>(task_ref.id, (), ()).await?;
    let project = a.client.call::<GetProject>(task.project.id, (), ()).await?;
    Ok((task, project))
}

fn repository(allow_local: bool, project: &Project) -> Result<RepoUrl> {
    let url = project.repo_urls.first().ok_or_else(|| {
        Error::bad_request(format!("project {} has no repository to land in", project.slug))
    })?;
    RepoUrl::parse(url, allow_local)
}

/// A `land` run: the branch brought onto the base by its method in a
/// scratch worktree, the project's check run there, the base pushed only
/// if it is still where it was fetched, the branch deleted.
pub(super) async fn land<C: Perform>(a: &AgentCtx<C>, run: Run, live: &Live) -> Result<()> {
    // Named in the state directory while it lasts, so a runner started
    // after this one died ends it (it holds no lease that would).
    process::write_pid_file(&a.shared.state, run.id, 0)?;
    let (task, project) = task_and_project(a, &run).await?;
    let branch = branch_of(&task.key);
    let (tx, rx) = mpsc::channel(256);
    let output = Output::start(a, run.id, rx);
    let log = Log(tx);
    let landing = match mark_running(a, &run, Some(branch.clone())).await {
        Ok(false) => Landing::Cancelled,
        Err(e) => Landing::Failed(e.detail().to_string()),
        Ok(true) => match perform(a, &run, &task, &project, &log, live).await {
            Ok(landing) => landing,
            Err(e) => Landing::Failed(e.detail().to_string()),
        },
    };
    if let Landing::Conflicts { reason, .. } | Landing::Failed(reason) = &landing {
        log.say(reason.clone()).await;
    }
    drop(log);
    output.finish(a, None).await;
    let done = match landing {
        Landing::Landed { commit } => RunPatch {
            state: Some(RunState::Succeeded),
            branch: Some(branch),
            commit: Some(commit.clone()),
            merge_commit: Some(commit),
            ..Default::default()
        },
        Landing::Conflicts { files, reason } => RunPatch {
            state: Some(RunState::Failed),
            stop_reason: Some(cut(&reason)),
            conflicts: Some(files),
            ..Default::default()
        },
        Landing::Failed(reason) => {
            RunPatch { state: Some(RunState::Failed), stop_reason: Some(cut(&reason)), ..Default::default() }
        }
        Landing::Stopped => RunPatch {
            state: Some(RunState::Failed),
            stop_reason: Some("the runner stopped".to_string()),
            ..Default::default()
        },
        Landing::Cancelled => return Ok(()),
    };
    end_run(a, run.id, done).await
}

fn cut(reason: &str) -> String {
    reason.chars().take(2000).collect()
}

/// The landing in a scratch worktree of the clone, removed after.
async fn perform<C: Perform>(
    a: &AgentCtx<C>,
    run: &Run,
    task: &Task,
    project: &Project,
    log: &Log,
    live: &Live,
) -> Result<Landing> {
    let url = repository(a.shared.allow_local_repos, project)?;
    let scratch =
        a.shared.state.join("work").join(format!("{}-land-{}", task.key, &run.id.simple().to_string()[..12]));
    a.shared.live_dirs.lock().unwrap().push(scratch.clone());
    let mut cache = None;
    let landing = land_in(a, run, task, project, &url, &scratch, &mut cache, log, live).await;
    if let Some(cache) = cache {
        let _one_at_a_time = a.shared.git.lock().await;
        let _ = git(Some(&cache), &["worktree", "remove", "--force", &scratch.to_string_lossy()]).await;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    a.shared.live_dirs.lock().unwrap().retain(|d| *d != scratch);
    landing
}

/// The commit message of what a landing makes.
fn message(task: &Task, run: &Run, how: &str) -> String {
    let title: String = task.title.split_whitespace().collect::<Vec<_>>().join(" ");
    let title: String = title.chars().take(200).collect();
    format!("{}: {title}\n\n{how}\n\nTaskboard-Run: {}\n", task.key, run.id)
}

#[allow(clippy::too_many_arguments)]
async fn land_in<C: Perform>(
    a: &AgentCtx<C>,
    run: &Run,
    task: &Task,
    project: &Project,
    url: &RepoUrl,
    scratch: &Path,
    cache_of: &mut Option<PathBuf>,
    log: &Log,
    live: &Live,
) -> Result<Landing> {
    let branch = branch_of(&task.key);
    let method = run.work.merge_method.unwrap_or_default();
    let (cache, base, fetched, head, merged) = {
        let _one_at_a_time = a.shared.git.lock().await;
        let cache = cached_clone(&a.shared.state, url).await?;
        let base = base_of(&cache, project.landing.base_branch.as_deref()).await?;
        let fetched = commit_of(&cache, &format!("refs/remotes/origin/{base}"))
            .await
            .ok_or_else(|| git::failed("the base", format!("{base} is not in the repository")))?;
        let Some(head) = commit_of(&cache, &format!("refs/remotes/origin/{branch}")).await else {
            return Ok(Landing::Failed(format!(
                "the branch {branch} is not in the repository: a run of the task pushes it"
            )));
        };
        if let Some(reviewed) = run.work.changes.as_ref().map(|c| c.head_commit.as_str())
            && reviewed != head
        {
            return Ok(Landing::Failed(format!(
                "{branch} is at {head} in the repository, not at {reviewed}, whose changes were \
                 reviewed; a run of the task records its changes again"
            )));
        }
        log.say(format!("fetched {base} at {fetched} and {branch} at {head}")).await;
        state_dir::dir(scratch)?;
        let start = if method == MergeMethod::Rebase { &head } else { &fetched };
        let path = scratch.to_string_lossy().into_owned();
        git(Some(&cache), &["worktree", "add", "--quiet", "--detach", &path, start]).await?;
        *cache_of = Some(cache.clone());
        let brought = bring(a, run, task, scratch, method, &fetched, &head).await?;
        let merged = match brought {
            Ok(merged) => merged,
            Err(files) => {
                let reason = format!(
                    "{base} moved under {branch}: they conflict in {}; the task's agent brings the \
                     branch up to date",
                    files.join(", ")
                );
                return Ok(Landing::Conflicts { files, reason });
            }
        };
        (cache, base, fetched, head, merged)
    };
    let name = match method {
        MergeMethod::Merge => "merged",
        MergeMethod::Squash => "squashed",
        MergeMethod::Rebase => "rebased",
    };
    let unchanged = git::run(None, Some(scratch), &["diff", "--quiet", &fetched, &merged, "--"]).await?.ok;
    if unchanged {
        log.say(format!("{branch} changes nothing on {base}: its work is there already")).await;
    } else {
        log.say(format!("{name} {branch} onto {base}: {merged}")).await;
    }
    if let Some(check) = project.landing.check_command.as_deref().filter(|c| !c.trim().is_empty()) {
        log.say(format!("running the project's check: sh -c {check:?}")).await;
        match checked(a, run, task, scratch, check, &base, log, live).await? {
            Checked::Passed => log.say("the check passed").await,
            Checked::Failed(reason) => return Ok(Landing::Failed(reason)),
            Checked::Cancelled => return Ok(Landing::Cancelled),
            Checked::Stopped => return Ok(Landing::Stopped),
        }
    }
    if live.cancel.is_cancelled() {
        return Ok(if a.shared.stop.is_cancelled() { Landing::Stopped } else { Landing::Cancelled });
    }
    let _one_at_a_time = a.shared.git.lock().await;
    let protocol = Some(url.protocol());
    let landed = if unchanged { fetched.clone() } else { merged.clone() };
    if !unchanged {
        // The base only if it is still where it was fetched: a push
        // between the fetch and now is never overwritten.
        let lease = format!("--force-with-lease=refs/heads/{base}:{fetched}");
        let refspec = format!("{merged}:refs/heads/{base}");
        let pushed =
            git::run(protocol, Some(&cache), &["push", "--quiet", "--no-verify", &lease, "origin", &refspec])
                .await?;
        if !pushed.ok {
            return Ok(Landing::Failed(format!(
                "the repository refused {base}: {}\n{base} is left as it was; merge again to land on \
                 where it is now",
                pushed.stderr.chars().take(1000).collect::<String>()
            )));
        }
        log.say(format!("pushed {base} at {merged}")).await;
    }
    let lease = format!("--force-with-lease=refs/heads/{branch}:{head}");
    let delete = format!(":refs/heads/{branch}");
    let deleted =
        git::run(protocol, Some(&cache), &["push", "--quiet", "--no-verify", &lease, "origin", &delete])
            .await?;
    if deleted.ok {
        log.say(format!("deleted {branch} from the repository")).await;
    } else {
        log.say(format!("{branch} could not be deleted from the repository: {}", deleted.stderr)).await;
    }
    workspace::forget(&cache, &task.key).await?;
    Ok(Landing::Landed { commit: landed })
}

/// Brings `head` onto `fetched` (the base) in the scratch worktree by
/// `method`; the new commit, or the conflicting files.
async fn bring<C: Perform>(
    a: &AgentCtx<C>,
    run: &Run,
    task: &Task,
    scratch: &Path,
    method: MergeMethod,
    fetched: &str,
    head: &str,
) -> Result<std::result::Result<String, Vec<String>>> {
    let branch = branch_of(&task.key);
    let who = git::as_agent(&a.me.slug);
    let with_who = |args: &[&str]| -> Vec<String> {
        who.iter().cloned().chain(args.iter().map(|s| s.to_string())).collect()
    };
    let ran = match method {
        MergeMethod::Merge => {
            let message = message(task, run, &format!("Merged from branch {branch} ({head})."));
            let args = with_who(&["merge", "--quiet", "--no-ff", "--no-verify", "-m", &message, head]);
            git::run(None, Some(scratch), &args.iter().map(String::as_str).collect::<Vec<_>>()).await?
        }
        MergeMethod::Squash => {
            let squashed = git::run(None, Some(scratch), &["merge", "--quiet", "--squash", head]).await?;
            if squashed.ok && !git::run(None, Some(scratch), &["diff", "--cached", "--quiet"]).await?.ok {
                let message = message(task, run, &format!("Squashed from branch {branch} ({head})."));
                let args =
                    with_who(&["commit", "--quiet", "--no-verify", "--cleanup=verbatim", "-m", &message]);
                git::run(None, Some(scratch), &args.iter().map(String::as_str).collect::<Vec<_>>()).await?
            } else {
                squashed
            }
        }
        MergeMethod::Rebase => {
            let args = with_who(&["rebase", "--quiet", "--no-verify", fetched]);
            git::run(None, Some(scratch), &args.iter().map(String::as_str).collect::<Vec<_>>()).await?
        }
    };
    if ran.ok {
        return Ok(Ok(git(Some(scratch), &["rev-parse", "HEAD"]).await?));
    }
    let unmerged =
        git(Some(scratch), &["diff", "--name-only", "-z", "--diff-filter=U"]).await.unwrap_or_default();
    let mut files: Vec<String> = unmerged.split('\0').filter(|f| !f.is_empty()).map(String::from).collect();
    files.dedup();
    if method == MergeMethod::Rebase {
        let _ = git(Some(scratch), &["rebase", "--abort"]).await;
    }
    if files.is_empty() {
        let detail = if ran.stderr.is_empty() { ran.stdout } else { ran.stderr };
        return Err(git::failed(&format!("bringing {branch} onto the base"), detail));
    }
    Ok(Err(files))
}

enum Checked {
    Passed,
    Failed(String),
    Cancelled,
    Stopped,
}

/// Runs the project's check in the landed tree: `sh -c CHECK` started as
/// an agent is (its own process group under the guard, the clean
/// environment of 20.k with the run's `TASKBOARD_RUN`, `TASKBOARD_TASK`,
/// `TASKBOARD_BRANCH` and `TASKBOARD_BASE`, no token), its output in the
/// run's transcript, bounded by the agent's timeout.
#[allow(clippy::too_many_arguments)]
async fn checked<C: Perform>(
    a: &AgentCtx<C>,
    run: &Run,
    task: &Task,
    scratch: &Path,
    check: &str,
    base: &str,
    log: &Log,
    live: &Live,
) -> Result<Checked> {
    let argv = ["sh".to_string(), "-c".to_string(), check.to_string()];
    let env = vec![
        ("TASKBOARD_RUN".to_string(), run.id.to_string()),
        ("TASKBOARD_TASK".to_string(), task.key.clone()),
        ("TASKBOARD_BRANCH".to_string(), branch_of(&task.key)),
        ("TASKBOARD_BASE".to_string(), base.to_string()),
    ];
    let (tx, mut rx) = mpsc::channel::<NewEntry>(256);
    let mut child = process::spawn(Spawn { argv: &argv, dir: scratch, env, stdin: None }, tx)?;
    let pgid = child.id().unwrap_or(0);
    process::write_pid_file(&a.shared.state, run.id, pgid)?;
    let to_log = log.0.clone();
    let tail = tokio::spawn(async move {
        let mut tail = Tail::default();
        while let Some(e) = rx.recv().await {
            tail.push(&e.text);
            let _ = to_log.send(e).await;
        }
        tail.text()
    });
    let timeout = Duration::from_secs(a.entry.timeout_seconds);
    let status = tokio::select! {
        status = child.wait() => Some(status.ok().and_then(|s| s.code())),
        _ = live.cancel.cancelled() => None,
        _ = tokio::time::sleep(timeout) => Some(Some(-1)),
    };
    process::kill_group(pgid);
    let _ = child.wait().await;
    let tail = tokio::time::timeout(Duration::from_secs(5), tail)
        .await
        .ok()
        .and_then(|t| t.ok())
        .unwrap_or_default();
    let tail = if tail.is_empty() { "(no output)".to_string() } else { tail };
    Ok(match status {
        None if a.shared.stop.is_cancelled() => Checked::Stopped,
        None => Checked::Cancelled,
        Some(Some(0)) => Checked::Passed,
        Some(Some(-1)) => Checked::Failed(format!(
            "the check {check:?} did not end in {} seconds; the end of its output:\n{tail}",
            timeout.as_secs()
        )),
        Some(code) => {
            let how = code.map_or("was killed by a signal".to_string(), |c| format!("exited with code {c}"));
            Checked::Failed(format!("the check {check:?} {how}; the end of its output:\n{tail}"))
        }
    })
}

/// A `discard` run: the task's branch deleted from the repository (if it
/// is there, and only as it was fetched) and forgotten by the clone.
pub(super) async fn discard<C: Perform>(a: &AgentCtx<C>, run: Run, _live: &Live) -> Result<()> {
    process::write_pid_file(&a.shared.state, run.id, 0)?;
    let (task, project) = task_and_project(a, &run).await?;
    let branch = branch_of(&task.key);
    let (tx, rx) = mpsc::channel(256);
    let output = Output::start(a, run.id, rx);
    let log = Log(tx);
    let discarded = match mark_running(a, &run, Some(branch.clone())).await {
        Ok(false) => None,
        Err(e) => Some(Err(e.detail().to_string())),
        Ok(true) => Some(
            delete_branch(a, &task, &project, &log).await.unwrap_or_else(|e| Err(e.detail().to_string())),
        ),
    };
    drop(log);
    output.finish(a, None).await;
    let done = match discarded {
        None => return Ok(()),
        Some(Ok(())) => {
            RunPatch { state: Some(RunState::Succeeded), branch: Some(branch), ..Default::default() }
        }
        Some(Err(reason)) => {
            RunPatch { state: Some(RunState::Failed), stop_reason: Some(cut(&reason)), ..Default::default() }
        }
    };
    end_run(a, run.id, done).await
}

async fn delete_branch<C: Perform>(
    a: &AgentCtx<C>,
    task: &Task,
    project: &Project,
    log: &Log,
) -> Result<std::result::Result<(), String>> {
    let branch = branch_of(&task.key);
    if project.repo_urls.is_empty() {
        log.say(format!("project {} has no repository: nothing to delete", project.slug)).await;
        return Ok(Ok(()));
    }
    let url = repository(a.shared.allow_local_repos, project)?;
    let _one_at_a_time = a.shared.git.lock().await;
    let cache = cached_clone(&a.shared.state, &url).await?;
    match commit_of(&cache, &format!("refs/remotes/origin/{branch}")).await {
        Some(head) => {
            let lease = format!("--force-with-lease=refs/heads/{branch}:{head}");
            let delete = format!(":refs/heads/{branch}");
            let args = ["push", "--quiet", "--no-verify", &lease, "origin", &delete];
            let deleted = git::run(Some(url.protocol()), Some(&cache), &args).await?;
            if !deleted.ok {
                return Ok(Err(format!("the repository refused to delete {branch}: {}", deleted.stderr)));
            }
            log.say(format!("deleted {branch} (at {head}) from the repository")).await;
        }
        None => log.say(format!("{branch} is not in the repository: nothing to delete there")).await,
    }
    workspace::forget(&cache, &task.key).await?;
    Ok(Ok(()))
}
