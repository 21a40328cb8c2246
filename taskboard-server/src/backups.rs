//! Scheduled backups (`--backup-dir`, `--backup-every`, `--backup-keep`):
//! while the server serves, an archive of the board every so often,
//! the newest few kept.
//!
//! Each backup is the archive of `taskboard export` (one snapshot of the
//! store, so it is consistent on either backend while writes go on),
//! written under a hidden name (`.taskboard-….partial`), synced, and then
//! renamed to `taskboard-<UTC time>`: a directory with that name is
//! always whole. Leftovers of a backup cut short by a crash are removed
//! at the next one.

use std::path::{Path, PathBuf};
use std::time::Duration;

use taskboard_core::Board;
use taskboard_core::archive::ArchiveSummary;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Prefix of a finished backup's name; what follows sorts by time.
pub const PREFIX: &str = "taskboard-";
const PARTIAL_PREFIX: &str = ".taskboard-";
const PARTIAL_SUFFIX: &str = ".partial";

/// When and where backups are written.
#[derive(Debug, Clone)]
pub struct BackupSchedule {
    pub dir: PathBuf,
    pub every: Duration,
    /// How many of the newest backups are kept (at least 1).
    pub keep: usize,
}

/// What the backups did so far: how many were written, and the newest.
#[derive(Debug, Clone, Default)]
pub struct BackupState {
    pub written: u64,
    pub failed: u64,
    pub last: Option<PathBuf>,
}

/// Reads an interval: one or more of a whole number followed by `s`,
/// `m`, `h` or `d` (`90s`, `30m`, `1h30m`, `1d`); at least one second.
pub fn parse_every(text: &str) -> Result<Duration, String> {
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(format!("{text:?}: units are s, m, h and d (as in 30m or 1h30m)")),
        };
        let n: u64 = digits.parse().map_err(|_| format!("{text:?}: a number goes before each unit"))?;
        total =
            n.checked_mul(unit).and_then(|s| total.checked_add(s)).ok_or(format!("{text:?} is too long"))?;
        digits.clear();
    }
    if !digits.is_empty() {
        return Err(format!("{text:?}: the last number has no unit (s, m, h or d)"));
    }
    if total == 0 {
        return Err(format!("{text:?}: the interval is at least 1s"));
    }
    Ok(Duration::from_secs(total))
}

/// Checks the backup directory before serving: created when missing,
/// and outside the places the board keeps (a backup of the data
/// directory inside itself would grow without end).
pub(crate) fn prepare(schedule: &BackupSchedule, board: &Board) -> Result<(), String> {
    if schedule.keep == 0 {
        return Err("--backup-keep must be at least 1".into());
    }
    let shown = schedule.dir.display();
    std::fs::create_dir_all(&schedule.dir).map_err(|e| format!("backup directory {shown}: {e}"))?;
    let dir = std::fs::canonicalize(&schedule.dir).map_err(|e| format!("backup directory {shown}: {e}"))?;
    for place in board.data_dir().into_iter().chain([board.blob_dir()]) {
        if let Ok(place) = std::fs::canonicalize(place)
            && dir.starts_with(&place)
        {
            return Err(format!("backup directory {shown} lies inside the board's {}", place.display()));
        }
    }
    Ok(())
}

/// Runs the schedule until `shutdown`; a backup under way when it comes
/// is finished first.
pub(crate) fn spawn(
    board: Board,
    schedule: BackupSchedule,
    shutdown: CancellationToken,
) -> (tokio::task::JoinHandle<()>, watch::Receiver<BackupState>) {
    let (tx, rx) = watch::channel(BackupState::default());
    let task = tokio::spawn(async move {
        let mut next = tokio::time::Instant::now() + schedule.every;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep_until(next) => {}
            }
            // The next one counts from the start of this one, so backups
            // keep their rhythm; one that overran its slot is not doubled.
            next += schedule.every;
            let now = tokio::time::Instant::now();
            if next < now {
                next = now + schedule.every;
            }
            match backup_once(&board, &schedule).await {
                Ok((path, summary)) => {
                    tracing::info!(
                        path = %path.display(),
                        records = summary.records,
                        blobs = summary.blobs,
                        blob_bytes = summary.blob_bytes,
                        "backup written"
                    );
                    tx.send_modify(|s| {
                        s.written += 1;
                        s.last = Some(path);
                    });
                }
                Err(e) => {
                    tracing::error!(dir = %schedule.dir.display(), error = %e, "backup failed");
                    tx.send_modify(|s| s.failed += 1);
                }
            }
        }
    });
    (task, rx)
}

