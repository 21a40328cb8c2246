//! The words of review and land (docs/rules.md, review and land): an
//! agent's changes as its runner records them, reviews with line
//! comments, and the landing of a branch, as the API shows them, with the
//! reading of a unified diff that anchors a comment to its line. The
//! rules are in the core (`board::changes`, `board::reviews`,
//! `board::landing`), which keeps its records of them in its own
//! `review` module.

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
pub use crate::landing::*;
use crate::model::MemberRef;

/// Largest diff a change set holds (2 MB); a runner cuts a longer one and
/// says so with `truncated`.
pub const MAX_DIFF_BYTES: usize = 2 * 1000 * 1000;
/// Most files a change set lists.
pub const MAX_CHANGED_FILES: usize = 20_000;
/// Longest review body and comment, in bytes.
pub const MAX_REVIEW_TEXT: usize = 64 * 1024;
/// Most line comments in one review.
pub const MAX_REVIEW_COMMENTS: usize = 500;
/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
    /// A binary file: listed, never inlined in the diff.
    Binary,
}

/// One file of a change set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChange {
    pub path: String,
    /// The path before a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub status: FileStatus,
    pub additions: u64,
    pub deletions: u64,
}

/// A change set as a runner reports it: the branch against a base commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NewChanges {
    /// The commit the change is measured from (the base, or for a run the
    /// branch's head before it).
    pub base_commit: String,
    pub head_commit: String,
    pub branch: String,
    pub files: Vec<FileChange>,
    /// Unified, 3 lines of context; at most 2 MB.
    pub diff: String,
    /// The diff was cut at its cap; `files` still lists every file.
    #[serde(default)]
    pub truncated: bool,
}

/// The body of `POST /runs/{id}/changes`: the task's whole change against
/// its base, and this run's own (its round's) change.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChangesReport {
    pub task: NewChanges,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<NewChanges>,
}

/// A change set as the board serves it, without the repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Changes {
    pub base_commit: String,
    pub head_commit: String,
    pub branch: String,
    pub files: Vec<FileChange>,
    pub diff: String,
    pub truncated: bool,
    /// The run that recorded it.
    pub run_id: Uuid,
    pub recorded_at: Timestamp,
}

impl Changes {
    pub fn summary(&self) -> ChangesSummary {
        ChangesSummary {
            branch: self.branch.clone(),
            head_commit: self.head_commit.clone(),
            files: self.files.len() as u64,
            additions: self.files.iter().map(|f| f.additions).sum(),
            deletions: self.files.iter().map(|f| f.deletions).sum(),
        }
    }
}

impl NewChanges {
    /// Checks a reported change set: names and commits present, the diff
    /// within its cap, the counts and files within bounds.
    pub fn checked(self, field: &str) -> Result<NewChanges> {
        for (name, value, max) in [
            ("base_commit", &self.base_commit, 100),
            ("head_commit", &self.head_commit, 100),
            ("branch", &self.branch, 250),
        ] {
            if value.trim().is_empty() || value.len() > max {
                return Err(Error::invalid(&format!("{field}.{name}"), format!("must be 1 to {max} bytes")));
            }
        }
        if self.diff.len() > MAX_DIFF_BYTES {
            return Err(Error::invalid(
                &format!("{field}.diff"),
                format!(
                    "must be at most {MAX_DIFF_BYTES} bytes (cut it and set truncated), got {}",
                    self.diff.len()
                ),
            ));
        }
        if self.files.len() > MAX_CHANGED_FILES {
            return Err(Error::invalid(
                &format!("{field}.files"),
                format!("must list at most {MAX_CHANGED_FILES} files, got {}", self.files.len()),
            ));
        }
        for (i, f) in self.files.iter().enumerate() {
            if f.path.is_empty() || f.path.len() > 4096 || f.path.contains('\0') {
                return Err(Error::invalid(&format!("{field}.files[{i}].path"), "must be 1 to 4096 bytes"));
            }
        }
        Ok(self)
    }

    pub fn recorded(self, run_id: Uuid, at: Timestamp) -> Changes {
        Changes {
            base_commit: self.base_commit,
            head_commit: self.head_commit,
            branch: self.branch,
            files: self.files,
            diff: self.diff,
            truncated: self.truncated,
            run_id,
            recorded_at: at,
        }
    }
}

/// A reviewer's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    RequestChanges,
    Comment,
}

/// Which side of the diff a comment's line number counts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The line as the branch has it (added or context lines).
    #[default]
    New,
    /// The line as the base had it (removed or context lines).
    Old,
}

/// A comment on one line of the diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NewReviewComment {
    pub path: String,
    /// The line's number on its side, from 1.
    pub line: u32,
    #[serde(default)]
    pub side: Side,
    pub body: String,
}

