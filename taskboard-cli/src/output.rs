//! How results are printed: aligned tables for people, the exact API JSON
//! with `--json`, ids only with `--quiet`.

use std::io::{IsTerminal, Write};

use jiff::Timestamp;
use serde::Serialize;
use taskboard_core::archive::ArchiveSummary;
use taskboard_core::model::{
    CreatedMember, Label, LinkType, Member, MemberRef, MemberType, Message, Project, ProjectFile,
    ProjectMember, Step, Task, TaskAction, TaskLink, UploadedFile,
};
use uuid::Uuid;

/// A resource shown as a table row (in lists) or as `field: value` lines
/// (alone).
pub trait Row {
    const HEADERS: &'static [&'static str];
    fn id(&self) -> String;
    /// The cells under [`Row::HEADERS`]; in a `table` ids are short.
    fn cells(&self, table: bool) -> Vec<String>;
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

/// An id in a table: its last 8 hex digits. Ids are UUIDv7, whose first
/// digits are the creation time, so ids made in the same minute share
/// them; the last digits are random. Single items, `--quiet` and `--json`
/// show whole ids.
pub fn short_id(id: &Uuid) -> String {
    let hex = id.simple().to_string();
    hex[hex.len() - 8..].to_string()
}

fn id_cell(id: &Uuid, table: bool) -> String {
    if table { short_id(id) } else { id.to_string() }
}

