//! The task as Markdown, as a command agent reads it: the agent's
//! prompt, the task, its steps, its dependencies and its latest comments.

use std::fmt::Write;

use taskboard_core::model::{Member, Message, Project, Task};
use taskboard_core::review::{Changes, Review, Side};
use taskboard_core::runs::Run;

/// Comments quoted, newest last.
pub const COMMENTS: u32 = 10;

/// What the Markdown is made of.
pub struct Brief<'a> {
    pub agent: &'a Member,
    pub task: &'a Task,
    pub project: &'a Project,
    /// The tasks it depends on.
    pub dependencies: &'a [Task],
    /// Newest first, as the board lists them.
    pub comments: &'a [Message],
    pub run: uuid::Uuid,
    pub branch: Option<&'a str>,
}

fn text_of<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

pub fn render(b: &Brief<'_>) -> String {
    let t = b.task;
    let mut md = String::new();
    if let Some(p) = &b.agent.agent_config.prompt {
        let _ = writeln!(md, "{}\n", p.as_str().trim_end());
    }
    let _ = writeln!(md, "# {}: {}\n", t.key, t.title);
    let _ = writeln!(md, "- Project: {} ({})", b.project.name, b.project.slug);
    let _ = writeln!(md, "- Status: {}", text_of(&t.status));
    let _ = writeln!(md, "- Priority: {}", text_of(&t.priority));
    if !t.labels.is_empty() {
        let _ = writeln!(md, "- Labels: {}", t.labels.join(", "));
    }
    if let Some(p) = &t.parent {
        let _ = writeln!(md, "- Part of: {}: {}", p.key, p.title);
    }
    let _ = writeln!(md, "- Run: {}", b.run);
    if let Some(branch) = b.branch {
        let _ = writeln!(md, "- Branch: {branch}");
    }
    if let Some(d) = t.description.as_deref().filter(|d| !d.trim().is_empty()) {
        let _ = writeln!(md, "\n## Description\n\n{}", d.trim_end());
    }
    if !t.steps.is_empty() {
        let _ = writeln!(md, "\n## Steps\n");
        for s in &t.steps {
            let _ = writeln!(md, "- [{}] {}", if s.done { "x" } else { " " }, s.title);
        }
    }
    if !b.dependencies.is_empty() {
        let _ = writeln!(md, "\n## Dependencies\n");
        for d in b.dependencies {
            let _ = writeln!(md, "- {}: {} ({})", d.key, d.title, text_of(&d.status));
        }
    }
    if !b.comments.is_empty() {
        let _ = writeln!(md, "\n## Latest comments\n");
        for c in b.comments.iter().rev() {
            let who = c.author.as_ref().map_or("system", |a| a.slug.as_str());
            let _ = writeln!(md, "**{who}** ({}):\n\n{}\n", c.created_at, c.content.trim_end());
        }
    }
    md
}

/// Lines of the diff shown on each side of a commented line.
const AROUND: usize = 3;

/// The review a round answers, as Markdown: its body, and each comment
/// with its path, line and the diff lines around it (from `diff`, the
/// task's changes the review was made on). A command agent reads it at
/// the end of its task and in `$TASKBOARD_REVIEW_FILE`.
pub fn review(review: &Review, diff: Option<&str>, branch: Option<&str>) -> String {
    let mut md = String::new();
    let who = review.author.slug.as_str();
    let _ = writeln!(md, "## Changes asked for (round {})\n", review.round + 1);
    let on = branch.map_or(String::new(), |b| format!(" on branch {b}"));
    let _ = writeln!(
        md,
        "{who} reviewed your work{on} and asks for changes. Make them on the same branch; what you \
         leave is committed and pushed when you end, and the task is reviewed again.\n"
    );
    if !review.body.trim().is_empty() {
        for line in review.body.trim_end().lines() {
            let _ = writeln!(md, "> {line}");
        }
        md.push('\n');
    }
    for c in &review.comments {
        let side = match c.side {
            Side::New => "new",
            Side::Old => "old",
        };
        let _ = writeln!(md, "### {}, line {} ({side} side)\n", c.path, c.line);
        for line in c.body.trim_end().lines() {
            let _ = writeln!(md, "> {line}");
        }
        md.push('\n');
        let around = diff.map(|d| around(d, &c.path, c.side, c.line)).unwrap_or_default();
        if around.is_empty() {
            let _ = writeln!(md, "The line read: `{}`\n", c.text);
        } else {
            let _ = writeln!(md, "```diff\n{around}```\n");
        }
    }
    md
}

/// The lines of `path`'s diff within [`AROUND`] lines of `line` on
/// `side`, as the diff shows them (`+`, `-` or a space first), the
/// commented one marked; empty when the diff does not show it.
pub fn around(diff: &str, path: &str, side: Side, line: u32) -> String {
    taskboard_core::review::lines_around(diff, path, side, line, AROUND)
}

