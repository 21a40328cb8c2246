//! The task as Markdown, as a command agent reads it: the agent's
//! prompt, the task, its steps, its dependencies and its latest comments.

use std::fmt::Write;

use taskboard_core::model::{Member, Message, Project, Task};

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