/// A time as people read it: UTC, to the second (`--json` has it whole).
pub fn when(t: &Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Writes to stdout. A closed stdout (`| head`) is not an error worth a
/// word, and must never be a panic: the result is only whether it worked.
fn emit(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> bool {
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    write(&mut stdout).and_then(|()| stdout.flush()).is_ok()
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

/// Who wrote a message: its author, or the member whose action a system
/// message reports; for an imported comment, the name its source gave
/// and who imported it (`owner@evil.example (imported by ana)`), never
/// the importer alone nor a member the name resembles.
fn author(m: &Message) -> String {
    match (&m.imported_author, &m.author, &m.actor) {
        (Some(name), Some(by), _) => format!("{name} (imported by {})", by.slug),
        (Some(name), None, _) => format!("{name} (imported)"),
        (None, Some(a), _) => a.slug.clone(),
        (None, None, Some(actor)) => format!("system ({})", actor.slug),
        _ => m.author_type.to_string(),
    }
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

/// The widest a cell of a table is when stdout is no terminal: a
/// task's longest title, so a script reading the table loses no title.
const CELL_CHARS: usize = 500;

/// A table's cell holds one line whatever its value holds (a failure's
/// reason often ends in an agent's output): the first line that is not
/// blank, marked `…` when more follows or it is cut.
fn cell(s: &str, width: usize) -> String {
    let mut lines = s.lines().map(str::trim_end).filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or_default();
    let line = cut(first, width);
    if lines.next().is_some() && !line.ends_with('…') { format!("{line} …") } else { line }
}

fn print_json<T: Serialize + ?Sized>(value: &T) {
    // Buffered: stdout is line-buffered, and a list of 100,000 tasks
    // would otherwise cost millions of write calls.
    emit(|out| {
        serde_json::to_writer_pretty(&mut *out, value)?;
        writeln!(out)
    });
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
        if self.quiet {
            emit(|out| items.iter().try_for_each(|item| writeln!(out, "{}", item.id())));
            return;
        }
        let terminal = std::io::stdout().is_terminal();
        let rows: Vec<Vec<String>> = items
            .iter()
            .map(|i| {
                i.cells(true).into_iter().map(|c| cell(&c, if terminal { 60 } else { CELL_CHARS })).collect()
            })
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
            writeln!(out, "{}", text.trim_end())
        };
        let headers: Vec<String> = T::HEADERS.iter().map(|h| h.to_uppercase()).collect();
        emit(|out| {
            line(out, &headers)?;
            rows.iter().try_for_each(|row| line(out, row))
        });
    }

    /// One resource.
    pub fn item<T: Row + Serialize>(&self, item: &T) {
        self.item_with(item, item.details());
    }

    /// One resource with these detail lines.
    pub fn item_with<T: Row + Serialize>(&self, item: &T, details: Vec<String>) {
        if self.json {
            return print_json(item);
        }
        if self.quiet {
            return self.line(&item.id());
        }
        let width = T::HEADERS.iter().map(|h| h.len()).max().unwrap_or(0);
        emit(|out| {
            for (h, v) in T::HEADERS.iter().zip(item.cells(false)) {
                writeln!(out, "{:<width$}  {v}", format!("{h}:"), width = width + 1)?;
            }
            details.iter().try_for_each(|d| writeln!(out, "{d}"))
        });
    }

    /// `task show`: the task, its dependencies by key and its latest
    /// comments (`comments` in chronological order; the newest
    /// [`LATEST_COMMENTS`] are shown).
    pub fn task(&self, task: &Task, links: &[TaskLink], comments: &[Message]) {
        if self.json || self.quiet {
            return self.item(task);
        }
        let dependencies = task
            .depends_on
            .iter()
            .map(|id| {
                links
                    .iter()
                    .find(|l| {
                        l.source_id == task.id && l.target_id == *id && l.link_type == LinkType::DependsOn
                    })
                    .map(|l| format!("{} {}", l.target_key, l.target_title))
                    .unwrap_or_else(|| id.to_string())
            })
            .collect();
        let mut details = task_details(task, dependencies);
        if !comments.is_empty() {
            let shown = &comments[comments.len().saturating_sub(LATEST_COMMENTS)..];
            details.push(String::new());
            details.push(if shown.len() < comments.len() {
                format!("latest {} comments (all: taskboard message list --task {}):", shown.len(), task.key)
            } else {
                "comments:".to_string()
            });
            for m in shown {
                let mut lines = m.content.lines();
                let first = lines.next().unwrap_or_default();
                details.push(format!("  {}  {}: {first}", when(&m.created_at), author(m)));
                details.extend(lines.map(|l| format!("      {l}")));
            }
        }
        self.item_with(task, details);
    }

    /// A member just created: an agent's token or a person's generated
    /// password, each shown once, or how the person will sign in. A
    /// person has no token line (docs/decisions.md 22.a).
    pub fn created_member(&self, m: &CreatedMember, password: Option<&str>) {
        if self.json {
            let mut value = serde_json::to_value(m).unwrap_or_default();
            if let (Some(p), Some(map)) = (password, value.as_object_mut()) {
                map.insert("password".into(), p.into());
            }
            return print_json(&value);
        }
        if self.quiet {
            // What a script needs, shown once.
            return self.line(m.token.as_deref().or(password).unwrap_or(&m.id.to_string()));
        }
        if m.kind == MemberType::Agent {
            return self.item(m);
        }
        let sign_in = match password {
            Some(p) => format!("password:  {p}  (shown once; {} signs in with `taskboard login`)", m.slug),
            None => format!(
                "{0} has no password yet: set one with `taskboard member set-password {0} --generate`, \
                 or {0} signs in with single sign-on",
                m.slug
            ),
        };
        let cells = m.cells(false);
        emit(|out| {
            for (h, v) in CreatedMember::HEADERS.iter().zip(cells).filter(|(h, _)| **h != "token") {
                writeln!(out, "{:<7}  {v}", format!("{h}:"))?;
            }
            writeln!(out, "{sign_in}")
        });
    }

    /// A response that is not a resource (`{"ok": true}`, a token …):
    /// JSON as the API sends it, or `text` for people; nothing when quiet.
    pub fn done<T: Serialize + ?Sized>(&self, value: &T, text: &str) {
        if self.json {
            print_json(value);
        } else if !self.quiet {
            self.line(text);
        }
    }

    /// One line of text, whatever the mode (ids and tokens of `--quiet`).
    pub fn line(&self, text: &str) {
        emit(|out| writeln!(out, "{text}"));
    }

    /// Raw JSON, whatever the mode (events). False once stdout is closed,
    /// so a stream can end.
    pub fn json_line(&self, value: &serde_json::Value) -> bool {
        emit(|out| writeln!(out, "{value}"))
    }

    /// What an archive holds, and what no archive holds: runs and their
    /// transcripts (docs/decisions.md 13.f).
    pub fn summary(&self, what: &str, s: &ArchiveSummary) {
        self.done(
            s,
            &format!(
                "{what}: {} records, {} files ({} bytes); runs and their transcripts are not in an archive",
                s.records, s.blobs, s.blob_bytes
            ),
        );
    }
}

impl Row for Member {
    const HEADERS: &'static [&'static str] = &["id", "slug", "name", "type", "role", "status", "active"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            id_cell(&self.id, table),
            self.slug.clone(),
            self.name.clone(),
            self.kind.to_string(),
            self.role.to_string(),
            self.status.to_string(),
            self.is_active.to_string(),
        ]
    }
    fn details(&self) -> Vec<String> {
        let mut out = vec![format!("last seen:  {}", when(&self.last_seen_at))];
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
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            id_cell(&self.id, table),
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
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            id_cell(&self.id, table),
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
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            id_cell(&self.id, table),
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
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            self.key.clone(),
            self.title.clone(),
            self.status.to_string(),
            self.priority.to_string(),
            self.kind.to_string(),
            member_ref(&self.assignee),
            self.labels.join(","),
            id_cell(&self.id, table),
        ]
    }
    fn details(&self) -> Vec<String> {
        task_details(self, self.depends_on.iter().map(|d| d.to_string()).collect())
    }
}

/// How many of a task's comments `task show` shows, the newest.
pub const LATEST_COMMENTS: usize = 5;

