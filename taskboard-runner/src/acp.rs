//! Agent Client Protocol agents (README, "The runner"; docs/rules.md,
//! "Runs"): the runner is the ACP client of an agent it starts in the
//! run's workspace. It initializes the connection, opens a session in
//! the workspace offering the board's MCP server (the `worker` profile,
//! acting as the agent member), sends the task as the prompt, and maps
//! what the agent sends to the board (acp/report.rs) until the turn
//! ends. Cancellation sends `session/cancel` and, after a short grace,
//! kills the agent's process group.
//!
//! The runner advertises no client capabilities: no file system (the
//! agent works in its workspace with its own tools, and reading or
//! writing for it would confine nothing), no terminal.

mod report;

use std::pin::Pin;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, EnvVariable, Implementation, InitializeRequest,
    McpServer, McpServerStdio, NewSessionRequest, PromptRequest, PromptResponse, RequestPermissionRequest,
    RequestPermissionResponse, SessionId, SessionNotification, SessionUpdate, StopReason, TextContent,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Lines};
use futures_util::{SinkExt, TryFutureExt, TryStreamExt};
use taskboard_core::runs::RunState;
use taskboard_core::{Error, Perform, Result};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{FramedRead, FramedWrite, LinesCodec};

use super::job::{Job, Outcome, Target};
use super::process::{self, Spawn};
use super::reports::{self, End};
use super::workspace::Workspace;
use super::{AgentCtx, Live};
use report::Report;

/// The longest line the agent may send (a JSON-RPC message); a longer
/// one ends the connection.
const MAX_LINE: usize = 32 * 1024 * 1024;
/// How long an agent asked to cancel its turn has to end it before its
/// process group is killed.
const CANCEL_GRACE: Duration = Duration::from_secs(2);
/// How often what the agent said is sent to the transcript.
const FLUSH_EVERY: Duration = Duration::from_millis(250);

/// What the agent sends the runner, in the order it sent it.
pub(super) enum Inbound {
    Update(SessionUpdate),
    Permission(RequestPermissionRequest, Responder<RequestPermissionResponse>),
}

/// The answer to the request in flight.
enum Answer {
    Initialized(ProtocolVersion),
    Session(SessionId),
    Prompted(PromptResponse),
}

type Pending =
    Pin<Box<dyn Future<Output = std::result::Result<Answer, agent_client_protocol::Error>> + Send>>;

/// Runs an ACP agent to the end of its turn (or until the run is
/// stopped); the process group is gone when it returns.
pub(super) async fn run<C: Perform>(a: &AgentCtx<C>, job: Job<'_>, live: &Live) -> Result<Outcome> {
    let Job { run, target, ws, env, markdown, lease, .. } = job;
    // A reviewer gets the board's tools for reviewing; anyone else those
    // for working on a task.
    let profile = if matches!(target, Target::Review(_)) { "reviewer" } else { "worker" };
    let (out_tx, out_rx) = mpsc::channel(256);
    let spawn = Spawn { argv: &a.entry.command, dir: &ws.dir, env, stdin: None };
    let (mut child, stdin, stdout) = process::spawn_piped(spawn, out_tx)?;
    let pgid = child.id().unwrap_or(0);
    if let Err(e) = process::write_pid_file(&a.shared.state, run.id, pgid) {
        process::kill_group(pgid);
        return Err(e);
    }
    let output = reports::Output::start(a, run.id, out_rx);
    let (in_tx, in_rx) = mpsc::channel(64);
    let (cx, driver) = connect(stdin, stdout, in_tx);
    let end = match reports::mark_running(a, run, ws.branch.clone()).await {
        Ok(false) => Ok((End::Cancelled, String::new())),
        Err(e) => Err(e),
        Ok(true) => match cx.await {
            Ok(cx) => {
                let mut report = Report::new(a, run.id, target);
                let end =
                    drive(a, lease, profile, ws, markdown, live, &cx, &mut child, in_rx, &mut report).await;
                report.flush().await;
                Ok((end, report.last_said().to_string()))
            }
            Err(_) => Ok((End::Failed("the connection to the agent did not start".into()), String::new())),
        },
    };
    driver.abort();
    process::kill_group(pgid);
    let _ = child.wait().await;
    output.finish(a, lease).await;
    let (end, summary) = end?;
    Ok(Outcome { end, summary, tail: String::new(), reply: None })
}

