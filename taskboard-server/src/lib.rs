//! # taskboard-server
//!
//! The HTTP and WebSocket face of a Taskboard board, on hyper 1.x. Every
//! request is parsed, authenticated, handed to [`taskboard_core::Board`]
//! and rendered; no rule of the board lives here.
//!
//! The server can run in-process (tests, embedding programs):
//!
//! ```no_run
//! # async fn run() -> Result<(), taskboard_server::StartError> {
//! let server = taskboard_server::Server::bind(taskboard_server::Config::new("./data")).await?;
//! println!("listening on http://{}", server.local_addr());
//! let handle = server.spawn();
//! // …
//! handle.shutdown().await;
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod backups;
mod cors;
mod dispatch;
mod files;
mod http;
mod mcp;
mod metrics;
pub mod oidc;
mod openapi;
mod parse;
mod proxy;
// The Markdown reference of docs/api.md, checked and rewritten by the
// tests only.
#[cfg(test)]
mod reference;
mod request_id;
mod response;
mod router;
mod shape;
mod sse;
mod streams;
pub mod tls;
mod web;
mod webhooks;
pub mod ws;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use taskboard_core::board::{Bootstrap, InitialPassword};
use taskboard_core::validate::{Password, Slug};
use taskboard_core::{Board, BoardOptions};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use mcp::McpLimits;
pub use openapi::openapi_document;

/// Error of starting the server.
pub type StartError = Box<dyn std::error::Error + Send + Sync>;

/// The origin of the web client in development (docs/rules.md, configuration).
pub const LOCAL_DEV_ORIGIN: &str = "http://localhost:3100";

/// Everything the server needs to start.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    /// Where the board is kept: `None` for the embedded store in the data
    /// directory, or a `postgres://` URL (the data directory then holds
    /// file contents only, and must be shared by every process serving
    /// the same database).
    pub database: Option<String>,
    /// JWT signing secret; generated and kept in the data directory when
    /// not given.
    pub jwt_secret: Option<String>,
    pub max_upload_bytes: u64,
    /// Serves `/docs` and `/openapi.json`.
    pub dev: bool,
    pub web_origin: Option<String>,
    pub dev_web_origin: Option<String>,
    /// Slug of the owner created on an empty board.
    pub owner_login: String,
    /// Password of that owner; generated when absent.
    pub owner_password: Option<String>,
    pub limits: Limits,
    /// How many events a WebSocket client may fall behind before it is
    /// closed with 4008 (docs/rules.md, events); see `BoardOptions::event_buffer`.
    pub event_buffer: usize,
    /// Which targets webhooks may have (`--webhook-allow-private`), and
    /// the timeout and retry schedule of deliveries.
    pub webhooks: taskboard_core::webhooks::WebhookOptions,
    /// The bearer token `GET /metrics` asks for on the main listener;
    /// `/metrics` is 404 there when `None`.
    pub metrics_token: Option<String>,
    /// A listener of its own for `/metrics`, open without a token.
    pub metrics_listen: Option<SocketAddr>,
    /// How many event streams (SSE and WebSocket) one member may hold
    /// open; beyond it a new one is 429.
    pub streams_per_member: usize,
    /// Networks of reverse proxies whose `Forwarded` and
    /// `X-Forwarded-For` headers name the client (`--trusted-proxy`).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Bounds on MCP sessions.
    pub mcp: McpLimits,
    /// Scheduled backups (`--backup-dir`), none when `None`.
    pub backups: Option<backups::BackupSchedule>,
    /// Serves HTTPS with this certificate and key (`--tls-cert`,
    /// `--tls-key`), reloaded on SIGHUP; plain HTTP when `None`.
    pub tls: Option<tls::TlsFiles>,
    /// Bytes a run's transcript keeps (`--transcript-cap`).
    pub transcript_cap: u64,
    /// How long a login lasts (`--session-lifetime`).
    pub session_lifetime: std::time::Duration,
    /// Single sign-on with OpenID Connect (`--oidc-issuer` …).
    pub oidc: Option<oidc::OidcConfig>,
    /// Who may log in with a password (`--password-login`).
    pub password_login: taskboard_core::oidc::PasswordLogin,
    /// The URL the board is reached at (`--public-url`), under which
    /// single sign-on's redirect URI is; required with `oidc`.
    pub public_url: Option<String>,
    /// The time source of the rules that count time; tests use a manual one.
    #[doc(hidden)]
    pub clock: taskboard_core::board::Clock,
    /// Adds `GET /__panic`, a handler that panics, so tests can prove a
    /// panic becomes a 500 and the server keeps serving.
    #[doc(hidden)]
    pub panic_route: bool,
}

