//! `taskboard-server`: serves a board over HTTP and WebSocket.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};
use taskboard_server::{Config, McpLimits, Server};

mod config;
mod logging;

/// mimalloc instead of the system allocator: the board's writer thread
/// spends a fifth of its time in glibc malloc/free, and with mimalloc
/// durable task creation runs about 15% faster (docs/decisions.md, Crates).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serves a Taskboard board (docs/rules.md, configuration).
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = "TASKBOARD_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Directory of the board's database and files.
    #[arg(long, env = "TASKBOARD_DATA_DIR", default_value = "./taskboard-data")]
    data_dir: PathBuf,
    /// Where the board is kept: a `postgres://` URL (`?host=/dir` for a Unix
    /// socket, `&schema=name` for the schema, default `taskboard`), or none
    /// for the embedded store in the data directory. With PostgreSQL the
    /// data directory holds file contents only.
    #[arg(long, env = "TASKBOARD_DATABASE", hide_env_values = true)]
    database: Option<String>,
    /// JWT signing secret; generated and kept in the data directory (in the
    /// database with PostgreSQL) when absent.
    #[arg(long, env = "TASKBOARD_JWT_SECRET", hide_env_values = true)]
    jwt_secret: Option<String>,
    /// Largest accepted upload in bytes.
    #[arg(long, env = "TASKBOARD_MAX_UPLOAD_BYTES", default_value_t = taskboard_core::board::DEFAULT_MAX_UPLOAD_BYTES)]
    max_upload_bytes: u64,
    /// Development mode: serves /docs and /openapi.json.
    #[arg(long, env = "TASKBOARD_DEV")]
    dev: bool,
    /// Origin of the web client, allowed by CORS.
    #[arg(long, env = "TASKBOARD_WEB_ORIGIN")]
    web_origin: Option<String>,
    /// Origin of the web client in development, allowed by CORS.
    #[arg(long, env = "TASKBOARD_DEV_WEB_ORIGIN")]
    dev_web_origin: Option<String>,
    /// Lets webhooks target loopback, private, link-local and unspecified
    /// addresses (refused otherwise, at creation and at every attempt).
    #[arg(long, env = "TASKBOARD_WEBHOOK_ALLOW_PRIVATE")]
    webhook_allow_private: bool,
    /// Bytes of text a run's transcript keeps; later output is dropped and
    /// counted.
    #[arg(long, env = "TASKBOARD_TRANSCRIPT_CAP", default_value_t = taskboard_core::runs::DEFAULT_TRANSCRIPT_CAP)]
    transcript_cap: u64,
    /// How long a login lasts before the member logs in again: `30m`,
    /// `12h`, `3d`, `1d12h`. Access tokens have their own expiry.
    #[arg(long, env = "TASKBOARD_SESSION_LIFETIME", value_name = "DURATION", default_value = "72h",
          value_parser = parse_lifetime)]
    session_lifetime: std::time::Duration,
    /// Single sign-on: the OpenID Connect issuer (discovery at
    /// ISSUER/.well-known/openid-configuration). https:// except on a
    /// loopback address.
    #[arg(long, env = "TASKBOARD_OIDC_ISSUER", value_name = "URL", requires = "oidc_client_id")]
    oidc_issuer: Option<String>,
    /// The client id the board has at the provider.
    #[arg(long, env = "TASKBOARD_OIDC_CLIENT_ID")]
    oidc_client_id: Option<String>,
    /// The client secret the board has at the provider.
    #[arg(long, env = "TASKBOARD_OIDC_CLIENT_SECRET", hide_env_values = true)]
    oidc_client_secret: Option<String>,
    /// The provider's name on the sign-in button; the issuer's host by
    /// default.
    #[arg(long, env = "TASKBOARD_OIDC_NAME")]
    oidc_name: Option<String>,
    /// Scopes asked of the provider, comma-separated (add `groups` where
    /// the provider gives the groups claim under that scope).
    #[arg(
        long,
        env = "TASKBOARD_OIDC_SCOPES",
        value_delimiter = ',',
        default_value = "openid,email,profile"
    )]
    oidc_scopes: Vec<String>,
    /// Creates a human member at the first sign-in of someone with a
    /// verified email no member has (refused with 403 otherwise).
    #[arg(long, env = "TASKBOARD_OIDC_CREATE_MEMBERS")]
    oidc_create_members: bool,
    /// Members in this group (the ID token's `groups` claim) are admins,
    /// the others members, set at each sign-in; owners keep their role.
    #[arg(long, env = "TASKBOARD_OIDC_ADMIN_GROUP", value_name = "GROUP")]
    oidc_admin_group: Option<String>,
    /// Who may log in with a password: `all` humans, or `owners` only
    /// (everyone else signs in with single sign-on).
    #[arg(long, env = "TASKBOARD_PASSWORD_LOGIN", value_name = "WHO", default_value = "all",
          value_parser = parse_password_login)]
    password_login: taskboard_core::oidc::PasswordLogin,
    /// The URL people reach the board at (`https://board.example.com`),
    /// for the redirect URI of single sign-on (URL/api/v1/auth/oidc/callback);
    /// required with --oidc-issuer.
    #[arg(long, env = "TASKBOARD_PUBLIC_URL", value_name = "URL")]
    public_url: Option<String>,
    /// Timeout of a delivery attempt in milliseconds (tests).
    #[arg(long, hide = true)]
    webhook_timeout_ms: Option<u64>,
    /// One fixed delay between delivery attempts in milliseconds, without
    /// jitter (tests).
    #[arg(long, hide = true)]
    webhook_retry_ms: Option<u64>,
    /// The bearer token `GET /metrics` asks for (`Authorization: Bearer
    /// <token>`) on the main listener; without it (and outside
    /// `--metrics-listen`) `/metrics` is 404.
    #[arg(long, env = "TASKBOARD_METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
    /// A second address serving `/metrics` alone, without a token, for a
    /// scraper on a private network.
    #[arg(long, env = "TASKBOARD_METRICS_LISTEN")]
    metrics_listen: Option<SocketAddr>,
    /// How many event streams (WebSocket and Server-Sent Events) one
    /// member may hold open at once; a further one is 429.
    #[arg(long, env = "TASKBOARD_STREAMS_PER_MEMBER", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    streams_per_member: u32,
    /// A network (CIDR, e.g. 10.0.0.0/8) of reverse proxies or load
    /// balancers whose `Forwarded` / `X-Forwarded-For` headers name the
    /// client; repeat for several. Login throttling counts by that client.
    #[arg(long = "trusted-proxy", env = "TASKBOARD_TRUSTED_PROXIES", value_delimiter = ',')]
    trusted_proxies: Vec<ipnet::IpNet>,
    /// Most MCP sessions open in this process; an `initialize` past it is
    /// 429 (a member holds at most 16, its oldest idle one closing first).
    #[arg(long, env = "TASKBOARD_MCP_MAX_SESSIONS", default_value_t = McpLimits::default().sessions_per_process)]
    mcp_max_sessions: usize,
    /// Seconds after which an MCP session with no request and no open
    /// stream is closed.
    #[arg(long, env = "TASKBOARD_MCP_SESSION_IDLE_SECS", default_value_t = McpLimits::default().idle.as_secs())]
    mcp_session_idle_secs: u64,
    /// Log filter (`info`, `warn`, `taskboard_server=debug` …); RUST_LOG wins when set.
    #[arg(long, env = "TASKBOARD_LOG_LEVEL", default_value = "info")]
    log_level: String,
    /// `text` (lines for people) or `json` (one object per line, with the
    /// request id of each HTTP request).
    #[arg(long, env = "TASKBOARD_LOG_FORMAT", value_enum, default_value_t)]
    log_format: logging::LogFormat,
    /// Directory of scheduled backups (archives as `taskboard export`
    /// writes them, named by their UTC time); none without it.
    #[arg(long, env = "TASKBOARD_BACKUP_DIR", value_name = "DIR")]
    backup_dir: Option<PathBuf>,
    /// Time between two scheduled backups: `90s`, `30m`, `1h`, `1d`, `1h30m`.
    #[arg(long, env = "TASKBOARD_BACKUP_EVERY", value_name = "INTERVAL", default_value = "1d",
          value_parser = taskboard_server::backups::parse_every)]
    backup_every: std::time::Duration,
    /// How many of the newest scheduled backups are kept.
    #[arg(long, env = "TASKBOARD_BACKUP_KEEP", value_name = "N", default_value_t = 7,
          value_parser = clap::value_parser!(u64).range(1..))]
    backup_keep: u64,
    /// Serve HTTPS with this certificate chain (PEM, the server's own
    /// first); needs --tls-key. Both files are read again on SIGHUP.
    #[arg(long, env = "TASKBOARD_TLS_CERT", value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, env = "TASKBOARD_TLS_KEY", value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// A TOML file of settings: each key is a flag's long name
    /// (`data-dir = "/var/lib/taskboard"`); a flag or its environment
    /// variable wins over the file.
    #[arg(long, env = "TASKBOARD_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Sub>,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Configuration files.
    #[command(subcommand)]
    Config(ConfigCmd),
}

