//! `taskboard agent run` answering messages: a chat message or a task
//! comment the agent answers by its `chat_listen` / `task_listen` starts
//! a run of a shell-script agent, whose stdout becomes its reply.

use serde_json::Value;
use taskboard_tests::Env;

use super::runner::{Runner, board, config, ended, eventually, task};

/// The agent's runs answering messages, newest first.
fn message_runs(env: &Env) -> Vec<Value> {
    let all = env.json(&["run", "list", "--agent", "bot"]);
    all.as_array().unwrap().iter().filter(|r| !r["message_id"].is_null()).cloned().collect()
}

/// The run answering `message` once it ended.
#[track_caller]
fn answered(env: &Env, message: &str) -> Value {
    eventually(&format!("the run answering {message} to end"), || {
        message_runs(env).into_iter().find(|r| {
            r["message_id"] == message
                && !matches!(r["state"].as_str(), Some("starting" | "running" | "awaiting_input"))
        })
    })
}

fn post(env: &Env, place: &[&str], text: &str) -> String {
    let mut args = vec!["message", "post"];
    args.extend(place);
    args.push(text);
    env.json(&args)["id"].as_str().unwrap().to_string()
}

fn replies(env: &Env, message: &str) -> Vec<Value> {
    env.json(&["message", "replies", message]).as_array().unwrap().clone()
}

fn listen_for_mentions(env: &Env) {
    let config = r#"{"chat_listen":"mentions","task_listen":"mentions"}"#;
    env.run(&["member", "update", "bot", "--agent-config", config]).success();
}

/// The agent answers messages with a fixed line; its task runs succeed.
const SCRIPT: &str = "cat > /dev/null; if [ -n \"$TASKBOARD_MESSAGE\" ]; then echo 'the build is green'; fi";

/// Waits until the runner follows the event stream: it looked for work
/// after it began following, so the run of a task made before it
/// started has ended.
fn follows(env: &Env) {
    assert_eq!(ended(env, "WEB-1")["state"], "succeeded");
}

#[test]
fn a_chat_mention_is_answered_by_a_reply_holding_the_agents_output() {
    let env = Env::remote();
    let token = board(&env, None);
    listen_for_mentions(&env);
    task(&env, "Warm up");
    let (path, _) = config(&env, "r", &token, SCRIPT, "");
    let _runner = Runner::start(&env, &path);
    follows(&env);
    // Not mentioned, with chat_listen = mentions: no run.
    let plain = post(&env, &["--project", "web"], "is the build green?");
    let asked = post(&env, &["--project", "web"], "@bot is the build green?");
    let run = answered(&env, &asked);
    assert_eq!(run["state"], "succeeded", "{run}");
    assert!(run["task"].is_null(), "a chat run has no task: {run}");
    let answers = replies(&env, &asked);
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["author"]["slug"], "bot");
    assert_eq!(answers[0]["content"], "the build is green");
    // The runner saw the first message before the second: it started nothing for it.
    let runs = message_runs(&env);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs.iter().all(|r| r["message_id"] != plain.as_str()));
    assert!(replies(&env, &plain).is_empty());
}

#[test]
fn a_comment_mention_is_answered_on_the_task_which_keeps_its_status_and_lease() {
    let env = Env::remote();
    let token = board(&env, None);
    listen_for_mentions(&env);
    task(&env, "Warm up");
    let (path, _) = config(&env, "r", &token, SCRIPT, "");
    let _runner = Runner::start(&env, &path);
    follows(&env);
    let before = env.json(&["task", "show", "WEB-1"]);
    assert_eq!(before["status"], "review");
    let asked = post(&env, &["--task", "WEB-1"], "@bot what did you change?");
    let run = answered(&env, &asked);
    assert_eq!(run["state"], "succeeded", "{run}");
    assert_eq!(run["task"]["key"], "WEB-1", "a comment's run names its task: {run}");
    let answers = replies(&env, &asked);
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["task_id"], before["id"]);
    assert_eq!(answers[0]["content"], "the build is green");
    let after = env.json(&["task", "show", "WEB-1"]);
    for field in ["status", "assignee", "lease"] {
        assert_eq!(after[field], before[field], "{field}");
    }
    // The task's own runs are its work only.
    assert_eq!(super::runner::runs(&env, "WEB-1").len(), 1);
}

