//! MCP sessions of this process (docs/rules.md, agents over MCP): each
//! bound to the member whose `initialize` opened it, bounded per member
//! and per process, closed when idle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::Stream;
use hyper::header::HeaderValue;
use rmcp::model::{ClientJsonRpcMessage, Extensions, GetExtensions, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use taskboard_core::{Actor, Error, Result};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The member of the request whose message carries these extensions.
pub(super) fn actor_of(extensions: &Extensions) -> Option<Actor> {
    extensions.get::<hyper::http::request::Parts>().and_then(|parts| parts.extensions.get::<Actor>()).cloned()
}

/// How long a client refused for the process's bound is asked to wait.
const FULL_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The bounds on MCP sessions (docs/rules.md, agents over MCP).
#[derive(Debug, Clone, Copy)]
pub struct McpLimits {
    /// Open sessions of one member in one process; an `initialize` past
    /// it closes that member's least recently used idle session first.
    pub sessions_per_member: usize,
    /// Open sessions of one process; an `initialize` past it is 429.
    pub sessions_per_process: usize,
    /// A session with no request under way and no open stream for this
    /// long is closed.
    pub idle: Duration,
}

impl Default for McpLimits {
    fn default() -> McpLimits {
        McpLimits { sessions_per_member: 16, sessions_per_process: 1024, idle: Duration::from_secs(30 * 60) }
    }
}

/// One open session: whose it is and how it is used.
struct Entry {
    member: Uuid,
    /// Requests under way and streams open in it.
    in_use: usize,
    /// When the last of them ended (or the session opened).
    last_used: Instant,
}

#[derive(Default)]
struct Table {
    open: HashMap<SessionId, Entry>,
    /// `initialize` requests admitted and not yet answered, per member.
    opening: HashMap<Uuid, usize>,
}

impl Table {
    fn opening_total(&self) -> usize {
        self.opening.values().sum()
    }
}

/// rmcp's sessions of this process, each bound to the member whose
/// `initialize` opened it.
pub(crate) struct Sessions {
    local: LocalSessionManager,
    table: Mutex<Table>,
    limits: McpLimits,
}

impl Sessions {
    /// The sessions of this process, idle ones closed until `shutdown`.
    pub(crate) fn open(limits: McpLimits, shutdown: &CancellationToken) -> Arc<Sessions> {
        let mut local = LocalSessionManager::default();
        // Idleness is judged here, where open streams are seen: rmcp's own
        // timer counts only messages, and would close a session whose
        // client listens on its stream for a quiet half hour.
        local.session_config.keep_alive = None;
        let sessions = Arc::new(Sessions { local, table: Mutex::default(), limits });
        sessions.clone().reap_idle(shutdown.child_token());
        sessions
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request of `member` in the session `id` begins: the session must
    /// be open and the member's. Unknown and foreign sessions are answered
    /// alike, so an id tells nothing to whoever does not own it.
    pub(crate) fn enter(self: &Arc<Self>, id: &HeaderValue, member: Uuid) -> Result<InUse> {
        let not_found = || {
            Error::not_found(
                "no MCP session of yours has this Mcp-Session-Id: it was ended (DELETE), closed after \
                 being idle, closed for a newer session of yours, or opened by another member or \
                 another server process; start a new session with initialize",
            )
        };
        let id: SessionId = id.to_str().map_err(|_| not_found())?.into();
        let mut table = self.table();
        let entry = table.open.get_mut(&id).filter(|e| e.member == member).ok_or_else(not_found)?;
        entry.in_use += 1;
        entry.last_used = Instant::now();
        Ok(InUse { sessions: self.clone(), id })
    }

    /// Admits an `initialize` of `member` within the bounds: past the
    /// member's bound its least recently used idle session is closed;
    /// past the process's bound, or with every session of the member in
    /// use, it is refused (429).
    pub(crate) async fn admit(self: &Arc<Self>, member: Uuid) -> Result<Opening> {
        let evicted = {
            let mut table = self.table();
            let opening = table.opening.get(&member).copied().unwrap_or(0);
            let mine = table.open.values().filter(|e| e.member == member).count() + opening;
            let mut evicted = None;
            if mine >= self.limits.sessions_per_member {
                let idle = table
                    .open
                    .iter()
                    .filter(|(_, e)| e.member == member && e.in_use == 0)
                    .min_by_key(|(_, e)| e.last_used)
                    .map(|(id, _)| id.clone());
                let Some(id) = idle else {
                    return Err(Error::too_many_requests(
                        format!(
                            "you have {} MCP sessions open on this server, each with a request or stream \
                             under way; end one (DELETE with its Mcp-Session-Id) before starting another",
                            self.limits.sessions_per_member
                        ),
                        FULL_RETRY_AFTER,
                    ));
                };
                evicted = Some(id);
            }
            let total = table.open.len() + table.opening_total() - usize::from(evicted.is_some());
            if total >= self.limits.sessions_per_process {
                return Err(Error::too_many_requests(
                    format!(
                        "this server process holds its most MCP sessions ({}); try again later",
                        self.limits.sessions_per_process
                    ),
                    FULL_RETRY_AFTER,
                ));
            }
            if let Some(id) = &evicted {
                table.open.remove(id);
            }
            *table.opening.entry(member).or_default() += 1;
            evicted
        };
        if let Some(id) = evicted {
            tracing::debug!(session = %id, "MCP session closed for a newer one of its member");
            self.close_local(&id).await;
        }
        Ok(Opening { sessions: self.clone(), member })
    }

    async fn close_local(&self, id: &SessionId) {
        if let Err(e) = self.local.close_session(id).await {
            tracing::warn!(session = %id, error = %e, "an MCP session did not close cleanly");
        }
    }

    /// Closes, every quarter of the idle time (at most every minute), the
    /// sessions idle for longer than it.
    fn reap_idle(self: Arc<Self>, stop: CancellationToken) {
        let idle = self.limits.idle;
        let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                let expired: Vec<SessionId> = {
                    let mut table = self.table();
                    let expired: Vec<SessionId> = table
                        .open
                        .iter()
                        .filter(|(_, e)| e.in_use == 0 && e.last_used.elapsed() >= idle)
                        .map(|(id, _)| id.clone())
                        .collect();
                    for id in &expired {
                        table.open.remove(id);
                    }
                    expired
                };
                for id in expired {
                    tracing::debug!(session = %id, "idle MCP session closed");
                    self.close_local(&id).await;
                }
            }
        });
    }
}