async fn backup_once(board: &Board, schedule: &BackupSchedule) -> Result<(PathBuf, ArchiveSummary), String> {
    let name = format!("{PREFIX}{}", stamp(jiff::Timestamp::now()));
    let dir = schedule.dir.clone();
    let partial = dir.join(format!("{PARTIAL_PREFIX}{}{PARTIAL_SUFFIX}", &name[PREFIX.len()..]));
    let final_path = dir.join(&name);
    let cleanup = dir.clone();
    tokio::task::spawn_blocking(move || remove_partials(&cleanup)).await.map_err(|e| e.to_string())?;
    let summary = board.export_archive(partial.clone(), None).await.map_err(|e| e.detail().to_string())?;
    let (keep, done) = (schedule.keep, final_path.clone());
    tokio::task::spawn_blocking(move || -> Result<(), String> {
        let finish = || -> std::io::Result<()> {
            sync_tree(&partial)?;
            std::fs::rename(&partial, &done)?;
            std::fs::File::open(&dir)?.sync_all()
        };
        if let Err(e) = finish() {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(format!("{}: {e}", done.display()));
        }
        prune(&dir, keep);
        Ok(())
    })
    .await
    .map_err(|e| e.to_string())??;
    Ok((final_path, summary))
}

/// `20261125T221530.123Z`: UTC, sortable as text, with milliseconds so
/// that close backups do not share a name.
fn stamp(t: jiff::Timestamp) -> String {
    let ms = t.subsec_millisecond();
    format!("{}.{ms:03}Z", t.strftime("%Y%m%dT%H%M%S"))
}

/// Syncs every file of a finished archive and its directories, so the
/// rename publishes only what is on disk.
fn sync_tree(path: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            sync_tree(&entry.path())?;
        } else {
            std::fs::File::open(entry.path())?.sync_all()?;
        }
    }
    std::fs::File::open(path)?.sync_all()
}

fn remove_partials(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(PARTIAL_PREFIX) && name.ends_with(PARTIAL_SUFFIX) {
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => tracing::warn!(path = %entry.path().display(), "removed an unfinished backup"),
                Err(e) => {
                    tracing::warn!(path = %entry.path().display(), %e, "cannot remove an unfinished backup")
                }
            }
        }
    }
}

/// The finished backups in `dir`, oldest first.
pub fn list(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX) && e.path().is_dir())
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Removes all but the newest `keep` backups; only names this schedule
/// writes are touched.
fn prune(dir: &Path, keep: usize) {
    let found = list(dir);
    let excess = found.len().saturating_sub(keep);
    for old in &found[..excess] {
        match std::fs::remove_dir_all(old) {
            Ok(()) => tracing::info!(path = %old.display(), "old backup removed"),
            Err(e) => tracing::warn!(path = %old.display(), %e, "cannot remove an old backup"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_every("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_every("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_every("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_every("45s"), Ok(Duration::from_secs(45)));
        for bad in ["", "0s", "10", "1x", "h", "1.5h", "-1h", "99999999999999999999d"] {
            assert!(parse_every(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pruning_keeps_the_newest_and_touches_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let names = [
            "taskboard-20261125T221530.009Z",
            "taskboard-20261125T221531.000Z",
            "taskboard-20261126T000000.000Z",
        ];
        for name in names.iter().rev() {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        std::fs::create_dir(dir.path().join("mine")).unwrap();
        std::fs::write(dir.path().join("taskboard-notes.txt"), "a file, not a backup").unwrap();
        prune(dir.path(), 2);
        assert_eq!(list(dir.path()), names[1..].iter().map(|n| dir.path().join(n)).collect::<Vec<_>>());
        assert!(dir.path().join("mine").exists() && dir.path().join("taskboard-notes.txt").exists());

        std::fs::create_dir(dir.path().join(".taskboard-20261126T000001.000Z.partial")).unwrap();
        remove_partials(dir.path());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
    }

    #[test]
    fn names_sort_by_time() {
        let a = stamp("2026-11-25T22:15:30.009Z".parse().unwrap());
        let b = stamp("2026-11-25T22:15:30.010Z".parse().unwrap());
        assert_eq!(a, "20261125T221530.009Z");
        assert!(a < b);
    }
}
