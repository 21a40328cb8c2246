//! Workspaces: for a project with `repo_urls`, a git worktree of a cached
//! clone on branch `taskboard/KEY`; otherwise an empty scratch directory.
//! Finished workspaces are removed after the configured time.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use taskboard_core::Result;

use super::git::{self, commit_of, failed, git, git_with};
use super::repo_url::RepoUrl;
use super::state_dir;

/// Where a run works.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub dir: PathBuf,
    /// The branch of a git worktree.
    pub branch: Option<String>,
    /// The repository of a git worktree.
    pub repo: Option<Repo>,
}

/// The repository a git worktree belongs to, as the run found it.
#[derive(Debug, Clone)]
pub struct Repo {
    pub url: RepoUrl,
    /// The cached clone (bare) the worktree is of.
    pub cache: PathBuf,
    /// Where work lands: the project's `base_branch`, else the branch the
    /// repository's HEAD names.
    pub base: String,
    /// The branch's commit when the run started: the run's own change is
    /// measured from it.
    pub start: String,
    /// The branch's commit in the repository when it was fetched (None:
    /// not there): a push overwrites that and nothing else.
    pub pushed: Option<String>,
}

impl Workspace {
    /// A scratch directory: no repository.
    pub fn scratch(dir: PathBuf) -> Workspace {
        Workspace { dir, branch: None, repo: None }
    }
}

/// The branch a task's work is on.
pub fn branch_of(key: &str) -> String {
    format!("taskboard/{key}")
}

/// A directory name for a repository address.
fn cache_name(url: &str) -> String {
    let name: String =
        url.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let tail: String = name.chars().rev().take(120).collect::<Vec<_>>().into_iter().rev().collect();
    tail.trim_matches('_').to_string()
}

/// The cached clone of `url` under `state/repos`, made or fetched now.
pub async fn cached_clone(state: &Path, url: &RepoUrl) -> Result<PathBuf> {
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

/// The name of the base branch: `base_branch` when the project sets it
/// (it must be in the repository), else the branch the repository's HEAD
/// names.
pub async fn base_of(cache: &Path, base_branch: Option<&str>) -> Result<String> {
    if let Some(b) = base_branch {
        // The name goes into refs and refspecs: a branch name by git's
        // rules, nothing a refspec would read more into (`:`, `*`).
        let named = git::run(None, None, &["check-ref-format", &format!("refs/heads/{b}")]).await?;
        if !named.ok || b.starts_with('-') {
            return Err(failed(
                "the base branch",
                format!("the project's base_branch {b:?} is not a branch name"),
            ));
        }
        if commit_of(cache, &format!("refs/remotes/origin/{b}")).await.is_none() {
            return Err(failed(
                "the base branch",
                format!("the project's base_branch {b:?} is not a branch of the repository"),
            ));
        }
        return Ok(b.to_string());
    }
    for head in ["refs/remotes/origin/HEAD", "HEAD"] {
        if let Ok(name) = git(Some(cache), &["symbolic-ref", "--quiet", head]).await {
            let name = name.trim_start_matches("refs/remotes/origin/").trim_start_matches("refs/heads/");
            if commit_of(cache, &format!("refs/remotes/origin/{name}")).await.is_some() {
                return Ok(name.to_string());
            }
        }
    }
    Err(failed(
        "the base branch",
        "the repository's HEAD names no branch it has (an empty repository?); set the project's base_branch",
    ))
}

/// Where a clone keeps a task's work that its repository refused, until
/// a push of it succeeds.
fn unpushed_ref(key: &str) -> String {
    format!("refs/taskboard/unpushed/{key}")
}

/// Makes the workspace of a run of task `key`. `allow_local` is the
/// runner's `allow_local_repos`: whether a local repository may be
/// cloned; `base_branch` the project's.
///
/// The branch `taskboard/KEY` starts where the task's work is: in the
/// repository (a round sent back, a landing to repair, a retry, work
/// done on another runner), or at the base for new work. Work of this
/// clone that the repository refused is gone on with, unless the
/// repository's branch has moved another way since: what was pushed is
/// what was reviewed, so the repository's branch wins and the refused
/// work is kept as `refs/taskboard/kept/KEY/COMMIT` in the clone.
pub async fn prepare(
    state: &Path,
    repo_urls: &[String],
    allow_local: bool,
    base_branch: Option<&str>,
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
        return Ok(Workspace::scratch(dir));
    };
    let cache = cached_clone(state, &url).await?;
    let _ = git(Some(&cache), &["worktree", "prune"]).await;
    let base = base_of(&cache, base_branch).await?;
    let branch = branch_of(key);
    let pushed = commit_of(&cache, &format!("refs/remotes/origin/{branch}")).await;
    let unpushed = commit_of(&cache, &unpushed_ref(key)).await;
    let start = match (&unpushed, &pushed) {
        (Some(u), None) => u.clone(),
        (Some(u), Some(p)) if is_ancestor(&cache, p, u).await => u.clone(),
        (Some(u), Some(p)) => {
            let kept = format!("refs/taskboard/kept/{key}/{}", &u[..u.len().min(12)]);
            git(Some(&cache), &["update-ref", &kept, u]).await?;
            git(Some(&cache), &["update-ref", "-d", &unpushed_ref(key)]).await?;
            p.clone()
        }
        (None, Some(p)) => p.clone(),
        (None, None) => git(Some(&cache), &["rev-parse", &format!("refs/remotes/origin/{base}")]).await?,
    };
    git(Some(&cache), &["update-ref", &format!("refs/heads/{branch}"), &start]).await?;
    let path = dir.to_string_lossy().into_owned();
    // `--force`: an earlier run's worktree, kept a while, may still have
    // the branch checked out.
    git(Some(&cache), &["worktree", "add", "--quiet", "--force", &path, &branch]).await?;
    let repo = Repo { url, cache, base, start, pushed };
    Ok(Workspace { dir, branch: Some(branch), repo: Some(repo) })
}

