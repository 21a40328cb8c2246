//! `taskboard agent run` with an Agent Client Protocol agent: a real
//! agent (tests/acp-python/agent.py, on the official Python SDK, pinned,
//! installed by tests/acp-python/setup.sh under the target directory) in
//! a real git worktree, against a real server.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};
use taskboard_tests::Env;

use super::runner::{Runner, answer, board, ended, eventually, git, gone, runs, task, transcript};

/// The workspace's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace")
}

/// The python of the test agent's venv, made once per test run. A
/// machine that cannot make it fails the tests, saying why.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test executable's path");
        // <target>/<profile>/deps/<test binary>
        let target = exe.ancestors().nth(3).expect("the target directory");
        let out = std::process::Command::new("bash")
            .arg(root().join("tests/acp-python/setup.sh"))
            .arg(target)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "the test ACP agent's Python environment could not be installed by tests/acp-python/setup.sh \
             (it needs python3 with venv, as tests/setup.sh installs, and the package index): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

/// A runner's configuration with agent `bot` as the test ACP agent,
/// logging to `log`, with `extra` lines in its `[[agent]]`; the tests'
/// repositories are local ones, which it allows.
fn config(env: &Env, token: &str, log: &Path, extra: &str) -> PathBuf {
    let state = env.dir.path().join("state");
    let path = env.dir.path().join("runner.toml");
    let server = &env.server.as_ref().expect("a server").url;
    let agent = root().join("tests/acp-python/agent.py");
    let text = format!(
        "server = {server:?}\nname = \"acp\"\nstate_dir = {state:?}\nlease_seconds = 30\n\
         allow_local_repos = true\n\n\
         [[agent]]\nslug = \"bot\"\ntoken = {token:?}\nmode = \"acp\"\n\
         command = [{:?}, {agent:?}]\nenv = {{ ACP_LOG = {log:?} }}\n{extra}\n",
        python()
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// The agent's log lines of one event.
fn logged(log: &Path, event: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(log.join("log.jsonl")).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|v| v["event"] == event).collect()
}

/// The run of `key` once it waits for a person's answer (or has ended,
/// which the caller's assertions then show).
fn awaiting(env: &Env, key: &str) -> Value {
    eventually("the run to ask its question", || {
        runs(env, key).into_iter().find(|r| !matches!(r["state"].as_str(), Some("starting" | "running")))
    })
}

fn comments(env: &Env, key: &str) -> Vec<Value> {
    env.json(&["message", "list", "--task", key]).as_array().unwrap().clone()
}

fn step_titles(task: &Value) -> Vec<(String, bool)> {
    task["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["title"].as_str().unwrap().to_string(), s["done"].as_bool().unwrap()))
        .collect()
}

#[test]
fn an_acp_agent_plans_thinks_asks_and_commits_its_work_and_the_task_goes_to_review() {
    let env = Env::remote();
    let origin = env.dir.path().join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    git(&origin, &["init", "--quiet", "--initial-branch", "main"]);
    std::fs::write(origin.join("README"), "hello\n").unwrap();
    git(&origin, &["add", "README"]);
    git(&origin, &["commit", "--quiet", "-m", "first"]);
    let token = board(&env, Some(&origin));
    task(&env, "Write done.txt");
    let log = env.dir.path().join("agent-log");
    std::fs::create_dir_all(&log).unwrap();
    let path = config(&env, &token, &log, "");
    let runner = Runner::start(&env, &path);

    // The permission request is the run's question, with its options.
    let run = awaiting(&env, "WEB-1");
    assert_eq!(run["state"], "awaiting_input", "{run}");
    let question = &run["question"];
    assert!(question["text"].as_str().unwrap().contains("Write done.txt"), "{question}");
    assert_eq!(
        question["options"],
        json!([{"id": "allow", "label": "Allow"}, {"id": "reject", "label": "Reject"}]),
        "{question}"
    );
    // The plan is the task's steps.
    let steps = step_titles(&env.json(&["task", "show", "WEB-1"]));
    let expected = |done: [bool; 3]| {
        ["Read the task", "Write done.txt", "Report what was done"]
            .iter()
            .zip(done)
            .map(|(t, d)| (t.to_string(), d))
            .collect::<Vec<_>>()
    };
    assert_eq!(steps, expected([true, false, false]));
    // The thoughts are a comment's thinking; the board's MCP server,
    // offered in session/new, acted as the agent.
    let said = comments(&env, "WEB-1");
    let by_bot = |m: &&Value| m["author"]["slug"] == "bot";
    let thought =
        said.iter().filter(by_bot).find(|m| !m["thinking"].is_null()).expect("a comment with thinking");
    assert_eq!(thought["thinking"], "The task asks for done.txt; I need permission to write it.");
    assert!(thought["content"].as_str().unwrap().contains("Write done.txt"), "{thought}");
    assert!(
        said.iter()
            .filter(by_bot)
            .any(|m| m["content"] == "Starting on WEB-1, through the board's MCP server."),
        "{said:?}"
    );
    let session = &logged(&log, "new_session")[0];
    let mcp = &session["mcp_servers"][0];
    assert_eq!(mcp["args"], json!(["mcp", "--profile", "worker"]), "{session}");
    assert_eq!(mcp["env"], json!(["TASKBOARD_SERVER", "TASKBOARD_TOKEN"]), "{session}");
    let tools = &logged(&log, "mcp")[0]["tools"];
    assert!(tools.as_array().unwrap().contains(&json!("comment")), "{tools}");
    assert!(!tools.as_array().unwrap().contains(&json!("post_chat")), "the worker profile: {tools}");
    let cwd = session["cwd"].as_str().unwrap();
    assert!(Path::new(cwd).file_name().unwrap().to_string_lossy().starts_with("WEB-1-"), "{cwd}");
    let init = &logged(&log, "initialize")[0];
    assert_eq!(init["protocol_version"], 1, "{init}");
    assert_eq!(init["client"], "taskboard", "{init}");
    let caps = &init["client_capabilities"];
    assert_eq!(caps["terminal"], false, "{init}");
    assert_eq!(caps["fs"]["writeTextFile"], false, "{init}");
    assert!(logged(&log, "prompt")[0]["text"].as_str().unwrap().contains("# WEB-1: Write done.txt"));

    // A person's answer resumes the agent.
    let id = run["id"].as_str().unwrap().to_string();
    let resumed = answer(&env, &id, "allow");
    assert_eq!(resumed["state"], "running", "{resumed}");
    let run = ended(&env, "WEB-1");
    drop(runner);
    assert_eq!(logged(&log, "permission")[0]["option_id"], "allow");
    assert_eq!(run["state"], "succeeded", "{run}");
    assert_eq!(run["branch"], "taskboard/WEB-1");
    assert_eq!(run["usage"], json!({"input_tokens": 120, "output_tokens": 45}), "{run}");
    let task = env.json(&["task", "show", "WEB-1"]);
    assert_eq!(task["status"], "review");
    assert_eq!(step_titles(&task), expected([true, true, true]), "the same steps, done");
    // What it said is one comment at the end of its turn.
    let said = comments(&env, "WEB-1");
    let last: Vec<&Value> =
        said.iter().filter(by_bot).filter(|m| m["content"].as_str().unwrap().contains("Wrote")).collect();
    assert_eq!(last.len(), 1, "{said:?}");
    assert_eq!(last[0]["content"], "Wrote done.txt in the worktree.");

    let commit = run["commit"].as_str().expect("the final commit");
    let state = env.dir.path().join("state");
    let cache =
        std::fs::read_dir(state.join("repos")).unwrap().flatten().next().expect("a cached clone").path();
    assert_eq!(git(&cache, &["rev-parse", "refs/heads/taskboard/WEB-1"]), commit);
    assert_eq!(git(&cache, &["show", &format!("{commit}:done.txt")]), "done");

    let log = transcript(&env, &id);
    for line in [
        "plan: [completed] Read the task",
        "thought: The task asks for done.txt; I need permission to write it.",
        "tool_call: Write done.txt (edit, pending)",
        "question: The agent asks permission: Write done.txt",
        "answer: Allow",
        "tool_call: Write done.txt: completed",
        "message: Wrote done.txt in the worktree.",
    ] {
        assert!(log.contains(line), "{line:?} in the transcript:\n{log}");
    }
}

/// A board whose agent claims only tasks labelled `auto`, and a task
/// without it that a person starts a run of: given back, it stays back.
fn asked_for(env: &Env, log: &Path, extra: &str) -> Runner {
    let token = board(env, None);
    env.run(&["label", "create", "auto"]).success();
    env.run(&["member", "update", "bot", "--agent-config", r#"{"labels":["auto"]}"#]).success();
    task(env, "Write done.txt");
    std::fs::create_dir_all(log).unwrap();
    let runner = Runner::start(env, &config(env, &token, log, extra));
    env.run(&["run", "start", "WEB-1", "--agent", "bot"]).success();
    runner
}

#[test]
fn a_refused_permission_fails_the_run_and_gives_the_task_back() {
    let env = Env::remote();
    let log = env.dir.path().join("agent-log");
    let _runner = asked_for(&env, &log, "");
    let run = awaiting(&env, "WEB-1");
    answer(&env, run["id"].as_str().unwrap(), "reject");
    let run = ended(&env, "WEB-1");
    assert_eq!(run["state"], "failed", "{run}");
    assert_eq!(run["stop_reason"], "the agent refused", "{run}");
    assert_eq!(logged(&log, "permission")[0]["option_id"], "reject");
    assert_eq!(env.json(&["task", "show", "WEB-1"])["status"], "todo");
}

#[test]
fn cancelling_a_run_awaiting_input_ends_the_agent() {
    let env = Env::remote();
    let log = env.dir.path().join("agent-log");
    let _runner = asked_for(&env, &log, "");
    let run = awaiting(&env, "WEB-1");
    assert_eq!(run["state"], "awaiting_input", "{run}");
    let pid = std::fs::read_to_string(log.join("pid")).unwrap().trim().to_string();
    assert!(!gone(&pid), "the agent runs while it waits");
    env.run(&["run", "cancel", run["id"].as_str().unwrap()]).success();
    eventually("the agent to end", || gone(&pid).then_some(()));
    let run = ended(&env, "WEB-1");
    assert_eq!(run["state"], "cancelled", "{run}");
    assert!(run["question"].is_null(), "{run}");
    let task = env.json(&["task", "show", "WEB-1"]);
    assert_eq!(task["status"], "todo");
    assert!(task["assignee"].is_null(), "{task}");
}

#[test]
fn an_agent_killed_while_its_question_is_open_fails_its_run() {
    let env = Env::remote();
    let log = env.dir.path().join("agent-log");
    let _runner = asked_for(&env, &log, "");
    let run = awaiting(&env, "WEB-1");
    assert_eq!(run["state"], "awaiting_input", "{run}");
    let pid = std::fs::read_to_string(log.join("pid")).unwrap().trim().to_string();
    assert!(std::process::Command::new("kill").args(["-KILL", &pid]).status().unwrap().success());
    let run = ended(&env, "WEB-1");
    assert_eq!(run["state"], "failed", "{run}");
    let reason = run["stop_reason"].as_str().unwrap();
    assert!(reason.contains("the agent was killed before ending its turn"), "{reason}");
    assert!(run["question"].is_null(), "{run}");
    assert_eq!(env.json(&["task", "show", "WEB-1"])["status"], "todo");
}

#[test]
fn a_program_that_exits_instead_of_speaking_acp_fails_its_run_with_its_exit_code_and_output() {
    let env = Env::remote();
    let token = board(&env, None);
    task(&env, "Anything");
    let state = env.dir.path().join("state");
    let path = env.dir.path().join("runner.toml");
    let server = &env.server.as_ref().unwrap().url;
    let text = format!(
        "server = {server:?}\nstate_dir = {state:?}\n\n[[agent]]\nslug = \"bot\"\ntoken = {token:?}\n\
         mode = \"acp\"\ncommand = [\"sh\", \"-c\", \"echo 'no ACP here' >&2; exit 4\"]\n"
    );
    std::fs::write(&path, text).unwrap();
    let runner = Runner::start(&env, &path);
    let run = ended(&env, "WEB-1");
    drop(runner);
    assert_eq!(run["state"], "failed", "{run}");
    let reason = run["stop_reason"].as_str().unwrap();
    assert!(reason.contains("the agent exited with code 4 before ending its turn"), "{reason}");
    assert!(transcript(&env, run["id"].as_str().unwrap()).contains("output: no ACP here"));
}

/// The processes whose environment names run `id` (`TASKBOARD_RUN`):
/// the agent and whatever it started.
fn processes_of(id: &str) -> Vec<String> {
    let needle = format!("TASKBOARD_RUN={id}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|p| p.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter(|p| {
            std::fs::read(p.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .map(|p| p.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn an_acp_agent_that_does_not_end_its_turn_in_time_is_stopped_with_what_it_started() {
    let env = Env::remote();
    let log = env.dir.path().join("agent-log");
    let _runner = asked_for(&env, &log, "timeout_seconds = 2");
    let run = ended(&env, "WEB-1");
    assert_eq!(run["state"], "timed_out", "{run}");
    assert_eq!(run["stop_reason"], "no end after 2 seconds", "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    eventually("the agent's processes to end", || processes_of(&id).is_empty().then_some(()));
    assert_eq!(env.json(&["task", "show", "WEB-1"])["status"], "todo");
}

#[test]
fn an_acp_agent_answers_a_mention_with_a_reply_in_the_conversation() {
    let env = Env::remote();
    let token = board(&env, None);
    let listen = r#"{"chat_listen":"mentions","task_listen":"mentions"}"#;
    env.run(&["member", "update", "bot", "--agent-config", listen]).success();
    let log = env.dir.path().join("agent-log");
    std::fs::create_dir_all(&log).unwrap();
    let runner_log = env.dir.path().join("runner.log");
    let _runner = Runner::start_logged(&env, &config(&env, &token, &log, ""), &runner_log);
    eventually("the runner to follow the events", || {
        std::fs::read_to_string(&runner_log)
            .ok()
            .filter(|l| l.contains("follows the board's events"))
            .map(|_| ())
    });
    let asked = env.json(&["message", "post", "--project", "web", "@bot is ping-42 green?"]);
    let asked = asked["id"].as_str().unwrap().to_string();
    let run = eventually("the run answering the message to end", || {
        let runs = env.json(&["run", "list", "--agent", "bot"]);
        runs.as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["message_id"] == asked.as_str() && r["state"] != "starting" && r["state"] != "running"
            })
            .cloned()
    });
    assert_eq!(run["state"], "succeeded", "{run}");
    let prompt = logged(&log, "prompt");
    assert!(prompt[0]["text"].as_str().unwrap().contains("@bot is ping-42 green?"), "{prompt:?}");
    let replies = env.json(&["message", "replies", &asked]);
    let replies = replies.as_array().unwrap();
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["author"]["slug"], "bot");
    assert_eq!(replies[0]["content"], "You asked about ping-42.");
    assert_eq!(replies[0]["thinking"], "Looking for what is asked about.");
    let transcript = transcript(&env, run["id"].as_str().unwrap());
    assert!(transcript.contains("plan: [in_progress] Answer the question"), "{transcript}");
}

#[test]
fn with_permissions_allow_the_runner_allows_the_agents_request_itself_and_says_so_in_the_transcript() {
    let env = Env::remote();
    let log = env.dir.path().join("agent-log");
    let _runner = asked_for(&env, &log, "permissions = \"allow\"");
    let run = ended(&env, "WEB-1");
    assert_eq!(run["state"], "succeeded", "no person was asked: {run}");
    assert_eq!(logged(&log, "permission")[0]["option_id"], "allow", "the option allowing once");
    let id = run["id"].as_str().unwrap();
    let transcript = transcript(&env, id);
    assert!(
        transcript.contains("answer: Allowed by the runner (permissions = \"allow\"): Write done.txt"),
        "{transcript}"
    );
    assert!(!transcript.contains("question:"), "{transcript}");
    assert_eq!(env.json(&["task", "show", "WEB-1"])["status"], "review");
}

#[test]
fn permissions_by_tool_kind_allow_the_kinds_listed_and_ask_a_person_for_the_rest() {
    // The agent's write is a tool call of kind `edit`.
    let env = Env::remote();
    let log = env.dir.path().join("agent-log");
    let _runner = asked_for(&env, &log, "permissions = [\"read\", \"edit\"]");
    let run = ended(&env, "WEB-1");
    assert_eq!(run["state"], "succeeded", "{run}");
    assert!(transcript(&env, run["id"].as_str().unwrap()).contains("Allowed by the runner"));

    let env = Env::remote();
    let log = env.dir.path().join("agent-log");
    let _runner = asked_for(&env, &log, "permissions = [\"read\", \"execute\"]");
    let run = awaiting(&env, "WEB-1");
    assert_eq!(run["state"], "awaiting_input", "an edit is asked: {run}");
    assert!(run["question"]["text"].as_str().unwrap().contains("Write done.txt"), "{run}");
}
