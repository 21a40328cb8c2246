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

use super::runner::{Runner, answer, board, ended, eventually, git, runs, task, transcript};

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
        taskboard_core::tls::install_provider();
        let response = reqwest::Client::new().get(url).bearer_auth(&server.token).send().await.unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
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

const ROUND_1: &str = "Hello, world.\n";
const ROUND_2: &str = "Hello, team.\n";
const SUMMARY_2: &str = "I greet the team now, as the review asked.";
const ASKED: &str = "Greet the team, not the world.";
const REVIEWED: &str = "## Your review";

/// Claude Code as the coder and a second Claude Code as the project's
/// reviewer agent, on one runner: the coder's branch is reviewed through
/// MCP `review_submit`, sent back with a line comment, redone, approved,
/// and squashed onto the base after the project's check.
#[test]
fn claude_code_writes_a_second_claude_code_reviews_and_the_approved_branch_is_squashed_onto_main() {
    let env = Env::remote();
    let origin = bare_origin(env.dir.path());
    let token = board(&env, Some(&origin));
    // The reviewer claims only work labelled for it: none here.
    let critic = env.json(&[
        "member",
        "create",
        "--name",
        "Critic",
        "--slug",
        "critic",
        "--type",
        "agent",
        "--agent-label",
        "reviewing",
    ]);
    env.run(&["project", "add-member", "web", "critic"]).success();
    env.run(&[
        "project",
        "update",
        "web",
        "--reviewers",
        "critic",
        "--required-approvals",
        "1",
        "--check-command",
        "grep -qx 'Hello, team.' hello.txt",
    ])
    .success();
    task(&env, "Write hello.txt");

    let submit = "mcp__taskboard__review_submit";
    let in_dir = |r: &taskboard_tests::model_server::Request| {
        format!("{}/hello.txt", r.working_directory().expect("Claude Code states its working directory"))
    };
    let model = ModelServer::start(vec![
        Turn::small_model(),
        Turn::after_tool(submit).answer(Reply::new().text("I filed my review.")),
        Turn::after_tool("Write").answer(Reply::new().text(SUMMARY)),
        Turn::after_tool("Edit").answer(Reply::new().text(SUMMARY_2)),
        Turn::after_tool("Read").answer_with(move |r| {
            Reply::new().tool_use(
                "Edit",
                json!({"file_path": in_dir(r), "old_string": "world", "new_string": "team"}),
            )
        }),
        Turn::when("the second review", |r| {
            let prompt = r.user_text();
            prompt.contains(REVIEWED) && prompt.contains("+Hello, team.")
        })
        .answer(
            Reply::new()
                .tool_use(submit, json!({"task": "WEB-1", "verdict": "approve", "body": "Right now."})),
        ),
        Turn::prompt_contains(REVIEWED).answer(Reply::new().text("One line to change.").tool_use(
            submit,
            json!({
                "task": "WEB-1", "verdict": "request_changes", "body": "Close, but not yet.",
                "comments": [{"path": "hello.txt", "line": 1, "side": "new", "body": ASKED}],
            }),
        )),
        Turn::prompt_contains("Changes asked for")
            .answer_with(move |r| Reply::new().tool_use("Read", json!({"file_path": in_dir(r)}))),
        Turn::prompt_contains("Write hello.txt").answer_with(move |r| {
            Reply::new().tool_use("Write", json!({"file_path": in_dir(r), "content": ROUND_1}))
        }),
    ]);
    let coder = ClaudeCode::new(model.url(), &env.dir.path().join("coder"));
    let reviewer = ClaudeCode::new(model.url(), &env.dir.path().join("reviewer"));
    let state = env.dir.path().join("state");
    let path = env.dir.path().join("runner.toml");
    let server = &env.server.as_ref().unwrap().url;
    let critic_token = critic["token"].as_str().unwrap();
    // The coder may read and edit without asking; the reviewer may call
    // the board's tools.
    let text = format!(
        "server = {server:?}\nname = \"claude\"\nstate_dir = {state:?}\nlease_seconds = 30\n\
         allow_local_repos = true\n\n\
         [[agent]]\nslug = \"bot\"\ntoken = {token:?}\ntimeout_seconds = 300\n\
         permissions = [\"read\", \"edit\"]\n{}\n\
         [[agent]]\nslug = \"critic\"\ntoken = {critic_token:?}\ntimeout_seconds = 300\n\
         permissions = \"allow\"\n{}",
        coder.agent_toml(),
        reviewer.agent_toml(),
    );
    std::fs::write(&path, text).unwrap();
    let runner = Runner::start_logged(&env, &path, &env.dir.path().join("runner.log"));

    // Five runs, oldest first: the work, its review, the round the review
    // sent back, its review, and the landing a person asks for once the
    // review is approved.
    let purposes = |runs: &[Value]| {
        runs.iter().rev().map(|r| r["purpose"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    let settled = |n: usize| {
        eventually(&format!("{n} runs of WEB-1 to end"), || {
            let all = runs(&env, "WEB-1");
            (all.len() == n
                && all
                    .iter()
                    .all(|r| !matches!(r["state"].as_str(), Some("starting" | "running" | "awaiting_input"))))
            .then_some(all)
        })
    };
    let four = eventually_long(
        || {
            let all = runs(&env, "WEB-1");
            (all.len() >= 4 && all.iter().all(|r| r["state"] != "running" && r["state"] != "starting"))
                .then_some(all)
        },
        &env,
        &model,
    );
    for run in &four {
        assert_eq!(run["state"], "succeeded", "{run}\n{}", transcript(&env, run["id"].as_str().unwrap()));
    }
    assert_eq!(purposes(&four), ["work", "review", "work", "review"], "{four:#?}");
    let (round1, review1, round2, review2) = (&four[3], &four[2], &four[1], &four[0]);
    for (run, slug) in [(round1, "bot"), (review1, "critic"), (round2, "bot"), (review2, "critic")] {
        assert_eq!(run["agent"]["slug"], slug, "{run}");
    }

    // The reviews as the board keeps them: the first one's comment on the
    // line the round changed is outdated now.
    let task = env.json(&["task", "show", "WEB-1"]);
    let id = task["id"].as_str().unwrap();
    let reviews = get(&env, &format!("/tasks/{id}/reviews"));
    let reviews = reviews.as_array().unwrap();
    assert_eq!(reviews.len(), 2, "{reviews:#?}");
    let (first, second) = (&reviews[0], &reviews[1]);
    assert_eq!((&first["verdict"], &first["author"]["slug"]), (&json!("request_changes"), &json!("critic")));
    assert_eq!(first["comments"][0]["text"], "Hello, world.", "{first}");
    assert_eq!(first["comments"][0]["outdated"], true, "{first}");
    assert_eq!((&second["verdict"], &second["author"]["slug"]), (&json!("approve"), &json!("critic")));
    assert_eq!(round2["review_id"], first["id"], "{round2}");
    assert_eq!(task["review"]["state"], "approved", "{task}");
    assert_eq!(task["review"]["round"], 2, "{task}");

    // What each Claude Code was told. The reviewer had the diff and the
    // reviewer's tools; the coder's second round had the comment with the
    // line it is on.
    let reviewed = model.answered_by("prompt holds \"## Your review\"");
    let prompt = reviewed[0].user_text();
    assert!(prompt.contains("+Hello, world.") && prompt.contains("- hello.txt: added +1 -0"), "{prompt}");
    assert!(reviewed[0].tools().contains(&submit), "{:?}", reviewed[0].tools());
    let sent_back = model.answered_by("prompt holds \"Changes asked for\"");
    let prompt = sent_back[0].user_text();
    assert!(prompt.contains(&format!("> {ASKED}")) && prompt.contains("+Hello, world."), "{prompt}");
    assert!(!sent_back[0].tools().contains(&submit), "a coder has no review_submit");
    assert!(model.unmatched().is_empty(), "calls no turn answered: {:#?}", model.unmatched());

    // The round's commit is on the same branch, on top of the first.
    let head = round2["commit"].as_str().unwrap();
    assert_eq!(git(&origin, &["rev-parse", "refs/heads/taskboard/WEB-1"]), head);
    assert_eq!(git(&origin, &["rev-parse", &format!("{head}^")]), round1["commit"].as_str().unwrap());

    // A person lands it, squashed; the check passes on the round's file.
    let before = git(&origin, &["rev-parse", "main"]);
    env.run(&["task", "merge", "WEB-1", "--method", "squash"]).success();
    let all = settled(5);
    drop(runner);
    assert_eq!(purposes(&all), ["work", "review", "work", "review", "land"]);
    let land = &all[0];
    assert_eq!(land["state"], "succeeded", "{land}\n{}", transcript(&env, land["id"].as_str().unwrap()));
    let main = git(&origin, &["rev-parse", "main"]);
    assert_eq!(land["merge_commit"], main.as_str(), "{land}");
    assert_eq!(git(&origin, &["rev-parse", &format!("{main}^")]), before, "one commit on the base");
    assert_eq!(git(&origin, &["show", &format!("{main}:hello.txt")]), ROUND_2.trim_end());
    assert_eq!(git(&origin, &["log", "-1", "--format=%s", &main]), "WEB-1: Write hello.txt");
    let task = env.json(&["task", "show", "WEB-1"]);
    assert_eq!((&task["status"], &task["merge_commit"]), (&json!("done"), &json!(main)), "{task}");
}

/// Like `eventually`, with the time a chain of Claude Code sessions needs,
/// and what the model was asked when it gives up.
#[track_caller]
fn eventually_long(
    mut probe: impl FnMut() -> Option<Vec<Value>>,
    env: &Env,
    model: &ModelServer,
) -> Vec<Value> {
    let until = Instant::now() + Duration::from_secs(240);
    loop {
        if let Some(v) = probe() {
            return v;
        }
        if Instant::now() > until {
            let runs = runs(env, "WEB-1");
            let logs: Vec<String> = runs.iter().map(|r| transcript(env, r["id"].as_str().unwrap())).collect();
            panic!(
                "the rounds did not end: {runs:#?}\n{}\nmodel calls answered by {:?}",
                logs.join("\n---\n"),
                model.model_calls().iter().map(|r| r.answered_by.clone()).collect::<Vec<_>>()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