/// Forgets the task's branch in the clone, once it landed or was
/// discarded: a later run of the task starts anew from the base, and the
/// refused work kept beside it (`refs/taskboard/kept/KEY/…`) goes too.
pub async fn forget(cache: &Path, key: &str) -> Result<()> {
    let kept =
        git(Some(cache), &["for-each-ref", "--format=%(refname)", &format!("refs/taskboard/kept/{key}/")])
            .await
            .unwrap_or_default();
    let refs = [format!("refs/heads/{}", branch_of(key)), unpushed_ref(key)];
    for r in refs.into_iter().chain(kept.lines().map(String::from)) {
        if commit_of(cache, &r).await.is_some() {
            git(Some(cache), &["update-ref", "-d", &r]).await?;
        }
    }
    Ok(())
}

async fn is_ancestor(dir: &Path, ancestor: &str, of: &str) -> bool {
    git::run(None, Some(dir), &["merge-base", "--is-ancestor", ancestor, of]).await.is_ok_and(|r| r.ok)
}

/// Commits what the agent left uncommitted, in the agent's name, with
/// `message`, and answers the branch's last commit. None for a scratch
/// directory.
pub async fn finish(ws: &Workspace, agent: &str, message: &str) -> Result<Option<String>> {
    if ws.branch.is_none() {
        return Ok(None);
    }
    let dir = Some(ws.dir.as_path());
    git(dir, &["add", "--all"]).await?;
    if !git(dir, &["status", "--porcelain"]).await?.is_empty() {
        let mut args: Vec<&str> = Vec::new();
        let who = git::as_agent(agent);
        args.extend(who.iter().map(String::as_str));
        args.extend(["commit", "--quiet", "--no-verify", "--cleanup=verbatim", "-m", message]);
        git(dir, &args).await?;
    }
    Ok(Some(git(dir, &["rev-parse", "HEAD"]).await?))
}

/// Pushes the workspace's branch to the repository, overwriting only
/// what the run found there (`--force-with-lease`): a round may have
/// rebased it, and nobody else's push is lost. The answer's error is
/// git's refusal.
pub async fn push(ws: &Workspace) -> Result<std::result::Result<(), String>> {
    let (Some(branch), Some(repo)) = (&ws.branch, &ws.repo) else { return Ok(Ok(())) };
    let target = format!("refs/heads/{branch}");
    let protocol = Some(repo.url.protocol());
    // An agent that pushed its branch itself pushed part of this very
    // work: what the repository has now is the lease when the branch
    // holds it. Anything else there is someone else's, and the push is
    // refused.
    let mut lease = repo.pushed.clone();
    let tracking = format!("refs/remotes/origin/{branch}");
    let refetch = format!("+{target}:{tracking}");
    if git::run(protocol, Some(&repo.cache), &["fetch", "--quiet", "origin", &refetch]).await?.ok
        && let Some(now) = commit_of(&repo.cache, &tracking).await
        && Some(&now) != repo.pushed.as_ref()
        && is_ancestor(&repo.cache, &now, &target).await
    {
        lease = Some(now);
    }
    let lease = format!("--force-with-lease={target}:{}", lease.as_deref().unwrap_or(""));
    let refspec = format!("{target}:{target}");
    let args = ["push", "--quiet", "--no-verify", &lease, "origin", &refspec];
    let ran = git::run(protocol, Some(&repo.cache), &args).await?;
    let key = branch.trim_start_matches("taskboard/");
    if ran.ok {
        git(Some(&repo.cache), &["update-ref", "-d", &unpushed_ref(key)]).await?;
        return Ok(Ok(()));
    }
    let head = git(Some(&repo.cache), &["rev-parse", &target]).await?;
    git(Some(&repo.cache), &["update-ref", &unpushed_ref(key), &head]).await?;
    Ok(Err(ran.stderr))
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
        if live.iter().any(|d| beside(d, &path)) || age.is_none_or(|a| a < keep) {
            continue;
        }
        // A workspace, or a file of its run beside it (its prompt, its
        // review).
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

/// Whether `path` is a file of the run whose workspace is `dir`, beside
/// it: `DIR.md`, `DIR.review.md`.
fn beside(dir: &Path, path: &Path) -> bool {
    let (Some(d), Some(p)) = (dir.file_name(), path.file_name()) else { return false };
    path.parent() == dir.parent()
        && p.to_str()
            .zip(d.to_str())
            .is_some_and(|(p, d)| p.strip_prefix(d).is_some_and(|r| r.starts_with('.')))
}
