//! Files and directories readable by their owner only.
//!
//! The data directory holds password and token hashes, the JWT secret and
//! every file members uploaded, and an archive holds the same. So every
//! directory the board creates is `0700` and every file `0600`, set
//! explicitly after creation so the process umask neither widens nor
//! narrows them. An older data directory is tightened when it is opened
//! ([`tighten_tree`]). Elsewhere than on Unix these are plain creations.

use std::fs::File;
use std::io;
use std::path::Path;

/// Mode of every directory the board creates.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file the board creates.
pub const FILE_MODE: u32 = 0o600;

/// Creates one directory (its parent must exist), mode `0700`.
pub fn create_dir(path: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(DIR_MODE);
    }
    builder.create(path)?;
    set_mode(path, DIR_MODE)
}

/// Creates a directory and its missing parents; the directory itself
/// (created now or not) ends up `0700`, parents are left to the umask.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)?;
    }
    match create_dir(path) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => set_mode(path, DIR_MODE),
        other => other,
    }
}

/// Creates a new file (never an existing one), mode `0600`, for writing.
pub fn create_file(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    open_private(&mut options, path)
}

/// Opens a file for reading and writing, creating it `0600` if missing;
/// an existing file is tightened to `0600` and left as it is otherwise.
pub fn open_or_create(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    open_private(&mut options, path)
}

fn open_private(options: &mut std::fs::OpenOptions, path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(FILE_MODE);
    }
    let file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if file.metadata()?.permissions().mode() & 0o7777 != FILE_MODE
            && let Err(e) = file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
        {
            refused(path, &e);
        }
    }
    Ok(file)
}

/// A file system that keeps no Unix permissions (some network and
/// foreign mounts) refuses to change them; the board still works there.
fn refused(path: &Path, e: &io::Error) {
    tracing::warn!(path = %path.display(), %e, "could not restrict the permissions");
}

/// Copies `from` into a new file `to`, mode `0600`; returns the bytes
/// copied. The copy is not synced.
pub fn copy_file(from: &Path, to: &Path) -> io::Result<u64> {
    let mut source = File::open(from)?;
    let mut target = create_file(to)?;
    let result = io::copy(&mut source, &mut target);
    if result.is_err() {
        drop(target);
        let _ = std::fs::remove_file(to);
    }
    result
}

/// Sets the permission bits of `path`, unless it is a symbolic link.
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    if let Err(e) = tighten(path, mode) {
        if e.kind() == io::ErrorKind::NotFound {
            return Err(e);
        }
        refused(path, &e);
    }
    Ok(())
}

/// Files of the data directory besides the blob store.
const DATA_FILES: &[&str] = &["board.redb", "jwt_secret"];

/// Creates the data directory if it is missing, private; an existing one
/// that is not `0700`, or whose `blobs/` is not, was written before this
/// rule (or by hand) and is tightened: the directory, the board's files
/// in it and the whole blob store. What the board did not write there is
/// left alone, so a data directory pointed at the wrong place (a home
/// directory) does not have every file below it changed. A directory
/// already private is trusted: the board creates nothing with other
/// modes, and walking every blob at each start would cost time.
pub fn open_data_dir(dir: &Path) -> io::Result<()> {
    if !dir.exists() {
        return create_dir_all(dir);
    }
    let blobs = dir.join("blobs");
    if !is_private_dir(dir) || (blobs.exists() && !is_private_dir(&blobs)) {
        match tighten_data_dir(dir) {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(dir = %dir.display(), changed = n, "restricted the data directory to its owner")
            }
            Err(e) => refused(dir, &e),
        }
    }
    Ok(())
}

fn tighten_data_dir(dir: &Path) -> io::Result<usize> {
    let dir = std::fs::canonicalize(dir)?;
    let mut changed = usize::from(tighten(&dir, DIR_MODE)?);
    for name in DATA_FILES {
        let path = dir.join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            changed += usize::from(tighten(&path, FILE_MODE)?);
        }
    }
    let blobs = dir.join("blobs");
    if std::fs::symlink_metadata(&blobs).is_ok_and(|m| m.is_dir()) {
        changed += tighten_tree(&blobs)?;
    }
    Ok(changed)
}

/// Whether `path` is a directory with exactly mode `0700` (always true
/// elsewhere than on Unix).
pub fn is_private_dir(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o7777 == DIR_MODE)
    }
    #[cfg(not(unix))]
    {
        path.is_dir()
    }
}

/// Tightens `dir` (a symbolic link to a directory counts as one) and
/// everything under it: directories to `0700`, regular files to `0600`.
/// Symbolic links inside are neither followed nor changed. Returns how
/// many entries were changed.
pub fn tighten_tree(dir: &Path) -> io::Result<usize> {
    let mut changed = 0;
    let mut stack = vec![std::fs::canonicalize(dir)?];
    while let Some(d) = stack.pop() {
        changed += usize::from(tighten(&d, DIR_MODE)?);
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                changed += usize::from(tighten(&entry.path(), FILE_MODE)?);
            }
        }
    }
    Ok(changed)
}

fn tighten(path: &Path, mode: u32) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::symlink_metadata(path)?;
        if !meta.file_type().is_symlink() && meta.permissions().mode() & 0o7777 != mode {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
            return Ok(true);
        }
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(false)
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn created_entries_are_private_and_old_ones_are_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a");
        create_dir_all(&dir).unwrap();
        create_file(&dir.join("f")).unwrap();
        assert_eq!((mode(&dir), mode(&dir.join("f"))), (0o700, 0o600));
        assert_eq!(copy_file(&dir.join("f"), &dir.join("g")).unwrap(), 0);
        assert_eq!(mode(&dir.join("g")), 0o600);

        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::set_permissions(dir.join("sub"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("sub/old"), b"x").unwrap();
        std::fs::set_permissions(dir.join("sub/old"), std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A link to a file outside is left alone, and so is its target.
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, b"y").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
        assert!(!is_private_dir(&dir));
        assert_eq!(tighten_tree(&dir).unwrap(), 3);
        assert!(is_private_dir(&dir));
        assert_eq!((mode(&dir.join("sub")), mode(&dir.join("sub/old"))), (0o700, 0o600));
        assert_eq!(mode(&outside), 0o644);
        assert_eq!(tighten_tree(&dir).unwrap(), 0);
    }
}
