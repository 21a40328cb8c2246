//! `taskboard agent run` with the real Claude Code as its ACP agent,
//! through Zed's adapter (tests/src/claude_code.rs), its model a script
//! served on 127.0.0.1 (tests/src/model_server.rs): offline, and every
//! connection on loopback.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskboard_tests::Env;
use taskboard_tests::claude_code::ClaudeCode;
use taskboard_tests::model_server::{ModelServer, Reply, Turn};

use super::runner::{Runner, board, ended, eventually, git, runs, task, transcript};

const CONTENT: &str = "Hello from Claude Code.\n";
const SUMMARY: &str = "I wrote hello.txt with a greeting.";

/// A bare repository whose `main` holds a README, as a project's
/// `repo_urls[0]`.
fn bare_origin(dir: &Path) -> std::path::PathBuf {
    let seed = dir.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&seed, &["init", "--quiet", "--initial-branch", "main"]);
    std::fs::write(seed.join("README"), "hello\n").unwrap();
    git(&seed, &["add", "README"]);
    git(&seed, &["commit", "--quiet", "-m", "first"]);
    let origin = dir.join("origin.git");
    git(dir, &["init", "--quiet", "--bare", "--initial-branch", "main", "origin.git"]);
    git(&seed, &["push", "--quiet", origin.to_str().unwrap(), "main"]);
    origin
}

/// The processes whose environment names run `id` (`TASKBOARD_RUN`),
/// with their resident memory now, in bytes.
fn resident(id: &str) -> Vec<(String, u64)> {
    let needle = format!("TASKBOARD_RUN={id}");
    let mut found = Vec::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(environ) = std::fs::read(p.path().join("environ")) else { continue };
        if !environ.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            continue;
        }
        let status = std::fs::read_to_string(p.path().join("status")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let kb = field("VmRSS:").trim_end_matches("kB").trim().parse::<u64>().unwrap_or(0);
        found.push((field("Name:"), kb * 1024));
    }
    found
}

fn get(env: &Env, path: &str) -> Value {
    let server = env.server.as_ref().unwrap();
    let url = format!("{}/api/v1{path}", server.url);
    server.runtime.block_on(async {
        let response = reqwest::Client::new().get(url).bearer_auth(&server.token).send().await.unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        response.json::<Value>().await.unwrap()
    })
}

fn answer(env: &Env, run: &str, option: &str) -> Value {
    let server = env.server.as_ref().unwrap();
    let url = format!("{}/api/v1/runs/{run}/answer", server.url);
    server.runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(url)
            .bearer_auth(&server.token)
            .json(&json!({"option_id": option}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json::<Value>().await.unwrap()
    })
}

