//! Git as the runner runs it: never asking for a password on a terminal,
//! speaking no protocol but the repository address's own
//! (`GIT_ALLOW_PROTOCOL`, docs/decisions.md 20.l; none for the commands
//! that reach no remote), and committing in an agent's name without the
//! user's signing or hooks.

use std::path::Path;
use std::process::Stdio;

use taskboard_core::{Error, ErrorKind, Result};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::repo_url::Protocol;

pub(crate) fn failed(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Internal, format!("workspace: {what}: {detail}"))
}

fn command(protocol: Option<Protocol>, dir: Option<&Path>, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.arg("-C").arg(d);
    }
    cmd.args(args)
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ALLOW_PROTOCOL", protocol.map_or("", Protocol::git_name))
        .kill_on_drop(true);
    cmd
}

/// What a git command that may fail left: whether it succeeded, its
/// output and its error output, trimmed.
pub(crate) struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs git and answers how it went, failed or not.
pub(crate) async fn run(protocol: Option<Protocol>, dir: Option<&Path>, args: &[&str]) -> Result<Ran> {
    let out = command(protocol, dir, args).output().await.map_err(|e| failed("cannot run git", e))?;
    Ok(Ran {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

/// Runs git, its output for the answer; its stderr in the error.
pub(crate) async fn git_with(
    protocol: Option<Protocol>,
    dir: Option<&Path>,
    args: &[&str],
) -> Result<String> {
    let ran = run(protocol, dir, args).await?;
    if !ran.ok {
        return Err(failed(&format!("git {}", args.join(" ")), ran.stderr));
    }
    Ok(ran.stdout)
}

/// Runs git reaching no remote.
pub(crate) async fn git(dir: Option<&Path>, args: &[&str]) -> Result<String> {
    git_with(None, dir, args).await
}

/// The commit `rev` names in `dir`, if any.
pub(crate) async fn commit_of(dir: &Path, rev: &str) -> Option<String> {
    let spec = format!("{rev}^{{commit}}");
    git(Some(dir), &["rev-parse", "--verify", "--quiet", &spec]).await.ok().filter(|c| !c.is_empty())
}

/// Runs git and answers at most `cap` bytes of its output, and whether
/// there was more (then git is stopped: a diff of a huge generated file
/// is never read whole).
pub(crate) async fn capped(dir: &Path, args: &[&str], cap: usize) -> Result<(Vec<u8>, bool)> {
    let mut cmd = command(None, Some(dir), args);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| failed("cannot run git", e))?;
    let mut stdout = child.stdout.take().ok_or_else(|| failed("git", "no output"))?;
    let mut stderr = child.stderr.take().ok_or_else(|| failed("git", "no error output"))?;
    let errors = tokio::spawn(async move {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut text).await;
        text
    });
    let mut out = Vec::new();
    (&mut stdout).take(cap as u64 + 1).read_to_end(&mut out).await.map_err(|e| failed("git's output", e))?;
    let more = out.len() > cap;
    if more {
        out.truncate(cap);
        let _ = child.start_kill();
        let _ = child.wait().await;
        return Ok((out, true));
    }
    let status = child.wait().await.map_err(|e| failed("git", e))?;
    if !status.success() {
        let text = errors.await.unwrap_or_default();
        return Err(failed(&format!("git {}", args.join(" ")), String::from_utf8_lossy(&text).trim()));
    }
    Ok((out, false))
}

/// `-c` options of a commit made by the runner in `agent`'s name: its
/// name and address, and none of the runner's user's signing.
pub(crate) fn as_agent(agent: &str) -> [String; 6] {
    [
        "-c".into(),
        format!("user.name={agent}"),
        "-c".into(),
        format!("user.email={agent}@taskboard.invalid"),
        "-c".into(),
        "commit.gpgsign=false".into(),
    ]
}