/// What a run bringing the branch up to date after a failed landing is
/// told: why the landing failed, the base to merge, the files that
/// conflicted.
pub fn repair(landing: &Run, base: &str, branch: Option<&str>) -> String {
    let mut md = String::from("## Bring the branch up to date\n\n");
    let branch = branch.unwrap_or("the task's branch");
    let why = landing.stop_reason.as_deref().unwrap_or("the landing failed");
    let _ = writeln!(md, "Landing run {} could not bring {branch} onto the base: {why}\n", landing.id);
    let _ = writeln!(md, "- Base: {base}");
    if !landing.work.conflicts.is_empty() {
        let _ = writeln!(md, "- Conflicting files: {}", landing.work.conflicts.join(", "));
    }
    let _ = writeln!(
        md,
        "\nBring {branch} up to date with the base: merge `{base}` into it (or rebase it onto \
         `{base}`), resolve the conflicts so that the task's change still works, and commit. What \
         you leave is committed and pushed when you end; then the task can land again."
    );
    md
}

/// Most bytes of the diff in a reviewer's prompt; the whole diff is in
/// the `CHANGES.diff` file beside it.
pub const REVIEW_DIFF_BYTES: usize = 200_000;

/// What a reviewer agent reviews: the task's changes and how to file its
/// review (docs/decisions.md, 19.6).
pub fn to_review(task: &Task, changes: &Changes, server: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "\n## Changes to review\n");
    let _ = writeln!(
        md,
        "Branch {} at {} against {} (round {}).\n",
        changes.branch,
        changes.head_commit,
        changes.base_commit,
        task.review.round.max(1)
    );
    for f in &changes.files {
        let status = serde_json::to_value(f.status).ok().and_then(|v| v.as_str().map(String::from));
        let renamed = f.old_path.as_ref().map_or(String::new(), |o| format!(" (from {o})"));
        let _ = writeln!(
            md,
            "- {}{renamed}: {} +{} -{}",
            f.path,
            status.unwrap_or_default(),
            f.additions,
            f.deletions
        );
    }
    let mut diff = changes.diff.as_str();
    let cut = diff.len() > REVIEW_DIFF_BYTES;
    if cut {
        let end = diff.floor_char_boundary(REVIEW_DIFF_BYTES);
        diff = &diff[..diff[..end].rfind('\n').map_or(0, |i| i + 1)];
    }
    let _ = writeln!(md, "\n```diff\n{diff}```\n");
    if cut || changes.truncated {
        let _ =
            writeln!(md, "The diff above is cut; CHANGES.diff in your working directory holds all of it.\n");
    } else {
        let _ = writeln!(md, "CHANGES.diff in your working directory holds the same diff.\n");
    }
    let _ = writeln!(
        md,
        "## Your review\n\n\
         Review these changes against the task, then file exactly one review of {key}:\n\n\
         - with the board's MCP tool `review_submit` (task `{key}`), if you have it;\n\
         - else `POST {server}/api/v1/tasks/{id}/reviews` with the header \
         `Authorization: Bearer $TASKBOARD_TOKEN` and a JSON body \
         `{{\"verdict\": \"approve\" | \"request_changes\" | \"comment\", \"body\": \"...\", \
         \"comments\": [{{\"path\": \"...\", \"line\": N, \"side\": \"new\", \"body\": \"...\"}}]}}`.\n\n\
         A comment is on a line the diff shows: `line` counts on the new side (added and unchanged \
         lines) or, with `\"side\": \"old\"`, on the old side (removed lines). `request_changes` \
         sends the work back to its agent with your review; say what to change. Do not change the \
         code yourself.",
        key = task.key,
        id = task.id,
    );
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1,9 +1,9 @@
 1
 2
 3
 4
-five
+5
 6
 7
 8
 9
diff --git a/notes.txt b/notes.txt
new file mode 100644
--- /dev/null
+++ b/notes.txt
@@ -0,0 +1,3 @@
+one
+two
+three
";

    #[test]
    fn a_comment_shows_the_diff_lines_around_its_line_on_its_side() {
        let new = around(DIFF, "a.txt", Side::New, 5);
        assert_eq!(new, " 3\n 4\n-five\n+5  <- this line\n 6\n 7\n 8\n");
        let old = around(DIFF, "a.txt", Side::Old, 5);
        assert_eq!(old, " 2\n 3\n 4\n-five  <- this line\n+5\n 6\n 7\n");
        assert_eq!(around(DIFF, "notes.txt", Side::New, 2), "+one\n+two  <- this line\n+three\n");
        assert_eq!(around(DIFF, "notes.txt", Side::Old, 2), "");
        assert_eq!(around(DIFF, "a.txt", Side::New, 40), "");
        assert_eq!(around(DIFF, "missing.txt", Side::New, 1), "");
    }
}
