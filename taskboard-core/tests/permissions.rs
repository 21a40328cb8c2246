//! The data directory is `0700` and every file in it `0600`, whatever the
//! process umask; so are backups. An older data directory is tightened
//! when it is opened.
//!
//! The umask belongs to the whole process and tests run in parallel
//! threads, so each umask is tried in a child process: the test below
//! runs this binary again under `sh -c 'umask …; exec …'` for the one
//! ignored test `in_a_child_with_the_umask_of_the_environment`.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use taskboard_core::api::NewProject;
use taskboard_core::validate::{Name, Password, Slug};
use taskboard_core::{Board, BoardOptions};
use tokio::io::{AsyncRead, ReadBuf};

const UMASK_ENV: &str = "TASKBOARD_TEST_UMASK";

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Every entry under `dir` (itself included) whose mode is not `0700`
/// for a directory or `0600` for a file.
fn not_private(dir: &Path) -> Vec<(PathBuf, u32)> {
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

/// Content that, when first read, notes the modes of the temporary files
/// of the blob store: the upload's own file is there by then.
struct Watching {
    tmp_dir: PathBuf,
    seen: Arc<Mutex<Vec<(PathBuf, u32)>>>,
    left: usize,
}

impl AsyncRead for Watching {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.left == 0 {
            return Poll::Ready(Ok(()));
        }
        let mut seen = self.seen.lock().unwrap();
        if seen.is_empty() {
            seen.push((self.tmp_dir.clone(), mode(&self.tmp_dir)));
            for entry in std::fs::read_dir(&self.tmp_dir).unwrap() {
                let path = entry.unwrap().path();
                seen.push((path.clone(), mode(&path)));
            }
        }
        drop(seen);
        let n = self.left.min(buf.remaining());
        buf.put_slice(&vec![b'x'; n]);
        self.left -= n;
        Poll::Ready(Ok(()))
    }
}

/// Writes every kind of file: the database, the JWT secret, blobs, an
/// archive into `out/backup` and a database copy into `out/copy.redb`.
async fn use_every_kind_of_file(data: &Path, out: &Path) {
    let board = Board::open(data, BoardOptions::default()).await.unwrap();
    let boot = board
        .bootstrap_owner(Slug::new("owner").unwrap(), Some(Password::new("owner-password").unwrap()))
        .await
        .unwrap()
        .unwrap();
    let owner = board.actor(boot.owner.id).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let content = Watching { tmp_dir: board.blob_dir().join("tmp"), seen: seen.clone(), left: 1000 };
    board.upload(&owner, "notes.txt", None, content).await.unwrap();
    let temporary = seen.lock().unwrap().clone();
    assert_eq!(temporary.len(), 2, "the tmp directory and the upload's file: {temporary:?}");
    assert_eq!(temporary[0].1, 0o700, "{temporary:?}");
    assert_eq!(temporary[1].1, 0o600, "{temporary:?}");
    let project = NewProject {
        name: Name::new("Web").unwrap(),
        slug: Slug::new("web").unwrap(),
        description: None,
        repo_urls: vec![],
        auto_assign: false,
    };
    let p = board.create_project(&owner, project).await.unwrap();
    board.upload_file(&owner, p.id, "spec.md", None, None, &b"# spec"[..]).await.unwrap();
    board.backup_archive(&owner, out.join("backup")).await.unwrap();
    board.backup_database(out.join("copy.redb")).await.unwrap();
    board.flush().await.unwrap();
}

#[test]
fn files_are_0600_and_directories_0700_whatever_the_umask() {
    for umask in ["022", "000", "027", "077"] {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", "in_a_child_with_the_umask_of_the_environment", "--include-ignored"])
            .args(["--nocapture", "--test-threads=1"])
            .env(UMASK_ENV, umask)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "umask {umask}:\n{stdout}\n{stderr}");
        assert!(stdout.contains("1 passed"), "the check ran under umask {umask}:\n{stdout}");
    }
}

#[test]
#[ignore = "run in a child process by files_are_0600_and_directories_0700_whatever_the_umask"]
fn in_a_child_with_the_umask_of_the_environment() {
    let umask =
        u32::from_str_radix(&std::env::var(UMASK_ENV).expect("started by the parent test"), 8).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // The umask is in force: a file made without a mode gets 0666 less it.
    std::fs::write(tmp.path().join("plain"), b"x").unwrap();
    assert_eq!(mode(&tmp.path().join("plain")), 0o666 & !umask);

    let (data, backup) = (tmp.path().join("data"), tmp.path().join("backup"));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(use_every_kind_of_file(&data, tmp.path()));
    drop(rt);
    for required in ["board.redb", "jwt_secret", "blobs/tmp"] {
        assert!(data.join(required).exists(), "{required}");
    }
    assert_eq!(mode(&tmp.path().join("copy.redb")), 0o600, "under umask {umask:03o}");
    assert_eq!(std::fs::read_dir(data.join("blobs")).unwrap().count(), 3, "two blobs and tmp");
    assert_eq!(not_private(&data), vec![], "under umask {umask:03o}");
    assert_eq!(std::fs::read_dir(backup.join("blobs")).unwrap().count(), 2);
    assert_eq!(not_private(&backup), vec![], "under umask {umask:03o}");
}

#[tokio::test]
async fn an_older_data_directory_is_tightened_when_opened() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    use_every_kind_of_file(&data, tmp.path()).await;
    // As an older build under umask 022 left it.
    let mut stack = vec![data.clone()];
    while let Some(d) = stack.pop() {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            }
        }
    }
    assert!(not_private(&data).len() > 6);
    let board = Board::open(&data, BoardOptions::default()).await.unwrap();
    assert_eq!(not_private(&data), vec![]);
    drop(board);

    // Only what the board wrote is touched: not a file or directory
    // someone else put there, nor what a link points to.
    let outside = tmp.path().join("outside");
    std::fs::write(&outside, b"y").unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::symlink(&outside, data.join("link")).unwrap();
    std::os::unix::fs::symlink(&outside, data.join("blobs/link")).unwrap();
    std::fs::write(data.join("notes.sh"), b"echo").unwrap();
    std::fs::set_permissions(data.join("notes.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(data.join("other")).unwrap();
    std::fs::set_permissions(data.join("other"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o750)).unwrap();
    std::fs::set_permissions(data.join("board.redb"), std::fs::Permissions::from_mode(0o640)).unwrap();
    drop(Board::open(&data, BoardOptions::default()).await.unwrap());
    assert_eq!((mode(&data), mode(&data.join("board.redb"))), (0o700, 0o600));
    assert_eq!(mode(&outside), 0o644);
    assert_eq!((mode(&data.join("notes.sh")), mode(&data.join("other"))), (0o755, 0o755));
}
