//! A run's changes as the board records them (docs/decisions.md, 19.2):
//! the files with their counts and the unified diff between two commits,
//! read from the runner's clone. The diff is cut at the board's cap (then
//! `truncated`), and binary files are listed, never inlined.

use std::collections::HashMap;
use std::path::Path;

use taskboard_core::Result;
use taskboard_core::review::{FileChange, FileStatus, MAX_CHANGED_FILES, MAX_DIFF_BYTES, NewChanges};

use super::git::{self, git};

/// What every diff here is read with, whatever the user's configuration
/// says: plain `a/` and `b/` prefixes (comments anchor to `+++ b/PATH`),
/// renames found, paths unquoted, no colours, no external tools.
const DIFF: [&str; 12] = [
    "-c",
    "core.quotePath=false",
    "-c",
    "diff.noprefix=false",
    "diff",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "-M",
];

/// The change from commit `from` to commit `to` on `branch`, in `dir` (a
/// clone or a worktree of it); `cap` bytes of diff at most.
pub(crate) async fn between(
    dir: &Path,
    from: &str,
    to: &str,
    branch: &str,
    cap: usize,
) -> Result<NewChanges> {
    let range = [from, to];
    let statuses = git(Some(dir), &[&DIFF[..], &["--name-status", "-z"], &range[..]].concat()).await?;
    let counts = git(Some(dir), &[&DIFF[..], &["--numstat", "-z"], &range[..]].concat()).await?;
    let mut files = files(&statuses, &counts);
    let mut truncated = files.len() > MAX_CHANGED_FILES;
    files.truncate(MAX_CHANGED_FILES);
    let args = [&DIFF[..], &["--unified=3"], &range[..]].concat();
    let (bytes, more) = git::capped(dir, &args, cap).await?;
    let diff = cut(String::from_utf8_lossy(&bytes).into_owned(), cap, more);
    truncated |= diff.1;
    Ok(NewChanges {
        base_commit: from.to_string(),
        head_commit: to.to_string(),
        branch: branch.to_string(),
        files,
        diff: diff.0,
        truncated,
    })
}

/// The task's change: `head` against where it left `base` (their merge
/// base, as `git diff base...head` shows it).
pub(crate) async fn of_task(dir: &Path, base: &str, head: &str, branch: &str) -> Result<NewChanges> {
    let from = git(Some(dir), &["merge-base", base, head]).await?;
    between(dir, &from, head, branch, MAX_DIFF_BYTES).await
}

/// A diff within `cap` bytes, ending with a whole line: a cut diff still
/// reads line by line. True when it was cut.
fn cut(mut diff: String, cap: usize, more: bool) -> (String, bool) {
    if !more && diff.len() <= cap {
        return (diff, false);
    }
    diff.truncate(diff.floor_char_boundary(cap));
    let end = diff.rfind('\n').map_or(0, |i| i + 1);
    diff.truncate(end);
    (diff, true)
}

/// The files of `--name-status -z` with the counts of `--numstat -z`
/// (`-` counts: a binary file).
fn files(statuses: &str, counts: &str) -> Vec<FileChange> {
    let mut by_path: HashMap<&str, (u64, u64, bool)> = HashMap::new();
    let mut fields = counts.split('\0');
    while let Some(head) = fields.next() {
        let mut parts = head.splitn(3, '\t');
        let (Some(add), Some(del), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        // A rename: the path is empty here, its old and new paths follow.
        let path = if path.is_empty() {
            let _old = fields.next();
            fields.next().unwrap_or("")
        } else {
            path
        };
        let binary = add == "-" || del == "-";
        by_path.insert(path, (add.parse().unwrap_or(0), del.parse().unwrap_or(0), binary));
    }
    let mut out = Vec::new();
    let mut fields = statuses.split('\0').filter(|f| !f.is_empty());
    while let Some(code) = fields.next() {
        let letter = code.chars().next().unwrap_or('M');
        let (old_path, path) = if matches!(letter, 'R' | 'C') {
            (fields.next().map(str::to_string), fields.next())
        } else {
            (None, fields.next())
        };
        let Some(path) = path else { break };
        let (additions, deletions, binary) = by_path.get(path).copied().unwrap_or_default();
        let status = match letter {
            _ if binary => FileStatus::Binary,
            'A' | 'C' => FileStatus::Added,
            'D' => FileStatus::Deleted,
            'R' => FileStatus::Renamed,
            _ => FileStatus::Modified,
        };
        let old_path = if letter == 'R' { old_path } else { None };
        out.push(FileChange { path: path.to_string(), old_path, status, additions, deletions });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_come_with_their_status_and_counts_and_binaries_are_marked() {
        let statuses =
            "M\0src/lib.rs\0A\0new.txt\0D\0gone.txt\0R087\0old name.rs\0new name.rs\0A\0logo.png\0";
        let counts = "3\t1\tsrc/lib.rs\x002\t0\tnew.txt\x000\t4\tgone.txt\x001\t1\t\0old name.rs\0new name.rs\0\
            -\t-\tlogo.png\0";
        let files = files(statuses, counts);
        let seen: Vec<(&str, Option<&str>, FileStatus, u64, u64)> = files
            .iter()
            .map(|f| (f.path.as_str(), f.old_path.as_deref(), f.status, f.additions, f.deletions))
            .collect();
        assert_eq!(
            seen,
            vec![
                ("src/lib.rs", None, FileStatus::Modified, 3, 1),
                ("new.txt", None, FileStatus::Added, 2, 0),
                ("gone.txt", None, FileStatus::Deleted, 0, 4),
                ("new name.rs", Some("old name.rs"), FileStatus::Renamed, 1, 1),
                ("logo.png", None, FileStatus::Binary, 0, 0),
            ]
        );
    }

    #[test]
    fn a_diff_over_its_cap_is_cut_after_a_whole_line() {
        let diff = "+one\n+two\n+three\n".to_string();
        assert_eq!(cut(diff.clone(), 100, false), (diff.clone(), false));
        assert_eq!(cut(diff.clone(), 11, true), ("+one\n+two\n".to_string(), true));
        assert_eq!(cut("+é\n+é\n".to_string(), 6, true), ("+é\n".to_string(), true));
        assert_eq!(cut(diff, 3, true), (String::new(), true));
    }
}
