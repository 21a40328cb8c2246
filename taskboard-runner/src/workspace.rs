//! Workspaces: for a project with `repo_urls`, a git worktree of a cached
//! clone on branch `taskboard/KEY`; otherwise an empty scratch directory.
//! Finished workspaces are removed after the configured time.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use taskboard_core::{Error, ErrorKind, Result};
use tokio::process::Command;

use super::repo_url::{Protocol, RepoUrl};
use super::state_dir;

/// Where a run works.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub dir: PathBuf,
    /// The branch of a git worktree.
    pub branch: Option<String>,
}

fn failed(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Internal, format!("workspace: {what}: {detail}"))
}

/// Runs git, its output for the answer; its stderr in the error. Git
/// speaks no protocol but `protocol` (`GIT_ALLOW_PROTOCOL`): none for
/// the commands that fetch nothing.
async fn git_with(protocol: Option<Protocol>, dir: Option<&Path>, args: &[&str]) -> Result<String> {
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.arg("-C").arg(d);
    }
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ALLOW_PROTOCOL", protocol.map_or("", Protocol::git_name));
    let out = cmd.output().await.map_err(|e| failed("cannot run git", e))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(failed(&format!("git {}", args.join(" ")), err.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

async fn git(dir: Option<&Path>, args: &[&str]) -> Result<String> {
    git_with(None, dir, args).await
}

/// A directory name for a repository address.
fn cache_name(url: &str) -> String {
    let name: String =
        url.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let tail: String = name.chars().rev().take(120).collect::<Vec<_>>().into_iter().rev().collect();
    tail.trim_matches('_').to_string()
}

/// The cached clone of `url` under `state/repos`, made or fetched now.
async fn cached_clone(state: &Path, url: &RepoUrl) -> Result<PathBuf> {
    let repos = state.join("repos");
    state_dir::dir(&repos)?;
    let cache = repos.join(cache_name(url.as_str()));
    let fetch = Some(url.protocol());
    if !cache.join("HEAD").exists() {
        // Cloned beside, then renamed: a clone cut short is never taken
        // for a cache. Made `0700` first: git clones into an empty
        // directory and keeps its mode.
        let partial = repos.join(format!(".partial-{}", uuid::Uuid::new_v4()));
        state_dir::dir(&partial)?;
        // After `--`, the address is never an option of git's.
        let args = ["clone", "--quiet", "--bare", "--", url.as_str(), &partial.to_string_lossy()];
        let cloned = git_with(fetch, None, &args).await;
        if let Err(e) = cloned {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
        git(Some(&partial), &["config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"])
            .await?;
        std::fs::rename(&partial, &cache)?;
    } else {
        // Two addresses can share a directory name (`a.b`, `a_b`): a
        // clone made for the other is never this one's workspace.
        let origin = git(Some(&cache), &["config", "--get", "remote.origin.url"]).await.unwrap_or_default();
        if origin != url.as_str() {
            return Err(failed(
                "the cached clone",
                format!(
                    "{} was made for another repository address; move it away to clone this one",
                    cache.display()
                ),
            ));
        }
    }
    git_with(fetch, Some(&cache), &["fetch", "--quiet", "--prune", "origin"]).await?;
    // Where the remote's HEAD points, for new branches.
    let _ = git_with(fetch, Some(&cache), &["remote", "set-head", "origin", "--auto"]).await;
    Ok(cache)
}

/// Makes the workspace of a run of task `key`. `allow_local` is the
/// runner's `allow_local_repos`: whether a local repository may be
/// cloned.
pub async fn prepare(
    state: &Path,
    repo_urls: &[String],
    allow_local: bool,
    key: &str,
    run: uuid::Uuid,
) -> Result<Workspace> {
    let url = repo_urls.first().map(|u| RepoUrl::parse(u, allow_local)).transpose()?;
    let work = state.join("work");
    state_dir::dir(&work)?;
    let dir = work.join(format!("{key}-{}", &run.simple().to_string()[..12]));
    // Empty, for git's worktree as for a scratch directory.
    state_dir::dir(&dir)?;
    let Some(url) = url else {
        return Ok(Workspace { dir, branch: None });
    };
    let cache = cached_clone(state, &url).await?;
    let _ = git(Some(&cache), &["worktree", "prune"]).await;
    let branch = format!("taskboard/{key}");
    let path = dir.to_string_lossy().into_owned();
    let exists =
        git(Some(&cache), &["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}")]).await;
    if exists.is_ok() {
        // An earlier run's branch: this run goes on from where it ended.
        git(Some(&cache), &["worktree", "add", "--quiet", "--force", &path, &branch]).await?;
    } else {
        let base = if git(Some(&cache), &["rev-parse", "--verify", "--quiet", "refs/remotes/origin/HEAD"])
            .await
            .is_ok()
        {
            "refs/remotes/origin/HEAD"
        } else {
            "HEAD"
        };
        git(Some(&cache), &["worktree", "add", "--quiet", "-b", &branch, &path, base]).await?;
    }
    Ok(Workspace { dir, branch: Some(branch) })
}

/// Commits what the agent left uncommitted, in the agent's name, and
/// answers the branch's last commit. None for a scratch directory.
pub async fn finish(ws: &Workspace, agent: &str, message: &str) -> Result<Option<String>> {
    if ws.branch.is_none() {
        return Ok(None);
    }
    let dir = Some(ws.dir.as_path());
    git(dir, &["add", "--all"]).await?;
    if !git(dir, &["status", "--porcelain"]).await?.is_empty() {
        let name = format!("user.name={agent}");
        let email = format!("user.email={agent}@taskboard.invalid");
        git(dir, &["-c", &name, "-c", &email, "commit", "--quiet", "--no-verify", "-m", message]).await?;
    }
    Ok(Some(git(dir, &["rev-parse", "HEAD"]).await?))
}

/// Removes the workspaces under `state/work` last changed more than
/// `keep` ago, but none in `live`, then forgets their worktrees in every
/// cached clone.
pub async fn clean(state: &Path, keep: Duration, live: &[PathBuf]) -> Result<usize> {
    let Ok(entries) = std::fs::read_dir(state.join("work")) else { return Ok(0) };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if live.contains(&path) {
            continue;
        }
        let age = entry.metadata().and_then(|m| m.modified()).ok().and_then(|m| now.duration_since(m).ok());
        if live.iter().any(|d| d.with_extension("md") == path) || age.is_none_or(|a| a < keep) {
            continue;
        }
        // A workspace, or the task's Markdown beside it.
        let gone = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        removed += usize::from(gone.is_ok());
    }
    if removed > 0
        && let Ok(repos) = std::fs::read_dir(state.join("repos"))
    {
        for repo in repos.flatten() {
            let _ = git(Some(&repo.path()), &["worktree", "prune"]).await;
        }
    }
    Ok(removed)
}
