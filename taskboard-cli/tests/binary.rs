//! The binary's own surface: help, completions and usage errors. (The
//! end-to-end scenarios are in the workspace `tests` crate; building this
//! test also makes cargo build the `taskboard` binary they run.)

use assert_cmd::Command;

fn taskboard() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_taskboard"));
    for var in ["TASKBOARD_DATA_DIR", "TASKBOARD_DATABASE", "TASKBOARD_SERVER", "TASKBOARD_TOKEN"] {
        cmd.env_remove(var);
    }
    cmd.env("TASKBOARD_CREDENTIALS", "/nonexistent/taskboard-credentials.json");
    cmd
}

#[test]
fn help_shows_an_example() {
    let out = taskboard().args(["task", "take", "--help"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Example:\n  taskboard --as bot task take WEB-12"));
}

#[test]
fn completions_are_generated_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = taskboard().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("taskboard"), "{shell}");
    }
}

#[test]
fn usage_errors_exit_with_2() {
    taskboard().args(["task", "list", "--bogus"]).assert().code(2);
    taskboard().args(["task", "list", "--status", "doing"]).assert().code(2);
    // No board chosen and no stored login.
    let out = taskboard().args(["task", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--data-dir"));
}

#[test]
fn with_json_a_usage_error_is_json_on_stderr() {
    let out = taskboard().args(["task", "list", "--status", "doing", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let error: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(error["code"], "usage");
    assert!(error["detail"].as_str().unwrap().contains("doing"), "{error}");
    // Help is not an error, with or without --json.
    let out = taskboard().args(["task", "list", "--help", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--status"));
}