/// Protections against large or slow clients.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest request head: the request line and the header lines with
    /// their line ends and the closing blank line.
    pub max_header_bytes: usize,
    /// Time a client has to send a request head.
    pub header_read_timeout: Duration,
    /// Time a client has to send a whole JSON body, and the longest pause
    /// between two chunks of an upload.
    pub body_read_timeout: Duration,
    /// Largest JSON request body (docs/rules.md, requests and errors).
    pub max_json_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_header_bytes: 64 * 1024,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_json_bytes: 1024 * 1024,
        }
    }
}

impl Config {
    /// The defaults (docs/rules.md, configuration) with the given data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: data_dir.into(),
            database: None,
            jwt_secret: None,
            max_upload_bytes: taskboard_core::board::DEFAULT_MAX_UPLOAD_BYTES,
            dev: false,
            web_origin: None,
            dev_web_origin: None,
            owner_login: "owner".to_string(),
            owner_password: None,
            limits: Limits::default(),
            event_buffer: BoardOptions::default().event_buffer,
            webhooks: Default::default(),
            metrics_token: None,
            metrics_listen: None,
            streams_per_member: streams::DEFAULT_STREAMS_PER_MEMBER,
            trusted_proxies: Vec::new(),
            mcp: McpLimits::default(),
            backups: None,
            tls: None,
            transcript_cap: BoardOptions::default().transcript_cap,
            session_lifetime: BoardOptions::default().session_lifetime,
            oidc: None,
            password_login: Default::default(),
            public_url: None,
            clock: taskboard_core::board::Clock::system(),
            panic_route: false,
        }
    }
}

/// Where a request came from: the address of its connection's peer
/// (login throttling counts failures per client address) and the
/// listener that accepted it. Handed to each request as an argument:
/// two inserts into a request's extensions cost three allocations per
/// request (docs/storage.md, S.37).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer {
    pub addr: std::net::IpAddr,
    pub listened: Listened,
}

/// Shared by every connection.
pub(crate) struct State {
    pub board: Board,
    pub router: router::Router,
    pub cors: cors::Cors,
    pub limits: Limits,
    pub ws: ws::WsContext,
    pub mcp: mcp::Mcp,
    pub metrics: Arc<metrics::Metrics>,
    pub proxies: proxy::TrustedProxies,
}

/// A bound server that is not yet serving: the listener already accepts
/// connections (they wait in the backlog), so its address can be handed
/// out before [`Server::spawn`] or [`Server::run`].
pub struct Server {
    listener: TcpListener,
    /// `--metrics-listen`: connections whose requests may only read
    /// `/metrics`, without a token.
    metrics_listener: Option<TcpListener>,
    addr: SocketAddr,
    state: Arc<State>,
    bootstrap: Option<Bootstrap>,
    initial_password: Option<InitialPassword>,
    maintenance: tokio::task::JoinHandle<()>,
    /// The webhook sender, which hands its claims back on shutdown.
    webhooks: tokio::task::JoinHandle<()>,
    /// Scheduled backups, which finish one under way on shutdown.
    backups: Option<(tokio::task::JoinHandle<()>, BackupWatch)>,
    tls: Option<tls::Tls>,
}

/// What the scheduled backups did so far, changing with each.
pub type BackupWatch = tokio::sync::watch::Receiver<backups::BackupState>;

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

impl Server {
    /// Binds the listening socket, then opens the board and creates the
    /// first owner on an empty board (docs/rules.md, members). The socket comes
    /// first, so a start that cannot listen leaves the board untouched.
    /// A generated owner password is kept in the data directory until it
    /// is used ([`Board::keep_initial_password`]).
    pub async fn bind(config: Config) -> Result<Server, StartError> {
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        Server::on_listener(listener, config).await
    }

