//! Admin commands and the contract of the binary: init, export/import,
//! backup, exit codes, quiet output, acting as another member.

use taskboard_tests::{Env, tree};

use crate::modes::scenario;

#[test]
fn export_import_export_round_trips_byte_for_byte() {
    let env = Env::local();
    scenario(&env);
    let first = env.dir.path().join("first");
    let restored = env.dir.path().join("restored");
    let second = env.dir.path().join("second");
    let summary = env.json(&["export", first.to_str().unwrap()]);
    assert!(summary["records"].as_u64().unwrap() > 50, "{summary}");
    assert!(summary["blobs"].as_u64().unwrap() >= 2, "the notes and the attachment: {summary}");
    env.bare()
        .args(["--data-dir", restored.to_str().unwrap(), "import", first.to_str().unwrap()])
        .assert()
        .success();
    env.bare()
        .args(["--data-dir", restored.to_str().unwrap(), "export", second.to_str().unwrap()])
        .assert()
        .success();
    let (a, b) = (tree(&first), tree(&second));
    assert!(a.iter().any(|(p, _)| p.starts_with("blobs")), "file contents are in the archive");
    assert_eq!(a.len(), b.len());
    for ((pa, ba), (pb, bb)) in a.iter().zip(&b) {
        assert_eq!(pa, pb);
        assert!(ba == bb, "{} differs after the round trip", pa.display());
    }
    // The restored board answers like the original.
    let original = env.json(&["task", "list"]);
    let out = env
        .bare()
        .args(["--data-dir", restored.to_str().unwrap(), "task", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(), original);
}

#[test]
fn backup_of_a_running_server_restores_the_same_board() {
    let env = Env::remote();
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "One"]).success();
    let notes = env.dir.path().join("notes.txt");
    std::fs::write(&notes, "notes").unwrap();
    env.run(&["file", "upload", "web", notes.to_str().unwrap()]).success();
    let backup = env.dir.path().join("backup");
    let summary = env.json(&["backup", backup.to_str().unwrap()]);
    assert_eq!(summary["blobs"], 1, "{summary}");
    let restored = env.dir.path().join("restored");
    env.bare()
        .args(["--data-dir", restored.to_str().unwrap(), "import", backup.to_str().unwrap()])
        .assert()
        .success();
    let out = env
        .bare()
        .args(["--data-dir", restored.to_str().unwrap(), "task", "list", "--json"])
        .output()
        .unwrap();
    let local: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(local, env.json(&["task", "list"]));
    // Only owners may back up.
    env.run(&["member", "create", "--name", "Bot", "--slug", "bot", "--type", "agent"]).success();
    let token = env.json(&["member", "regenerate-token", "bot"])["token"].as_str().unwrap().to_string();
    let out = env
        .cmd()
        .env("TASKBOARD_TOKEN", token)
        .args(["backup", env.dir.path().join("b2").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only an owner"));
}

#[test]
fn a_board_held_by_a_server_points_to_server_mode() {
    let env = Env::remote();
    let out =
        env.bare().args(["--data-dir", env.data_dir.to_str().unwrap(), "task", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("already open") && stderr.contains("--server"), "{stderr}");
}

#[test]
fn errors_exit_with_their_code_and_the_detail() {
    let env = Env::local();
    let out = env.cmd().args(["task", "show", "WEB-99"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), "error: task WEB-99 not found");
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    let out = env.cmd().args(["project", "create", "--name", "Web", "--slug", "web"]).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already taken"));
    // A value the core refuses is a 422-style error (1), not a usage error.
    let out = env.cmd().args(["label", "create", "x", "--color", "red"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("color"));
    // No board in the directory.
    let out = env.bare().args(["--data-dir", "nowhere", "task", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("taskboard init"));
}

#[test]
fn init_prints_a_generated_password_once_and_refuses_a_second_time() {
    let env = Env::local();
    let other = env.dir.path().join("other");
    let out = env
        .bare()
        .args(["--data-dir", other.to_str().unwrap(), "init", "--owner", "alice"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("owner alice") && stdout.contains("password (shown once): "), "{stdout}");
    let again = env.run(&["init"]).failure().code(5);
    let stderr = String::from_utf8_lossy(&again.get_output().stderr).to_string();
    assert!(stderr.contains("already holds a board"), "{stderr}");
}

#[test]
fn quiet_prints_ids_only_and_as_acts_as_another_member() {
    let env = Env::local();
    let project =
        env.cmd().args(["project", "create", "--name", "Web", "--slug", "web", "-q"]).output().unwrap();
    let id = String::from_utf8(project.stdout).unwrap();
    assert!(uuid::Uuid::parse_str(id.trim()).is_ok(), "{id}");
    env.run(&["member", "create", "--name", "Bot", "--slug", "bot", "--type", "agent"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "A"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "B"]).success();
    let list = env.cmd().args(["task", "list", "--quiet"]).output().unwrap();
    assert_eq!(String::from_utf8(list.stdout).unwrap().lines().count(), 2);
    let taken = env.json(&["--as", "bot", "task", "take", "WEB-2"]);
    assert_eq!(taken["assignee"]["slug"], "bot");
    assert_eq!(env.json(&["--as", "bot", "whoami"])["slug"], "bot");
    // The table has a header and aligned columns.
    let table = env.cmd().args(["task", "list"]).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("KEY") && lines[0].contains("TITLE"));
    assert_eq!(lines[1].find("backlog"), lines[2].find("in_progress"), "{table}");
}
