//! Scheduled backups of a serving board (`--backup-dir` …) taken under
//! write load, and `taskboard restore`: a restored backup exports the
//! very archive it was, and the backup taken once the writes stopped
//! exports exactly as the source board does.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use taskboard_pg_scratch::Scratch;
use taskboard_server::backups::{self, BackupSchedule};
use taskboard_server::{Config, Server};
use taskboard_tests::{Env, OWNER_PASSWORD, tree};

fn same_tree(a: &Path, b: &Path) {
    let (a, b) = (tree(a), tree(b));
    assert_eq!(a.iter().map(|(p, _)| p).collect::<Vec<_>>(), b.iter().map(|(p, _)| p).collect::<Vec<_>>());
    for ((path, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{} differs", path.display());
    }
}

fn task_lines(archive: &Path) -> usize {
    let text = std::fs::read_to_string(archive.join("board.jsonl")).unwrap();
    text.lines().filter(|l| l.starts_with("{\"type\":\"task\"")).count()
}

/// Where a board is: a data directory, with a database for PostgreSQL.
struct Place {
    data_dir: PathBuf,
    database: Option<String>,
}

impl Place {
    fn cli(&self, env: &Env, args: &[&str]) -> std::process::Output {
        let mut cmd = env.bare();
        cmd.arg("--data-dir").arg(&self.data_dir);
        if let Some(db) = &self.database {
            cmd.args(["--database", db]);
        }
        cmd.args(args).output().unwrap()
    }

    fn export(&self, env: &Env, to: &Path) {
        let out = self.cli(env, &["export", to.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    fn restore(&self, env: &Env, archive: &Path) -> std::process::Output {
        self.cli(env, &["restore", archive.to_str().unwrap()])
    }
}

fn place(dir: &Path, name: &str, postgres: bool) -> Place {
    Place { data_dir: dir.join(name), database: postgres.then(|| Scratch::shared().fresh_url()) }
}

fn scheduled_backups_restore_to_identical_exports(postgres: bool) {
    let env = Env::local(); // only for its CLI helpers and temporary directory
    let dir = env.dir.path().to_path_buf();
    let source = place(&dir, "source", postgres);
    let backup_dir = dir.join("backups");
    let mut config = Config::new(&source.data_dir);
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.owner_password = Some(OWNER_PASSWORD.into());
    config.database = source.database.clone();
    // Everything kept here: pruning to the newest N is the unit test's.
    config.backups =
        Some(BackupSchedule { dir: backup_dir.clone(), every: Duration::from_millis(100), keep: 1000 });

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (under_load, after_load, written) = runtime.block_on(async {
        let server = Server::bind(config).await.unwrap();
        let mut watch = server.backups().expect("backups are on");
        let token = server.board().login("owner", OWNER_PASSWORD, None).await.unwrap().token;
        let base = format!("http://{}", server.local_addr());
        let handle = server.spawn();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let project: Value = http
            .post(format!("{base}/api/v1/projects"))
            .bearer_auth(&token)
            .json(&json!({"name": "Load", "slug": "load"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let project = project["id"].as_str().unwrap().to_string();

        let stop = Arc::new(AtomicBool::new(false));
        let (created_tx, mut created) = tokio::sync::watch::channel(0u64);
        let created_tx = Arc::new(created_tx);
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let (http, base, token, project, stop, created_tx) = (
                    http.clone(),
                    base.clone(),
                    token.clone(),
                    project.clone(),
                    stop.clone(),
                    created_tx.clone(),
                );
                tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let res = http
                            .post(format!("{base}/api/v1/tasks?project_id={project}"))
                            .bearer_auth(&token)
                            .json(&json!({"title": format!("task {w}-{n}")}))
                            .send()
                            .await
                            .unwrap();
                        assert_eq!(res.status(), 201);
                        created_tx.send_modify(|c| *c += 1);
                        n += 1;
                    }
                    n
                })
            })
            .collect();

        // Two backups begun once the board holds tasks, while both
        // writers keep writing.
        created.wait_for(|c| *c >= 10).await.unwrap();
        let before = watch.borrow().written;
        let state = watch.wait_for(|s| s.written >= before + 2).await.unwrap().clone();
        let under_load = state.last.clone().unwrap();
        stop.store(true, Ordering::Relaxed);
        let mut created = 0;
        for w in writers {
            created += w.await.unwrap();
        }
        assert!(created > 0);
        // The next backup may have begun before the writes stopped; the
        // one after it began after.
        let stopped_at = watch.borrow().written;
        let state = watch.wait_for(|s| s.written >= stopped_at + 2).await.unwrap().clone();
        assert_eq!(state.failed, 0);
        handle.shutdown().await;
        let written = watch.borrow().written;
        (under_load, state.last.unwrap(), written)
    });

    // Each backup is whole under its final name; no unfinished one is left.
    let kept = backups::list(&backup_dir);
    assert_eq!(kept.len() as u64, written);
    let names: Vec<_> = std::fs::read_dir(&backup_dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), kept.len(), "only finished backups: {names:?}");
    assert!(kept.contains(&under_load) && kept.contains(&after_load));

    // The backup taken under load restores, and exports as itself.
    let restored = place(&dir, "restored-under-load", postgres);
    let out = restored.restore(&env, &under_load);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again = dir.join("export-under-load");
    restored.export(&env, &again);
    same_tree(&under_load, &again);
    assert!(task_lines(&under_load) > 0);

    // The backup taken after the writes exports exactly as the source.
    let source_export = dir.join("export-source");
    source.export(&env, &source_export);
    let restored = place(&dir, "restored-after-load", postgres);
    let out = restored.restore(&env, &after_load);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again = dir.join("export-after-load");
    restored.export(&env, &again);
    same_tree(&source_export, &again);
    assert!(task_lines(&source_export) > task_lines(&under_load), "the load went on after the first backups");

    // A board that exists is never overwritten by a restore.
    let refused = restored.restore(&env, &under_load);
    assert_eq!(refused.status.code(), Some(5), "{}", String::from_utf8_lossy(&refused.stderr));
    let unchanged = dir.join("export-unchanged");
    restored.export(&env, &unchanged);
    same_tree(&source_export, &unchanged);
}

#[test]
fn scheduled_backups_under_load_restore_to_identical_exports() {
    scheduled_backups_restore_to_identical_exports(false);
}

#[test]
fn scheduled_backups_under_load_restore_to_identical_exports_on_postgres() {
    scheduled_backups_restore_to_identical_exports(true);
}
