//! What a run tells the board, whichever way its agent is driven: that
//! it runs, the task's heartbeats, the agent's output to the transcript,
//! and its end, each call tried again while the server is out of reach;
//! and how the agent stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use taskboard_core::api::{
    AppendTranscript, HeartbeatTask, NewEntries, NewEntry, Optional, RunPatch, UpdateRun,
};
use taskboard_core::runs::{Run, RunState};
use taskboard_core::{Error, ErrorKind, Perform, Result};
use tokio::sync::mpsc;

use super::{AgentCtx, Shared};
use taskboard_client::Reconnect;

/// Entries and bytes of one transcript append at most, and how long
/// output waits to be sent with what follows.
const BATCH_ENTRIES: usize = 500;
const BATCH_BYTES: usize = 512 * 1024;
const BATCH_WAIT: Duration = Duration::from_millis(200);

/// How long one call that must reach the server waits for its answer
/// before it is tried again: a connection the server dropped without a
/// word must not hold the run up.
const ATTEMPT: Duration = Duration::from_secs(30);

/// How the agent stopped.
pub(super) enum End {
    /// It exited, with its exit code (None: killed by a signal).
    Exited(Option<i32>),
    /// An ACP agent ended its turn: the run ends in `state`.
    Turn {
        state: RunState,
        reason: Option<String>,
    },
    /// The agent could not be driven (it broke the protocol, or left
    /// before ending its turn): the run fails, saying why.
    Failed(String),
    TimedOut,
    /// The run ended on the board (cancelled, or its task moved away).
    Cancelled,
    /// The task's lease is gone (expired: the run is `lost`).
    LeaseLost(String),
    /// The runner is stopping.
    Stopped,
}

/// The state a run ends in for how its agent ended, its exit code and
/// why; None when the run is already over on the board (cancelled, its
/// lease gone).
pub(super) fn ending<C>(a: &AgentCtx<C>, end: End) -> Option<(RunState, Option<i32>, Option<String>)> {
    Some(match end {
        End::Exited(Some(0)) => (RunState::Succeeded, Some(0), None),
        End::Exited(Some(code)) => (RunState::Failed, Some(code), None),
        End::Exited(None) => (RunState::Failed, None, Some("the agent was killed by a signal".to_string())),
        End::Turn { state, reason } => (state, None, reason),
        End::Failed(reason) => (RunState::Failed, None, Some(reason)),
        End::TimedOut => {
            (RunState::TimedOut, None, Some(format!("no end after {} seconds", a.entry.timeout_seconds)))
        }
        End::Stopped => (RunState::Failed, None, Some("the runner stopped".to_string())),
        End::Cancelled => return None,
        End::LeaseLost(why) => {
            eprintln!("runner: {}: the task's lease is gone: {why}", a.me.slug);
            return None;
        }
    })
}

/// Reports the run `running`, in this runner's name, with its branch.
/// False when it ended on the board meanwhile.
pub(super) async fn mark_running<C: Perform>(
    a: &AgentCtx<C>,
    run: &Run,
    branch: Option<String>,
) -> Result<bool> {
    let running = RunPatch {
        state: Some(RunState::Running),
        runner: Some(a.shared.name.clone()),
        branch,
        ..Default::default()
    };
    match until_answered(&a.shared, || a.client.call::<UpdateRun>(run.id, (), running.clone())).await {
        Err(e) if e.kind() == ErrorKind::Conflict => Ok(false),
        Err(e) => Err(e),
        Ok(_) => Ok(true),
    }
}

/// Reports a run's end. A server out of reach for a while (restarting,
/// or the network down) is waited for, up to one lease; a run that
/// ended on the board meanwhile has nothing more to hear.
pub(super) async fn end_run<C: Perform>(a: &AgentCtx<C>, run: uuid::Uuid, done: RunPatch) -> Result<()> {
    let answer = until_answered(&a.shared, || a.client.call::<UpdateRun>(run, (), done.clone())).await;
    match answer {
        Err(e) if e.kind() == ErrorKind::Conflict => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Ok(()),
    }
}

