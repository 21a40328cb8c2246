//! Three server processes on one board, and the HTTP calls the tests make.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use taskboard_pg_scratch::Scratch;
use tokio_tungstenite::tungstenite::Message;

pub const OWNER_PASSWORD: &str = "owner-password-1";
/// How long a test waits for something that happens within a second (the
/// bound on how late a process learns of another's events) on a busy
/// machine, before failing.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// One `taskboard-server` process.
pub struct Process {
    child: Child,
    /// Kept open so the server never writes to a closed pipe.
    _stdout: BufReader<ChildStdout>,
    pub base: String,
}

impl Process {
    /// Starts the binary on port 0 and waits for the line naming its
    /// address, printed once the board is open.
    fn start(data_dir: &Path, database: &str) -> Process {
        let mut child = Command::new(env!("CARGO_BIN_EXE_taskboard-server"))
            .args(["--listen", "127.0.0.1:0", "--webhook-allow-private"])
            .args(["--webhook-timeout-ms", "2000", "--webhook-retry-ms", "100"])
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--database", database])
            .env("TASKBOARD_OWNER_PASSWORD", OWNER_PASSWORD)
            .env("TASKBOARD_LOG_LEVEL", "warn")
            .env_remove("TASKBOARD_JWT_SECRET")
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server binary starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let base = loop {
            line.clear();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "the server ended before listening");
            if let Some(url) = line.trim().strip_prefix("listening on ") {
                break url.to_string();
            }
        };
        Process { child, _stdout: stdout, base }
    }

    /// SIGKILL: no shutdown of any kind.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn ws_url(&self, token: &str, since: Option<u64>) -> String {
        let base = self.base.replacen("http://", "ws://", 1);
        match since {
            Some(since) => format!("{base}/api/v1/ws?token={token}&since={since}"),
            None => format!("{base}/api/v1/ws?token={token}"),
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Three processes serving one board, its owner's session, and a client.
pub struct Cluster {
    pub procs: Vec<Process>,
    pub owner: String,
    pub http: reqwest::Client,
    /// The blob directory every process shares.
    _data: tempfile::TempDir,
}

impl Cluster {
    /// Three processes on a fresh schema of the test binary's cluster,
    /// sharing one data directory (for file contents). The session secret
    /// is left to the database, so a session is good on every process.
    pub async fn start() -> Cluster {
        let database = Scratch::shared().fresh_url();
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().to_path_buf();
        let procs = tokio::task::spawn_blocking(move || {
            (0..3).map(|_| Process::start(&dir, &database)).collect::<Vec<_>>()
        })
        .await
        .unwrap();
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let res = http
            .post(format!("{}/api/v1/auth/login", procs[0].base))
            .json(&json!({"login": "owner", "password": OWNER_PASSWORD}))
            .send()
            .await
            .unwrap();
        let body: Value = res.json().await.unwrap();
        let owner = body["token"].as_str().expect("the owner logs in").to_string();
        Cluster { procs, owner, http, _data: data }
    }

    pub fn base(&self, i: usize) -> &str {
        &self.procs[i % self.procs.len()].base
    }

    /// A request to process `i`; its status and JSON body (`null` when
    /// there is none).
    pub async fn call(
        &self,
        i: usize,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        call(&self.http, self.base(i), method, path, token, body).await
    }

    /// A request that must succeed.
    pub async fn ok(&self, i: usize, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, body) = self.call(i, method, path, &self.owner.clone(), body).await;
        assert!((200..300).contains(&status), "{path}: {status} {body}");
        body
    }

    pub async fn project(&self, slug: &str) -> String {
        let p = self.ok(0, Method::POST, "/api/v1/projects", Some(json!({"name": slug, "slug": slug}))).await;
        p["id"].as_str().unwrap().to_string()
    }

    /// An agent in `project`; its id and token.
    pub async fn agent(&self, slug: &str, project: &str) -> (String, String) {
        let body = json!({"name": slug, "slug": slug, "type": "agent", "role": "member"});
        let a = self.ok(0, Method::POST, "/api/v1/members", Some(body)).await;
        let id = a["id"].as_str().unwrap().to_string();
        let path = format!("/api/v1/projects/{project}/members");
        self.ok(0, Method::POST, &path, Some(json!({"member_id": id}))).await;
        (id, a["token"].as_str().unwrap().to_string())
    }

    pub async fn task(&self, i: usize, project: &str, title: String) -> Value {
        let path = format!("/api/v1/tasks?project_id={project}");
        self.ok(i, Method::POST, &path, Some(json!({"title": title}))).await
    }
}

pub async fn call(
    http: &reqwest::Client,
    base: &str,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http.request(method, format!("{base}{path}")).bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let body = res.json().await.unwrap_or(Value::Null);
    (status, body)
}

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A WebSocket connection and its `hello` frame.
pub async fn connect(url: &str) -> (Socket, Value) {
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("the upgrade");
    let hello = next_frame(&mut ws).await;
    assert_eq!(hello["type"], "hello", "the first frame is hello: {hello}");
    (ws, hello)
}

/// The next text frame, as JSON.
pub async fn next_frame(ws: &mut Socket) -> Value {
    loop {
        match tokio::time::timeout(PATIENCE, ws.next()).await.expect("a frame in time") {
            Some(Ok(Message::Text(t))) => return serde_json::from_str(&t).expect("frames are JSON"),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("expected a text frame, got {other:?}"),
        }
    }
}

/// Event frames until `done` holds for those read so far.
pub async fn frames_until(ws: &mut Socket, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut frames = Vec::new();
    while !done(&frames) {
        frames.push(next_frame(ws).await);
    }
    frames
}

/// The seqs of event frames, in the order they came.
pub fn seqs(frames: &[Value]) -> Vec<u64> {
    frames.iter().map(|f| f["seq"].as_u64().expect("events carry a seq")).collect()
}

/// Whether `seqs` are consecutive: in order, no gap, no repeat.
pub fn consecutive(seqs: &[u64]) -> bool {
    seqs.windows(2).all(|w| w[1] == w[0] + 1)
}

/// The ids of the tasks whose `task.created` is among `frames`.
pub fn created(frames: &[Value]) -> std::collections::HashSet<String> {
    frames
        .iter()
        .filter(|f| f["type"] == "task.created")
        .map(|f| f["data"]["id"].as_str().unwrap().to_string())
        .collect()
}
