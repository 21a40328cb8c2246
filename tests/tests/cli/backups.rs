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
        taskboard_core::tls::install_provider();
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

/// The storage name of the one file an archive holds.
fn only_blob(archive: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(archive.join("blobs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names.remove(0)
}

fn copy_archive(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("blobs")).unwrap();
    std::fs::copy(from.join("board.jsonl"), to.join("board.jsonl")).unwrap();
    for entry in std::fs::read_dir(from.join("blobs")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join("blobs").join(entry.file_name())).unwrap();
    }
}

#[test]
fn restore_refuses_an_archive_whose_files_are_links_devices_or_outside_it() {
    let env = Env::local();
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    let notes = env.dir.path().join("notes.txt");
    std::fs::write(&notes, "the project's notes").unwrap();
    env.run(&["file", "upload", "web", notes.to_str().unwrap()]).success();
    let good = env.dir.path().join("good");
    env.run(&["export", good.to_str().unwrap()]).success();
    let name = only_blob(&good);
    // What an attacker wants served: a file of the restoring machine.
    let outside = env.dir.path().join("outside-secret");
    std::fs::write(&outside, "the machine's secret").unwrap();

    let crafted = |label: &str, craft: &dyn Fn(&Path)| -> PathBuf {
        let archive = env.dir.path().join(label);
        copy_archive(&good, &archive);
        craft(&archive);
        archive
    };
    let blob = |archive: &Path| archive.join("blobs").join(&name);
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            crafted("symlink", &|a| {
                std::fs::remove_file(blob(a)).unwrap();
                std::os::unix::fs::symlink(&outside, blob(a)).unwrap();
            }),
            "is a symbolic link",
        ),
        (
            crafted("hardlink", &|a| {
                std::fs::remove_file(blob(a)).unwrap();
                std::fs::hard_link(&outside, blob(a)).unwrap();
            }),
            "hard link",
        ),
        (
            crafted("fifo", &|a| {
                std::fs::remove_file(blob(a)).unwrap();
                let made = std::process::Command::new("mkfifo").arg(blob(a)).status().unwrap();
                assert!(made.success());
            }),
            "not a regular file",
        ),
        (
            crafted("linked-dir", &|a| {
                let elsewhere = a.with_extension("elsewhere");
                std::fs::rename(a.join("blobs"), &elsewhere).unwrap();
                std::os::unix::fs::symlink(&elsewhere, a.join("blobs")).unwrap();
            }),
            "is a symbolic link",
        ),
        (
            crafted("climbing", &|a| {
                let records = std::fs::read_to_string(a.join("board.jsonl")).unwrap();
                let climbing = records.replace(&name, "../../../../../../../../etc/passwd");
                std::fs::write(a.join("board.jsonl"), climbing).unwrap();
            }),
            "not one of the archive's own",
        ),
        (
            crafted("absolute", &|a| {
                let records = std::fs::read_to_string(a.join("board.jsonl")).unwrap();
                let absolute = records.replace(&name, outside.to_str().unwrap());
                std::fs::write(a.join("board.jsonl"), absolute).unwrap();
            }),
            "not one of the archive's own",
        ),
        (
            crafted("linked-records", &|a| {
                let elsewhere = a.with_extension("jsonl");
                std::fs::rename(a.join("board.jsonl"), &elsewhere).unwrap();
                std::os::unix::fs::symlink(&elsewhere, a.join("board.jsonl")).unwrap();
            }),
            "is a symbolic link",
        ),
    ];
    for (archive, why) in &cases {
        let target =
            env.dir.path().join(format!("restored-{}", archive.file_name().unwrap().to_string_lossy()));
        let out = env
            .bare()
            .args(["--data-dir", target.to_str().unwrap(), "restore", archive.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{} restored: {stderr}", archive.display());
        assert!(stderr.contains(why), "{}: {why:?} in {stderr}", archive.display());
        assert!(!target.exists(), "{}: nothing half-restored at {}", archive.display(), target.display());
    }

    // The archive as exported restores, and serves its own file.
    let target = env.dir.path().join("restored-good");
    env.bare()
        .args(["--data-dir", target.to_str().unwrap(), "restore", good.to_str().unwrap()])
        .assert()
        .success();
    let fetched = env.dir.path().join("fetched.txt");
    env.bare()
        .args(["--data-dir", target.to_str().unwrap(), "file", "download", "web", "notes.txt", "-o"])
        .arg(&fetched)
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&fetched).unwrap(), "the project's notes");
}
