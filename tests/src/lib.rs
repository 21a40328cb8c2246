//! End-to-end harness: the built `taskboard` binary, run against a fresh
//! local data directory or against a real server started in this process
//! on 127.0.0.1 port 0.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;
use taskboard_server::{Config, Server, ServerHandle};

/// Makes ring the process's TLS provider, once: the workspace builds
/// rustls on ring alone, and rmcp's HTTP client (reqwest 0.13 without a
/// provider of its own) takes the process's. Called before an MCP client
/// over HTTP is made.
pub fn tls_provider() {
    taskboard_core::tls::install_provider();
}

pub mod claude_code;
pub mod crates;
pub mod layers;
pub mod model_server;

pub const OWNER_PASSWORD: &str = "owner-password-1";

/// The `taskboard` binary, checked once per test run.
///
/// `CARGO_BIN_EXE_*` is not set across packages. Cargo builds the binary
/// into this target directory whenever taskboard-cli's own integration
/// tests are built (`cargo test --workspace`, or with `-p taskboard-cli`),
/// with the same features as this test; when it is missing or older than
/// the sources it is built here (a second build with other features would
/// otherwise cost minutes).
pub fn taskboard_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        workspace_bin(
            "taskboard-cli",
            "taskboard",
            &["taskboard-cli/src", "taskboard-client/src", "taskboard-runner/src"],
        )
    })
}

/// The `taskboard-server` binary, checked once per test run the same way
/// as [`taskboard_bin`].
pub fn server_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| workspace_bin("taskboard-server", "taskboard-server", &["taskboard-server/src"]))
}

/// A binary of the workspace in this target directory, built when it is
/// missing or older than its sources (`own`, the core's, MCP's and
/// Cargo.lock).
fn workspace_bin(package: &str, name: &str, own: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    // <target>/<profile>/deps/<test binary>
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps");
    let target_dir = profile_dir.parent().expect("the target directory");
    let bin = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let built = std::fs::metadata(&bin).and_then(|m| m.modified()).ok();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
    let shared = ["taskboard-core/src", "taskboard-mcp/src", "Cargo.lock"];
    let stale = match built {
        None => true,
        Some(built) => {
            own.iter().chain(&shared).any(|p| newest(&workspace.join(p)).is_some_and(|t| t > built))
        }
    };
    if stale {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build.args(["build", "--quiet", "-p", package, "--bin", name, "--target-dir"]);
        build.arg(target_dir);
        if profile_dir.file_name().is_some_and(|p| p == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building the {name} binary failed");
    }
    assert!(bin.exists(), "{} was not built", bin.display());
    bin
}

/// The newest modification time of a file or of any file under a directory.
fn newest(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path).ok()?.flatten().filter_map(|e| newest(&e.path())).max()
}

/// A board the CLI talks to: a local data directory or a running server.
pub struct Env {
    pub dir: tempfile::TempDir,
    /// The data directory (local mode; the server's in remote mode).
    pub data_dir: PathBuf,
    pub server: Option<RunningServer>,
    /// A server in a process of its own ([`Env::remote_process`]).
    pub process: Option<ServerProcess>,
    /// Local mode on PostgreSQL: the board's database (`--database`); the
    /// data directory then holds its file contents.
    pub database: Option<String>,
    /// Where `login` stores credentials for this test.
    pub credentials: PathBuf,
}

/// A server in this process, on its own runtime so the tests can stay
/// synchronous while the CLI runs as a child process.
pub struct RunningServer {
    pub runtime: tokio::runtime::Runtime,
    pub handle: Option<ServerHandle>,
    pub url: String,
    pub addr: SocketAddr,
    pub token: String,
}

impl RunningServer {
    /// Starts a server over `data_dir` on `addr` (port 0: any free port),
    /// bound before it is returned, and logs the owner in.
    pub fn start(data_dir: &Path, addr: SocketAddr) -> RunningServer {
        RunningServer::start_with(data_dir, addr, |_| {})
    }

