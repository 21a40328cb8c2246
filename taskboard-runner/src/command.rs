//! Command agents: any program, started in the run's workspace with its
//! prompt as Markdown on stdin (or in a file); exit 0 succeeds. Its
//! output goes to the run's transcript, and the runner keeps what it
//! needs of it: its standard output for a reply, the last lines for a
//! summary and a failure's reason.

use std::collections::VecDeque;
use std::time::Duration;

use taskboard_core::api::NewEntry;
use taskboard_core::{Perform, Result};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::job::{Job, Outcome};
use super::process::{self, Spawn};
use super::reports::{End, Output, beat_every, heartbeat, mark_running};
use super::{AgentCtx, Live};

/// Characters of output kept for a failure's reason and a summary.
const TAIL_CHARS: usize = 1500;
/// The longest reply kept (the board's limit of a message).
pub(crate) const REPLY_CHARS: usize = 100_000;

/// What is kept of the output.
#[derive(Default)]
struct Kept {
    stdout: String,
    /// The last lines of standard output.
    summary: String,
    tail: String,
}

/// Whole lines, the newest last, up to [`TAIL_CHARS`].
#[derive(Default)]
pub(crate) struct Tail(VecDeque<String>);

impl Tail {
    pub fn push(&mut self, line: &str) {
        self.0.push_back(line.to_string());
        while self.0.iter().map(|t| t.chars().count() + 1).sum::<usize>() > TAIL_CHARS && self.0.len() > 1 {
            self.0.pop_front();
        }
    }

    pub fn text(self) -> String {
        self.0.into_iter().collect::<Vec<_>>().join("\n")
    }
}

/// Passes the output on to the transcript, keeping what [`Kept`] holds.
async fn keep(mut rx: mpsc::Receiver<NewEntry>, to_pump: mpsc::Sender<NewEntry>) -> Kept {
    let (mut stdout, mut chars, mut summary, mut tail) = (String::new(), 0, Tail::default(), Tail::default());
    while let Some(e) = rx.recv().await {
        let out = e.data.as_ref().and_then(|d| d["stream"].as_str()) == Some("stdout");
        if out && chars < REPLY_CHARS {
            stdout.push_str(&e.text);
            stdout.push('\n');
            chars += e.text.chars().count() + 1;
        }
        if out {
            summary.push(&e.text);
        }
        tail.push(&e.text);
        let _ = to_pump.send(e).await;
    }
    Kept { stdout, summary: summary.text(), tail: tail.text() }
}

/// Runs a command agent to its end.
pub(super) async fn run<C: Perform>(a: &AgentCtx<C>, job: Job<'_>, live: &Live) -> Result<Outcome> {
    let Job { run, ws, mut env, markdown, prompt_file, lease, .. } = job;
    let stdin = match prompt_file {
        None => Some(markdown),
        Some(file) => {
            super::state_dir::write(&file, markdown.as_bytes())?;
            env.push(("TASKBOARD_PROMPT_FILE".to_string(), file.to_string_lossy().into_owned()));
            None
        }
    };
    let (tx, rx) = mpsc::channel::<NewEntry>(256);
    let (to_pump, pump_rx) = mpsc::channel::<NewEntry>(256);
    let kept = tokio::spawn(keep(rx, to_pump));
    let spawn = Spawn { argv: &a.entry.command, dir: &ws.dir, env, stdin };
    let mut child = process::spawn(spawn, tx)?;
    let pgid = child.id().unwrap_or(0);
    process::write_pid_file(&a.shared.state, run.id, pgid)?;
    let output = Output::start(a, run.id, pump_rx);
    let end = match mark_running(a, run, ws.branch.clone()).await {
        Ok(false) => End::Cancelled,
        Err(e) => {
            process::kill_group(pgid);
            return Err(e);
        }
        Ok(true) => watch(a, &mut child, lease, &live.cancel).await,
    };
    process::kill_group(pgid);
    let _ = child.wait().await;
    let kept = output.while_flowing(a, lease, kept).await.and_then(|r| r.ok()).unwrap_or_default();
    output.finish(a, lease).await;
    Ok(Outcome { end, summary: kept.summary, tail: kept.tail, reply: Some(kept.stdout) })
}

/// Waits for the agent's end, renewing the lease of `lease` (a task)
/// meanwhile.
async fn watch<C: Perform>(
    a: &AgentCtx<C>,
    child: &mut tokio::process::Child,
    lease: Option<Uuid>,
    cancel: &CancellationToken,
) -> End {
    let deadline = tokio::time::sleep(Duration::from_secs(a.entry.timeout_seconds));
    tokio::pin!(deadline);
    let every = beat_every(a);
    let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            status = child.wait() => return End::Exited(status.ok().and_then(|s| s.code())),
            _ = cancel.cancelled() => {
                return if a.shared.stop.is_cancelled() { End::Stopped } else { End::Cancelled };
            }
            _ = &mut deadline => return End::TimedOut,
            _ = beat.tick(), if lease.is_some() => {
                if let Some(end) = heartbeat(a, lease.unwrap_or_default()).await {
                    return end;
                }
            }
        }
    }
}
