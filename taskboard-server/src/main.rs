//! `taskboard-server`: serves a board over HTTP and WebSocket.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use taskboard_server::{Config, Server};

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
    /// Timeout of a delivery attempt in milliseconds (tests).
    #[arg(long, hide = true)]
    webhook_timeout_ms: Option<u64>,
    /// One fixed delay between delivery attempts in milliseconds, without
    /// jitter (tests).
    #[arg(long, hide = true)]
    webhook_retry_ms: Option<u64>,
    /// The bearer token `GET /metrics` asks for (`Authorization: Bearer
    /// <token>`); without it the metrics are open to anyone who reaches
    /// the server.
    #[arg(long, env = "TASKBOARD_METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
    /// Log filter (`info`, `warn`, `taskboard_server=debug` …); RUST_LOG wins when set.
    #[arg(long, env = "TASKBOARD_LOG_LEVEL", default_value = "info")]
    log_level: String,
}

/// Transparent huge pages off for this process. Where the kernel gives
/// them to every mapping (`always`), each 2 MiB region of mimalloc's
/// arenas that one small allocation touches becomes resident whole, so a
/// server held about 110 MB after a mixed workload instead of about 90
/// (`bench/scale.sh`, at 10,000 and 1,000,000 tasks alike) for no
/// measured gain in speed (docs/decisions.md, S.14).
fn without_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        eprintln!("warning: transparent huge pages stay on: {e}");
    }
}

fn main() -> ExitCode {
    without_transparent_huge_pages();
    let args = Args::parse();
    let filter =
        std::env::var("RUST_LOG").ok().filter(|v| !v.is_empty()).unwrap_or_else(|| args.log_level.clone());
    let filter = match tracing_subscriber::EnvFilter::try_new(&filter) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: bad log level {filter:?}: {e}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();

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
    config.transcript_cap = args.transcript_cap;
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
        println!("development mode: API reference at http://{addr}/docs");
    }
    // The listener is bound and accepting into its backlog; serving starts
    // with the next await.
    println!("listening on http://{addr}");
    server.run(shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
    tracing::info!("shutting down");
}