/// The body of `POST /tasks/{id}/reviews`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewReview {
    pub verdict: Verdict,
    /// What the reviewer says of the whole change (may be empty with
    /// comments).
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub comments: Vec<NewReviewComment>,
}

/// A line comment as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewComment {
    pub path: String,
    pub line: u32,
    pub side: Side,
    pub body: String,
    /// The commented line as it read when the comment was made.
    pub text: String,
    /// The line changed (or left the diff) in a later round.
    pub outdated: bool,
}

/// A review as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Review {
    pub id: Uuid,
    pub task_id: Uuid,
    pub author: MemberRef,
    pub verdict: Verdict,
    pub body: String,
    pub comments: Vec<ReviewComment>,
    pub head_commit: String,
    pub round: u32,
    pub created_at: Timestamp,
}

/// The body of `POST /tasks/{id}/merge`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct MergeRequest {
    /// `merge` (default), `squash` or `rebase`.
    #[serde(default)]
    pub method: MergeMethod,
}

/// The lines of a unified diff, by file and side: what a comment anchors
/// to. Added and context lines count on the new side, removed and context
/// lines on the old.
#[derive(Debug, Default)]
pub struct DiffLines<'a> {
    lines: std::collections::HashMap<(&'a str, Side, u32), &'a str>,
}

/// One line of a hunk of a unified diff: its file, which hunk, its
/// number on each side it stands on, and the line as the diff shows it
/// (`+`, `-` or a space first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HunkLine<'a> {
    pub path: &'a str,
    /// Counts the hunks of the whole diff from 0.
    pub hunk: usize,
    pub old: Option<u32>,
    pub new: Option<u32>,
    pub line: &'a str,
}

impl HunkLine<'_> {
    /// The line's number on `side`, if it stands there.
    pub fn number(&self, side: Side) -> Option<u32> {
        match side {
            Side::New => self.new,
            Side::Old => self.old,
        }
    }
}

/// The lines of the hunks of a unified diff as `git diff` writes it
/// (`diff --git`, `---`, `+++`, `@@ -a,b +c,d @@` hunks), in order. A
/// deleted file is named by its old path. What it cannot read is skipped.
pub fn hunk_lines(diff: &str) -> Vec<HunkLine<'_>> {
    let mut out = Vec::new();
    let (mut path, mut old, mut new): (Option<&str>, u32, u32) = (None, 0, 0);
    let mut old_path: Option<&str> = None;
    let (mut in_hunk, mut hunks) = (false, 0usize);
    for line in diff.lines() {
        if line.starts_with("diff --git ") {
            path = None;
            old_path = None;
            in_hunk = false;
        } else if !in_hunk && let Some(p) = line.strip_prefix("+++ ") {
            path = p.strip_prefix("b/").or(Some(p)).filter(|p| *p != "/dev/null").or(old_path);
        } else if !in_hunk && let Some(p) = line.strip_prefix("--- ") {
            old_path = p.strip_prefix("a/").or(Some(p)).filter(|p| *p != "/dev/null");
        } else if let Some(rest) = line.strip_prefix("@@ ") {
            let mut parts = rest.split(' ');
            let start = |s: Option<&str>, sign: char| -> u32 {
                s.and_then(|s| s.strip_prefix(sign))
                    .and_then(|s| s.split(',').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0)
            };
            old = start(parts.next(), '-');
            new = start(parts.next(), '+');
            in_hunk = true;
            hunks += 1;
        } else if in_hunk && let Some(p) = path {
            let (o, n) = match line.as_bytes().first() {
                Some(b'+') => (None, Some(new)),
                Some(b'-') => (Some(old), None),
                Some(b' ') => (Some(old), Some(new)),
                Some(b'\\') => continue,
                _ => {
                    in_hunk = false;
                    continue;
                }
            };
            old += u32::from(o.is_some());
            new += u32::from(n.is_some());
            out.push(HunkLine { path: p, hunk: hunks - 1, old: o, new: n, line });
        }
    }
    out
}

/// The lines of `path`'s diff within `context` lines of `line` on `side`
/// (in its hunk), as the diff shows them, the line itself marked
/// `  <- this line`; empty when the diff does not show it. What a round
/// sent back shows of each comment.
pub fn lines_around(diff: &str, path: &str, side: Side, line: u32, context: usize) -> String {
    let lines: Vec<HunkLine<'_>> = hunk_lines(diff).into_iter().filter(|l| l.path == path).collect();
    let Some(at) = lines.iter().position(|l| l.number(side) == Some(line)) else { return String::new() };
    let hunk = lines[at].hunk;
    let same: Vec<usize> = (0..lines.len()).filter(|i| lines[*i].hunk == hunk).collect();
    let pos = same.iter().position(|i| *i == at).unwrap_or(0);
    let from = pos.saturating_sub(context);
    let to = (pos + context + 1).min(same.len());
    let mut out = String::new();
    for (k, i) in same[from..to].iter().enumerate() {
        out.push_str(lines[*i].line);
        if from + k == pos {
            out.push_str("  <- this line");
        }
        out.push('\n');
    }
    out
}

