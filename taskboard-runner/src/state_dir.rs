//! The runner's state directory (docs/decisions.md, 20.o): pid files,
//! cached clones, workspaces and the agents' task files, which hold the
//! code the agents work on and what they were told. Readable by the
//! runner's user only: every directory the runner makes in it is `0700`
//! and every file it writes `0600`, set after creation so no umask
//! widens them (taskboard_core::private, as the board's data directory).
//! What git and the agents write inside clones and workspaces keeps the
//! modes they give it: the `0700` directories above keep others out,
//! and a workspace's scripts keep their execute bits.

use std::io::Write;
use std::path::Path;

use taskboard_core::private;

/// The directories the runner makes in the state directory.
const SUBDIRS: [&str; 4] = ["repos", "work", "pids", "answers"];

/// Makes the state directory, or tightens one made by an older runner or
/// by hand with wider modes: the directory, its four directories, and
/// what the runner made in those (one level, never into a clone or a
/// workspace; symbolic links are neither followed nor changed). Answers
/// how many entries were tightened.
pub fn open(state: &Path) -> std::io::Result<usize> {
    if !state.exists() {
        private::create_dir_all(state)?;
        return Ok(0);
    }
    let open = |d: &Path| !private::is_private_dir(d);
    if !open(state) && SUBDIRS.iter().map(|s| state.join(s)).all(|d| !d.exists() || !open(&d)) {
        // A private directory is trusted: the runner makes nothing wider.
        return Ok(0);
    }
    let mut changed = usize::from(tighten(state, private::DIR_MODE)?);
    for sub in SUBDIRS.map(|s| state.join(s)) {
        if !std::fs::symlink_metadata(&sub).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        changed += usize::from(tighten(&sub, private::DIR_MODE)?);
        for entry in std::fs::read_dir(&sub)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let mode = if kind.is_dir() {
                private::DIR_MODE
            } else if kind.is_file() {
                private::FILE_MODE
            } else {
                continue;
            };
            changed += usize::from(tighten(&entry.path(), mode)?);
        }
    }
    Ok(changed)
}

/// Sets `path`'s mode to `mode` unless it already is; true when changed.
fn tighten(path: &Path, mode: u32) -> std::io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() || meta.permissions().mode() & 0o7777 == mode {
        return Ok(false);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(true)
}

/// Makes `dir` (and its missing parents, which are in the state
/// directory) `0700`.
pub fn dir(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent()
        && !parent.exists()
    {
        self::dir(parent)?;
    }
    private::create_dir_all(dir)
}

/// Writes `text` to `path`, a file of mode `0600` (made so if it was
/// there before).
pub fn write(path: &Path, text: &[u8]) -> std::io::Result<()> {
    let mut file = private::open_or_create(path)?;
    file.set_len(0)?;
    file.write_all(text)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    fn set(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn what_the_runner_makes_is_private_and_an_open_state_directory_is_tightened_one_level_deep() {
        let tmp = std::env::temp_dir().join(format!("taskboard-state-dir-{}", uuid::Uuid::new_v4()));
        let state = tmp.join("a/state");
        assert_eq!(open(&state).unwrap(), 0);
        assert_eq!(mode(&state), 0o700);
        dir(&state.join("work/WEB-1-abc")).unwrap();
        write(&state.join("work/WEB-1-abc.md"), b"# WEB-1").unwrap();
        assert_eq!((mode(&state.join("work")), mode(&state.join("work/WEB-1-abc"))), (0o700, 0o700));
        assert_eq!(mode(&state.join("work/WEB-1-abc.md")), 0o600);
        set(&state.join("work/WEB-1-abc.md"), 0o644);
        write(&state.join("work/WEB-1-abc.md"), b"#").unwrap();
        assert_eq!(mode(&state.join("work/WEB-1-abc.md")), 0o600);
        assert_eq!(std::fs::read(state.join("work/WEB-1-abc.md")).unwrap(), b"#");
        assert_eq!(open(&state).unwrap(), 0, "a private directory is left as it is");

        // As an older runner left it under umask 022.
        std::fs::create_dir_all(state.join("pids")).unwrap();
        std::fs::write(state.join("pids/run"), b"1\n").unwrap();
        std::fs::create_dir_all(state.join("work/WEB-1-abc/bin")).unwrap();
        std::fs::write(state.join("work/WEB-1-abc/bin/tool"), b"").unwrap();
        for (p, m) in [("", 0o755), ("pids", 0o755), ("pids/run", 0o644), ("work/WEB-1-abc", 0o755)] {
            set(&state.join(p), m);
        }
        set(&state.join("work/WEB-1-abc/bin/tool"), 0o755);
        let outside = tmp.join("outside");
        std::fs::write(&outside, b"").unwrap();
        set(&outside, 0o644);
        std::os::unix::fs::symlink(&outside, state.join("work/link")).unwrap();
        assert_eq!(open(&state).unwrap(), 4);
        assert_eq!(
            (mode(&state), mode(&state.join("pids")), mode(&state.join("pids/run"))),
            (0o700, 0o700, 0o600)
        );
        assert_eq!(mode(&state.join("work/WEB-1-abc")), 0o700);
        assert_eq!(
            mode(&state.join("work/WEB-1-abc/bin/tool")),
            0o755,
            "a workspace's own files are its own"
        );
        assert_eq!(mode(&outside), 0o644, "links are not followed");

        // A private directory with an open subdirectory is tightened too.
        set(&state.join("pids"), 0o755);
        assert_eq!(open(&state).unwrap(), 1);
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
