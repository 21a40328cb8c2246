//! What a new user runs into: exit codes, JSON errors, hyphenated values,
//! quiet agent creation, closed pipes, tables and `task show`.

use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use taskboard_tests::Env;

/// Runs a command whose stdout is closed before it writes (as `| head`
/// does once it has its line), and returns its exit code and stderr.
fn with_closed_stdout(env: &Env, args: &[&str]) -> (Option<i32>, String) {
    let mut child = env
        .std_cmd()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    // stderr reaches its end when the child exits. The bound is on a hang
    // (a stream that never notices), not a timing.
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        let _ = tx.send(text);
    });
    let Ok(stderr) = rx.recv_timeout(Duration::from_secs(60)) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("taskboard {} did not end by itself", args.join(" "));
    };
    (child.wait().unwrap().code(), stderr)
}

fn failure(env: &Env, args: &[&str]) -> (Option<i32>, String, String) {
    let out = env.cmd().args(args).output().unwrap();
    assert!(!out.status.success(), "taskboard {} succeeded", args.join(" "));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn exit_codes_tell_the_kind_of_failure_and_json_errors_are_json() {
    let env = Env::remote();
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    // code, the error code in JSON, arguments
    let cases: [(i32, &str, &[&str]); 5] = [
        (2, "usage", &["task", "list", "--status", "doing"]),
        (3, "not_found", &["task", "show", "WEB-99"]),
        (5, "conflict", &["project", "create", "--name", "Web", "--slug", "web"]),
        (1, "validation_error", &["label", "create", "x", "--color", "red"]),
        (4, "unauthorized", &["--token", "tbk-not-a-token", "whoami"]),
    ];
    for (code, name, args) in cases {
        let (got, stdout, stderr) = failure(&env, args);
        assert_eq!(got, Some(code), "taskboard {}: {stderr}", args.join(" "));
        assert!(stderr.starts_with("error: "), "{stderr}");
        let mut json_args = args.to_vec();
        json_args.push("--json");
        let (got, stdout_json, stderr) = failure(&env, &json_args);
        assert_eq!(got, Some(code), "taskboard {}: {stderr}", json_args.join(" "));
        assert!(stdout.is_empty() && stdout_json.is_empty(), "errors stay off stdout");
        let error: Value = serde_json::from_str(&stderr)
            .unwrap_or_else(|e| panic!("taskboard {}: not JSON ({e}): {stderr}", json_args.join(" ")));
        assert_eq!(error["code"], name, "{error}");
        assert!(!error["detail"].as_str().unwrap().is_empty(), "{error}");
    }
    // A usage error of the CLI itself, not clap's.
    let out = env.bare().args(["task", "list", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let error: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(error["code"], "usage");
    assert!(error["detail"].as_str().unwrap().contains("--data-dir"), "{error}");
}

#[test]
fn enum_options_accept_hyphens_for_underscores() {
    let env = Env::local();
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "A", "--status", "in-progress"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "B"]).success();
    let listed = env.json(&["task", "list", "--status", "in-progress"]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["status"], "in_progress");
    let link = env.json(&["task", "link", "WEB-2", "WEB-1", "--type", "depends-on"]);
    assert_eq!(link["link_type"], "depends_on");
}

#[test]
fn a_quiet_agent_creation_prints_its_token() {
    let env = Env::remote();
    let out = env
        .cmd()
        .args(["member", "create", "--name", "Bot", "--slug", "bot", "--type", "agent", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(token.starts_with("tbk-"), "{token}");
    // The token is the agent's credential.
    let me = env.cmd().env("TASKBOARD_TOKEN", &token).args(["whoami", "--json"]).output().unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&me.stdout).unwrap()["slug"], "bot");
    // A human has no token: its id.
    let out = env
        .cmd()
        .args(["member", "create", "--name", "Ann", "--slug", "ann", "--type", "human", "-q"])
        .output()
        .unwrap();
    assert!(uuid::Uuid::parse_str(String::from_utf8(out.stdout).unwrap().trim()).is_ok());
}

#[test]
fn a_closed_stdout_ends_a_command_without_a_panic() {
    let env = Env::remote();
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "A"]).success();
    for args in [
        &["task", "list"][..],
        &["task", "list", "--json"],
        &["task", "list", "-q"],
        &["task", "show", "WEB-1"],
        &["completions", "zsh"],
        &["completions", "bash"],
        // A live stream ends once its output is gone.
        &["events", "--since", "0"],
    ] {
        let (code, stderr) = with_closed_stdout(&env, args);
        assert!(!stderr.contains("panicked"), "taskboard {}: {stderr}", args.join(" "));
        assert_eq!(code, Some(0), "taskboard {}: {stderr}", args.join(" "));
    }
}

#[test]
fn tables_show_short_ids_and_times_to_the_second() {
    let env = Env::local();
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "A"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "B"]).success();
    env.run(&["message", "post", "--project", "web", "hello"]).success();
    let message = env.json(&["message", "list", "--project", "web"])[0].clone();
    let table = env.cmd().args(["message", "list", "--project", "web"]).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    let row = table.lines().nth(1).unwrap();
    let id = message["id"].as_str().unwrap();
    let short = &id[id.len() - 8..];
    assert!(row.ends_with(short) && !row.contains(id), "{table}");
    // 2024-05-01T12:34:56Z: to the second, nothing finer.
    let at = row.split_whitespace().next().unwrap();
    assert_eq!(at.len(), 20, "{at}");
    assert!(message["created_at"].as_str().unwrap().starts_with(&at[..19]), "{at} vs {message}");

    // A link by the short id its table shows.
    let link = env.json(&["task", "link", "WEB-2", "WEB-1"]);
    let link_id = link["id"].as_str().unwrap();
    let links = env.cmd().args(["task", "links", "WEB-2"]).output().unwrap();
    let links = String::from_utf8(links.stdout).unwrap();
    let short = links.lines().nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    assert!(link_id.ends_with(&short) && short.len() == 8, "{links}");
    env.run(&["task", "unlink", "WEB-2", &short]).success();
    assert_eq!(env.json(&["task", "links", "WEB-2"]), serde_json::json!([]));
}

#[test]
fn task_show_lists_dependencies_by_key_and_the_latest_comments() {
    let env = Env::local();
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "Fix login"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "Write docs", "--depends-on", "WEB-1"])
        .success();
    for n in 1..=7 {
        env.run(&["message", "post", "--task", "WEB-2", &format!("comment number {n}")]).success();
    }
    let out = env.cmd().args(["task", "show", "WEB-2"]).output().unwrap();
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(shown.contains("depends on:\n  WEB-1 Fix login\n"), "{shown}");
    assert!(shown.contains("latest 5 comments"), "{shown}");
    for n in 3..=7 {
        assert!(shown.contains(&format!("owner: comment number {n}")), "{shown}");
    }
    assert!(!shown.contains("comment number 2"), "only the latest: {shown}");
    // Newest last.
    assert!(shown.find("number 6").unwrap() < shown.find("number 7").unwrap(), "{shown}");
    // --json is the API's task, unchanged.
    let json = env.json(&["task", "show", "WEB-2"]);
    assert!(json.get("comments").is_none());
    assert_eq!(json["depends_on"].as_array().unwrap().len(), 1);
}
