//! `taskboard review …`, `task merge` and `task discard`, and the branch
//! and review a task and its runs show, against a server whose agent's
//! part (recording changes) is played over HTTP with the agent's token.

use serde_json::{Value, json};
use taskboard_tests::Env;

const DIFF: &str = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,3 @@\n fn a() {}\n+fn b() {}\n fn c() {}\n";

fn stdout(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&a.get_output().stdout).into_owned()
}

fn stderr(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&a.get_output().stderr).into_owned()
}

/// The agent's runner: the run running, its changes recorded, succeeded.
fn agent_works(env: &Env, token: &str, run: &str) {
    let server = env.server.as_ref().expect("a server in this process");
    let url = server.url.clone();
    let token = token.to_string();
    let run = run.to_string();
    server.runtime.block_on(async move {
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::new();
        let call = |method: reqwest::Method, path: String, body: Value| {
            http.request(method, format!("{url}{path}")).bearer_auth(&token).json(&body).send()
        };
        let running =
            call(reqwest::Method::PATCH, format!("/api/v1/runs/{run}"), json!({"state": "running"}));
        assert!(running.await.unwrap().status().is_success());
        let changes = json!({"task": {"base_commit": "b0", "head_commit": "h1", "branch": "taskboard/WEB-1",
            "files": [{"path": "src/lib.rs", "status": "modified", "additions": 1, "deletions": 0}],
            "diff": DIFF}});
        let recorded =
            call(reqwest::Method::POST, format!("/api/v1/runs/{run}/changes"), changes).await.unwrap();
        assert!(recorded.status().is_success(), "{}", recorded.text().await.unwrap());
        let done = call(reqwest::Method::PATCH, format!("/api/v1/runs/{run}"), json!({"state": "succeeded"}));
        assert!(done.await.unwrap().status().is_success());
    });
}

#[test]
fn a_review_is_read_and_written_from_the_command_line() {
    let env = Env::remote();
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["project", "update", "web", "--repo", "https://example.com/web.git"]).success();
    let bot = env.json(&["member", "create", "--name", "Bot", "--slug", "bot", "--type", "agent"]);
    let token = bot["token"].as_str().unwrap().to_string();
    env.run(&["project", "add-member", "web", "bot"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "Add b"]).success();
    let run = env.json(&["run", "start", "WEB-1", "--agent", "bot"]);
    agent_works(&env, &token, run["id"].as_str().unwrap());

    let shown = stdout(&env.run(&["task", "show", "WEB-1"]).success());
    assert!(shown.contains("branch:    taskboard/WEB-1 at h1 (+1 \u{2212}0 in 1 files)"), "{shown}");
    assert!(shown.contains("review:    pending, round 1, 0 approvals"), "{shown}");
    let review = stdout(&env.run(&["review", "show", "WEB-1"]).success());
    assert!(
        review.contains("modified src/lib.rs  +1 \u{2212}0") && review.contains("+fn b() {}"),
        "{review}"
    );
    assert!(!review.contains('\x1b'), "plain when piped: {review:?}");
    assert!(review.contains("no reviews yet"), "{review}");

    let bad = env.run(&["review", "request-changes", "WEB-1", "--comment", "src/lib.rs=2"]).failure();
    assert!(stderr(&bad).contains("PATH:LINE=TEXT"), "{}", stderr(&bad));
    let outside = env.run(&["review", "comment", "WEB-1", "--comment", "src/lib.rs:40=?"]).failure();
    assert!(stderr(&outside).contains("not in the diff"), "{}", stderr(&outside));
    let asked = env
        .run(&[
            "review",
            "request-changes",
            "WEB-1",
            "--body",
            "b returns 1",
            "--comment",
            "src/lib.rs:2=return 1",
        ])
        .success();
    assert!(stdout(&asked).contains("its agent gets round 2"), "{}", stdout(&asked));
    let listed = stdout(&env.run(&["run", "list", "--task", "WEB-1"]).success());
    assert!(listed.contains("work r2") && listed.contains("+1 \u{2212}0"), "{listed}");
    let review = stdout(&env.run(&["review", "show", "WEB-1", "--files"]).success());
    assert!(review.contains("round 1 request_changes by owner: b returns 1"), "{review}");
    assert!(review.contains("src/lib.rs:2  return 1") && review.contains("| fn b() {}"), "{review}");
    assert!(!review.contains("+fn b() {}"), "--files leaves the diff out: {review}");

    // A run is open (round 2): no landing, no discard until it ends.
    let merge = env.run(&["task", "merge", "WEB-1", "--method", "squash"]).failure();
    assert!(stderr(&merge).contains("open"), "{}", stderr(&merge));
    let method = env.run(&["task", "merge", "WEB-1", "--method", "octopus"]).failure();
    assert!(stderr(&method).contains("merge, squash or rebase"), "{}", stderr(&method));
    let run2 = env.json(&["run", "list", "--task", "WEB-1", "--state", "starting"]);
    let run2 = run2.as_array().unwrap()[0]["id"].as_str().unwrap().to_string();
    agent_works(&env, &token, &run2);
    env.run(&["project", "update", "web", "--required-approvals", "1", "--check-command", "cargo test"])
        .success();
    let short = env.run(&["task", "merge", "WEB-1"]).failure();
    assert!(stderr(&short).contains("0 of the 1 approvals"), "{}", stderr(&short));
    let approver = env.json(&["member", "create", "--name", "Rita", "--slug", "rita", "--type", "human"]);
    assert_eq!(approver["slug"], "rita");
    env.run(&["review", "approve", "WEB-1", "--body", "good"]).success();
    let queued = stdout(&env.run(&["task", "merge", "WEB-1", "--method", "squash"]).success());
    assert!(queued.contains("landing of WEB-1 queued (squash)"), "{queued}");
    let project = env.json(&["project", "show", "web"]);
    assert_eq!(
        (project["check_command"].as_str(), project["required_approvals"].as_u64()),
        (Some("cargo test"), Some(1))
    );
}
