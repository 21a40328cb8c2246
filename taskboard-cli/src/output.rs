//! How results are printed: aligned tables for people, the exact API JSON
//! with `--json`, ids only with `--quiet`.

use std::io::{IsTerminal, Write};

use serde::Serialize;
use taskboard_core::archive::ArchiveSummary;
use taskboard_core::model::*;

/// A resource shown as a table row (in lists) or as `field: value` lines
/// (alone).
pub trait Row {
    const HEADERS: &'static [&'static str];
    fn id(&self) -> String;
    fn cells(&self) -> Vec<String>;
    /// More lines shown only for a single item (descriptions, steps …).
    fn details(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The output mode of this run.
#[derive(Debug, Clone, Copy)]
pub struct Out {
    pub json: bool,
    pub quiet: bool,
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

fn member_ref(m: &Option<MemberRef>) -> String {
    m.as_ref().map(|m| m.slug.clone()).unwrap_or_default()
}

/// Long cells are cut on a terminal, where a wrapped table is unreadable;
/// a pipe gets them whole.
fn cut(s: &str, width: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() <= width {
        one_line
    } else {
        let mut t: String = one_line.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn print_json<T: Serialize + ?Sized>(value: &T) {
    // Stdout is line-buffered: unbuffered, a list of 100,000 tasks would
    // cost millions of write calls.
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = serde_json::to_writer_pretty(&mut stdout, value);
    let _ = writeln!(stdout);
    let _ = stdout.flush();
}

impl Out {
    /// Where the next page starts, after a full page: on stderr, so the
    /// list on stdout stays what it is.
    pub fn next_page(&self, cursor: Option<&str>) {
        if let Some(c) = cursor
            && !self.quiet
        {
            eprintln!("more: --cursor {c}");
        }
    }

    /// A list of resources.
    pub fn list<T: Row + Serialize>(&self, items: &[T]) {
        if self.json {
            return print_json(items);
        }
        let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
        if self.quiet {
            for item in items {
                let _ = writeln!(stdout, "{}", item.id());
            }
            return;
        }
        let terminal = std::io::stdout().is_terminal();
        let rows: Vec<Vec<String>> = items
            .iter()
            .map(|i| i.cells().into_iter().map(|c| if terminal { cut(&c, 60) } else { c }).collect())
            .collect();
        let mut widths: Vec<usize> = T::HEADERS.iter().map(|h| h.len()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |out: &mut dyn Write, cells: &[String]| {
            let mut text = String::new();
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if i + 1 == cells.len() {
                    text.push_str(cell);
                } else {
                    text.push_str(&format!("{cell:<w$}  "));
                }
            }
            let _ = writeln!(out, "{}", text.trim_end());
        };
        let headers: Vec<String> = T::HEADERS.iter().map(|h| h.to_uppercase()).collect();
        line(&mut stdout, &headers);
        for row in &rows {
            line(&mut stdout, row);
        }
    }

    /// One resource.
    pub fn item<T: Row + Serialize>(&self, item: &T) {
        if self.json {
            return print_json(item);
        }
        if self.quiet {
            println!("{}", item.id());
            return;
        }
        let width = T::HEADERS.iter().map(|h| h.len()).max().unwrap_or(0);
        let mut stdout = std::io::stdout().lock();
        for (h, v) in T::HEADERS.iter().zip(item.cells()) {
            let _ = writeln!(stdout, "{:<width$}  {v}", format!("{h}:"), width = width + 1);
        }
        for d in item.details() {
            let _ = writeln!(stdout, "{d}");
        }
    }

    /// A response that is not a resource (`{"ok": true}`, a token …):
    /// JSON as the API sends it, or `text` for people; nothing when quiet.
    pub fn done<T: Serialize + ?Sized>(&self, value: &T, text: &str) {
        if self.json {
            print_json(value);
        } else if !self.quiet {
            println!("{text}");
        }
    }

    /// Raw JSON, whatever the mode (events, archives summaries in JSON).
    pub fn json_line(&self, value: &serde_json::Value) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{value}");
        let _ = stdout.flush();
    }

    pub fn summary(&self, what: &str, s: &ArchiveSummary) {
        self.done(s, &format!("{what}: {} records, {} files ({} bytes)", s.records, s.blobs, s.blob_bytes));
    }
}

impl Row for Member {
    const HEADERS: &'static [&'static str] = &["id", "slug", "name", "type", "role", "status", "active"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        vec![
            self.id.to_string(),
            self.slug.clone(),
            self.name.clone(),
            self.kind.to_string(),
            self.role.to_string(),
            self.status.to_string(),
            self.is_active.to_string(),
        ]
    }
    fn details(&self) -> Vec<String> {
        let mut out = vec![format!("last seen:  {}", self.last_seen_at)];
        if self.kind == MemberType::Agent {
            let config = serde_json::to_string(&self.agent_config).unwrap_or_default();
            out.push(format!("agent config: {config}"));
        }
        out
    }
}

impl Row for CreatedMember {
    const HEADERS: &'static [&'static str] = &["id", "slug", "name", "type", "role", "token"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        vec![
            self.id.to_string(),
            self.slug.clone(),
            self.name.clone(),
            self.kind.to_string(),
            self.role.to_string(),
            self.token.clone().map(|t| format!("{t}  (shown once)")).unwrap_or_default(),
        ]
    }
}

impl Row for Project {
    const HEADERS: &'static [&'static str] =
        &["id", "slug", "name", "status", "tasks", "auto_assign", "description"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        vec![
            self.id.to_string(),
            self.slug.clone(),
            self.name.clone(),
            self.status.to_string(),
            self.task_counter.to_string(),
            self.auto_assign.to_string(),
            opt(&self.description),
        ]
    }
    fn details(&self) -> Vec<String> {
        let mut out =
            vec![format!("chat:         {}", self.chat_id.map(|c| c.to_string()).unwrap_or_default())];
        for url in &self.repo_urls {
            out.push(format!("repo:         {url}"));
        }
        out
    }
}

