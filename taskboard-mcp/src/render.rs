//! Text for a model to read: the short rendering beside each tool's
//! structured answer, and a task as a Markdown resource.

use std::fmt::Write;

use taskboard_wire::model::{Member, Message, Project, Step, Task, TaskLink};

pub(crate) fn task_line(t: &Task) -> String {
    let mut line = format!("{} [{}, {}] {}", t.key, t.status.as_str(), t.priority.as_str(), t.title);
    if let Some(a) = &t.assignee {
        let _ = write!(line, " (assignee: {})", a.slug);
    }
    if let Some(lease) = &t.lease {
        let _ = write!(line, " (lease until {})", lease.expires_at);
    }
    line
}

pub(crate) fn tasks(list: &[Task]) -> String {
    if list.is_empty() {
        return "no tasks".into();
    }
    list.iter().map(task_line).collect::<Vec<_>>().join("\n")
}

pub(crate) fn member_line(m: &Member) -> String {
    format!("{} ({}, {}, {}) id {}", m.slug, m.name, m.kind.as_str(), m.role.as_str(), m.id)
}

pub(crate) fn members(list: &[Member]) -> String {
    list.iter().map(member_line).collect::<Vec<_>>().join("\n")
}

pub(crate) fn projects(list: &[Project]) -> String {
    if list.is_empty() {
        return "no projects".into();
    }
    list.iter()
        .map(|p| format!("{} ({}, {}) id {}", p.slug, p.name, p.status.as_str(), p.id))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn step_line(s: &Step) -> String {
    format!("[{}] {}. {} (id {})", if s.done { "x" } else { " " }, s.position, s.title, s.id)
}

pub(crate) fn message_line(m: &Message) -> String {
    let who = m.author.as_ref().map_or("system", |a| a.slug.as_str());
    format!("{} {}: {}", m.created_at, who, m.content)
}

pub(crate) fn messages(list: &[Message]) -> String {
    if list.is_empty() {
        return "no messages".into();
    }
    list.iter().map(message_line).collect::<Vec<_>>().join("\n")
}

fn link_line(task: &Task, l: &TaskLink) -> String {
    if l.source_id == task.id {
        format!("{} {} {}", l.link_type.as_str(), l.target_key, l.target_title)
    } else {
        format!("{} of {} {}", l.link_type.as_str(), l.source_key, l.source_title)
    }
}

/// A task as Markdown: its fields, description, steps, links and latest
/// comments (the `taskboard://tasks/{key}` resource and `get_task`'s text).
pub(crate) fn task_markdown(t: &Task, links: &[TaskLink], comments: &[Message]) -> String {
    let mut md = format!("# {} {}\n\n", t.key, t.title);
    let _ = writeln!(md, "- status: {}", t.status.as_str());
    let _ = writeln!(md, "- priority: {}", t.priority.as_str());
    let _ = writeln!(md, "- type: {}", t.kind.as_str());
    let _ = writeln!(md, "- project: {}", t.project.slug);
    let who = |m: &Option<taskboard_wire::model::MemberRef>| {
        m.as_ref().map_or("none".to_string(), |m| m.slug.clone())
    };
    let _ = writeln!(md, "- assignee: {}", who(&t.assignee));
    let _ = writeln!(md, "- reviewer: {}", who(&t.reviewer));
    if let Some(lease) = &t.lease {
        let _ = writeln!(md, "- lease: held by {} until {}", lease.holder.slug, lease.expires_at);
    }
    if !t.labels.is_empty() {
        let _ = writeln!(md, "- labels: {}", t.labels.join(", "));
    }
    if let Some(p) = &t.parent {
        let _ = writeln!(md, "- parent: {} {}", p.key, p.title);
    }
    let _ = writeln!(md, "- id: {}", t.id);
    if let Some(d) = t.description.as_deref().filter(|d| !d.trim().is_empty()) {
        let _ = write!(md, "\n## Description\n\n{}\n", d.trim_end());
    }
    if !t.steps.is_empty() {
        md.push_str("\n## Steps\n\n");
        for s in &t.steps {
            let _ = writeln!(md, "- [{}] {} (id {})", if s.done { "x" } else { " " }, s.title, s.id);
        }
    }
    if !t.subtasks.is_empty() {
        md.push_str("\n## Sub-tasks\n\n");
        for s in &t.subtasks {
            let _ = writeln!(md, "- {} [{}] {}", s.key, s.status.as_str(), s.title);
        }
    }
    if !links.is_empty() {
        md.push_str("\n## Links\n\n");
        for l in links {
            let _ = writeln!(md, "- {}", link_line(t, l));
        }
    }
    if !comments.is_empty() {
        md.push_str("\n## Latest comments\n\n");
        for m in comments {
            let _ = writeln!(md, "- {}", message_line(m));
        }
    }
    md
}

/// A change set as text: its files with counts, then the unified diff.
pub(crate) fn changes(c: &taskboard_wire::review::Changes) -> String {
    let (adds, dels): (u64, u64) =
        c.files.iter().fold((0, 0), |(a, d), f| (a + f.additions, d + f.deletions));
    let mut out = format!(
        "branch {} at {} (base {}): {} files, +{adds} -{dels}\n",
        c.branch,
        short(&c.head_commit),
        short(&c.base_commit),
        c.files.len()
    );
    for f in &c.files {
        let _ = writeln!(out, "  {:?} {} +{} -{}", f.status, f.path, f.additions, f.deletions);
    }
    out.push('\n');
    out.push_str(&c.diff);
    if c.truncated {
        out.push_str("\n[the diff was cut at its cap; every file is listed above]\n");
    }
    out
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// Reviews as text: verdict, author and body, then each line comment.
pub(crate) fn reviews(list: &[taskboard_wire::review::Review]) -> String {
    if list.is_empty() {
        return "no reviews yet".into();
    }
    let mut out = String::new();
    for r in list {
        let _ = writeln!(out, "round {} {:?} by {}: {}", r.round, r.verdict, r.author.slug, r.body.trim());
        for c in &r.comments {
            let outdated = if c.outdated { " (outdated)" } else { "" };
            let _ = writeln!(out, "  {}:{} {:?}{outdated}: {}", c.path, c.line, c.side, c.body.trim());
        }
    }
    out
}
