//! What an import or a restore reads: the archive's own files and
//! nothing else (docs/decisions.md 20.u).
//!
//! An archive may come from anywhere, and the board serves what it
//! restores to whoever may download it, so a restore reads only regular
//! files that lie in the archive itself: `board.jsonl`, and under
//! `blobs/` a file per storage name (32 hexadecimal digits, so no name
//! is absolute or climbs out with `..`). A symbolic link (the archive
//! directory itself excepted: the person restoring names it), a hard
//! link to a file elsewhere (a file with more than one name), a device,
//! a FIFO or a socket is refused with the line that names it, before
//! anything of the board is written past that line; a refused restore
//! leaves nothing behind ([`Board::import_archive_into`]). Each file is
//! checked without following links, then opened and checked again to be
//! the very file checked, so it cannot be swapped for a link in between.
//!
//! [`Board::import_archive_into`]: crate::Board::import_archive_into

use std::fs::{File, Metadata};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A file of the archive as checked: its device and inode, which the
/// file opened later must still have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Checked {
    dev: u64,
    ino: u64,
}

fn refuse(what: &str, path: &Path, why: &str) -> Error {
    Error::bad_request(format!(
        "{what} {} {why}; an archive holds only its own regular files, so nothing was restored",
        path.display()
    ))
}

/// Why `meta` (read without following links) is not a file an archive
/// may hold, if it is not.
fn not_own_file(meta: &Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Some("is a symbolic link");
    }
    if !kind.is_file() {
        return Some(if kind.is_dir() {
            "is a directory"
        } else {
            "is not a regular file (a device, a FIFO or a socket)"
        });
    }
    if links(meta) > 1 {
        return Some(
            "has other names (a hard link), so it may be a file outside the archive (a copy made with \
             `cp -r` has none)",
        );
    }
    None
}

