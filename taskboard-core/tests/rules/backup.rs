//! [ext] Backups into a directory a client names (docs/decisions.md 1.g,
//! 1.h): every bad path is the client's mistake, and a failed backup
//! leaves nothing behind.

use std::path::{Path, PathBuf};

use taskboard_core::ErrorKind;
use taskboard_core::model::Role;

use crate::support::*;

async fn backup(
    fx: &Fx,
    path: impl Into<PathBuf>,
) -> taskboard_core::Result<taskboard_core::archive::ArchiveSummary> {
    fx.board.backup_archive(&fx.owner, path.into()).await
}

#[track_caller]
fn refused<T: std::fmt::Debug>(result: taskboard_core::Result<T>, status: ErrorKind, part: &str) {
    let e = result.expect_err("refused");
    assert_eq!(e.kind(), status, "{e}");
    assert!(e.detail().starts_with("path: "), "{e}");
    assert!(e.detail().contains(part), "{:?} does not name {part:?}", e.detail());
}

#[tokio::test]
async fn only_owners_back_up_and_a_good_path_gets_an_archive() {
    let fx = board_on_disk().await;
    let admin = fx.human("admin", Role::Admin).await;
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("backup");
    assert_eq!(kind(fx.board.backup_archive(&admin, target.clone()).await), ErrorKind::Forbidden);
    assert!(!target.exists());
    let summary = backup(&fx, &target).await.unwrap();
    assert!(summary.records > 0);
    assert!(target.join("board.jsonl").is_file());
    // An empty directory is used as it is.
    let empty = out.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    backup(&fx, &empty).await.unwrap();
}

#[tokio::test]
async fn every_bad_path_is_a_422_or_409_naming_the_problem() {
    let fx = board_on_disk().await;
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let full = out.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("x"), b"x").unwrap();
    let data = fx.path().to_path_buf();

    refused(backup(&fx, "relative/dir").await, ErrorKind::Validation, "absolute");
    refused(backup(&fx, "/tmp/a\0b").await, ErrorKind::Validation, "NUL");
    refused(backup(&fx, &file).await, ErrorKind::Conflict, "not a directory");
    refused(backup(&fx, &full).await, ErrorKind::Conflict, "not empty");
    refused(backup(&fx, out.path().join("no/such/parent")).await, ErrorKind::Validation, "does not exist");
    refused(backup(&fx, file.join("below-a-file")).await, ErrorKind::Validation, "not a directory");
    refused(backup(&fx, out.path().join("x/../y")).await, ErrorKind::Validation, "..");
    for system in ["/proc/backup", "/sys/backup", "/dev/backup", "/dev/shm/backup", "/proc"] {
        refused(backup(&fx, system).await, ErrorKind::Validation, "pseudo files");
    }
    refused(backup(&fx, &data).await, ErrorKind::Validation, "data directory");
    refused(backup(&fx, data.join("archive")).await, ErrorKind::Validation, "data directory");
    refused(backup(&fx, data.join("blobs/archive")).await, ErrorKind::Validation, "data directory");
    refused(backup(&fx, data.parent().unwrap()).await, ErrorKind::Validation, "data directory");
    #[cfg(unix)]
    {
        // A link does not smuggle a path past the checks.
        std::os::unix::fs::symlink("/proc/self", out.path().join("to-proc")).unwrap();
        refused(backup(&fx, out.path().join("to-proc/backup")).await, ErrorKind::Validation, "pseudo files");
        std::os::unix::fs::symlink(&data, out.path().join("to-data")).unwrap();
        refused(
            backup(&fx, out.path().join("to-data/backup")).await,
            ErrorKind::Validation,
            "data directory",
        );
    }
    // Nothing was made anywhere.
    let mut left: Vec<_> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, ["a-file", "full", "to-data", "to-proc"].map(std::ffi::OsString::from));
    assert!(!data.join("archive").exists());
}

/// Removes the content of the project file the board holds, so that every
/// export attempt finds it gone.
fn remove_blobs(dir: &Path) {
    for f in files_under(dir) {
        if f.parent() == Some(dir) {
            std::fs::remove_file(f).unwrap();
        }
    }
}

#[tokio::test]
async fn a_failed_backup_leaves_nothing_behind() {
    let fx = board_on_disk().await;
    let p = fx.project("web").await;
    fx.board.upload_file(&fx.owner, p.id, "spec.md", None, None, &b"# spec"[..]).await.unwrap();
    remove_blobs(fx.board.blob_dir());
    let out = tempfile::tempdir().unwrap();

    let created = out.path().join("new");
    assert_eq!(kind(backup(&fx, &created).await), ErrorKind::Conflict);
    assert!(!created.exists(), "the directory it made is gone");

    let existing = out.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    assert_eq!(kind(backup(&fx, &existing).await), ErrorKind::Conflict);
    assert_eq!(std::fs::read_dir(&existing).unwrap().count(), 0, "the directory it was given is left empty");
}
