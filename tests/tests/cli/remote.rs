//! What only a server has: login and the live event stream.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use taskboard_tests::{Env, OWNER_PASSWORD, RunningServer, taskboard_bin};

#[test]
fn login_stores_a_private_token_and_logout_removes_it() {
    let env = Env::remote();
    let url = env.server.as_ref().unwrap().url.clone();
    env.bare()
        .args(["--server", &url, "login", "--login", "owner", "--password", "wrong-password"])
        .assert()
        .code(4);
    env.bare()
        .args(["--server", &url, "login", "--login", "owner"])
        .write_stdin(format!("{OWNER_PASSWORD}\n"))
        .assert()
        .success();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&env.credentials).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Without --server or --data-dir the stored login is used.
    let out = env.bare().args(["whoami", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["slug"], "owner");
    env.bare().arg("logout").assert().success();
    assert!(!env.credentials.exists());
    env.bare().arg("whoami").assert().code(2);
    // A bad token is the server's 401: not authenticated.
    let out = env.bare().args(["--server", &url, "--token", "tbk-nope", "whoami"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("credentials"));
}

/// Reads JSON lines of a child process on a thread.
fn lines(child: &mut std::process::Child) -> mpsc::Receiver<Value> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(serde_json::from_str(&line).expect("JSON lines")).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_for(rx: &mpsc::Receiver<Value>, seen: &mut Vec<Value>, kind: &str) {
    loop {
        let event = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("no {kind} event"));
        let done = event["type"] == kind;
        seen.push(event);
        if done {
            return;
        }
    }
}

#[test]
fn events_stream_as_json_lines_and_resume_after_a_server_restart() {
    let mut env = Env::remote();
    let (url, token, addr) = {
        let s = env.server.as_ref().unwrap();
        (s.url.clone(), s.token.clone(), s.addr)
    };
    let mut child = Command::new(taskboard_bin())
        .args(["--server", &url, "--token", &token, "events", "--since", "0"])
        .env("TASKBOARD_CREDENTIALS", &env.credentials)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = lines(&mut child);
    let mut seen = Vec::new();
    wait_for(&rx, &mut seen, "member.created");
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    wait_for(&rx, &mut seen, "project.created");

    // The server goes away and comes back on the same address and data.
    env.server.as_mut().unwrap().stop();
    env.server = Some(RunningServer::start(&env.data_dir, addr));
    env.run(&["task", "create", "--project", "web", "--title", "After the restart"]).success();
    wait_for(&rx, &mut seen, "task.created");
    let _ = child.kill();
    let _ = child.wait();

    let seqs: Vec<u64> = seen.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "no duplicate, in order: {seqs:?}");
    assert_eq!(seqs.first(), Some(&1), "replayed from the start");
    let task = seen.last().unwrap();
    assert_eq!(task["data"]["key"], "WEB-1");
    assert!(seen.iter().all(|e| e["type"] != "hello"));
}
