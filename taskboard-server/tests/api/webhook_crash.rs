//! A server killed with deliveries queued and one in flight: once it
//! runs again every event is delivered, and only what was in flight is
//! delivered twice, with the same `webhook-id`.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use crate::receiver::{Answer, Receiver};

/// The server binary in its own process, so it can be killed.
struct ServerProcess {
    child: std::process::Child,
    base: String,
}

impl ServerProcess {
    async fn start(data_dir: &std::path::Path) -> ServerProcess {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_taskboard-server"))
            .args(["--listen", "127.0.0.1:0", "--webhook-allow-private"])
            .args(["--webhook-timeout-ms", "1000", "--webhook-retry-ms", "100", "--data-dir"])
            .arg(data_dir)
            .env("TASKBOARD_OWNER_PASSWORD", "owner-password-1")
            .env("TASKBOARD_JWT_SECRET", "test-secret")
            .env("TASKBOARD_LOG_LEVEL", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the server binary starts");
        let stdout = child.stdout.take().unwrap();
        let base = tokio::task::spawn_blocking(move || {
            std::io::BufRead::lines(std::io::BufReader::new(stdout))
                .map_while(Result::ok)
                .find_map(|line| line.split("listening on ").nth(1).map(|a| a.trim().to_string()))
        })
        .await
        .unwrap()
        .expect("the listening line");
        ServerProcess { child, base }
    }

    /// SIGKILL: no shutdown, nothing handed back.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn post(http: &reqwest::Client, token: Option<&str>, url: String, body: Value) -> Value {
    let mut req = http.post(url).json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    res.json().await.unwrap()
}

#[tokio::test]
async fn a_killed_server_delivers_every_event_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let receiver = Receiver::start().await;
    // The first attempt never gets an answer: it is in flight when the
    // server dies.
    receiver.answer(Answer::Hang);
    taskboard_core::tls::install_provider();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();

    let mut server = ServerProcess::start(&data).await;
    let base = server.base.clone();
    let login = post(
        &http,
        None,
        format!("{base}/api/v1/auth/login"),
        json!({"login": "owner", "password": "owner-password-1"}),
    )
    .await;
    let token = login["token"].as_str().unwrap().to_string();
    let t = Some(token.as_str());
    post(
        &http,
        t,
        format!("{base}/api/v1/webhooks"),
        json!({"url": receiver.url, "events": ["task.created"]}),
    )
    .await;
    let project =
        post(&http, t, format!("{base}/api/v1/projects"), json!({"name": "web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap();
    let mut created = Vec::new();
    for i in 0..20 {
        let task = post(
            &http,
            t,
            format!("{base}/api/v1/tasks?project_id={pid}"),
            json!({"title": format!("task {i}")}),
        )
        .await;
        created.push(task["id"].as_str().unwrap().to_string());
    }
    receiver.wait_until("an attempt in flight", |r| !r.is_empty()).await;
    server.kill();
    let in_flight: HashSet<String> = receiver.received().iter().map(|r| r.id().to_string()).collect();
    receiver.answer(Answer::Status(200));

    let _again = ServerProcess::start(&data).await;
    let got = receiver.wait_delivered(20).await;
    let delivered_tasks: Vec<String> =
        got.iter().map(|r| r.frame()["data"]["id"].as_str().unwrap().to_string()).collect();
    let mut sorted = delivered_tasks.clone();
    sorted.sort();
    let mut expected = created.clone();
    expected.sort();
    assert_eq!(sorted, expected, "every task.created, none lost");
    let mut times: HashMap<String, usize> = HashMap::new();
    for r in receiver.received() {
        *times.entry(r.id().to_string()).or_default() += 1;
    }
    for (id, n) in &times {
        assert!(*n == 1 || in_flight.contains(id), "{id} came {n} times but was not in flight at the kill");
    }
    assert!(in_flight.iter().all(|id| times[id] >= 2), "what was in flight came again with its id");
}
