//! Leases across a crash of the real server binary: killed with SIGKILL
//! while a task is leased and started again on the same data directory,
//! the server still shows the lease; killed again and started after the
//! lease's end, it releases the lease at start-up, once, and not before
//! `expires_at`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::support::OWNER_PASSWORD;

/// The `taskboard-server` binary, running until it is killed.
struct Process {
    child: Child,
    /// Kept open so the server never writes to a closed pipe.
    _stdout: BufReader<ChildStdout>,
    base: String,
}

impl Process {
    /// Starts the binary on port 0 and waits for the line naming its
    /// address, which it prints once the board is open (and leases that
    /// ended while it was down are released).
    fn start(data_dir: &Path) -> Process {
        let mut child = Command::new(env!("CARGO_BIN_EXE_taskboard-server"))
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env("TASKBOARD_OWNER_PASSWORD", OWNER_PASSWORD)
            .env("TASKBOARD_LOG_LEVEL", "warn")
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
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn call(base: &str, method: reqwest::Method, path: &str, token: &str, body: Option<Value>) -> Value {
    taskboard_core::tls::install_provider();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut req = client.request(method, format!("{base}{path}")).bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "{path}: {status} {body}");
    body
}

async fn login(base: &str) -> String {
    taskboard_core::tls::install_provider();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let res = client
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"login": "owner", "password": OWNER_PASSWORD}))
        .send()
        .await
        .unwrap();
    let body: Value = res.json().await.unwrap();
    body["token"].as_str().expect("the owner logs in").to_string()
}

fn expiry_of(task: &Value) -> Option<Timestamp> {
    task["lease"]["expires_at"].as_str().map(|t| t.parse().unwrap())
}

/// The audit entries of a task with the action `lease_expired`, with
/// their times.
async fn expiries(base: &str, token: &str, task: &str) -> Vec<Timestamp> {
    let actions =
        call(base, reqwest::Method::GET, &format!("/api/v1/tasks/{task}/actions"), token, None).await;
    actions
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == "lease_expired")
        .map(|a| a["created_at"].as_str().unwrap().parse().unwrap())
        .collect()
}

#[tokio::test]
async fn a_lease_survives_sigkill_and_ends_at_start_up_once_its_time_has_passed() {
    use reqwest::Method;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");

    let server = Process::start(&data);
    let base = server.base.clone();
    let owner = login(&base).await;
    let project =
        call(&base, Method::POST, "/api/v1/projects", &owner, Some(json!({"name": "web", "slug": "web"})))
            .await;
    let project = project["id"].as_str().unwrap().to_string();
    let bot = call(
        &base,
        Method::POST,
        "/api/v1/members",
        &owner,
        Some(json!({"name": "bot", "slug": "bot", "type": "agent", "role": "member"})),
    )
    .await;
    let (bot_id, bot_token) = (bot["id"].clone(), bot["token"].as_str().unwrap().to_string());
    call(
        &base,
        Method::POST,
        &format!("/api/v1/projects/{project}/members"),
        &owner,
        Some(json!({"member_id": bot_id})),
    )
    .await;
    let task = call(
        &base,
        Method::POST,
        &format!("/api/v1/tasks?project_id={project}"),
        &owner,
        Some(json!({"title": "leased"})),
    )
    .await;
    let task = task["id"].as_str().unwrap().to_string();
    let taken = call(
        &base,
        Method::POST,
        &format!("/api/v1/tasks/{task}/take"),
        &bot_token,
        Some(json!({"lease_seconds": 10})),
    )
    .await;
    let expires_at = expiry_of(&taken).expect("the take leased the task");
    assert_eq!(taken["lease"]["holder"]["id"], bot_id);
    server.kill();

    // Started again at once: the lease is still there, unchanged (or, on
    // a machine slow enough to restart after the lease's end, it was
    // released then and not before).
    let server = Process::start(&data);
    let base = server.base.clone();
    let owner = login(&base).await;
    let seen = call(&base, Method::GET, &format!("/api/v1/tasks/{task}"), &owner, None).await;
    match expiry_of(&seen) {
        Some(at) => {
            assert_eq!(at, expires_at, "the lease survived the crash as it was");
            assert_eq!(seen["lease"]["holder"]["id"], bot_id);
            assert_eq!(seen["assignee"]["id"], bot_id);
            assert_eq!(seen["status"], "in_progress");
            assert!(expiries(&base, &owner, &task).await.is_empty());
        }
        None => {
            let ended = expiries(&base, &owner, &task).await;
            assert_eq!(ended.len(), 1);
            assert!(ended[0] >= expires_at, "released at {} before its end {expires_at}", ended[0]);
        }
    }
    server.kill();

    // Down past the lease's end: the clock under test is the wall clock,
    // so the test waits for it to pass `expires_at` with the server down.
    let left = expires_at.duration_since(Timestamp::now());
    if left.is_positive() {
        tokio::time::sleep(left.unsigned_abs() + std::time::Duration::from_millis(50)).await;
    }
    let server = Process::start(&data);
    let base = server.base.clone();
    let owner = login(&base).await;
    // Released while starting, before the first request was served.
    let seen = call(&base, Method::GET, &format!("/api/v1/tasks/{task}"), &owner, None).await;
    assert_eq!(seen["lease"], Value::Null, "{seen}");
    assert_eq!(seen["assignee"], Value::Null);
    assert_eq!(seen["status"], "todo");
    let ended = expiries(&base, &owner, &task).await;
    assert_eq!(ended.len(), 1, "released once");
    assert!(ended[0] >= expires_at, "released at {} before its end {expires_at}", ended[0]);
    let ready = call(&base, Method::GET, "/api/v1/tasks/ready", &bot_token, None).await;
    assert_eq!(ready[0]["id"], json!(task), "ready again");
    server.kill();
}
