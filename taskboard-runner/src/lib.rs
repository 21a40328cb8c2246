//! # taskboard-runner
//!
//! The runner behind `taskboard agent run`: a long-running process acting
//! for agent members (docs/decisions.md, "Runner"). For each agent it
//! follows the event stream, picks up the runs a person started for it,
//! claims ready work matching its labels under a lease and starts a run
//! of it, then supervises the agent's process to the run's end. Every
//! rule is the board's: the runner only calls the endpoints, as the agent
//! (its token), through any [`Perform`] (the command line gives it its
//! HTTP client).
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use taskboard_core::api::{
    ClaimRequest, ClaimTask, EventsQuery, GetMe, GetRun, ListRuns, NewRun, Optional, PollEvents,
    ReleaseRequest, ReleaseTask, RunListQuery, StartRun,
};
use taskboard_core::model::{Member, MemberType};
use taskboard_core::runs::{Run, RunState};
use taskboard_core::{Error, Perform, Result};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use taskboard_client::Reconnect;

mod acp;
mod agent;
mod answer;
mod changes;
mod command;
pub mod config;
mod git;
pub mod guard;
mod job;
mod landing;
mod message_prompt;
mod process;
mod prompt;
mod repo_url;
mod reports;
mod reviewing;
mod state_dir;
mod supervise;
mod workspace;

use config::{AgentEntry, RunnerConfig};

/// How often the runner looks for work when no event says there is some.
const LOOK_AGAIN: Duration = Duration::from_secs(60);

/// What the runner's agents share.
pub(crate) struct Shared {
    /// How the runner names itself on its runs.
    pub name: String,
    pub server: String,
    pub state: PathBuf,
    /// `allow_local_repos`: a project's repository may be a local one.
    pub allow_local_repos: bool,
    pub lease_seconds: u32,
    pub keep: Duration,
    /// Cancelled when the runner stops.
    pub stop: CancellationToken,
    /// Workspaces in use, never cleaned.
    pub live_dirs: Mutex<Vec<PathBuf>>,
    /// Cached clones are changed by one run at a time.
    pub git: tokio::sync::Mutex<()>,
    /// Runs at a time over all agents.
    pub slots: Arc<Semaphore>,
}

/// One agent the runner acts for, calling the board through `C`.
pub(crate) struct AgentCtx<C> {
    pub entry: AgentEntry,
    pub token: String,
    pub client: C,
    pub me: Member,
    pub shared: Arc<Shared>,
    /// Runs of this agent at a time.
    pub slots: Arc<Semaphore>,
    /// The runs this runner is running for the agent, to stop each when it
    /// ends on the board and tell it of other changes.
    pub live: Mutex<HashMap<Uuid, Live>>,
}

/// A run in progress, as the event stream reaches it.
#[derive(Clone)]
pub(crate) struct Live {
    /// Cancelled when the run ends on the board (or the runner stops).
    pub cancel: CancellationToken,
    /// Notified when the run changes on the board (a person answered its
    /// question).
    pub changed: Arc<tokio::sync::Notify>,
}

/// Whether the runner claimed the work itself or a person asked for the
/// run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Claimed,
    Requested,
}

/// What `taskboard agent run` was given.
pub struct Options<C> {
    pub config: Option<PathBuf>,
    pub agents: Vec<String>,
    /// `--server`, `TASKBOARD_SERVER` or the stored login's server; in
    /// local mode, where this process serves the board.
    pub server: Option<String>,
    /// Local mode: `server` is this process's, whatever the file says.
    pub local: bool,
    /// A caller of the board at a server's URL with a token: the command
    /// line's HTTP client.
    pub connect: fn(&str, Option<String>) -> Result<C>,
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "runner".to_string())
}