/// The lines under a task's fields; `dependencies` as they should read.
fn task_details(task: &Task, dependencies: Vec<String>) -> Vec<String> {
    let mut out = vec![
        format!("project:   {}", task.project.slug),
        format!("reviewer:  {}", member_ref(&task.reviewer)),
        format!("parent:    {}", task.parent.as_ref().map(|p| p.key.clone()).unwrap_or_default()),
        format!("position:  {}", task.position),
        format!("created:   {}", when(&task.created_at)),
        format!("updated:   {}", when(&task.updated_at)),
    ];
    if let Some(c) = &task.changes {
        out.push(format!(
            "branch:    {} at {} ({} in {} files)",
            c.branch,
            short_commit(&c.head_commit),
            counts(c),
            c.files
        ));
        let r = &task.review;
        let state =
            serde_json::to_value(r.state).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        out.push(format!(
            "review:    {state}, round {}, {} approvals (taskboard review show {})",
            r.round, r.approvals, task.key
        ));
    }
    if let Some(m) = &task.merge_commit {
        out.push(format!("merged as: {m}"));
    }
    if !task.subtasks.is_empty() {
        out.push("subtasks:".into());
        out.extend(task.subtasks.iter().map(|s| format!("  {} [{}] {}", s.key, s.status, s.title)));
    }
    if !dependencies.is_empty() {
        out.push("depends on:".into());
        out.extend(dependencies.into_iter().map(|d| format!("  {d}")));
    }
    if !task.steps.is_empty() {
        out.push("steps:".into());
        out.extend(task.steps.iter().map(|s| format!("  [{}] {}", if s.done { "x" } else { " " }, s.title)));
    }
    if let Some(d) = &task.description {
        out.push(String::new());
        out.push(d.clone());
    }
    out
}

impl Row for Step {
    const HEADERS: &'static [&'static str] = &["#", "done", "title", "id"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            self.position.to_string(),
            if self.done { "x".into() } else { String::new() },
            self.title.clone(),
            id_cell(&self.id, table),
        ]
    }
}

impl Row for TaskLink {
    const HEADERS: &'static [&'static str] = &["id", "source", "type", "target", "target_title"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            id_cell(&self.id, table),
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
    fn cells(&self, _table: bool) -> Vec<String> {
        let changes: Vec<String> =
            self.changes.iter().map(|(field, c)| format!("{field}: {} → {}", c.from, c.to)).collect();
        vec![when(&self.created_at), self.actor.slug.clone(), self.action.to_string(), changes.join("; ")]
    }
}

impl Row for Label {
    const HEADERS: &'static [&'static str] = &["id", "name", "color"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        vec![id_cell(&self.id, table), self.name.clone(), self.color.clone()]
    }
}

impl Row for Message {
    const HEADERS: &'static [&'static str] = &["at", "author", "content", "files", "id"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        let files: Vec<&str> = self.attachments.iter().map(|a| a.filename.as_str()).collect();
        vec![
            when(&self.created_at),
            author(self),
            self.content.clone(),
            files.join(","),
            id_cell(&self.id, table),
        ]
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
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            id_cell(&self.file_id, table),
            self.filename.clone(),
            self.mime_type.clone(),
            self.size.to_string(),
        ]
    }
}

impl Row for ProjectFile {
    const HEADERS: &'static [&'static str] =
        &["id", "filename", "size", "mime_type", "uploaded_by", "updated_at", "description"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            id_cell(&self.id, table),
            self.filename.clone(),
            self.size.to_string(),
            self.mime_type.clone(),
            self.uploaded_by.slug.clone(),
            when(&self.updated_at),
            opt(&self.description),
        ]
    }
}

/// `+added −removed` of a change set.
pub fn counts(c: &taskboard_core::review::ChangesSummary) -> String {
    format!("+{} \u{2212}{}", c.additions, c.deletions)
}

/// The first 12 characters of a commit id.
pub fn short_commit(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// A unified diff for a terminal: added lines green, removed red, hunk
/// headers cyan and file headers bold; as it is when `colour` is false
/// (piped, or `NO_COLOR` set).
pub fn coloured_diff(diff: &str, colour: bool) -> String {
    if !colour {
        return diff.to_string();
    }
    let mut out = String::with_capacity(diff.len() + diff.len() / 8);
    for line in diff.split_inclusive('\n') {
        let (text, end) = match line.strip_suffix('\n') {
            Some(t) => (t, "\n"),
            None => (line, ""),
        };
        let code = if text.starts_with("diff --git") || text.starts_with("+++ ") || text.starts_with("--- ") {
            "1"
        } else if text.starts_with("@@") {
            "36"
        } else if text.starts_with('+') {
            "32"
        } else if text.starts_with('-') {
            "31"
        } else {
            ""
        };
        if code.is_empty() {
            out.push_str(line);
        } else {
            out.push_str(&format!("\x1b[{code}m{text}\x1b[0m{end}"));
        }
    }
    out
}

/// Whether standard output takes colours: a terminal, and `NO_COLOR` unset.
pub fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