#[test]
fn two_runners_of_one_agent_answer_a_message_once() {
    let env = Env::remote();
    let token = board(&env, None);
    listen_for_mentions(&env);
    // Each runner takes one of two tasks, whose agents wait for `go`: once
    // both run, both runners follow the event stream.
    task(&env, "One");
    task(&env, "Two");
    let go = env.dir.path().join("go");
    let log = env.dir.path().join("answers");
    let script = format!(
        "cat > /dev/null; if [ -n \"$TASKBOARD_MESSAGE\" ]; then echo \"$TASKBOARD_MESSAGE\" >> {log:?}; \
         echo answered; else while [ ! -e {go:?} ]; do sleep 0.05; done; fi"
    );
    let (a, _) = config(&env, "a", &token, &script, "");
    let (b, _) = config(&env, "b", &token, &script, "");
    let _ra = Runner::start(&env, &a);
    let _rb = Runner::start(&env, &b);
    eventually("both runners to run a task", || {
        let runners: std::collections::HashSet<String> = ["WEB-1", "WEB-2"]
            .iter()
            .filter_map(|k| {
                super::runner::runs(&env, k).first().and_then(|r| r["runner"].as_str().map(String::from))
            })
            .collect();
        (runners.len() == 2).then_some(())
    });
    std::fs::write(&go, "").unwrap();
    for key in ["WEB-1", "WEB-2"] {
        assert_eq!(ended(&env, key)["state"], "succeeded");
    }
    let asked: Vec<String> =
        (1..=3).map(|i| post(&env, &["--project", "web"], &format!("@bot question {i}"))).collect();
    for m in &asked {
        assert_eq!(answered(&env, m)["state"], "succeeded");
    }
    for m in &asked {
        let runs: Vec<Value> =
            message_runs(&env).into_iter().filter(|r| r["message_id"] == m.as_str()).collect();
        assert_eq!(runs.len(), 1, "one run answers {m}: {runs:?}");
        assert_eq!(replies(&env, m).len(), 1, "one reply to {m}");
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let mut started: Vec<&str> = text.lines().collect();
    started.sort();
    let mut expected: Vec<&str> = asked.iter().map(String::as_str).collect();
    expected.sort();
    assert_eq!(started, expected, "each message answered once: {text}");
}

#[test]
fn a_message_run_its_runner_left_open_fails_when_the_runner_starts_again() {
    let env = Env::remote();
    let token = board(&env, None);
    listen_for_mentions(&env);
    task(&env, "Warm up");
    let script = "cat > /dev/null; if [ -n \"$TASKBOARD_MESSAGE\" ]; then exec sleep 600; fi";
    let (path, _) = config(&env, "one", &token, script, "");
    let first = Runner::start(&env, &path);
    follows(&env);
    let asked = post(&env, &["--project", "web"], "@bot think it over");
    eventually("the answer to be running", || {
        message_runs(&env).into_iter().find(|r| r["message_id"] == asked.as_str() && r["state"] == "running")
    });
    // Killed outright, the runner leaves the run open: no lease ends it.
    first.signal("-KILL");
    drop(first);
    let _second = Runner::start(&env, &path);
    let run = answered(&env, &asked);
    assert_eq!(run["state"], "failed", "{run}");
    assert!(run["stop_reason"].as_str().unwrap().contains("runner stopped"), "{run}");
    assert!(replies(&env, &asked).is_empty());
}

/// An agent as made, with no configuration: it answers when mentioned
/// only; its reply is its answer, Markdown kept as written; and a run
/// that failed with a reason of many lines leaves `run list` a table of
/// one line a run (docs/decisions.md 22.h).
#[test]
fn an_agent_answers_only_mentions_by_default_and_run_list_stays_a_table() {
    let env = Env::remote();
    let token = board(&env, None);
    let made = env.json(&["member", "show", "bot"]);
    assert_eq!(made["agent_config"]["chat_listen"], "mentions", "{made}");
    assert_eq!(made["agent_config"]["task_listen"], "mentions", "{made}");
    task(&env, "Warm up");
    let script = "m=$(cat); if [ -n \"$TASKBOARD_MESSAGE\" ]; then case \"$m\" in *broken*) \
                  printf 'compiling\\nerror: it broke\\nmore\\n'; exit 3;; esac; \
                  printf 'Standup notes:\\n\\n- the build is green\\n- WEB-1 is done\\n'; fi";
    let (path, _) = config(&env, "r", &token, script, "");
    let _runner = Runner::start(&env, &path);
    follows(&env);

    let plain = post(&env, &["--project", "web"], "Morning team, standup at 10");
    let asked = post(&env, &["--project", "web"], "@bot how is the build?");
    let run = answered(&env, &asked);
    assert_eq!(run["state"], "succeeded", "{run}");
    let answers = replies(&env, &asked);
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["content"], "Standup notes:\n\n- the build is green\n- WEB-1 is done");
    assert!(message_runs(&env).iter().all(|r| r["message_id"] != plain.as_str()));
    assert!(replies(&env, &plain).is_empty());

    let broken = post(&env, &["--project", "web"], "@bot is it broken?");
    let failed = answered(&env, &broken);
    assert_eq!(failed["state"], "failed", "{failed}");
    assert!(failed["stop_reason"].as_str().is_some_and(|r| r.contains('\n')), "many lines: {failed}");

    let out = env.run(&["run", "list"]).success().get_output().stdout.clone();
    let table = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "a header and three runs:\n{table}");
    assert!(lines[0].starts_with("ID "), "{table}");
    for line in &lines[1..] {
        let id = line.split_whitespace().next().unwrap_or_default();
        assert!(
            id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "a row a run: {line:?} in\n{table}"
        );
    }
    let row =
        lines.iter().find(|l| l.contains(" failed ")).unwrap_or_else(|| panic!("no failed row in\n{table}"));
    assert!(row.ends_with("the agent exited; the end of its output: …"), "{row}");
}