#[test]
fn claude_code_writes_a_file_once_a_person_allows_it_and_its_branch_reaches_the_repository() {
    let began = Instant::now();
    let env = Env::remote();
    let origin = bare_origin(env.dir.path());
    let token = board(&env, Some(&origin));
    task(&env, "Write hello.txt");

    // Its first call writes the file in its working directory, the call
    // after the tool's result ends the turn; side calls to a small model
    // get a short text.
    let model = ModelServer::start(vec![
        Turn::small_model(),
        Turn::after_tool_result().answer(Reply::new().text(SUMMARY)),
        Turn::prompt_contains("Write hello.txt").answer_with(|r| {
            let dir = r.working_directory().expect("Claude Code states its working directory");
            Reply::new()
                .text("I'll write hello.txt.")
                .tool_use("Write", json!({"file_path": format!("{dir}/hello.txt"), "content": CONTENT}))
        }),
    ]);
    let claude = ClaudeCode::new(model.url(), &env.dir.path().join("claude-code"));
    let state = env.dir.path().join("state");
    let path = env.dir.path().join("runner.toml");
    let server = &env.server.as_ref().unwrap().url;
    let text = format!(
        "server = {server:?}\nname = \"claude\"\nstate_dir = {state:?}\nlease_seconds = 30\n\
         allow_local_repos = true\n\n[[agent]]\nslug = \"bot\"\ntoken = {token:?}\n\
         timeout_seconds = 300\n{}",
        claude.agent_toml()
    );
    std::fs::write(&path, text).unwrap();
    let runner_started = Instant::now();
    let runner = Runner::start(&env, &path);

    // Claude Code asks before a Write (its default mode, which root
    // cannot leave for one that skips asking): the run's question.
    let run = eventually("Claude Code to ask its question", || {
        runs(&env, "WEB-1").into_iter().find(|r| !matches!(r["state"].as_str(), Some("starting" | "running")))
    });
    assert_eq!(
        run["state"],
        "awaiting_input",
        "{run}\nmodel calls: {:#?}\ntranscript:\n{}",
        model.model_calls().iter().map(|r| (&r.answered_by, r.model())).collect::<Vec<_>>(),
        transcript(&env, run["id"].as_str().unwrap())
    );
    let asked_after = runner_started.elapsed();
    let id = run["id"].as_str().unwrap().to_string();
    let processes = resident(&id);
    let question = &run["question"];
    let text = question["text"].as_str().unwrap();
    assert!(text.contains("Write") && text.contains("hello.txt"), "{question}");
    let options: Vec<&str> =
        question["options"].as_array().unwrap().iter().map(|o| o["id"].as_str().unwrap()).collect();
    assert_eq!(options, ["allow_always", "allow", "reject"], "{question}");

    let resumed = answer(&env, &id, "allow");
    assert_eq!(resumed["state"], "running", "{resumed}");
    let run = ended(&env, "WEB-1");
    let ended_after = runner_started.elapsed();
    drop(runner);
    assert_eq!(run["state"], "succeeded", "{run}");
    assert_eq!(run["branch"], "taskboard/WEB-1");
    assert_eq!(env.json(&["task", "show", "WEB-1"])["status"], "review");

    let log = transcript(&env, &id);
    for line in ["tool_call: Write", "question: The agent asks permission: Write", "answer: Allow", SUMMARY] {
        assert!(log.contains(line), "{line:?} in the transcript:\n{log}");
    }
    assert!(
        log.lines().any(|l| l.contains("tool_call: ") && l.contains("hello.txt") && l.contains("completed")),
        "{log}"
    );

    // The model saw the task; the Write's result came back to it.
    let calls = model.model_calls();
    let first = calls.iter().find(|r| !r.is_small_model()).expect("a call of the main model");
    assert!(
        first.user_text().contains("Write hello.txt"),
        "the prompt holds the task's title:\n{}",
        first.user_text()
    );
    assert!(first.user_text().contains("WEB-1"), "{}", first.user_text());
    assert!(first.tools().contains(&"Write"), "{:?}", first.tools());
    // The board's MCP server the runner offered is one Claude Code started.
    assert!(first.tools().contains(&"mcp__taskboard__comment"), "{:?}", first.tools());
    let after = model.answered_by("after a tool result");
    assert_eq!(after.len(), 1, "{calls:#?}");
    let result = after[0].tool_results()[0].to_string();
    assert!(result.contains("hello.txt"), "{result}");
    assert!(model.unmatched().is_empty(), "calls no turn answered: {:#?}", model.unmatched());

    // The file is in the run's commit, on the branch pushed to the
    // repository, named for the task with Claude Code's summary; the
    // board has its changes.
    let commit = run["commit"].as_str().expect("the run's commit");
    assert_eq!(git(&origin, &["rev-parse", "refs/heads/taskboard/WEB-1"]), commit);
    assert_eq!(git(&origin, &["show", &format!("{commit}:hello.txt")]), CONTENT.trim_end());
    let message = git(&origin, &["log", "-1", "--format=%B", commit]);
    assert!(message.starts_with("WEB-1: Write hello.txt"), "{message}");
    assert!(message.contains(SUMMARY), "{message}");
    let changes = get(&env, &format!("/runs/{id}/changes"));
    assert_eq!(changes["head_commit"], commit, "{changes}");
    assert_eq!(
        changes["files"],
        json!([{"path": "hello.txt", "status": "added", "additions": 1, "deletions": 0}]),
        "{changes}"
    );

    // Measured, for docs/decisions.md: from the runner's start (the run
    // is claimed at once) to Claude Code's first model call and to the
    // question; its processes' memory while it waits.
    let first_call = first.received.duration_since(runner_started);
    let memory: u64 = processes.iter().map(|(_, b)| b).sum();
    eprintln!(
        "claude code: first model call {:.1} s after the runner started, question at {:.1} s, \
         run ended at {:.1} s; test {:.1} s; {} MB resident in {} processes ({:?}); \
         model calls answered by {:?}; refused by the preload: {:?}",
        secs(first_call),
        secs(asked_after),
        secs(ended_after),
        secs(began.elapsed()),
        memory >> 20,
        processes.len(),
        processes.iter().map(|(n, b)| format!("{n} {} MB", b >> 20)).collect::<Vec<_>>(),
        calls.iter().map(|r| r.answered_by.as_deref().unwrap_or("no turn")).collect::<Vec<_>>(),
        claude.refused(),
    );
    for refused in claude.refused() {
        assert_ne!(refused["target"], "localhost", "{refused}");
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