/// Whether waiting and trying again may help: the server could not be
/// reached, failed, or cannot serve now.
fn passing(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Internal | ErrorKind::Unavailable)
}

/// Calls until the server answers, or one lease has passed, or the
/// runner stops: what the runner must tell the board survives a server
/// restart.
pub(super) async fn until_answered<T, F>(shared: &Shared, mut call: impl FnMut() -> F) -> Result<T>
where
    F: std::future::Future<Output = Result<T>>,
{
    let until = tokio::time::Instant::now() + Duration::from_secs(u64::from(shared.lease_seconds));
    let mut reconnect = Reconnect::default();
    loop {
        let answer = tokio::time::timeout(ATTEMPT, call()).await.unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Internal,
                format!("no answer from the server in {} s", ATTEMPT.as_secs()),
            ))
        });
        match answer {
            Err(e) if passing(&e) && tokio::time::Instant::now() < until => {
                eprintln!("runner {}: {}; trying again", shared.name, e.detail());
                let detail = e.detail().to_string();
                tokio::select! {
                    _ = shared.stop.cancelled() => return Err(Error::new(ErrorKind::Internal, detail)),
                    waited = reconnect.wait(e) => waited?,
                }
            }
            answer => return answer,
        }
    }
}

/// Renews the task's lease; an end when it is gone. A network failure
/// is not, nor a server slower than a beat: the next beat tries again.
pub(super) async fn heartbeat<C: Perform>(a: &AgentCtx<C>, task: uuid::Uuid) -> Option<End> {
    let beat = a.client.call::<HeartbeatTask>(task, (), Optional(None));
    match tokio::time::timeout(beat_every(a), beat).await {
        Ok(Err(e))
            if matches!(e.kind(), ErrorKind::Forbidden | ErrorKind::Conflict | ErrorKind::NotFound) =>
        {
            Some(End::LeaseLost(e.detail().to_string()))
        }
        _ => None,
    }
}

/// Does `work` while renewing the lease of `task`: what the runner does
/// after its agent ended (pushing, reading the changes) may outlast a
/// lease.
pub(super) async fn keeping_lease<C: Perform, T>(
    a: &AgentCtx<C>,
    task: uuid::Uuid,
    work: impl std::future::Future<Output = T>,
) -> T {
    let every = beat_every(a);
    let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = beat.tick() => {
                let _ = heartbeat(a, task).await;
            }
        }
    }
}

/// How often the lease is renewed: a third of it.
pub(super) fn beat_every<C>(a: &AgentCtx<C>) -> Duration {
    Duration::from_secs(u64::from(a.shared.lease_seconds / 3).max(1))
}

/// The agent's output on its way to the run's transcript.
pub(super) struct Output {
    pump: tokio::task::JoinHandle<()>,
    /// Notified when the output has ended (every sender dropped).
    ended: Arc<tokio::sync::Notify>,
    flow: Arc<Flow>,
}

/// How far the output has come, for waiting on it only while it moves.
#[derive(Default)]
struct Flow {
    /// Entries the pump has taken in so far.
    taken: AtomicU64,
    /// A batch is on its way to the server.
    sending: AtomicBool,
}

/// How long output that stopped moving is waited for after the agent
/// ended: what a process that left the agent's group still holds open.
const QUIET: Duration = Duration::from_secs(5);

impl Output {
    /// Sends what arrives on `rx` to the transcript of `run`, in batches.
    pub fn start<C: Perform>(a: &AgentCtx<C>, run: uuid::Uuid, rx: mpsc::Receiver<NewEntry>) -> Output {
        let ended = Arc::new(tokio::sync::Notify::new());
        let flow = Arc::new(Flow::default());
        let pump =
            tokio::spawn(pump(a.client.clone(), a.shared.clone(), run, rx, ended.clone(), flow.clone()));
        Output { pump, ended, flow }
    }