    /// [`Server::bind`] on a listener bound already, whose address can
    /// then go into the configuration (a test's `public_url` on port 0);
    /// `config.listen` is not used.
    pub async fn on_listener(listener: TcpListener, config: Config) -> Result<Server, StartError> {
        let addr = listener.local_addr()?;
        let metrics_listener = match config.metrics_listen {
            Some(at) => Some(
                TcpListener::bind(at).await.map_err(|e| format!("cannot listen for metrics on {at}: {e}"))?,
            ),
            None => None,
        };
        let options = BoardOptions {
            max_upload_bytes: config.max_upload_bytes,
            event_buffer: config.event_buffer,
            jwt_secret: config.jwt_secret.clone(),
            webhooks: config.webhooks.clone(),
            transcript_cap: config.transcript_cap,
            session_lifetime: config.session_lifetime,
            clock: config.clock.clone(),
            oidc: match &config.oidc {
                Some(oidc) => Some(oidc.options(config.public_url.as_deref())?),
                None => None,
            },
            password_login: config.password_login,
            ..BoardOptions::default()
        };
        let board = Board::open_database(config.database.as_deref(), &config.data_dir, options).await?;
        if let Some(oidc) = config.oidc.clone() {
            // Read apart from the start, which does not wait on the provider.
            tokio::spawn(async move {
                if let Some(warning) = oidc.groups_scope_warning().await {
                    tracing::warn!("{warning}");
                }
            });
        }
        let slug = Slug::new(config.owner_login.clone()).map_err(|e| format!("owner login: {e}"))?;
        let password = match &config.owner_password {
            Some(p) => Some(Password::new(p.clone()).map_err(|e| format!("owner password: {e}"))?),
            None => None,
        };
        let bootstrap = board.bootstrap_owner(slug, password).await?;
        let initial_password = match &bootstrap {
            Some(boot) => board.keep_initial_password(boot).await?,
            None => board.initial_password().await?,
        };
        let shutdown = CancellationToken::new();
        let tls = match config.tls.clone() {
            Some(files) => {
                let tls = tokio::task::spawn_blocking(move || tls::Tls::new(files)).await??;
                tls.clone().reload_on_hangup(shutdown.clone())?;
                Some(tls)
            }
            None => None,
        };
        let backups = match &config.backups {
            Some(schedule) => {
                let (checked, b) = (schedule.clone(), board.clone());
                tokio::task::spawn_blocking(move || backups::prepare(&checked, &b)).await??;
                Some(backups::spawn(board.clone(), schedule.clone(), shutdown.clone()))
            }
            None => None,
        };
        let metrics = Arc::new(metrics::Metrics::new(config.metrics_token.as_deref()));
        let state = Arc::new(State {
            router: router::Router::new::<dispatch::Endpoints>(config.dev, config.panic_route),
            cors: cors::Cors::new(&config),
            limits: config.limits,
            mcp: mcp::service(board.clone(), &shutdown, config.mcp),
            ws: ws::WsContext {
                board: board.clone(),
                shutdown: shutdown.clone(),
                tracker: TaskTracker::new(),
                metrics: metrics.clone(),
                streams: streams::StreamSlots::new(config.streams_per_member),
            },
            metrics,
            proxies: proxy::TrustedProxies::new(config.trusted_proxies.clone()),
            board,
        });
        let maintenance = state.board.spawn_maintenance();
        let webhooks = webhooks::spawn(state.board.clone(), shutdown)
            .map_err(|e| format!("cannot start the webhook sender: {e}"))?;
        Ok(Server {
            listener,
            metrics_listener,
            addr,
            state,
            bootstrap,
            initial_password,
            maintenance,
            webhooks,
            backups,
            tls,
        })
    }

