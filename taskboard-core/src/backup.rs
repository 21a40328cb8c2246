//! Backups of a running board into a directory a client names
//! (`POST /admin/backup`).
//!
//! The path comes from a client, so every way it can be wrong is the
//! client's mistake, answered 422 (the path cannot be used) or 409 (it
//! names something that already exists), with a detail naming the
//! problem; a failed backup leaves nothing behind (see
//! [`Board::export_archive`]).

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::archive::{ArchiveSummary, target_error};
use crate::board::{Actor, Board};
use crate::error::{Error, Result};
use crate::model::Role;

/// Trees of the kernel's pseudo files: nothing written there is a file.
const SYSTEM_TREES: &[&str] = &["/proc", "/sys", "/dev"];

impl Board {
    /// A consistent backup of a running board into `path` (owners
    /// only): an archive, as [`Board::export_archive`] writes. `path` must
    /// be absolute, name a new directory in an existing one or an empty
    /// directory, and lie outside the data directory and the kernel's
    /// trees (`/proc`, `/sys`, `/dev`).
    pub async fn backup_archive(&self, actor: &Actor, path: PathBuf) -> Result<ArchiveSummary> {
        if actor.role() != Role::Owner {
            return Err(Error::forbidden("only an owner may back up the board"));
        }
        let protected: Vec<PathBuf> =
            self.data_dir().into_iter().chain([self.blob_dir()]).map(Path::to_path_buf).collect();
        let dir = tokio::task::spawn_blocking(move || check_backup_path(&path, &protected))
            .await
            .map_err(Error::internal)??;
        self.export_archive(dir, None).await
    }
}

fn invalid(problem: impl std::fmt::Display) -> Error {
    Error::invalid("path", problem)
}

/// Checks a backup path and returns it with its existing part resolved
/// (symbolic links followed), which is where the backup is written.
fn check_backup_path(path: &Path, protected: &[PathBuf]) -> Result<PathBuf> {
    let shown = path.display();
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(invalid("must not contain a NUL character"));
    }
    if !path.is_absolute() {
        return Err(invalid("must be an absolute path on the server's machine"));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(invalid(format!("{shown} must not contain '..'")));
    }
    check_not_system(path)?;
    let Some(name) = path.file_name() else {
        return Err(Error::conflict(format!("path: {shown} exists and is not empty")));
    };
    let parent = path.parent().unwrap_or(Path::new("/"));
    let parent = std::fs::canonicalize(parent).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => invalid(format!("the directory {} does not exist", parent.display())),
        io::ErrorKind::NotADirectory => invalid(format!("{} is not a directory", parent.display())),
        io::ErrorKind::PermissionDenied => invalid(format!("the server may not enter {}", parent.display())),
        _ => invalid(format!("{}: {e}", parent.display())),
    })?;
    if !parent.is_dir() {
        return Err(invalid(format!("{} is not a directory", parent.display())));
    }
    let mut target = parent.join(name);
    if std::fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) {
        target = std::fs::canonicalize(&target)
            .map_err(|_| Error::conflict(format!("path: {shown} is a symbolic link to nothing usable")))?;
    }
    check_not_system(&target)?;
    for dir in protected {
        let Ok(dir) = std::fs::canonicalize(dir) else { continue };
        if target.starts_with(&dir) {
            return Err(invalid(format!("{shown} lies inside the board's data directory")));
        }
        if dir.starts_with(&target) {
            return Err(invalid(format!("{shown} holds the board's data directory")));
        }
    }
    match std::fs::metadata(&target) {
        Ok(meta) if !meta.is_dir() => {
            Err(Error::conflict(format!("path: {shown} exists and is not a directory")))
        }
        Ok(_) => match std::fs::read_dir(&target).map(|mut entries| entries.next().is_none()) {
            Ok(true) => Ok(target),
            Ok(false) => Err(Error::conflict(format!("path: {shown} exists and is not empty"))),
            Err(e) => Err(target_error(path, e)),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(target),
        Err(e) => Err(target_error(path, e)),
    }
}

fn check_not_system(path: &Path) -> Result<()> {
    match SYSTEM_TREES.iter().find(|tree| path.starts_with(tree)) {
        Some(tree) => Err(invalid(format!(
            "{} lies under {tree}, which holds the kernel's pseudo files; choose an ordinary directory",
            path.display()
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn system_trees_match_whole_components() {
        assert!(check_not_system(Path::new("/proc/x")).is_err());
        assert!(check_not_system(Path::new("/dev")).is_err());
        assert!(check_not_system(Path::new("/processes/x")).is_ok());
        assert!(check_not_system(Path::new("/devices")).is_ok());
    }

    #[test]
    fn paths_are_checked_before_anything_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let protected = [data.clone()];
        let check = |p: &Path| check_backup_path(p, &protected).map_err(|e| e.kind());
        assert_eq!(check(&tmp.path().join("new")), Ok(tmp.path().canonicalize().unwrap().join("new")));
        assert_eq!(check(Path::new("relative")), Err(ErrorKind::Validation));
        assert_eq!(check(&data.join("x")), Err(ErrorKind::Validation));
        assert_eq!(check(&data), Err(ErrorKind::Validation));
        assert_eq!(check(tmp.path()), Err(ErrorKind::Validation), "it holds the data directory");
        assert_eq!(check(&tmp.path().join("a/../new")), Err(ErrorKind::Validation));
        assert_eq!(check(Path::new("/")), Err(ErrorKind::Conflict));
    }
}