    /// Waits for `work` (something the output's end brings: the pipes'
    /// last lines read, the pump drained) while the output moves
    /// ([`Flow::wait`]), renewing the task's lease (`lease`) meanwhile.
    pub async fn while_flowing<C: Perform, T>(
        &self,
        a: &AgentCtx<C>,
        lease: Option<uuid::Uuid>,
        work: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        self.flow.wait(a, lease, work).await
    }

    /// Waits until the agent's output is in the transcript, as long as
    /// it moves ([`Flow::wait`]). Sending what was read is waited for (up
    /// to a lease, while the server is out of reach).
    pub async fn finish<C: Perform>(self, a: &AgentCtx<C>, lease: Option<uuid::Uuid>) {
        if self.flow.wait(a, lease, self.ended.notified()).await.is_some() {
            let _ = self.pump.await;
        }
    }
}

impl Flow {
    /// Waits for `work` while the output moves: it is given up once
    /// nothing was taken in or sent for [`QUIET`], or after a lease in
    /// all. A slow server thus never cuts a transcript (the output moves,
    /// batch by batch), and a process that left the agent's group with
    /// the pipes open holds the run up for seconds only.
    async fn wait<C: Perform, T>(
        &self,
        a: &AgentCtx<C>,
        lease: Option<uuid::Uuid>,
        work: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        let ceiling = tokio::time::Instant::now() + Duration::from_secs(u64::from(a.shared.lease_seconds));
        let wait = async {
            tokio::pin!(work);
            let mut seen = self.taken.load(Ordering::Relaxed);
            loop {
                if let Ok(done) = tokio::time::timeout(QUIET, &mut work).await {
                    return Some(done);
                }
                let taken = self.taken.load(Ordering::Relaxed);
                let still = taken == seen && !self.sending.load(Ordering::Relaxed);
                if still || tokio::time::Instant::now() >= ceiling {
                    return None;
                }
                seen = taken;
            }
        };
        match lease {
            Some(task) => keeping_lease(a, task, wait).await,
            None => wait.await,
        }
    }
}

/// Sends the agent's output to the run's transcript in batches, until
/// the output ends; a batch the server could not take is sent again once
/// it can (the agent meanwhile waits on its full pipe). Once the run is
/// final on the board the rest is read and dropped, so the agent never
/// waits on a full pipe.
async fn pump<C: Perform>(
    c: C,
    shared: Arc<Shared>,
    run: uuid::Uuid,
    mut rx: mpsc::Receiver<NewEntry>,
    ended: Arc<tokio::sync::Notify>,
    flow: Arc<Flow>,
) {
    let mut open = true;
    let mut over = false;
    while !over {
        let Some(first) = rx.recv().await else { break };
        flow.taken.fetch_add(1, Ordering::Relaxed);
        let mut bytes = first.text.len();
        let mut batch = vec![first];
        let until = tokio::time::Instant::now() + BATCH_WAIT;
        while batch.len() < BATCH_ENTRIES && bytes < BATCH_BYTES {
            match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(Some(e)) => {
                    flow.taken.fetch_add(1, Ordering::Relaxed);
                    bytes += e.text.len();
                    batch.push(e);
                }
                Ok(None) => {
                    over = true;
                    ended.notify_one();
                    break;
                }
                Err(_) => break,
            }
        }
        if !open {
            continue;
        }
        let append = || c.call::<AppendTranscript>(run, (), NewEntries { entries: batch.clone() });
        flow.sending.store(true, Ordering::Relaxed);
        let sent = until_answered(&shared, append).await;
        flow.sending.store(false, Ordering::Relaxed);
        if let Err(e) = sent
            && matches!(e.kind(), ErrorKind::Conflict | ErrorKind::Forbidden | ErrorKind::NotFound)
        {
            open = false;
        }
    }
    ended.notify_one();
}
