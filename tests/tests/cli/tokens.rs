//! `taskboard token …` and `taskboard logout --everywhere`.

use serde_json::Value;
use taskboard_tests::{Env, OWNER_PASSWORD};

fn token_commands(env: &Env) {
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["project", "create", "--name", "Ops", "--slug", "ops"]).success();
    let created =
        env.json(&["token", "create", "reader", "--scope", "read", "--project", "web", "--expires", "30d"]);
    let token = created["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("tba-"));
    assert_eq!(created["scopes"], serde_json::json!(["read"]));
    assert!(created["expires_at"].is_string());
    let id = created["id"].as_str().unwrap().to_string();

    let listed = env.json(&["token", "list"]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["name"], "reader");
    assert!(listed[0].get("token").is_none(), "a listed token has no secret");

    let out = env.cmd().args(["token", "create", "bad", "--scope", "write"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("tasks:write"), "the scopes are named");

    if env.is_remote() {
        // The token acts within its scope and project.
        let with_token =
            |args: &[&str]| env.cmd().env("TASKBOARD_TOKEN", &token).args(args).output().unwrap();
        let out = with_token(&["task", "list", "--project", "web"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let out = with_token(&["task", "create", "--project", "web", "--title", "Nope"]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("tasks:write"));
        let out = with_token(&["task", "list", "--project", "ops"]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("ops"));
    }

    env.run(&["token", "revoke", &id]).success();
    assert_eq!(env.json(&["token", "list"]), serde_json::json!([]));
    if env.is_remote() {
        let out = env.cmd().env("TASKBOARD_TOKEN", &token).args(["whoami"]).output().unwrap();
        assert_eq!(out.status.code(), Some(4), "a revoked token is not authenticated");
    }
}

#[test]
fn token_commands_work_locally() {
    token_commands(&Env::local());
}

#[test]
fn token_commands_work_against_a_server() {
    token_commands(&Env::remote());
}

#[test]
fn logout_everywhere_ends_the_logins_but_not_the_access_tokens() {
    let env = Env::remote();
    let url = env.server.as_ref().unwrap().url.clone();
    let out = env.cmd().args(["token", "create", "script", "--scope", "read", "--quiet"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    env.bare()
        .args(["--server", &url, "login", "--login", "owner", "--password", OWNER_PASSWORD])
        .assert()
        .success();
    let stored: Value = serde_json::from_slice(&std::fs::read(&env.credentials).unwrap()).unwrap();
    let jwt = stored["token"].as_str().unwrap().to_string();
    env.bare().args(["logout", "--everywhere"]).assert().success();
    assert!(!env.credentials.exists(), "the stored login is forgotten too");
    let out = env.bare().args(["--server", &url, "--token", &jwt, "whoami"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "the login ended");
    // The server's own login of the owner ended as well.
    let out = env.cmd().args(["whoami"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let out = env.bare().args(["--server", &url, "--token", &token, "whoami", "--json"]).output().unwrap();
    assert!(out.status.success(), "an access token stays: {}", String::from_utf8_lossy(&out.stderr));
}
