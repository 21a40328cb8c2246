//! `taskboard mcp` over stdio: the real binary as a child process, on a
//! local board and against a server.

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use taskboard_tests::Env;

use crate::support::{Session, call, client, ok, text};

async fn spawn(env: &Env, args: &[&str]) -> Session {
    let mut cmd = tokio::process::Command::from(env.std_cmd());
    cmd.args(args).arg("mcp");
    let transport = TokioChildProcess::new(cmd).expect("taskboard mcp starts");
    let (handler, _) = client();
    handler.serve(transport).await.expect("the MCP session starts")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
}

#[test]
fn the_work_loop_over_stdio_on_a_local_board() {
    let env = Env::local();
    env.json(&["project", "create", "--name", "Web", "--slug", "web"]);
    env.json(&["member", "create", "--name", "Bot", "--slug", "bot", "--type", "agent"]);
    env.json(&["project", "add-member", "web", "bot"]);
    let task = env.json(&["task", "create", "--project", "web", "--title", "Local work", "--status", "todo"]);
    let key = task["key"].as_str().unwrap().to_string();

    runtime().block_on(async {
        let session = spawn(&env, &["--as", "bot"]).await;
        let tools = session.list_all_tools().await.expect("tools/list");
        assert_eq!(tools.len(), taskboard_mcp::TOOL_NAMES.len());
        assert_eq!(ok(&session, "whoami", json!({})).await["member"]["slug"], "bot");
        let claimed = ok(&session, "claim_task", json!({"project": "web", "lease_seconds": 60})).await;
        assert_eq!(claimed["task"]["key"], key.as_str());
        ok(&session, "heartbeat", json!({"task": key})).await;
        ok(&session, "add_step", json!({"task": key, "title": "only step"})).await;
        ok(&session, "complete_step", json!({"task": key, "step": 1})).await;
        ok(&session, "comment", json!({"task": key, "content": "done locally"})).await;
        ok(&session, "update_task", json!({"task": key, "status": "review"})).await;
        // The events of this process's changes, followed with `next`
        // (each call returns as soon as events are there).
        let mut since = 0;
        let mut types = Vec::new();
        while !types.iter().any(|t| t == "task.updated") {
            let page = ok(&session, "wait_for_events", json!({"since": since, "wait_seconds": 10})).await;
            assert!(!page["events"].as_array().unwrap().is_empty(), "no event came: {page}");
            types.extend(
                page["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap().to_string()),
            );
            since = page["next"].as_u64().unwrap();
        }
        session.cancel().await.ok();
    });

    // The process has ended and released the board: the CLI reads it.
    let seen = env.json(&["task", "show", &key]);
    assert_eq!(seen["status"], "review");
    assert_eq!(seen["assignee"]["slug"], "bot");
    assert_eq!(seen["steps"][0]["done"], true);
}

#[test]
fn stdio_against_a_server_acts_as_the_token_member_and_reports_refusals() {
    let env = Env::remote();
    env.json(&["project", "create", "--name", "Web", "--slug", "web"]);
    let task =
        env.json(&["task", "create", "--project", "web", "--title", "Remote work", "--status", "todo"]);
    let key = task["key"].as_str().unwrap().to_string();

    runtime().block_on(async {
        let session = spawn(&env, &[]).await;
        assert_eq!(ok(&session, "whoami", json!({})).await["member"]["slug"], "owner");
        let got = ok(&session, "get_task", json!({"task": key.to_lowercase()})).await;
        assert_eq!(got["task"]["key"], key.as_str());
        let missing = call(&session, "get_task", json!({"task": "WEB-404"})).await;
        assert_eq!(missing.is_error, Some(true));
        assert_eq!(text(&missing), "404 not_found: task WEB-404 not found");
        let bad = call(&session, "create_task", json!({"project": "web", "title": "  "})).await;
        assert_eq!(bad.is_error, Some(true));
        assert!(text(&bad).starts_with("422 validation_error: title"), "{}", text(&bad));
        let created =
            ok(&session, "create_task", json!({"project": "web", "title": "Follow-up", "depends_on": [key]}))
                .await;
        assert_eq!(created["task"]["depends_on"], json!([task["id"]]));
        session.cancel().await.ok();
    });
    let list: Value = env.json(&["task", "list", "--project", "web"]);
    assert_eq!(list.as_array().unwrap().len(), 2);
}
