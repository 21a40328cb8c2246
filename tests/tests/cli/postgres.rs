//! Local mode on a board kept in PostgreSQL (`--database`), and moving a
//! board between the embedded store and PostgreSQL with `export` and
//! `import`, through the real binary and a throwaway PostgreSQL.

use std::path::Path;

use taskboard_pg_scratch::Scratch;
use taskboard_tests::{Env, tree};

use crate::modes::scenario;

fn same_tree(a: &Path, b: &Path) {
    let (a, b) = (tree(a), tree(b));
    assert!(a.iter().any(|(p, _)| p.starts_with("blobs")), "file contents are in the archive");
    assert_eq!(a.iter().map(|(p, _)| p).collect::<Vec<_>>(), b.iter().map(|(p, _)| p).collect::<Vec<_>>());
    for ((path, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{} differs after the round trip", path.display());
    }
}

#[test]
fn an_export_moves_between_the_embedded_store_and_postgres_byte_for_byte() {
    let env = Env::local();
    scenario(&env);
    let dir = env.dir.path();
    let from_redb = dir.join("from-redb");
    env.json(&["export", from_redb.to_str().unwrap()]);

    // Into PostgreSQL, and out again: the same bytes.
    let url = Scratch::shared().fresh_url();
    let pg_files = dir.join("pg-files");
    let on_pg = |args: &[&str]| {
        let mut cmd = env.bare();
        cmd.args(["--database", &url, "--data-dir", pg_files.to_str().unwrap()]).args(args);
        cmd
    };
    on_pg(&["import", from_redb.to_str().unwrap()]).assert().success();
    let from_pg = dir.join("from-pg");
    on_pg(&["export", from_pg.to_str().unwrap()]).assert().success();
    same_tree(&from_redb, &from_pg);

    // The board in PostgreSQL answers like the original, in local mode.
    let original = env.json(&["task", "list"]);
    let out = on_pg(&["task", "list", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(), original);

    // And back into the embedded store: the same bytes again.
    let restored = dir.join("restored");
    env.bare()
        .args(["--data-dir", restored.to_str().unwrap(), "import", from_pg.to_str().unwrap()])
        .assert()
        .success();
    let again = dir.join("again");
    env.bare()
        .args(["--data-dir", restored.to_str().unwrap(), "export", again.to_str().unwrap()])
        .assert()
        .success();
    same_tree(&from_redb, &again);

    // A database that holds a board takes no import.
    let refused = on_pg(&["import", from_redb.to_str().unwrap()]).output().unwrap();
    assert_eq!(refused.status.code(), Some(5), "{}", String::from_utf8_lossy(&refused.stderr));
}

#[test]
fn local_mode_runs_every_command_on_a_board_in_postgres() {
    let env = Env::local_postgres();
    let steps = scenario(&env);
    assert!(steps.len() > 20);
    // TASKBOARD_DATABASE chose the board (Env sets it): the tasks are in
    // the database, and its data directory holds files only.
    let tasks = env.json(&["task", "list"]);
    assert!(!tasks.as_array().unwrap().is_empty());
    assert!(!env.data_dir.join("board.redb").exists());
    assert!(env.data_dir.join("blobs").read_dir().unwrap().next().is_some(), "the uploads' contents");
    // `init` again is a conflict: the database holds a board.
    env.run(&["init", "--password", taskboard_tests::OWNER_PASSWORD]).code(5);
}

#[test]
fn a_database_without_a_board_is_not_found_and_stays_empty() {
    let env = Env::local();
    let url = Scratch::shared().fresh_url();
    let out = env
        .bare()
        .args([
            "--database",
            &url,
            "--data-dir",
            env.dir.path().join("files").to_str().unwrap(),
            "task",
            "list",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("taskboard init --database"));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert!(!runtime.block_on(taskboard_core::storage::postgres::holds_board(&url)).unwrap());
    // Without a directory for its files, a database is a usage error.
    let out = env.bare().args(["--database", &url, "task", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--data-dir"));
}
