//! `taskboard review …`, `task merge` and `task discard`.

use std::fmt::Write as _;

use taskboard_core::api::{CreateReview, GetTaskChanges, ListReviews};
use taskboard_core::review::{Changes, NewReview, NewReviewComment, Review, Side, Verdict};
use taskboard_core::{Error, Perform, Result};

use crate::cli::ReviewCmd;
use crate::output::{Out, colour, coloured_diff, short_commit};

/// `PATH:LINE=TEXT` or `PATH:LINE:old=TEXT`, as a line comment.
pub(crate) fn line_comment(spec: &str) -> Result<NewReviewComment> {
    let bad = || {
        Error::invalid(
            "--comment",
            format!("{spec:?} is not PATH:LINE=TEXT (or PATH:LINE:old=TEXT for a removed line)"),
        )
    };
    let (place, body) = spec.split_once('=').ok_or_else(bad)?;
    let (place, side) = match place.strip_suffix(":old") {
        Some(p) => (p, Side::Old),
        None => (place.strip_suffix(":new").unwrap_or(place), Side::New),
    };
    let (path, line) = place.rsplit_once(':').ok_or_else(bad)?;
    let line: u32 = line.parse().map_err(|_| bad())?;
    if path.is_empty() || body.trim().is_empty() {
        return Err(bad());
    }
    Ok(NewReviewComment { path: path.to_string(), line, side, body: body.to_string() })
}

pub(super) async fn review<B: Perform>(b: &B, c: ReviewCmd, out: Out) -> Result<()> {
    let (task, verdict, body, specs) = match c {
        ReviewCmd::Show { task, files } => return show(b, &task, files, out).await,
        ReviewCmd::Approve { task, body, comments } => (task, Verdict::Approve, body, comments),
        ReviewCmd::RequestChanges { task, body, comments } => (task, Verdict::RequestChanges, body, comments),
        ReviewCmd::Comment { task, body, comments } => (task, Verdict::Comment, body, comments),
    };
    let comments = specs.iter().map(|s| line_comment(s)).collect::<Result<Vec<_>>>()?;
    let t = b.find_task(&task).await?;
    let review = b.call::<CreateReview>(t.id, (), NewReview { verdict, body, comments }).await?;
    let said = match verdict {
        Verdict::Approve => format!("approved {} (round {})", t.key, review.round),
        Verdict::RequestChanges => {
            format!("asked for changes on {}: its agent gets round {}", t.key, review.round + 1)
        }
        Verdict::Comment => format!("commented on {} (round {})", t.key, review.round),
    };
    out.done(&review, &said);
    Ok(())
}

async fn show<B: Perform>(b: &B, task: &str, files_only: bool, out: Out) -> Result<()> {
    let t = b.find_task(task).await?;
    let changes = b.call::<GetTaskChanges>(t.id, (), ()).await?;
    let reviews = b.call::<ListReviews>(t.id, (), ()).await?;
    if out.json {
        out.done(&serde_json::json!({"changes": changes, "reviews": reviews}), "");
        return Ok(());
    }
    let mut text = String::new();
    changes_text(&mut text, &t.key, &changes);
    if !files_only {
        text.push('\n');
        text.push_str(&coloured_diff(&changes.diff, colour()));
        if changes.truncated {
            text.push_str("\n[the diff was cut at its cap; every file is listed above]\n");
        }
    }
    reviews_text(&mut text, &reviews);
    out.done(&changes, text.trim_end());
    Ok(())
}

fn changes_text(text: &mut String, key: &str, c: &Changes) {
    let (adds, dels) = c.files.iter().fold((0, 0), |(a, d), f| (a + f.additions, d + f.deletions));
    let _ = writeln!(
        text,
        "{key}: branch {} at {} on {}: {} files, +{adds} \u{2212}{dels}",
        c.branch,
        short_commit(&c.head_commit),
        short_commit(&c.base_commit),
        c.files.len()
    );
    for f in &c.files {
        let status = serde_json::to_value(f.status).ok().and_then(|v| v.as_str().map(String::from));
        let renamed = f.old_path.as_ref().map(|o| format!(" (from {o})")).unwrap_or_default();
        let _ = writeln!(
            text,
            "  {:<8} {}{renamed}  +{} \u{2212}{}",
            status.unwrap_or_default(),
            f.path,
            f.additions,
            f.deletions
        );
    }
}

fn reviews_text(text: &mut String, reviews: &[Review]) {
    if reviews.is_empty() {
        text.push_str("\nno reviews yet\n");
        return;
    }
    text.push_str("\nreviews:\n");
    for r in reviews {
        let verdict = serde_json::to_value(r.verdict).ok().and_then(|v| v.as_str().map(String::from));
        let _ = writeln!(
            text,
            "  round {} {} by {}: {}",
            r.round,
            verdict.unwrap_or_default(),
            r.author.slug,
            r.body.trim()
        );
        for c in &r.comments {
            let side = if c.side == Side::Old { ":old" } else { "" };
            let outdated = if c.outdated { " (outdated)" } else { "" };
            let _ = writeln!(text, "    {}:{}{side}{outdated}  {}", c.path, c.line, c.body.trim());
            let _ = writeln!(text, "      | {}", c.text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_comment_names_its_path_line_and_side() {
        let c = line_comment("src/a:b.rs:12=why?").unwrap();
        assert_eq!((c.path.as_str(), c.line, c.side, c.body.as_str()), ("src/a:b.rs", 12, Side::New, "why?"));
        let c = line_comment("x.rs:3:old=gone = fine").unwrap();
        assert_eq!((c.line, c.side, c.body.as_str()), (3, Side::Old, "gone = fine"));
        for bad in ["x.rs=1", "x.rs:a=b", ":3=b", "x.rs:3=", "x.rs:3"] {
            let e = line_comment(bad).unwrap_err();
            assert!(e.detail().contains("PATH:LINE=TEXT"), "{bad}: {}", e.detail());
        }
    }

    #[test]
    fn a_diff_is_coloured_on_a_terminal_only() {
        let diff = "diff --git a/x b/x\n@@ -1 +1 @@\n-old\n+new\n same\n";
        assert_eq!(coloured_diff(diff, false), diff);
        let c = coloured_diff(diff, true);
        assert!(c.contains("\x1b[31m-old\x1b[0m\n") && c.contains("\x1b[32m+new\x1b[0m\n"), "{c:?}");
        assert!(c.contains("\x1b[36m@@ -1 +1 @@\x1b[0m") && c.ends_with(" same\n"), "{c:?}");
    }
}