#[cfg(unix)]
fn links(meta: &Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
fn links(_: &Metadata) -> u64 {
    1
}

#[cfg(unix)]
fn identity(meta: &Metadata) -> Checked {
    use std::os::unix::fs::MetadataExt;
    Checked { dev: meta.dev(), ino: meta.ino() }
}

#[cfg(not(unix))]
fn identity(_: &Metadata) -> Checked {
    Checked { dev: 0, ino: 0 }
}

fn lstat(what: &str, path: &Path) -> Result<Metadata> {
    std::fs::symlink_metadata(path).map_err(|e| Error::bad_request(format!("{what} {}: {e}", path.display())))
}

/// Checks a file of the archive without following links.
fn check_file(what: &str, path: &Path) -> Result<Checked> {
    let meta = lstat(what, path)?;
    match not_own_file(&meta) {
        Some(why) => Err(refuse(what, path, why)),
        None => Ok(identity(&meta)),
    }
}

/// Opens a file checked before, refusing it when it is no longer that
/// file.
fn open_checked(what: &str, path: &Path, checked: Checked) -> Result<File> {
    let file = File::open(path).map_err(|e| Error::bad_request(format!("{what} {}: {e}", path.display())))?;
    let meta = file.metadata()?;
    if identity(&meta) != checked || !meta.is_file() || links(&meta) > 1 {
        return Err(refuse(what, path, "changed while it was being restored"));
    }
    Ok(file)
}

/// The archive's record file, opened once checked.
pub(super) fn open_records(archive: &Path) -> Result<File> {
    let path = archive.join("board.jsonl");
    let checked = check_file("the archive's record file", &path)?;
    open_checked("the archive's record file", &path, checked)
}

/// The file contents of an archive, checked as the records name them.
pub(super) struct Blobs {
    dir: PathBuf,
    /// Whether `blobs/` itself was found a directory of the archive.
    dir_checked: bool,
}

impl Blobs {
    pub fn of(archive: &Path) -> Blobs {
        Blobs { dir: archive.join("blobs"), dir_checked: false }
    }

    /// Checks the file a record at `line` names by its storage name.
    pub fn check(&mut self, line: usize, name: &str) -> Result<Checked> {
        if name.len() != 32 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::bad_request(format!(
                "archive line {line}: the file {name:?} is not one of the archive's own (a storage name \
                 is 32 hexadecimal digits), so nothing was restored"
            )));
        }
        if !self.dir_checked {
            let meta = lstat(&format!("archive line {line}: the directory"), &self.dir)?;
            if !meta.file_type().is_dir() {
                let why =
                    if meta.file_type().is_symlink() { "is a symbolic link" } else { "is not a directory" };
                return Err(refuse(&format!("archive line {line}: the directory"), &self.dir, why));
            }
            self.dir_checked = true;
        }
        check_file(&format!("archive line {line}: the file"), &self.dir.join(name))
    }

    /// Opens a file checked by [`Blobs::check`].
    pub fn open(&self, name: &str, checked: Checked) -> Result<File> {
        open_checked("the archive's file", &self.dir.join(name), checked)
    }

    /// Copies a file checked by [`Blobs::check`] into a new private file
    /// `to`; the bytes copied. A failed copy leaves no file at `to`.
    pub fn copy(&self, name: &str, checked: Checked, to: &Path) -> Result<u64> {
        let mut from = self.open(name, checked)?;
        let mut target = crate::private::create_file(to)?;
        let copied = std::io::copy(&mut from, &mut target);
        if copied.is_err() {
            drop(target);
            let _ = std::fs::remove_file(to);
        }
        copied.map_err(|e| Error::bad_request(format!("file {name} of the archive: {e}")))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    const NAME: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn only_the_archives_own_regular_files_are_read() {
        let tmp = tempfile::tempdir().unwrap();
        let archive = tmp.path().join("archive");
        std::fs::create_dir_all(archive.join("blobs")).unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, b"secret").unwrap();
        let mut blobs = Blobs::of(&archive);
        let detail = |r: Result<Checked>| r.unwrap_err().detail().to_string();

        std::fs::write(archive.join("blobs").join(NAME), b"mine").unwrap();
        let checked = blobs.check(2, NAME).unwrap();
        assert!(blobs.open(NAME, checked).is_ok());

        for bad in ["../../outside", "/etc/passwd", "0123456789ABCDEF0123456789abcde/"] {
            assert!(detail(blobs.check(3, bad)).contains("not one of the archive's own"), "{bad}");
        }
        let link = "11111111111111111111111111111111";
        std::os::unix::fs::symlink(&outside, archive.join("blobs").join(link)).unwrap();
        assert!(detail(blobs.check(4, link)).contains("symbolic link"));
        let hard = "22222222222222222222222222222222";
        std::fs::hard_link(&outside, archive.join("blobs").join(hard)).unwrap();
        assert!(detail(blobs.check(5, hard)).contains("hard link"));
        let dir = "33333333333333333333333333333333";
        std::fs::create_dir(archive.join("blobs").join(dir)).unwrap();
        assert!(detail(blobs.check(6, dir)).contains("directory"));

        // Swapped for a link once checked: the opened file is not the one checked.
        std::fs::remove_file(archive.join("blobs").join(NAME)).unwrap();
        std::os::unix::fs::symlink(&outside, archive.join("blobs").join(NAME)).unwrap();
        assert!(blobs.open(NAME, checked).unwrap_err().detail().contains("changed"));
    }

    #[test]
    fn a_linked_blobs_directory_or_record_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join(NAME), b"x").unwrap();
        std::fs::write(elsewhere.join("board.jsonl"), b"{}").unwrap();
        let archive = tmp.path().join("archive");
        std::fs::create_dir(&archive).unwrap();
        std::os::unix::fs::symlink(&elsewhere, archive.join("blobs")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("board.jsonl"), archive.join("board.jsonl")).unwrap();
        let e = Blobs::of(&archive).check(2, NAME).unwrap_err();
        assert!(e.detail().contains("symbolic link"), "{}", e.detail());
        let e = open_records(&archive).unwrap_err();
        assert!(e.detail().contains("record file") && e.detail().contains("symbolic link"), "{}", e.detail());
    }
}