    /// The bound address, with the real port when port 0 was asked for.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound address of `--metrics-listen`, if any.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    pub fn board(&self) -> &Board {
        &self.state.board
    }

    /// `https` with TLS, `http` without.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// What the scheduled backups did so far, when they are on.
    pub fn backups(&self) -> Option<BackupWatch> {
        self.backups.as_ref().map(|(_, watch)| watch.clone())
    }

    /// What the start did to an empty board, if it was empty.
    pub fn bootstrap(&self) -> Option<&Bootstrap> {
        self.bootstrap.as_ref()
    }

    /// The first owner's generated password while it is unused, with the
    /// file that keeps it: on the first start and on every later one
    /// until the owner has used it or it was changed.
    pub fn initial_password(&self) -> Option<&InitialPassword> {
        self.initial_password.as_ref()
    }

    /// Serves in a background task.
    pub fn spawn(self) -> ServerHandle {
        let addr = self.addr;
        let metrics_addr = self.metrics_addr();
        let board = self.state.board.clone();
        let shutdown = self.state.ws.shutdown.clone();
        let token = shutdown.clone();
        let task = tokio::spawn(self.run(async move { token.cancelled().await }));
        ServerHandle { addr, metrics_addr, board, shutdown, task }
    }

    /// Serves until `signal` completes, then shuts down gracefully: stops
    /// accepting, lets requests in flight finish, closes WebSockets (1001)
    /// and flushes the board.
    pub async fn run(self, signal: impl Future<Output = ()> + Send) -> Result<(), StartError> {
        let Server { listener, metrics_listener, state, maintenance, webhooks, backups, tls, .. } = self;
        let shutdown = state.ws.shutdown.clone();
        let connections = TaskTracker::new();
        let mut http = http1::Builder::new();
        http.timer(TokioTimer::new())
            .keep_alive(true)
            // The head limit is exact: hyper counts the request line and
            // headers as parsed. The read buffer alone would not do, as a
            // read may fill more than it asked for.
            .max_header_size(state.limits.max_header_bytes)
            // At most 100 header lines: hyper's default, left unset. Set
            // (even to 100), hyper fills an array of that many slots for
            // every request it parses, a tenth of a small request's time
            // in our code (docs/storage.md, S.37).
            .max_buf_size(state.limits.max_header_bytes.max(8192))
            .header_read_timeout(state.limits.header_read_timeout);
        let mut signal = pin!(signal);
        loop {
            tokio::select! {
                _ = &mut signal => break,
                _ = shutdown.cancelled() => break,
                accepted = accept(&listener, metrics_listener.as_ref()) => {
                    let (stream, peer, listened) = match accepted {
                        Ok(accepted) => accepted,
                        Err(e) => {
                            // Out of descriptors and the like: back off
                            // rather than spin.
                            tracing::warn!(%e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let state = state.clone();
                    let shutdown = shutdown.clone();
                    let http = http.clone();
                    let tls = tls.clone();
                    connections.spawn(async move {
                        let client = Peer { addr: peer.ip(), listened };
                        // The metrics listener serves plain HTTP on a
                        // private network; TLS is the main listener's.
                        let tls = tls.filter(|_| listened == Listened::Main);
                        let Some(tls) = tls else {
                            return serve_io(state, &http, TokioIo::new(stream), client, &shutdown).await;
                        };
                        // The handshake has the time a client has for its
                        // request head.
                        let handshake = tokio::time::timeout(state.limits.header_read_timeout, tls.acceptor.accept(stream));
                        let stream = tokio::select! {
                            done = handshake => match done {
                                Ok(Ok(stream)) => stream,
                                Ok(Err(e)) => {
                                    tracing::debug!(%e, "TLS handshake failed");
                                    return;
                                }
                                Err(_) => {
                                    tracing::debug!("TLS handshake timed out");
                                    return;
                                }
                            },
                            _ = shutdown.cancelled() => return,
                        };
                        serve_io(state, &http, TokioIo::new(stream), client, &shutdown).await
                    });
                }
            }
        }
        drop(listener);
        shutdown.cancel();
        // Long polls answer now, so stopping waits for ordinary requests only.
        state.board.stop_waiting();
        connections.close();
        connections.wait().await;
        state.ws.tracker.close();
        state.ws.tracker.wait().await;
        maintenance.abort();
        let _ = maintenance.await;
        let _ = webhooks.await;
        if let Some((task, _)) = backups {
            let _ = task.await;
        }
        state.board.flush().await?;
        Ok(())
    }
}

/// Which listener a connection came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listened {
    Main,
    /// `--metrics-listen`: serves `/metrics` alone.
    Metrics,
}

/// The next connection of either listener.
async fn accept(
    main: &TcpListener,
    metrics: Option<&TcpListener>,
) -> std::io::Result<(tokio::net::TcpStream, SocketAddr, Listened)> {
    let metrics_accept = async {
        match metrics {
            Some(l) => l.accept().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        accepted = main.accept() => accepted.map(|(s, p)| (s, p, Listened::Main)),
        accepted = metrics_accept => accepted.map(|(s, p)| (s, p, Listened::Metrics)),
    }
}

/// Serves the requests of one connection (plain or TLS) until it ends or
/// the server shuts down.
async fn serve_io<I>(
    state: Arc<State>,
    http: &http1::Builder,
    io: I,
    peer: Peer,
    shutdown: &CancellationToken,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    // The future of `handle` itself, not one wrapping it: hyper moves each
    // request's future into place, and a wrapper would only make it larger.
    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        http::handle(state.clone(), req, peer)
    });
    let conn = http.serve_connection(io, service).with_upgrades();
    let mut conn = pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// A server serving in the background.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    board: Board,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), StartError>>,
}

impl ServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound address of `--metrics-listen`, if any.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    pub fn board(&self) -> &Board {
        &self.board
    }

    /// Shuts down gracefully and waits until the board is flushed.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        match self.task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(%e, "shutdown failed"),
            Err(e) => tracing::error!(%e, "the server task failed"),
        }
    }
}