    /// [`RunningServer::start`] after `configure` has adjusted the
    /// configuration.
    pub fn start_with(
        data_dir: &Path,
        addr: SocketAddr,
        configure: impl FnOnce(&mut Config),
    ) -> RunningServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let mut config = Config::new(data_dir);
        config.listen = addr;
        config.owner_password = Some(OWNER_PASSWORD.into());
        configure(&mut config);
        let (handle, token) = runtime.block_on(async {
            // Bound first: single sign-on's public URL (required) names the port.
            let listener = tokio::net::TcpListener::bind(config.listen).await.expect("the server binds");
            if config.oidc.is_some() && config.public_url.is_none() {
                config.public_url = Some(format!("http://{}", listener.local_addr().expect("an address")));
            }
            let server = Server::on_listener(listener, config).await.expect("the server binds");
            let token = server.board().login("owner", OWNER_PASSWORD, None).await.expect("owner login").token;
            (server.spawn(), token)
        });
        let addr = handle.addr();
        RunningServer { runtime, handle: Some(handle), url: format!("http://{addr}"), addr, token }
    }

    /// Stops serving and releases the data directory.
    pub fn stop(&mut self) {
        if let Some(handle) = self.handle.take() {
            self.runtime.block_on(handle.shutdown());
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The `taskboard-server` binary serving a data directory on 127.0.0.1
/// port 0, killed when dropped.
pub struct ServerProcess {
    pub child: std::process::Child,
    pub url: String,
    pub token: String,
    _stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl ServerProcess {
    /// Starts the server and waits for the line naming its address, then
    /// logs the owner in.
    pub fn start(data_dir: &Path) -> ServerProcess {
        use std::io::BufRead;
        let mut child = std::process::Command::new(server_bin())
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env("TASKBOARD_OWNER_PASSWORD", OWNER_PASSWORD)
            .env("TASKBOARD_LOG_LEVEL", "warn")
            .env_remove("TASKBOARD_JWT_SECRET")
            .env_remove("RUST_LOG")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the server binary starts");
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("its stdout"));
        let mut line = String::new();
        let url = loop {
            line.clear();
            assert!(
                stdout.read_line(&mut line).expect("its stdout") > 0,
                "the server ended before listening"
            );
            if let Some(url) = line.trim().strip_prefix("listening on ") {
                break url.to_string();
            }
        };
        let login = serde_json::json!({"login": "owner", "password": OWNER_PASSWORD});
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let answer: Value = runtime
            .block_on(async {
                taskboard_core::tls::install_provider();
                let r = reqwest::Client::new()
                    .post(format!("{url}/api/v1/auth/login"))
                    .json(&login)
                    .send()
                    .await?;
                r.error_for_status()?.json().await
            })
            .expect("the owner logs in");
        let token = answer["token"].as_str().expect("a token").to_string();
        ServerProcess { child, url, token, _stdout: stdout }
    }

    /// The peak resident memory of the server's process so far, in bytes.
    pub fn peak_rss(&self) -> u64 {
        peak_rss(self.child.id())
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The peak resident memory of a process (`VmHWM`), in bytes.
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process's status");
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in the status");
    kb * 1024
}

impl Env {
    /// A new local board made with `taskboard init`.
    pub fn local() -> Env {
        let env = Env::empty();
        env.run(&["init", "--password", OWNER_PASSWORD]).success();
        env
    }

    /// A new local board in a fresh schema of the tests' throwaway
    /// PostgreSQL, made with `taskboard init`.
    pub fn local_postgres() -> Env {
        let mut env = Env::empty();
        env.database = Some(taskboard_pg_scratch::Scratch::shared().fresh_url());
        env.run(&["init", "--password", OWNER_PASSWORD]).success();
        env
    }

    /// A new board held by a running server.
    pub fn remote() -> Env {
        let mut env = Env::empty();
        env.server = Some(RunningServer::start(&env.data_dir, SocketAddr::from(([127, 0, 0, 1], 0))));
        env
    }

    /// [`Env::remote`] with a server configured by `configure`.
    pub fn remote_with(configure: impl FnOnce(&mut Config)) -> Env {
        let mut env = Env::empty();
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        env.server = Some(RunningServer::start_with(&env.data_dir, addr, configure));
        env
    }

    fn empty() -> Env {
        let dir = tempfile::tempdir().expect("a temp dir");
        let data_dir = dir.path().join("data");
        let credentials = dir.path().join("config").join("credentials.json");
        Env { dir, data_dir, server: None, process: None, database: None, credentials }
    }

    /// A new board held by the `taskboard-server` binary in a process of
    /// its own (to watch its memory, or kill it).
    pub fn remote_process() -> Env {
        let mut env = Env::empty();
        env.process = Some(ServerProcess::start(&env.data_dir));
        env
    }

    pub fn is_remote(&self) -> bool {
        self.server.is_some() || self.process.is_some()
    }

    /// The server's base URL and the owner's token, in remote mode.
    pub fn remote_server(&self) -> Option<(&str, &str)> {
        match (&self.server, &self.process) {
            (Some(s), _) => Some((&s.url, &s.token)),
            (None, Some(p)) => Some((&p.url, &p.token)),
            (None, None) => None,
        }
    }

    /// `taskboard` with no board chosen and a clean environment.
    pub fn bare(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::new(taskboard_bin());
        for var in [
            "TASKBOARD_DATA_DIR",
            "TASKBOARD_DATABASE",
            "TASKBOARD_SERVER",
            "TASKBOARD_TOKEN",
            "TASKBOARD_PASSWORD",
            "TASKBOARD_LEASE",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("TASKBOARD_CREDENTIALS", &self.credentials).current_dir(self.dir.path());
        cmd
    }

    /// `taskboard` pointed at this board (`--data-dir` or `--server` with
    /// the owner's token).
    pub fn cmd(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.std_cmd())
    }

    /// [`Env::cmd`] as a `std::process::Command`, for a child process the
    /// test drives itself (pipes, signals).
    pub fn std_cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(taskboard_bin());
        for var in [
            "TASKBOARD_DATA_DIR",
            "TASKBOARD_DATABASE",
            "TASKBOARD_SERVER",
            "TASKBOARD_TOKEN",
            "TASKBOARD_PASSWORD",
            "TASKBOARD_LEASE",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("TASKBOARD_CREDENTIALS", &self.credentials).current_dir(self.dir.path());
        match self.remote_server() {
            Some((url, token)) => cmd.env("TASKBOARD_SERVER", url).env("TASKBOARD_TOKEN", token),
            None => cmd.env("TASKBOARD_DATA_DIR", &self.data_dir),
        };
        if let Some(database) = &self.database {
            cmd.env("TASKBOARD_DATABASE", database);
        }
        cmd
    }

    pub fn run(&self, args: &[&str]) -> assert_cmd::assert::Assert {
        self.cmd().args(args).assert()
    }

    /// Runs a command with `--json`, checks it succeeded and parses stdout.
    #[track_caller]
    pub fn json(&self, args: &[&str]) -> Value {
        let out = self.cmd().args(args).arg("--json").output().expect("taskboard runs");
        assert!(
            out.status.success(),
            "taskboard {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("taskboard {}: not JSON ({e}): {}", args.join(" "), String::from_utf8_lossy(&out.stdout))
        })
    }
}

/// Replaces what differs between two runs of one scenario — ids,
/// timestamps, tokens, storage names — with stable placeholders. Each
/// distinct id gets its own number in order of appearance, so references
/// between objects must still agree.
#[derive(Debug, Default)]
pub struct Normalizer {
    ids: HashMap<String, usize>,
}

impl Normalizer {
    pub fn apply(&mut self, v: &Value) -> Value {
        match v {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let v = match k.as_str() {
                            "token" if v.is_string() => Value::String("<token>".into()),
                            "storage_name" => Value::String("<storage>".into()),
                            _ => self.apply(v),
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|i| self.apply(i)).collect()),
            Value::String(s) if uuid::Uuid::parse_str(s).is_ok() => {
                let n = self.ids.len();
                Value::String(format!("<id{}>", self.ids.entry(s.clone()).or_insert(n)))
            }
            Value::String(s) if is_timestamp(s) => Value::String("<ts>".into()),
            other => other.clone(),
        }
    }
}

fn is_timestamp(s: &str) -> bool {
    s.len() >= 20 && s.as_bytes()[4] == b'-' && s.as_bytes()[10] == b'T' && s.ends_with('Z')
}

/// Every file under `dir`, by relative path, with its bytes.
pub fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).expect("a readable directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).expect("a readable file");
                out.push((path.strip_prefix(root).expect("under the root").to_path_buf(), bytes));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