/// Runs until interrupted (SIGINT or SIGTERM): the agents' processes are
/// then stopped and their runs end `failed`.
pub async fn run<C: Perform>(o: Options<C>) -> Result<()> {
    let path = match o.config {
        Some(p) => p,
        None => config::default_path()
            .ok_or_else(|| Error::bad_request("no --config FILE and no HOME to find runner.toml in"))?,
    };
    let config = RunnerConfig::load(&path)?;
    let mut entries = config.agents.clone();
    if !o.agents.is_empty() {
        for slug in &o.agents {
            if !entries.iter().any(|a| &a.slug == slug) {
                return Err(Error::bad_request(format!(
                    "--agent {slug}: no [[agent]] of that slug in {}",
                    path.display()
                )));
            }
        }
        entries.retain(|a| o.agents.contains(&a.slug));
    }
    let server = if o.local { o.server } else { config.server.clone().or(o.server) };
    let server = server.ok_or_else(|| {
        Error::bad_request("no server: set `server` in the runner's file or give --server URL")
    })?;
    let state = config.state_dir()?;
    let tightened = state_dir::open(&state)
        .map_err(|e| Error::bad_request(format!("the state directory {}: {e}", state.display())))?;
    if tightened > 0 {
        eprintln!(
            "runner: the state directory {} was open to other users: {tightened} of its entries are now \
             the runner's only (0700 directories, 0600 files)",
            state.display()
        );
    }
    let left = process::leftover_runs(&state);
    let killed = process::kill_leftovers(&state);
    if killed > 0 {
        eprintln!("runner: killed {killed} processes left by an earlier runner");
    }
    let keep = Duration::from_secs(config.keep_workspaces_hours.saturating_mul(3600));
    let _ = workspace::clean(&state, keep, &[]).await;
    let shared = Arc::new(Shared {
        name: config.name.clone().unwrap_or_else(|| format!("{}:{}", host_name(), std::process::id())),
        server: server.trim_end_matches('/').to_string(),
        state,
        allow_local_repos: config.allow_local_repos,
        lease_seconds: config.lease_seconds,
        keep,
        stop: CancellationToken::new(),
        live_dirs: Mutex::new(Vec::new()),
        git: tokio::sync::Mutex::new(()),
        slots: Arc::new(Semaphore::new(config.max_runs)),
    });
    let mut agents = Vec::new();
    for entry in entries {
        let token = entry.token()?;
        let client = (o.connect)(&shared.server, Some(token.clone()))?;
        let me = client.call::<GetMe>((), (), ()).await?;
        if me.kind != MemberType::Agent || me.slug != entry.slug {
            return Err(Error::bad_request(format!(
                "agent {}: its token is {}'s, which is not that agent",
                entry.slug, me.slug
            )));
        }
        let slots = Arc::new(Semaphore::new(entry.max_runs));
        let a = AgentCtx {
            entry,
            token,
            client,
            me,
            shared: shared.clone(),
            slots,
            live: Mutex::new(HashMap::new()),
        };
        answer::end_left_open(&a, &left).await;
        agents.push(Arc::new(a));
    }
    eprintln!(
        "runner {}: serving {} on {}",
        shared.name,
        agents.iter().map(|a| a.me.slug.as_str()).collect::<Vec<_>>().join(", "),
        shared.server
    );
    let tracker = tokio_util::task::TaskTracker::new();
    for a in agents {
        let t = tracker.clone();
        tracker.spawn(follow(a, t));
    }
    tracker.close();
    stop_signal().await;
    eprintln!("runner {}: stopping", shared.name);
    shared.stop.cancel();
    tracker.wait().await;
    Ok(())
}