impl<'a> DiffLines<'a> {
    /// Reads a unified diff (see [`hunk_lines`]).
    pub fn parse(diff: &'a str) -> DiffLines<'a> {
        let mut out = DiffLines::default();
        for l in hunk_lines(diff) {
            let text = &l.line[1..];
            if let Some(n) = l.new {
                out.lines.insert((l.path, Side::New, n), text);
            }
            if let Some(o) = l.old {
                out.lines.insert((l.path, Side::Old, o), text);
            }
        }
        out
    }

    /// The text of `line` of `path` on `side`, if the diff shows it.
    pub fn line(&self, path: &str, side: Side, line: u32) -> Option<&'a str> {
        self.lines.get(&(path, side, line)).copied()
    }
}

/// Why `name` cannot be a branch a runner lands on, by git's rules for a
/// reference name (`git check-ref-format refs/heads/<name>`), and none
/// that starts with `-` (which git's commands would read as an option).
/// None for a good name.
pub fn branch_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() || name == "@" {
        return Some("a branch needs a name");
    }
    if name.starts_with('-') {
        return Some("a branch name cannot start with '-'");
    }
    if let Some(c) = name.chars().find(|c| c.is_ascii_control() || " ~^:?*[\\".contains(*c)) {
        return Some(if c == ' ' {
            "a branch name cannot hold spaces"
        } else if c.is_ascii_control() {
            "a branch name cannot hold control characters"
        } else {
            "a branch name cannot hold ~ ^ : ? * [ or \\"
        });
    }
    if name.contains("..") || name.contains("@{") {
        return Some("a branch name cannot hold '..' or '@{'");
    }
    if name.ends_with('.') {
        return Some("a branch name cannot end with '.'");
    }
    let bad_part = |p: &str| p.is_empty() || p.starts_with('.') || p.ends_with(".lock");
    if name.split('/').any(bad_part) {
        return Some(
            "each part of a branch name between '/' is non-empty, starts with no '.' and ends with no '.lock'",
        );
    }
    None
}

crate::wire!(Changes, ChangesReport, Review, NewReview, MergeRequest);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_follow_gits_rules_for_references() {
        for good in ["main", "release/2.0", "feature/x-y_z", "v1.2", "héllo", "a@b"] {
            assert_eq!(branch_name_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "@",
            "-main",
            "--upload-pack=x",
            "a b",
            "a\tb",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[1]",
            "a\\b",
            "a..b",
            "a@{1}",
            "a.",
            "/a",
            "a/",
            "a//b",
            ".a",
            "a/.b",
            "a.lock",
            "a/b.lock/c",
        ] {
            assert!(branch_name_problem(bad).is_some(), "{bad:?}");
        }
    }

    const DIFF: &str = "diff --git a/src/lib.rs b/src/lib.rs
index 1111111..2222222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,4 @@
 fn a() {}
-fn b() {}
+fn b() -> u8 { 1 }
+fn c() {}
 fn d() {}
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
";

    #[test]
    fn a_diff_is_read_line_by_line_on_both_sides() {
        let lines = DiffLines::parse(DIFF);
        assert_eq!(lines.line("src/lib.rs", Side::New, 1), Some("fn a() {}"));
        assert_eq!(lines.line("src/lib.rs", Side::New, 2), Some("fn b() -> u8 { 1 }"));
        assert_eq!(lines.line("src/lib.rs", Side::New, 3), Some("fn c() {}"));
        assert_eq!(lines.line("src/lib.rs", Side::New, 4), Some("fn d() {}"));
        assert_eq!(lines.line("src/lib.rs", Side::Old, 2), Some("fn b() {}"));
        assert_eq!(lines.line("src/lib.rs", Side::Old, 3), Some("fn d() {}"));
        assert_eq!(lines.line("new.txt", Side::New, 2), Some("world"));
        assert_eq!(lines.line("new.txt", Side::New, 3), None);
        assert_eq!(lines.line("src/lib.rs", Side::New, 9), None);
        let deleted = "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n";
        let lines = DiffLines::parse(deleted);
        assert_eq!(
            lines.line("old.txt", Side::Old, 2),
            Some("two"),
            "a deleted file's lines count on the old side"
        );
    }
}
