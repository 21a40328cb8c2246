//! The agent work protocol from the command line, against a server.

use taskboard_tests::Env;

#[test]
fn ready_claim_heartbeat_release_and_idempotent_retries() {
    let env = Env::remote();
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "A"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "B", "--priority", "urgent"]).success();
    let ready = env.json(&["task", "ready"]);
    let keys: Vec<&str> = ready.as_array().unwrap().iter().map(|t| t["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["WEB-2", "WEB-1"]);
    let claimed = env.json(&["task", "claim", "--project", "web", "--lease", "5m"]);
    assert_eq!(claimed["key"], "WEB-2");
    assert_eq!(claimed["lease"]["holder"]["slug"], "owner");
    let beat = env.json(&["task", "heartbeat", "WEB-2", "--lease", "10m"]);
    assert!(beat["lease"]["expires_at"].as_str().unwrap() > claimed["lease"]["expires_at"].as_str().unwrap());
    let back = env.json(&["task", "release", "WEB-2", "--reason", "later"]);
    assert_eq!((back["status"].as_str(), back["lease"].is_null()), (Some("todo"), true));
    // One key, two runs: one change.
    for _ in 0..2 {
        env.run(&["--idempotency-key", "create-c", "task", "create", "--project", "web", "--title", "C"])
            .success();
    }
    let all = env.json(&["task", "list", "--project", "web"]);
    assert_eq!(all.as_array().unwrap().len(), 3);
    env.run(&["task", "claim"]).success();
    env.run(&["task", "claim"]).success();
    env.run(&["task", "claim"]).success();
    let none = env.cmd().args(["task", "claim"]).output().unwrap();
    assert!(none.status.success());
    assert!(String::from_utf8_lossy(&none.stdout).contains("no task is ready"));
}

/// Fencing from the command line (docs/rules.md, fencing): a change that
/// presents a lease that is no longer current is refused, locally and
/// against a server.
#[test]
fn a_stale_lease_id_is_refused_and_the_current_one_accepted() {
    for env in [Env::local(), Env::remote()] {
        env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
        env.run(&["task", "create", "--project", "web", "--title", "A"]).success();
        let first = env.json(&["task", "claim", "--project", "web", "--lease", "5m"]);
        let old = first["lease"]["id"].as_str().expect("a lease id").to_string();
        env.run(&["task", "release", "WEB-1"]).success();
        let second = env.json(&["task", "claim", "--project", "web", "--lease", "5m"]);
        let current = second["lease"]["id"].as_str().unwrap().to_string();
        assert_ne!(old, current);
        let stale = env
            .cmd()
            .args(["--lease-id", &old, "task", "update", "WEB-1", "--status", "review"])
            .output()
            .unwrap();
        assert!(!stale.status.success());
        assert!(
            String::from_utf8_lossy(&stale.stderr).contains("not the current lease"),
            "{}",
            String::from_utf8_lossy(&stale.stderr)
        );
        let by_env =
            env.cmd().env("TASKBOARD_LEASE", &old).args(["task", "heartbeat", "WEB-1"]).output().unwrap();
        assert!(!by_env.status.success(), "TASKBOARD_LEASE is presented too");
        let moved = env.json(&["--lease-id", &current, "task", "update", "WEB-1", "--status", "review"]);
        assert_eq!(moved["status"], "review");
    }
}
