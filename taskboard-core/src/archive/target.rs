//! Where an export or a backup writes: a directory taken only when empty
//! and removed again on failure, and the errors of writing there.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Makes `dir` (and its parents) unless it holds something.
pub(super) fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir)?;
        if entries.next().is_some() {
            return Err(Error::conflict(format!("{} exists and is not empty", dir.display())));
        }
    }
    crate::private::create_dir_all(dir)?;
    Ok(())
}

/// The directory an export writes into, and whether the export created
/// it, so that a failed export removes exactly what it made.
pub(super) struct ArchiveDir {
    pub path: PathBuf,
    created: bool,
}

impl ArchiveDir {
    /// Takes `dir` if it is an empty directory, or creates it (`0700`,
    /// with any missing parents).
    pub fn prepare(dir: &Path) -> Result<ArchiveDir> {
        let fail = |e| target_error(dir, e);
        match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.is_dir() || dir.is_dir() => {
                if std::fs::read_dir(dir).map_err(fail)?.next().is_some() {
                    return Err(Error::conflict(format!("path: {} exists and is not empty", dir.display())));
                }
                Ok(ArchiveDir { path: dir.to_path_buf(), created: false })
            }
            Ok(_) => Err(Error::conflict(format!("path: {} exists and is not a directory", dir.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                crate::private::create_dir_all(dir).map_err(fail)?;
                Ok(ArchiveDir { path: dir.to_path_buf(), created: true })
            }
            Err(e) => Err(fail(e)),
        }
    }

    /// Removes what an attempt wrote, keeping the directory.
    pub fn clear(&self) -> Result<()> {
        match std::fs::remove_file(self.path.join("board.jsonl")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
        match std::fs::remove_dir_all(self.path.join("blobs")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    /// Removes everything the export made.
    pub fn discard(&self) {
        let removed = if self.created {
            std::fs::remove_dir_all(&self.path).map_err(Error::from)
        } else {
            self.clear()
        };
        if let Err(e) = removed {
            tracing::warn!(path = %self.path.display(), %e, "could not remove a failed export");
        }
    }
}

/// The error of writing a backup at `path`: the causes a client can get
/// by choosing the path are 422 or 409; any other is the server's.
pub(crate) fn target_error(path: &Path, e: std::io::Error) -> Error {
    use std::io::ErrorKind as K;
    let invalid = |problem: String| Error::invalid("path", problem);
    let p = path.display();
    match e.kind() {
        K::AlreadyExists => Error::conflict(format!("path: {p} already exists")),
        K::StorageFull | K::QuotaExceeded | K::FileTooLarge => {
            Error::conflict(format!("path: no room left for the backup at {p}"))
        }
        K::PermissionDenied => invalid(format!("the server may not write to {p}")),
        K::ReadOnlyFilesystem => invalid(format!("{p} is on a read-only file system")),
        K::NotFound => invalid(format!("a directory on the way to {p} does not exist")),
        K::NotADirectory => invalid(format!("a part of {p} is not a directory")),
        K::IsADirectory => Error::conflict(format!("path: {p} is a directory")),
        K::InvalidFilename | K::InvalidInput => invalid(format!("{p} is not a valid file name there")),
        K::CrossesDevices | K::Unsupported => invalid(format!("{p} cannot hold a backup: {e}")),
        _ => Error::internal(format!("writing a backup at {p}: {e}")),
    }
}
