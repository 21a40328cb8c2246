//! A message to answer as Markdown, as a command agent reads it: the
//! agent's prompt, where the message was written (a chat, or a task for
//! a comment), the conversation before it and the message itself.

use std::fmt::Write;

use taskboard_core::model::{Member, Message};
use taskboard_core::runs::RunTask;

/// Messages before the one answered that are quoted, newest last.
pub const CONTEXT: u32 = 10;

/// What the Markdown is made of.
pub struct Ask<'a> {
    pub agent: &'a Member,
    pub message: &'a Message,
    /// The task a comment is on.
    pub task: Option<&'a RunTask>,
    /// The latest messages of the chat or task, newest first as the board
    /// lists them; the answered one among them is left out.
    pub context: &'a [Message],
    pub run: uuid::Uuid,
}

fn author(m: &Message) -> &str {
    m.author.as_ref().map_or("system", |a| a.slug.as_str())
}

pub fn render(a: &Ask<'_>) -> String {
    let mut md = String::new();
    if let Some(p) = &a.agent.agent_config.prompt {
        let _ = writeln!(md, "{}\n", p.as_str().trim_end());
    }
    match a.task {
        Some(t) => {
            let _ = writeln!(md, "# A comment for you on {}: {}\n", t.key, t.title);
        }
        None => {
            let _ = writeln!(md, "# A chat message for you\n");
        }
    }
    let _ = writeln!(md, "- From: {}", author(a.message));
    let _ = writeln!(md, "- Run: {}", a.run);
    let _ = writeln!(md, "\nWhat you write on stdout is posted as your reply; exit 0 to post it.");
    let before: Vec<&Message> = a
        .context
        .iter()
        .rev()
        .filter(|m| m.id != a.message.id && m.created_at <= a.message.created_at)
        .collect();
    if !before.is_empty() {
        let _ = writeln!(md, "\n## Before it\n");
        for m in before {
            let _ = writeln!(md, "**{}** ({}):\n\n{}\n", author(m), m.created_at, m.content.trim_end());
        }
    }
    let _ = writeln!(md, "\n## The message\n");
    let _ = writeln!(
        md,
        "**{}** ({}):\n\n{}",
        author(a.message),
        a.message.created_at,
        a.message.content.trim_end()
    );
    md
}