impl Row for ProjectMember {
    const HEADERS: &'static [&'static str] = &["id", "slug", "name", "type", "role"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        vec![
            self.id.to_string(),
            self.slug.clone(),
            self.name.clone(),
            self.kind.to_string(),
            self.role.to_string(),
        ]
    }
}

impl Row for Task {
    const HEADERS: &'static [&'static str] =
        &["key", "title", "status", "priority", "type", "assignee", "labels", "id"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        vec![
            self.key.clone(),
            self.title.clone(),
            self.status.to_string(),
            self.priority.to_string(),
            self.kind.to_string(),
            member_ref(&self.assignee),
            self.labels.join(","),
            self.id.to_string(),
        ]
    }
    fn details(&self) -> Vec<String> {
        let mut out = vec![
            format!("project:   {}", self.project.slug),
            format!("reviewer:  {}", member_ref(&self.reviewer)),
            format!("parent:    {}", self.parent.as_ref().map(|p| p.key.clone()).unwrap_or_default()),
            format!("position:  {}", self.position),
            format!("created:   {}", self.created_at),
            format!("updated:   {}", self.updated_at),
        ];
        if !self.subtasks.is_empty() {
            out.push("subtasks:".into());
            out.extend(self.subtasks.iter().map(|s| format!("  {} [{}] {}", s.key, s.status, s.title)));
        }
        if !self.depends_on.is_empty() {
            out.push(format!(
                "depends on: {}",
                self.depends_on.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        if !self.steps.is_empty() {
            out.push("steps:".into());
            out.extend(
                self.steps.iter().map(|s| format!("  [{}] {}", if s.done { "x" } else { " " }, s.title)),
            );
        }
        if let Some(d) = &self.description {
            out.push(String::new());
            out.push(d.clone());
        }
        out
    }
}

impl Row for Step {
    const HEADERS: &'static [&'static str] = &["#", "done", "title", "id"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        vec![
            self.position.to_string(),
            if self.done { "x".into() } else { String::new() },
            self.title.clone(),
            self.id.to_string(),
        ]
    }
}

impl Row for TaskLink {
    const HEADERS: &'static [&'static str] = &["id", "source", "type", "target", "target_title"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        vec![
            self.id.to_string(),
            self.source_key.clone(),
            self.link_type.to_string(),
            self.target_key.clone(),
            self.target_title.clone(),
        ]
    }
}

impl Row for TaskAction {
    const HEADERS: &'static [&'static str] = &["at", "actor", "action", "changes"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        let changes: Vec<String> =
            self.changes.iter().map(|(field, c)| format!("{field}: {} → {}", c.from, c.to)).collect();
        vec![
            self.created_at.to_string(),
            self.actor.slug.clone(),
            self.action.to_string(),
            changes.join("; "),
        ]
    }
}

impl Row for Label {
    const HEADERS: &'static [&'static str] = &["id", "name", "color"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        vec![self.id.to_string(), self.name.clone(), self.color.clone()]
    }
}

impl Row for Message {
    const HEADERS: &'static [&'static str] = &["at", "author", "content", "files", "id"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        let author = match (&self.author, &self.actor) {
            (Some(a), _) => a.slug.clone(),
            (None, Some(actor)) => format!("system ({})", actor.slug),
            _ => self.author_type.to_string(),
        };
        let files: Vec<&str> = self.attachments.iter().map(|a| a.filename.as_str()).collect();
        vec![self.created_at.to_string(), author, self.content.clone(), files.join(","), self.id.to_string()]
    }
    fn details(&self) -> Vec<String> {
        self.attachments
            .iter()
            .map(|a| format!("attachment {}  {} ({} bytes, {})", a.id, a.filename, a.size, a.mime_type))
            .collect()
    }
}

impl Row for UploadedFile {
    const HEADERS: &'static [&'static str] = &["file_id", "filename", "mime_type", "size"];
    fn id(&self) -> String {
        self.file_id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        vec![self.file_id.to_string(), self.filename.clone(), self.mime_type.clone(), self.size.to_string()]
    }
}

impl Row for ProjectFile {
    const HEADERS: &'static [&'static str] =
        &["id", "filename", "size", "mime_type", "uploaded_by", "updated_at", "description"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self) -> Vec<String> {
        vec![
            self.id.to_string(),
            self.filename.clone(),
            self.size.to_string(),
            self.mime_type.clone(),
            self.uploaded_by.slug.clone(),
            self.updated_at.to_string(),
            opt(&self.description),
        ]
    }
}