/// Speaks ACP over the agent's stdin and stdout: what the agent sends
/// goes to `inbound`; the connection, once up, to the answer. The
/// connection runs in its own task until aborted.
fn connect(
    stdin: ChildStdin,
    stdout: ChildStdout,
    inbound: mpsc::Sender<Inbound>,
) -> (oneshot::Receiver<ConnectionTo<Agent>>, tokio::task::JoinHandle<()>) {
    let outgoing =
        SinkExt::<String>::sink_map_err(FramedWrite::new(stdin, LinesCodec::new()), std::io::Error::other);
    let incoming =
        FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_LINE)).map_err(std::io::Error::other);
    let transport = Lines::new(outgoing, incoming);
    let (cx_tx, cx_rx) = oneshot::channel();
    let updates = inbound.clone();
    let permissions = inbound;
    let connection = Client
        .v1()
        .name("taskboard")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                // A run that is over reads nothing more.
                let _ = updates.send(Inbound::Update(n.update)).await;
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: RequestPermissionRequest, responder: Responder<RequestPermissionResponse>, _cx| {
                // Answered when a person has; dropped (an error to the
                // agent) if the run is over.
                let _ = permissions.send(Inbound::Permission(r, responder)).await;
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let _ = cx_tx.send(cx);
            std::future::pending::<std::result::Result<(), agent_client_protocol::Error>>().await
        });
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    (cx_rx, driver)
}

fn failed(what: &str, e: impl std::fmt::Display) -> End {
    End::Failed(format!("{what}: {e}"))
}

/// The end of an agent that left before ending its turn: its exit
/// status (None: unknown; Some(None): killed by a signal) and what
/// failed.
fn left(status: Option<Option<i32>>, e: impl std::fmt::Display) -> End {
    match status {
        Some(Some(code)) => failed(&format!("the agent exited with code {code} before ending its turn"), e),
        Some(None) => failed("the agent was killed before ending its turn", e),
        None => failed("the agent failed", e),
    }
}

/// The board's MCP server as the agent member, in a lean profile
/// (`worker`, or `reviewer` for a review run): this very program over
/// stdio, with the agent's token.
fn board_mcp<C>(a: &AgentCtx<C>, profile: &str) -> Result<McpServer> {
    let exe = std::env::current_exe().map_err(|e| Error::internal(format!("the runner's own path: {e}")))?;
    let server = McpServerStdio::new("taskboard", exe)
        .args(vec!["mcp".into(), "--profile".into(), profile.into()])
        .env(vec![
            EnvVariable::new("TASKBOARD_SERVER", a.shared.server.clone()),
            EnvVariable::new("TASKBOARD_TOKEN", a.token.clone()),
        ]);
    Ok(McpServer::Stdio(server))
}