async fn stop_signal() {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Follows the event stream for one agent until the runner stops.
async fn follow<C: Perform>(a: Arc<AgentCtx<C>>, tracker: tokio_util::task::TaskTracker) {
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut seq: Option<u64> = None;
    let mut look = true;
    let mut reconnect = Reconnect::default();
    let mut lost = Lost::default();
    let mut looked = tokio::time::Instant::now();
    loop {
        if a.shared.stop.is_cancelled() {
            return;
        }
        if seq.is_none() {
            // Where the stream stands before looking, so nothing after is missed.
            match a.client.call::<PollEvents>((), EventsQuery::default(), ()).await {
                Ok(p) => {
                    lost.reached(&a);
                    seq = Some(p.next);
                    eprintln!(
                        "runner {}: {} follows the board's events from seq {}",
                        a.shared.name, a.me.slug, p.next
                    );
                }
                Err(e) => {
                    if wait_or_stop(&a, &mut reconnect, &mut lost, e).await {
                        return;
                    }
                    continue;
                }
            }
        }
        // A task passed over after a failed run is claimable again after
        // a while that no event announces.
        look |= looked.elapsed() >= LOOK_AGAIN;
        if look {
            look = false;
            looked = tokio::time::Instant::now();
            if let Err(e) = find_work(&a, &tracker, &done_tx).await {
                if !lost.is_lost() {
                    eprintln!("runner: {}: {}", a.me.slug, e.detail());
                }
                look = true;
            }
        }
        let q = EventsQuery {
            since: seq,
            limit: Some(1000),
            // After a failure, a poll that answers at once tells soon
            // that the server is back.
            wait: Some(if lost.is_lost() { 0 } else { 30 }),
            runner: Some(a.shared.name.clone()),
        };
        tokio::select! {
            _ = a.shared.stop.cancelled() => return,
            Some(()) = done_rx.recv() => look = true,
            page = a.client.call::<PollEvents>((), q, ()) => match page {
                Ok(p) => {
                    reconnect = Reconnect::default();
                    lost.reached(&a);
                    seq = Some(p.next);
                    look |= p.resync_required;
                    if p.resync_required {
                        // Events were missed: a run waiting for an answer looks again.
                        for live in a.live.lock().unwrap().values() {
                            live.changed.notify_one();
                        }
                    }
                    for e in &p.events {
                        look |= on_event(&a, e);
                        look |= on_message(&a, e, &tracker, &done_tx).await;
                    }
                }
                Err(e) => {
                    if wait_or_stop(&a, &mut reconnect, &mut lost, e).await {
                        return;
                    }
                }
            },
        }
    }
}

/// Since when the server has not answered the agent's event stream: the
/// log says so once, and once again when it answers.
#[derive(Default)]
struct Lost(Option<tokio::time::Instant>);

impl Lost {
    fn is_lost(&self) -> bool {
        self.0.is_some()
    }

    /// The server answered.
    fn reached<C>(&mut self, a: &AgentCtx<C>) {
        if let Some(since) = self.0.take() {
            eprintln!(
                "runner {}: {} reached the server again after {} s",
                a.shared.name,
                a.me.slug,
                since.elapsed().as_secs()
            );
        }
    }

    /// The server did not answer: told the first time only.
    fn lost<C>(&mut self, a: &AgentCtx<C>, e: &Error) {
        if self.0.is_none() {
            self.0 = Some(tokio::time::Instant::now());
            eprintln!(
                "runner {}: {} cannot reach the server at {} ({}); trying again until it answers",
                a.shared.name,
                a.me.slug,
                a.shared.server,
                e.detail()
            );
        }
    }
}

/// Waits before trying the server again; true when the runner stops
/// meanwhile, or the error is one waiting cannot fix (said then).
async fn wait_or_stop<C>(a: &AgentCtx<C>, reconnect: &mut Reconnect, lost: &mut Lost, e: Error) -> bool {
    lost.lost(a, &e);
    let detail = e.detail().to_string();
    let stop = tokio::select! {
        _ = a.shared.stop.cancelled() => true,
        r = reconnect.wait(e) => r.is_err(),
    };
    if stop && !a.shared.stop.is_cancelled() {
        eprintln!("runner {}: {}: {detail}", a.shared.name, a.me.slug);
    }
    stop
}

/// Reacts to one event: stops a run that ended on the board; true when
/// there may be new work (a run asked for, a task changed).
fn on_event<C>(a: &AgentCtx<C>, e: &serde_json::Value) -> bool {
    let kind = e["type"].as_str().unwrap_or("");
    match kind {
        "run.created" | "run.updated" => {
            let Ok(run) = serde_json::from_value::<Run>(e["data"].clone()) else { return false };
            if run.agent.id != a.me.id {
                return false;
            }
            if run.state.is_final() {
                if let Some(live) = a.live.lock().unwrap().get(&run.id) {
                    live.cancel.cancel();
                }
                // A slot may be free again.
                return true;
            }
            if let Some(live) = a.live.lock().unwrap().get(&run.id) {
                live.changed.notify_one();
            }
            run.state == RunState::Starting && run.runner.is_none()
        }
        "run.output" | "task.lease_renewed" => false,
        _ => kind.starts_with("task.") || kind.starts_with("project."),
    }
}

/// Answers a `message.new` the agent answers by its listen modes: a run
/// of the agent started here when a slot is free, else left for the
/// first runner with one. True when such a run waits.
async fn on_message<C: Perform>(
    a: &Arc<AgentCtx<C>>,
    e: &serde_json::Value,
    tracker: &tokio_util::task::TaskTracker,
    done: &tokio::sync::mpsc::UnboundedSender<()>,
) -> bool {
    if e["type"].as_str() != Some("message.new") {
        return false;
    }
    let Ok(m) = serde_json::from_value::<taskboard_core::model::Message>(e["data"].clone()) else {
        return false;
    };
    if !answer::answers(a, &m) {
        return false;
    }
    let permits = slot(a);
    match answer::ask(a, &m, permits.is_some()).await {
        Ok(Some(run)) => match permits {
            Some(p) => {
                start(a, tracker, done, run, Origin::Claimed, p);
                false
            }
            None => true,
        },
        // Another runner of the agent answers it.
        Ok(None) => false,
        Err(e) => {
            eprintln!("runner: {}: message {}: {}", a.me.slug, m.id, e.detail());
            false
        }
    }
}

/// Two permits: one of the agent's, one of the runner's; None when
/// either is used up.
fn slot<C>(a: &AgentCtx<C>) -> Option<(OwnedSemaphorePermit, OwnedSemaphorePermit)> {
    let mine = a.slots.clone().try_acquire_owned().ok()?;
    let all = a.shared.slots.clone().try_acquire_owned().ok()?;
    Some((mine, all))
}

/// Picks up the runs asked for the agent, then claims ready work, while
/// it has free slots.
async fn find_work<C: Perform>(
    a: &Arc<AgentCtx<C>>,
    tracker: &tokio_util::task::TaskTracker,
    done: &tokio::sync::mpsc::UnboundedSender<()>,
) -> Result<()> {
    let q = RunListQuery {
        agent_id: Some(a.me.id),
        state: Some(RunState::Starting),
        limit: Some(100),
        ..Default::default()
    };
    let asked = a.client.call::<ListRuns>((), q, ()).await?;
    for run in asked.items.into_iter().rev() {
        if run.runner.is_some() || a.live.lock().unwrap().contains_key(&run.id) {
            continue;
        }
        let Some(permits) = slot(a) else { return Ok(()) };
        start(a, tracker, done, run, Origin::Requested, permits);
    }
    loop {
        let Some(permits) = slot(a) else { return Ok(()) };
        let claim = ClaimRequest { lease_seconds: Some(a.shared.lease_seconds), ..Default::default() };
        let Some(task) = a.client.call::<ClaimTask>((), (), Optional(Some(claim))).await? else {
            return Ok(());
        };
        let new = NewRun {
            agent_id: a.me.id,
            lease_seconds: Some(a.shared.lease_seconds),
            runner: Some(a.shared.name.clone()),
        };
        match a.client.call::<StartRun>(task.id, (), new).await {
            Ok(run) => {
                eprintln!("runner {}: {} claimed {} ({})", a.shared.name, a.me.slug, task.key, task.title);
                start(a, tracker, done, run, Origin::Claimed, permits)
            }
            Err(e) => {
                // Give the claimed task back rather than sit on it.
                let reason = format!("the runner could not start a run: {}", e.detail());
                let body = ReleaseRequest { reason: taskboard_core::validate::Reason::new(&reason).ok() };
                let _ = a.client.call::<ReleaseTask>(task.id, (), Optional(Some(body))).await;
                return Err(e);
            }
        }
    }
}

fn start<C: Perform>(
    a: &Arc<AgentCtx<C>>,
    tracker: &tokio_util::task::TaskTracker,
    done: &tokio::sync::mpsc::UnboundedSender<()>,
    run: Run,
    origin: Origin,
    permits: (OwnedSemaphorePermit, OwnedSemaphorePermit),
) {
    let live = Live { cancel: a.shared.stop.child_token(), changed: Arc::default() };
    a.live.lock().unwrap().insert(run.id, live.clone());
    let (a, done) = (a.clone(), done.clone());
    let what = what_run(&run);
    eprintln!("runner {}: {} starts run {} ({what})", a.shared.name, a.me.slug, run.id);
    tracker.spawn(async move {
        let id = run.id;
        supervise::supervise(a.clone(), run, origin, live).await;
        let end = match a.client.call::<GetRun>(id, (), ()).await {
            Ok(r) => match r.stop_reason.as_deref().and_then(|s| s.lines().next()) {
                Some(why) => format!("{}: {why}", r.state),
                None => r.state.to_string(),
            },
            Err(e) => format!("its end unknown ({})", e.detail()),
        };
        eprintln!("runner {}: {} run {id} ({what}) ended {end}", a.shared.name, a.me.slug);
        a.live.lock().unwrap().remove(&id);
        drop(permits);
        let _ = done.send(());
    });
}

/// What a run does, for the log: its purpose and task, or the message it
/// answers.
fn what_run(run: &Run) -> String {
    match (&run.task, run.message_id) {
        (_, Some(m)) => format!("answering message {m}"),
        (Some(t), None) => format!("{} {}", run.work.purpose.as_str(), t.key),
        (None, None) => run.work.purpose.as_str().to_string(),
    }
}

/// The state directory's pid files (for tests and diagnostics).
pub fn pid_dir(state: &Path) -> PathBuf {
    state.join("pids")
}
