//! `taskboard run …` in both modes.

use taskboard_tests::Env;

fn run_commands(env: &Env) {
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["member", "create", "--name", "Bot", "--slug", "bot", "--type", "agent"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "A"]).success();
    // Runs are started only of the project's agents.
    let refused = env.run(&["run", "start", "WEB-1", "--agent", "bot"]).failure();
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(said.contains("agent bot is not a member of project web"), "{said}");
    env.run(&["project", "add-member", "web", "bot"]).success();
    let run = env.json(&["run", "start", "WEB-1", "--agent", "bot"]);
    assert_eq!(run["state"], "starting");
    assert_eq!(run["task"]["key"], "WEB-1");
    let id = run["id"].as_str().unwrap().to_string();
    let task = env.json(&["task", "show", "WEB-1"]);
    assert_eq!(task["assignee"]["slug"], "bot");

    let listed = env.json(&["run", "list", "--task", "WEB-1"]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(env.json(&["run", "list", "--agent", "bot", "--state", "running"]), serde_json::json!([]));
    assert_eq!(env.json(&["run", "show", &id])["agent"]["slug"], "bot");

    let out = env.cmd().args(["run", "answer", &id, "--option", "yes"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no open question"));
    let out = env.cmd().args(["run", "answer", &id]).output().unwrap();
    assert!(!out.status.success(), "an answer needs --option or --text");

    let cancelled = env.json(&["run", "cancel", &id]);
    assert_eq!(cancelled["state"], "cancelled");
    assert_eq!(env.json(&["task", "show", "WEB-1"])["status"], "todo");
    // The transcript holds the end; --follow stops at once on an ended run.
    let out = env.cmd().args(["run", "logs", &id, "--follow"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("state: cancelled"), "{text}");
    let out = env.cmd().args(["run", "list", "--state", "sideways"]).output().unwrap();
    assert!(!out.status.success());
}

#[test]
fn run_commands_work_locally() {
    run_commands(&Env::local());
}

#[test]
fn run_commands_work_against_a_server() {
    run_commands(&Env::remote());
}
