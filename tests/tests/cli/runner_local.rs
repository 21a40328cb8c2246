//! `taskboard --data-dir DIR agent run`: the runner serves a local board
//! to its agents itself.

use std::io::BufRead;
use std::time::{Duration, Instant};

use serde_json::Value;
use taskboard_tests::{Env, taskboard_bin};

use super::runner::{Runner, board, task};

#[test]
fn a_runner_on_a_local_board_serves_it_to_its_agents_and_gives_it_back_when_it_stops() {
    let env = Env::local();
    let token = board(&env, None);
    task(&env, "Local work");
    let state = env.dir.path().join("state");
    let bin = taskboard_bin();
    // The agent talks to the board the runner serves, with the CLI.
    let script = format!(
        "echo \"on $TASKBOARD_SERVER\"; {bin:?} message post --task \"$TASKBOARD_TASK\" 'done locally' --json >/dev/null"
    );
    let path = env.dir.path().join("runner.toml");
    let text = format!(
        "name = \"local\"\nstate_dir = {state:?}\n\n[[agent]]\nslug = \"bot\"\ntoken = {token:?}\n\
         command = [\"sh\", \"-c\", {script:?}]\n"
    );
    std::fs::write(&path, text).unwrap();
    let log = env.dir.path().join("runner.log");
    let runner = Runner::start_logged(&env, &path, &log);

    // While it runs the board is the runner's: reach it where it serves.
    let url = wait_for(&log, "the runner to serve the board", |line| {
        line.split(" on ").nth(1).filter(|u| u.starts_with("http://127.0.0.1:")).map(str::to_string)
    });
    let as_agent = |args: &[&str]| -> Value {
        let out = env
            .bare()
            .env("TASKBOARD_SERVER", &url)
            .env("TASKBOARD_TOKEN", &token)
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let until = Instant::now() + Duration::from_secs(60);
    let run = loop {
        let runs = as_agent(&["run", "list", "--task", "WEB-1"]);
        if let Some(r) =
            runs.as_array().unwrap().iter().find(|r| r["state"] == "succeeded" || r["state"] == "failed")
        {
            break r.clone();
        }
        assert!(Instant::now() < until, "gave up waiting for the run to end");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(run["state"], "succeeded", "{run}");
    runner.signal("-TERM");
    drop(runner);

    // Stopped, the runner gave the board back.
    assert_eq!(env.json(&["task", "show", "WEB-1"])["status"], "review");
    let comments = env.json(&["message", "list", "--task", "WEB-1"]);
    let posted = comments.as_array().unwrap().iter().any(|m| m["content"] == "done locally");
    assert!(posted, "the agent reached the board: {comments}");
    let logs = env.cmd().args(["run", "logs", run["id"].as_str().unwrap()]).output().unwrap();
    assert!(String::from_utf8_lossy(&logs.stdout).contains(&format!("output: on {url}")));
}

#[test]
fn a_runner_on_a_directory_without_a_board_says_how_to_make_one() {
    let env = Env::local();
    let empty = env.dir.path().join("nothing-here");
    let path = env.dir.path().join("runner.toml");
    std::fs::write(&path, "[[agent]]\nslug = \"bot\"\ntoken = \"tbk-x\"\ncommand = [\"true\"]\n").unwrap();
    let out = env
        .bare()
        .arg("--data-dir")
        .arg(&empty)
        .args(["agent", "run", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no board in") && err.contains("taskboard init --data-dir"), "{err}");
    assert!(!empty.join("board.redb").exists(), "nothing made in the directory");
}

/// The first line of `log` for which `found` answers, waiting for it.
fn wait_for<T>(log: &std::path::Path, what: &str, found: impl Fn(&str) -> Option<T>) -> T {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(f) = std::fs::File::open(log)
            && let Some(v) = std::io::BufReader::new(f).lines().map_while(Result::ok).find_map(|l| found(&l))
        {
            return v;
        }
        assert!(Instant::now() < until, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