/// A request or stream in a session, until it ends.
pub(crate) struct InUse {
    sessions: Arc<Sessions>,
    id: SessionId,
}

impl Drop for InUse {
    fn drop(&mut self) {
        if let Some(entry) = self.sessions.table().open.get_mut(&self.id) {
            entry.in_use = entry.in_use.saturating_sub(1);
            entry.last_used = Instant::now();
        }
    }
}

/// An admitted `initialize`, counted against the bounds until answered.
pub(crate) struct Opening {
    sessions: Arc<Sessions>,
    member: Uuid,
}

impl Drop for Opening {
    fn drop(&mut self) {
        let mut table = self.sessions.table();
        if let Some(n) = table.opening.get_mut(&self.member) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                table.opening.remove(&self.member);
            }
        }
    }
}

/// rmcp's in-memory sessions, with each session bound to its member when
/// it is initialized and forgotten when it closes, however it closes.
impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.local.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let member = match &message {
            ClientJsonRpcMessage::Request(req) => actor_of(req.request.extensions()).map(|a| a.id()),
            _ => None,
        };
        // Without a member (never, behind `serve`) the session is bound
        // to no one, and every request naming it is 404.
        if let Some(member) = member {
            self.table().open.insert(id.clone(), Entry { member, in_use: 0, last_used: Instant::now() });
        }
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.table().open.remove(id);
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.resume(id, last_event_id).await
    }
}
