//! The agent's process: started in a process group of its own under a
//! guard that ends the group if the runner dies, its output read in
//! bounded pieces, the whole group killed when it stops, and what a
//! predecessor runner left killed at start.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use taskboard_core::api::NewEntry;
use taskboard_core::runs::{EntryKind, MAX_ENTRY_TEXT};
use taskboard_core::{Error, ErrorKind, Result};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;

/// Bytes of output in one transcript entry at most (a longer line is cut
/// in pieces).
const PIECE: usize = 16 * 1024;

/// What starts the agent.
pub struct Spawn<'a> {
    pub argv: &'a [String],
    pub dir: &'a Path,
    pub env: Vec<(String, String)>,
    /// Written to stdin, which is then closed; None leaves stdin empty.
    pub stdin: Option<String>,
}

/// What an agent keeps of the runner's environment (docs/decisions.md,
/// 20.k). The runner's environment holds other agents' tokens
/// (`token_env`) and whatever secrets its operator keeps there; an agent
/// gets these four, its own `env` from the configuration and its run's
/// `TASKBOARD_*`, nothing else.
const KEPT: [&str; 4] = ["PATH", "HOME", "LANG", "TZ"];

/// The variables of [`KEPT`] that `var` (the runner's environment) has.
/// `PATH` loses its relative entries (an empty one is the current
/// directory): the agent starts in its workspace, where they would find
/// programs of the repository.
fn kept(var: impl Fn(&'static str) -> Option<OsString>) -> Vec<(&'static str, OsString)> {
    let mut kept = Vec::new();
    for name in KEPT {
        let Some(value) = var(name) else { continue };
        let value = if name == "PATH" {
            let absolute = std::env::split_paths(&value).filter(|p| p.is_absolute());
            match std::env::join_paths(absolute) {
                Ok(path) => path,
                Err(_) => continue,
            }
        } else {
            value
        };
        kept.push((name, value));
    }
    kept
}

/// The agent's command, in a new process group of its own led by
/// `taskboard agent guard` (this very program), which ends the group if
/// the runner dies; killed if the runner drops it. The guard, and so the
/// agent, starts with a clean environment: [`kept`], then `s.env`. The
/// guard needs none of it; `TASKBOARD_RUN` in it is how a later runner
/// finds what this run left ([`kill_leftovers`]).
fn command(s: &Spawn<'_>) -> Command {
    // The running program, even if its file was replaced since it started.
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args(["agent", "guard", "--parent", &std::process::id().to_string(), "--"])
        .args(s.argv)
        .current_dir(s.dir)
        .env_clear()
        .envs(kept(std::env::var_os))
        .envs(s.env.iter().map(|(k, v)| (k, v)))
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

fn cannot_start(s: &Spawn<'_>, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Internal, format!("cannot start {}: {e}", s.argv[0]))
}

/// Starts the program in a new process group, its stdout and stderr sent
/// as transcript entries to `out` (bounded: a full channel makes the
/// agent wait on its pipe).
pub fn spawn(s: Spawn<'_>, out: mpsc::Sender<NewEntry>) -> Result<Child> {
    let mut cmd = command(&s);
    cmd.stdin(if s.stdin.is_some() { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| cannot_start(&s, e))?;
    if let (Some(text), Some(mut stdin)) = (s.stdin, child.stdin.take()) {
        tokio::spawn(async move {
            // An agent that does not read its task is its own business.
            let _ = stdin.write_all(text.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
    }
    if let Some(o) = child.stdout.take() {
        tokio::spawn(pieces(o, "stdout", out.clone()));
    }
    if let Some(e) = child.stderr.take() {
        tokio::spawn(pieces(e, "stderr", out));
    }
    Ok(child)
}

/// Starts a program that speaks a protocol on its stdin and stdout (an
/// ACP agent), in a new process group; its stderr goes to `out` as
/// transcript entries.
pub fn spawn_piped(s: Spawn<'_>, out: mpsc::Sender<NewEntry>) -> Result<(Child, ChildStdin, ChildStdout)> {
    let mut cmd = command(&s);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| cannot_start(&s, e))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(Error::internal("the agent's pipes are missing"));
    };
    if let Some(e) = child.stderr.take() {
        tokio::spawn(pieces(e, "stderr", out));
    }
    Ok((child, stdin, stdout))
}

/// Reads a stream and sends it line by line, a line longer than
/// [`PIECE`] in pieces, until it ends.
async fn pieces(mut r: impl AsyncRead + Unpin, stream: &'static str, out: mpsc::Sender<NewEntry>) {
    let mut buf: Vec<u8> = Vec::with_capacity(PIECE);
    let mut chunk = vec![0u8; 8192];
    let send = |bytes: &[u8]| {
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        if text.ends_with('\n') {
            text.pop();
        }
        text.truncate(text.floor_char_boundary(MAX_ENTRY_TEXT));
        NewEntry { kind: EntryKind::Output, text, data: Some(serde_json::json!({"stream": stream})) }
    };
    loop {
        let n = match r.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        while let Some(take) =
            buf.iter().position(|b| *b == b'\n').map(|i| i + 1).or((buf.len() >= PIECE).then_some(PIECE))
        {
            let line: Vec<u8> = buf.drain(..take).collect();
            if out.send(send(&line)).await.is_err() {
                return;
            }
        }
    }
    if !buf.is_empty() {
        let _ = out.send(send(&buf)).await;
    }
}

/// Kills the whole process group `pgid` (the agent and what it started).
pub fn kill_group(pgid: u32) {
    if let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

/// The pid file of a run: the agent's process group, so a runner started
/// after this one died can stop what it left.
pub fn pid_file(state: &Path, run: uuid::Uuid) -> PathBuf {
    state.join("pids").join(run.to_string())
}

pub fn write_pid_file(state: &Path, run: uuid::Uuid, pgid: u32) -> Result<()> {
    let path = pid_file(state, run);
    super::state_dir::dir(path.parent().expect("a pid file is in a directory"))?;
    super::state_dir::write(&path, format!("{pgid}\n").as_bytes())?;
    Ok(())
}

/// The runs a predecessor left pid files of: they were running when it
/// stopped.
pub fn leftover_runs(state: &Path) -> Vec<uuid::Uuid> {
    let Ok(files) = std::fs::read_dir(state.join("pids")) else { return Vec::new() };
    files.flatten().filter_map(|f| f.file_name().to_str().and_then(|n| n.parse().ok())).collect()
}

/// Kills every process a predecessor's runs left: for each pid file, the
/// processes whose environment names that run (`TASKBOARD_RUN`), and
/// their groups. A pid reused by an unrelated process since is left
/// alone, since its environment does not name the run. Answers how many
/// processes were killed.
pub fn kill_leftovers(state: &Path) -> usize {
    let Ok(files) = std::fs::read_dir(state.join("pids")) else { return 0 };
    let runs: Vec<(PathBuf, String)> = files
        .flatten()
        .map(|f| (f.path(), format!("TASKBOARD_RUN={}", f.file_name().to_string_lossy())))
        .collect();
    if runs.is_empty() {
        return 0;
    }
    let mut killed = 0;
    if let Ok(procs) = std::fs::read_dir("/proc") {
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            let Ok(environ) = std::fs::read(p.path().join("environ")) else { continue };
            let named = environ.split(|b| *b == 0).any(|v| runs.iter().any(|(_, r)| v == r.as_bytes()));
            if named && let Some(pid) = Pid::from_raw(pid) {
                let _ = kill_process_group(pid, Signal::KILL);
                let _ = kill_process(pid, Signal::KILL);
                killed += 1;
            }
        }
    }
    for (path, _) in runs {
        let _ = std::fs::remove_file(path);
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_keeps_four_variables_of_the_runner_and_path_only_its_absolute_entries() {
        let runner = |name: &str| -> Option<OsString> {
            match name {
                "PATH" => Some("/usr/local/bin::.:bin:/usr/bin".into()),
                "HOME" => Some("/home/runner".into()),
                "TZ" => Some("Europe/Paris".into()),
                "BOSS_TOKEN" | "IS_SANDBOX" => Some("x".into()),
                _ => None,
            }
        };
        let kept = kept(runner);
        let want: Vec<(&str, OsString)> = vec![
            ("PATH", "/usr/local/bin:/usr/bin".into()),
            ("HOME", "/home/runner".into()),
            ("TZ", "Europe/Paris".into()),
        ];
        assert_eq!(kept, want);
        assert!(super::kept(|_| None).is_empty());
    }
}
