//! `POST /api/v1/admin/backup` with every kind of path a client can send,
//! and the modes of the files the server writes.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Res, TestApp, on_postgres, spawn};

async fn backup(app: &TestApp, path: impl Into<Value>) -> Res {
    app.post("/api/v1/admin/backup", app.owner(), json!({"path": path.into()})).await
}

fn text(p: &Path) -> String {
    p.to_str().expect("test paths are UTF-8").to_string()
}

/// A directory the server may not write into: mode 0500, or, when the
/// tests run with privileges that ignore modes, an immutable one
/// (`chattr +i`). `None` when neither can be had here.
struct Unwritable {
    path: PathBuf,
    immutable: bool,
}

impl Unwritable {
    fn new(parent: &Path) -> Option<Unwritable> {
        use std::os::unix::fs::PermissionsExt;
        let path = parent.join("locked");
        std::fs::create_dir(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o500)).unwrap();
        let writable = |path: &Path| match std::fs::create_dir(path.join("probe")) {
            Ok(()) => {
                std::fs::remove_dir(path.join("probe")).unwrap();
                true
            }
            Err(_) => false,
        };
        if !writable(&path) {
            return Some(Unwritable { path, immutable: false });
        }
        let chattr = std::process::Command::new("chattr").arg("+i").arg(&path).status();
        let locked = Unwritable { path, immutable: true };
        (chattr.is_ok_and(|s| s.success()) && !writable(&locked.path)).then_some(locked)
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        if self.immutable {
            let _ = std::process::Command::new("chattr").arg("-i").arg(&self.path).status();
        }
    }
}

#[tokio::test]
async fn every_bad_backup_path_is_422_or_409_with_a_detail_and_leaves_nothing() {
    let app = spawn().await;
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let full = out.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("x"), b"x").unwrap();
    std::os::unix::fs::symlink("/proc/self", out.path().join("to-proc")).unwrap();
    let data = app.data_dir().to_path_buf();

    backup(&app, "relative/dir").await.error(422, "validation_error", "path: must be an absolute path");
    backup(&app, "").await.error(422, "validation_error", "path: must be an absolute path");
    backup(&app, "/tmp/a\u{0}b").await.error(422, "validation_error", "path: must not contain a NUL");
    backup(&app, text(&file)).await.error(409, "conflict", "exists and is not a directory");
    backup(&app, text(&full)).await.error(409, "conflict", "exists and is not empty");
    backup(&app, "/").await.error(409, "conflict", "exists and is not empty");
    backup(&app, text(&out.path().join("no/such/dir"))).await.error(
        422,
        "validation_error",
        "does not exist",
    );
    backup(&app, text(&file.join("below"))).await.error(422, "validation_error", "is not a directory");
    backup(&app, text(&out.path().join("x/../y"))).await.error(422, "validation_error", "'..'");
    for system in ["/proc/backup", "/proc", "/sys/kernel/backup", "/dev/backup", "/dev/shm/backup"] {
        backup(&app, system).await.error(422, "validation_error", "pseudo files");
    }
    backup(&app, text(&out.path().join("to-proc/backup"))).await.error(
        422,
        "validation_error",
        "pseudo files",
    );
    backup(&app, text(&data)).await.error(422, "validation_error", "data directory");
    backup(&app, text(&data.join("backup"))).await.error(422, "validation_error", "data directory");
    backup(&app, text(&data.join("blobs/tmp/backup"))).await.error(422, "validation_error", "data directory");
    backup(&app, text(data.parent().unwrap())).await.error(422, "validation_error", "data directory");
    app.post("/api/v1/admin/backup", app.owner(), json!({"path": 5})).await.error(
        422,
        "validation_error",
        "path",
    );
    app.post("/api/v1/admin/backup", app.owner(), json!({})).await.error(422, "validation_error", "path");
    match Unwritable::new(out.path()) {
        Some(locked) => {
            backup(&app, text(&locked.path.join("backup"))).await.error(
                422,
                "validation_error",
                "the server may not write to",
            );
            assert_eq!(std::fs::read_dir(&locked.path).unwrap().count(), 0);
        }
        None => eprintln!("no unwritable directory can be made here: that case is not tried"),
    }

    let mut left: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    left.retain(|n| n != "locked");
    assert_eq!(left, ["a-file", "full", "to-proc"], "nothing was made");
    assert_eq!(std::fs::read_dir(&full).unwrap().count(), 1);
    assert!(!data.join("backup").exists());

    // Only owners back up.
    let (_, admin) = app.create_agent("admin-bot", "admin").await;
    let target = out.path().join("by-admin");
    app.post("/api/v1/admin/backup", Some(&admin), json!({"path": text(&target)})).await.error(
        403,
        "forbidden",
        "owner",
    );
    assert!(!target.exists());
}

/// Every entry under `dir` whose mode is not `0700` for a directory or
/// `0600` for a file.
fn not_private(dir: &Path) -> Vec<(PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
    let mut wrong = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if mode(&d) != 0o700 {
            wrong.push((d.clone(), mode(&d)));
        }
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if mode(&path) != 0o600 {
                wrong.push((path.clone(), mode(&path)));
            }
        }
    }
    wrong
}

#[tokio::test]
async fn the_data_directory_and_backups_are_readable_by_the_owner_only() {
    let app = spawn().await;
    let project = app.create_project(app.owner(), "web").await;
    app.upload(
        &format!("/api/v1/projects/{}/files", project.id),
        app.owner(),
        "spec.md",
        b"# spec".to_vec(),
        None,
    )
    .await
    .expect::<Value>(201);
    app.upload("/api/v1/upload", app.owner(), "notes.txt", b"notes".to_vec(), None)
        .await
        .expect::<Value>(200);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("backup");
    let summary: Value = backup(&app, text(&target)).await.expect(200);
    assert_eq!(summary["blobs"], 2);

    assert_eq!(not_private(app.data_dir()), vec![]);
    assert_eq!(not_private(&target), vec![]);
    // (With PostgreSQL the data directory holds file contents only.)
    assert_eq!(app.data_dir().join("board.redb").is_file(), !on_postgres());
    assert_eq!(std::fs::read_dir(target.join("blobs")).unwrap().count(), 2);
}