#[derive(Debug, clap::Subcommand)]
enum ConfigCmd {
    /// Checks a configuration file: valid TOML, known keys, values each
    /// flag accepts.
    Check {
        /// The file to check.
        file: PathBuf,
    },
    /// Prints the effective configuration (flags, environment, the
    /// --config file and defaults, each line saying which), secrets
    /// masked, as a file --config reads.
    Print,
}

/// Transparent huge pages off for this process. Where the kernel gives
/// them to every mapping (`always`), each 2 MiB region of mimalloc's
/// arenas that one small allocation touches becomes resident whole, so a
/// server held about 110 MB after a mixed workload instead of about 90
/// (`bench/scale.sh`, at 10,000 and 1,000,000 tasks alike) for no
/// measured gain in speed (docs/storage.md, S.14).
fn without_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        eprintln!("warning: transparent huge pages stay on: {e}");
    }
}

fn main() -> ExitCode {
    without_transparent_huge_pages();
    let cmd = Args::command();
    let (matches, file) = config::parse(cmd.clone(), std::env::args_os().collect());
    let args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match &args.command {
        Some(Sub::Config(ConfigCmd::Check { file })) => {
            return match config::FileValues::load(&cmd, file) {
                Ok(values) => {
                    if let Some(readable) = values.readable_secrets(&cmd) {
                        eprintln!("warning: {readable}");
                    }
                    println!("{}: valid, {} settings", file.display(), values.count());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            };
        }
        Some(Sub::Config(ConfigCmd::Print)) => {
            print!("{}", config::print(&cmd, &matches, file.as_ref()));
            return ExitCode::SUCCESS;
        }
        None => {}
    }
    let filter =
        std::env::var("RUST_LOG").ok().filter(|v| !v.is_empty()).unwrap_or_else(|| args.log_level.clone());
    if let Err(e) = logging::init(args.log_format, &filter) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    // In the log, or on stderr when the log leaves warnings out.
    if let Some(readable) = file.as_ref().and_then(|f| f.readable_secrets(&cmd)) {
        if tracing::enabled!(tracing::Level::WARN) {
            tracing::warn!(
                file = %readable.path.display(),
                mode = format!("{:04o}", readable.mode & 0o7777),
                keys = readable.keys.join(","),
                "{readable}"
            );
        } else {
            eprintln!("warning: {readable}");
        }
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `all` or `owners`.
fn parse_password_login(text: &str) -> Result<taskboard_core::oidc::PasswordLogin, String> {
    match text {
        "all" => Ok(taskboard_core::oidc::PasswordLogin::All),
        "owners" => Ok(taskboard_core::oidc::PasswordLogin::Owners),
        other => Err(format!("{other:?} is neither `all` nor `owners`")),
    }
}

/// A login lifetime: a duration of at least a minute.
fn parse_lifetime(text: &str) -> Result<std::time::Duration, String> {
    let lifetime = taskboard_server::backups::parse_every(text)?;
    if lifetime < std::time::Duration::from_secs(60) {
        return Err(format!("{text:?} is shorter than a minute"));
    }
    Ok(lifetime)
}

async fn run(args: Args) -> Result<(), taskboard_server::StartError> {
    let mut config = Config::new(args.data_dir);
    config.listen = args.listen;
    config.database = args.database.filter(|d| !d.is_empty());
    config.jwt_secret = args.jwt_secret;
    config.max_upload_bytes = args.max_upload_bytes;
    config.dev = args.dev;
    config.web_origin = args.web_origin;
    config.dev_web_origin = args.dev_web_origin;
    config.webhooks.allow_private = args.webhook_allow_private;
    config.metrics_token = args.metrics_token.filter(|t| !t.is_empty());
    config.metrics_listen = args.metrics_listen;
    config.streams_per_member = args.streams_per_member as usize;
    config.trusted_proxies = args.trusted_proxies;
    config.mcp.sessions_per_process = args.mcp_max_sessions;
    config.mcp.idle = std::time::Duration::from_secs(args.mcp_session_idle_secs);
    if let (Some(cert), Some(key)) = (args.tls_cert, args.tls_key) {
        config.tls = Some(taskboard_server::tls::TlsFiles { cert, key });
    }
    config.backups = args.backup_dir.map(|dir| taskboard_server::backups::BackupSchedule {
        dir,
        every: args.backup_every,
        keep: args.backup_keep as usize,
    });
    config.transcript_cap = args.transcript_cap;
    config.session_lifetime = args.session_lifetime;
    config.password_login = args.password_login;
    config.public_url = args.public_url.filter(|u| !u.is_empty());
    if let Some(issuer) = args.oidc_issuer.filter(|i| !i.is_empty()) {
        config.oidc = Some(taskboard_server::oidc::OidcConfig {
            issuer,
            client_id: args.oidc_client_id.unwrap_or_default(),
            client_secret: args.oidc_client_secret,
            name: args.oidc_name,
            scopes: args.oidc_scopes,
            create_members: args.oidc_create_members,
            admin_group: args.oidc_admin_group,
            limits: Default::default(),
        });
    }
    if let Some(ms) = args.webhook_timeout_ms {
        config.webhooks.policy.timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(ms) = args.webhook_retry_ms {
        config.webhooks.policy.delays.clear();
        config.webhooks.policy.then_every = std::time::Duration::from_millis(ms);
        config.webhooks.policy.jitter = 0.0;
    }
    if let Ok(login) = std::env::var("TASKBOARD_OWNER_LOGIN") {
        config.owner_login = login;
    }
    config.owner_password = std::env::var("TASKBOARD_OWNER_PASSWORD").ok().filter(|p| !p.is_empty());
    let data_dir = config.data_dir.clone();
    let dev = config.dev;

    let server = Server::bind(config).await?;
    let addr = server.local_addr();
    let scheme = server.scheme();
    let kept = server.initial_password();
    if let Some(boot) = server.bootstrap() {
        let slug = &boot.owner.slug;
        println!("created the owner {slug:?} on the empty board in {}", data_dir.display());
        match &boot.generated_password {
            Some(password) => {
                println!("  password: {password}");
                if let Some(kept) = kept {
                    println!(
                        "  (kept in {}, mode 0600, until the owner has used it or it is changed; \
                         set TASKBOARD_OWNER_PASSWORD to choose it)",
                        kept.path.display()
                    );
                }
                println!(
                    "  log in:   curl -s -X POST http://{addr}/api/v1/auth/login -H 'content-type: application/json' \
                     -d '{{\"login\":\"{slug}\",\"password\":\"{password}\"}}'"
                );
            }
            None => println!("  password: from TASKBOARD_OWNER_PASSWORD"),
        }
        println!("  then send the token as 'Authorization: Bearer <token>'");
    } else if let Some(kept) = kept {
        println!(
            "the owner {:?} has not used its generated password yet: {}\n  \
             (kept in {}, mode 0600, until the owner has used it or it is changed)",
            kept.owner.slug,
            kept.password,
            kept.path.display()
        );
    }
    if dev {
        println!("development mode: API reference at {scheme}://{addr}/docs");
    }
    // The listener is bound and accepting into its backlog; serving starts
    // with the next await. The stop signals are caught from here on.
    let stop = shutdown_signal();
    println!("listening on {scheme}://{addr}");
    server.run(stop).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Completes at the first SIGINT or SIGTERM. The handlers are installed
/// when this is called, not when the future is first polled: called before
/// the address is announced, a stop sent right after it (a supervisor, a
/// script) shuts the server down gracefully instead of killing it.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let wait = {
        use tokio::signal::unix::{SignalKind, signal};
        let (interrupt, terminate) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()));
        async move {
            let recv = |s: std::io::Result<tokio::signal::unix::Signal>| async move {
                match s {
                    Ok(mut s) => {
                        s.recv().await;
                    }
                    Err(_) => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = recv(interrupt) => {}
                _ = recv(terminate) => {}
            }
        }
    };
    #[cfg(not(unix))]
    let wait = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    async move {
        wait.await;
        tracing::info!("shutting down");
    }
}
