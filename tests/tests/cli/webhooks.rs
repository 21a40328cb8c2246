//! `taskboard webhook …` in both modes.

use taskboard_tests::Env;

fn webhook_commands(env: &Env) {
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    let created = env.json(&[
        "webhook",
        "create",
        "--url",
        "https://93.184.216.34/hook",
        "--event",
        "task.*",
        "--event",
        "message.new",
        "--project",
        "web",
        "--description",
        "ci",
    ]);
    let id = created["id"].as_str().unwrap().to_string();
    let secret = created["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"));
    assert_eq!(created["events"], serde_json::json!(["task.*", "message.new"]));
    assert!(created["project_id"].is_string());

    let listed = env.json(&["webhook", "list"]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert!(listed[0].get("secret").is_none());
    let shown = env.json(&["webhook", "show", &id]);
    assert_eq!(shown["description"], "ci");
    assert!(shown.get("secret").is_none());

    let updated =
        env.json(&["webhook", "update", &id, "--all-projects", "--clear-description", "--active", "false"]);
    assert!(updated["project_id"].is_null() && updated["description"].is_null());
    assert_eq!(updated["active"], false);

    let out = env.cmd().args(["webhook", "rotate-secret", &id, "--quiet"]).output().unwrap();
    assert!(out.status.success());
    let rotated = String::from_utf8(out.stdout).unwrap();
    assert!(rotated.trim().starts_with("whsec_") && rotated.trim() != secret, "{rotated}");

    assert_eq!(env.json(&["webhook", "deliveries", &id, "--limit", "10"]), serde_json::json!([]));
    let missing = uuid::Uuid::now_v7().to_string();
    let out = env.cmd().args(["webhook", "redeliver", &id, &missing]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
    let out = env.cmd().args(["webhook", "create", "--url", "http://127.0.0.1:9/x"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("refused"));

    env.run(&["webhook", "delete", &id]).success();
    assert_eq!(env.json(&["webhook", "list"]), serde_json::json!([]));
}

#[test]
fn webhook_commands_work_locally() {
    webhook_commands(&Env::local());
}

#[test]
fn webhook_commands_work_against_a_server() {
    webhook_commands(&Env::remote());
}