/// The turn from `initialize` to the prompt's answer, with everything
/// the agent sends meanwhile, the lease's heartbeats, the timeout and
/// cancellation.
#[allow(clippy::too_many_arguments)]
async fn drive<C: Perform>(
    a: &AgentCtx<C>,
    leased: Option<uuid::Uuid>,
    profile: &str,
    ws: &Workspace,
    markdown: String,
    live: &Live,
    cx: &ConnectionTo<Agent>,
    child: &mut Child,
    mut inbound: mpsc::Receiver<Inbound>,
    report: &mut Report<'_, C>,
) -> End {
    let init = InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(ClientCapabilities::default())
        .client_info(Implementation::new("taskboard", env!("CARGO_PKG_VERSION")));
    let mut pending: Pending =
        Box::pin(cx.send_request(init).block_task().map_ok(|r| Answer::Initialized(r.protocol_version)));
    let mut markdown = Some(markdown);
    let mut session: Option<SessionId> = None;
    let mut exited: Option<Option<i32>> = None;
    let deadline = tokio::time::sleep(Duration::from_secs(a.entry.timeout_seconds));
    tokio::pin!(deadline);
    let every = reports::beat_every(a);
    let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let mut flush = tokio::time::interval(FLUSH_EVERY);
    let gone = tokio::time::sleep(Duration::MAX);
    tokio::pin!(gone);
    let stop = loop {
        tokio::select! {
            // The run's end first, so a flooding agent cannot hide it;
            // what the agent sent before the answer it sent after.
            biased;
            _ = live.cancel.cancelled() => {
                break if a.shared.stop.is_cancelled() { End::Stopped } else { End::Cancelled };
            }
            _ = &mut deadline => break End::TimedOut,
            _ = beat.tick(), if leased.is_some() => {
                if let Some(end) = reports::heartbeat(a, leased.unwrap_or_default()).await {
                    break end;
                }
            }
            Some(message) = inbound.recv() => match message {
                Inbound::Update(update) => report.update(update).await,
                Inbound::Permission(request, responder) => report.ask(request, responder).await,
            },
            answer = &mut pending => {
                let answer = match answer {
                    Ok(answer) => answer,
                    Err(e) => {
                        // The agent left or refused: say how, with its exit status.
                        let status = match exited {
                            Some(code) => Some(code),
                            None => tokio::time::timeout(CANCEL_GRACE, child.wait())
                                .await
                                .ok()
                                .and_then(|s| s.ok())
                                .map(|s| s.code()),
                        };
                        return left(status, e);
                    }
                };
                match answer {
                    Answer::Initialized(version) => {
                        if version != ProtocolVersion::V1 {
                            return End::Failed(format!(
                                "the agent speaks ACP version {version:?}; the runner speaks version 1"
                            ));
                        }
                        let mcp = match board_mcp(a, profile) {
                            Ok(m) => m,
                            Err(e) => return End::Failed(e.detail().to_string()),
                        };
                        let new = NewSessionRequest::new(ws.dir.clone()).mcp_servers(vec![mcp]);
                        pending = Box::pin(cx.send_request(new).block_task().map_ok(|r| Answer::Session(r.session_id)));
                    }
                    Answer::Session(id) => {
                        let text = markdown.take().unwrap_or_default();
                        let prompt = PromptRequest::new(id.clone(), vec![ContentBlock::Text(TextContent::new(text))]);
                        session = Some(id);
                        pending = Box::pin(cx.send_request(prompt).block_task().map_ok(Answer::Prompted));
                    }
                    Answer::Prompted(answer) => {
                        // Updates the agent sent before its answer are
                        // all received by now.
                        while let Ok(message) = inbound.try_recv() {
                            match message {
                                Inbound::Update(update) => report.update(update).await,
                                Inbound::Permission(_, responder) => {
                                    let _ = responder.respond(report::cancelled());
                                }
                            }
                        }
                        return end_of_turn(report, answer).await;
                    }
                }
            }
            _ = live.changed.notified(), if report.asking() => report.check_answer().await,
            _ = flush.tick() => report.flush().await,
            status = child.wait(), if exited.is_none() => {
                // The pending request fails once the agent's output ends,
                // or soon after if something it started holds it open.
                exited = Some(status.ok().and_then(|s| s.code()));
                gone.as_mut().reset(tokio::time::Instant::now() + CANCEL_GRACE);
            }
            _ = &mut gone, if exited.is_some() => return left(exited, "its output did not end"),
        }
    };
    // Stopped: ask the agent to end its turn, answer its open permission
    // requests `cancelled`, and give it a moment before its group is
    // killed.
    if let Some(id) = session {
        let _ = cx.send_notification(CancelNotification::new(id));
    }
    report.withdraw();
    let grace = tokio::time::sleep(CANCEL_GRACE);
    tokio::pin!(grace);
    loop {
        tokio::select! {
            _ = &mut pending => break,
            _ = &mut grace => break,
            Some(message) = inbound.recv() => if let Inbound::Permission(_, responder) = message {
                let _ = responder.respond(report::cancelled());
            },
        }
    }
    stop
}

/// The run's end for the prompt's answer: what the agent said is posted,
/// its usage recorded.
async fn end_of_turn<C: Perform>(report: &mut Report<'_, C>, answer: PromptResponse) -> End {
    let (state, reason) = match answer.stop_reason {
        StopReason::EndTurn => (RunState::Succeeded, None),
        StopReason::MaxTokens => (RunState::Failed, Some("the agent reached its token limit")),
        StopReason::MaxTurnRequests => {
            (RunState::Failed, Some("the agent reached its limit of requests in a turn"))
        }
        StopReason::Refusal => (RunState::Failed, Some("the agent refused")),
        StopReason::Cancelled => (RunState::Cancelled, Some("the agent cancelled its turn")),
        _ => (RunState::Failed, Some("the agent ended its turn for a reason the runner does not know")),
    };
    report.end_turn(reason, answer.usage.map(|u| (u.input_tokens, u.output_tokens))).await;
    End::Turn { state, reason: reason.map(String::from) }
}
