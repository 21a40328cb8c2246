//! Backlog.md: the `backlog/` folder, one Markdown file per task with YAML
//! front matter, in `tasks/`, `drafts/`, `completed/` and `archive/`
//! (MrLesk/Backlog.md, `src/markdown/serializer.ts` and
//! `structured-sections.ts`).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use taskboard_core::api::{ImportComment, ImportLink, ImportStep};
use taskboard_core::model::{LinkType, TaskStatus, TaskType};

use super::{
    Item, Read, description, display, kind_and_label, labels, malformed, priority_from_words, record,
    status_from_words, time_field, title,
};

#[derive(Deserialize)]
struct FrontMatter {
    id: String,
    title: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    assignee: OneOrMany,
    #[serde(default)]
    created_date: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    dependencies: Vec<String>,
    #[serde(default)]
    parent_task_id: Option<String>,
    #[serde(default)]
    priority: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    milestone: Option<String>,
}

/// `assignee:` is a list, but older files have a single name.
#[derive(Deserialize, Default)]
#[serde(untagged)]
enum OneOrMany {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn first(&self) -> Option<String> {
        let first = match self {
            OneOrMany::None => None,
            OneOrMany::One(s) => Some(s.clone()),
            OneOrMany::Many(v) => v.first().cloned(),
        };
        first.map(|s| s.trim().trim_start_matches('@').to_string()).filter(|s| !s.is_empty())
    }
}

/// Where a file lies tells what it is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Folder {
    Tasks,
    Drafts,
    Completed,
    Archive,
}

pub(super) fn read(dir: &Path, each: &mut dyn FnMut(Item) -> Read<()>) -> Read<()> {
    if !dir.is_dir() {
        return Err(malformed(display(dir), "not a Backlog.md folder (expected backlog/ with tasks/)"));
    }
    let folders = [
        ("tasks", Folder::Tasks),
        ("drafts", Folder::Drafts),
        ("completed", Folder::Completed),
        ("archive/tasks", Folder::Archive),
        ("archive/drafts", Folder::Archive),
    ];
    for (sub, folder) in folders {
        for file in markdown_files(&dir.join(sub))? {
            each(read_file(&file, folder)?)?;
        }
    }
    Ok(())
}

fn markdown_files(dir: &Path) -> Read<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| malformed(display(dir), e))?;
    let mut files = Vec::new();
    for e in entries {
        let path = e.map_err(|e| malformed(display(dir), e))?.path();
        if path.extension().is_some_and(|x| x == "md") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn read_file(path: &Path, folder: Folder) -> Read<Item> {
    let name = display(path);
    let text = std::fs::read_to_string(path).map_err(|e| malformed(&name, format!("cannot read: {e}")))?;
    let text = text.replace("\r\n", "\n");
    let Some(rest) = text.strip_prefix("---\n") else {
        return Err(malformed(format!("{name}:1"), "no front matter (a file starts with ---)"));
    };
    let Some(end) = rest.find("\n---") else {
        return Err(malformed(format!("{name}:1"), "the front matter does not end with ---"));
    };
    let (yaml, body) = (&rest[..end], &rest[end + 4..]);
    let fm: FrontMatter = serde_yaml_ng::from_str(yaml).map_err(|e| {
        // The front matter starts on the file's second line.
        let line = e.location().map_or(2, |l| l.line() + 1);
        malformed(format!("{name}:{line}"), e)
    })?;
    let id = fm.id.trim().to_lowercase();
    let place = format!("{name}:1");
    if folder == Folder::Archive {
        return Ok(Item::Skip { id, place, reason: "archived in Backlog.md".into() });
    }
    let mut r = record(id, title(&place, &fm.title)?);
    let sections = sections(body);
    let mut text = String::new();
    for (heading, content) in &sections {
        match heading.as_str() {
            "acceptance criteria" | "definition of done" => r.steps.extend(checklist(content)),
            "comments" => r.comments.extend(comments(&place, content)?),
            "description" => text.insert_str(0, strip_markers(content).trim()),
            _ => {
                text.push_str(&format!("\n\n## {}\n\n{}", title_case(heading), strip_markers(content).trim()))
            }
        }
    }
    r.description = description(&text);
    r.status = match folder {
        Folder::Drafts => TaskStatus::Backlog,
        Folder::Completed => TaskStatus::Done,
        _ if fm.status.eq_ignore_ascii_case("draft") => TaskStatus::Backlog,
        _ => status_from_words(&fm.status),
    };
    if let Some(p) = fm.priority.as_deref().and_then(priority_from_words) {
        r.priority = p;
    }
    let (kind, type_label) = kind_and_label(fm.kind.as_deref().unwrap_or(""));
    r.kind = kind;
    let mut names = fm.labels.clone();
    names.extend(type_label);
    names.extend(fm.milestone.clone());
    r.labels = labels(names.iter().map(String::as_str));
    if r.kind == TaskType::Task && r.labels.iter().any(|l| l.eq_ignore_ascii_case("bug")) {
        r.kind = TaskType::Bug;
    }
    r.assignee = fm.assignee.first();
    r.parent = fm.parent_task_id.map(|p| p.trim().to_lowercase()).filter(|p| !p.is_empty());
    for d in &fm.dependencies {
        r.links.push(ImportLink { link_type: LinkType::DependsOn, target: d.trim().to_lowercase() });
    }
    if let Some(t) = &fm.created_date {
        r.created_at = time_field(&place, "created_date", t)?;
    }
    Ok(Item::Record(r, place))
}

/// The `## ` sections of the body, their headings lower-cased.
fn sections(body: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut fence = false;
    for line in body.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        }
        if !fence && let Some(h) = line.strip_prefix("## ") {
            out.push((h.trim().to_lowercase(), String::new()));
            continue;
        }
        match out.last_mut() {
            Some((_, content)) => {
                content.push_str(line);
                content.push('\n');
            }
            None if !line.trim().is_empty() => out.push(("description".into(), format!("{line}\n"))),
            None => {}
        }
    }
    out
}

fn title_case(h: &str) -> String {
    let mut c = h.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Without the `<!-- SECTION:…:BEGIN -->` markers Backlog.md keeps.
fn strip_markers(content: &str) -> String {
    content
        .lines()
        .filter(|l| !(l.trim_start().starts_with("<!--") && l.trim_end().ends_with("-->")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `- [x] #1 text` items.
fn checklist(content: &str) -> Vec<ImportStep> {
    let mut steps = Vec::new();
    for line in content.lines() {
        let l = line.trim_start();
        let (done, rest) = if let Some(r) = l.strip_prefix("- [x]").or_else(|| l.strip_prefix("- [X]")) {
            (true, r)
        } else if let Some(r) = l.strip_prefix("- [ ]") {
            (false, r)
        } else {
            continue;
        };
        let rest = rest.trim();
        // `#1 ` numbers the item in Backlog.md's files.
        let rest = match rest.strip_prefix('#') {
            Some(r) => r.trim_start_matches(|c: char| c.is_ascii_digit()).trim(),
            None => rest,
        };
        let cut: String = rest.chars().take(500).collect();
        if let Ok(title) = taskboard_core::validate::Title::new(cut) {
            steps.push(ImportStep { title, done });
        }
    }
    steps
}

/// Comments: `author: …` and `created: …` lines, `---`, the text, `---`.
fn comments(place: &str, content: &str) -> Read<Vec<ImportComment>> {
    let mut out = Vec::new();
    let stripped = strip_markers(content);
    let lines: Vec<&str> = stripped.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let mut meta = Vec::new();
        while i < lines.len() && lines[i].trim() != "---" {
            meta.push(lines[i]);
            i += 1;
        }
        i += 1;
        let mut body = Vec::new();
        while i < lines.len() && lines[i].trim() != "---" {
            body.push(lines[i]);
            i += 1;
        }
        if i >= lines.len() {
            break;
        }
        i += 1;
        let Some(content) = description(&body.join("\n")) else { continue };
        let mut author = None;
        let mut created_at = None;
        for m in meta {
            if let Some(a) = m.strip_prefix("author:") {
                author = Some(a.trim().trim_start_matches('@').to_string()).filter(|a| !a.is_empty());
            } else if let Some(c) = m.strip_prefix("created:") {
                created_at = time_field(place, "comment created", c)?;
            }
        }
        out.push(ImportComment { author, content, created_at });
    }
    Ok(out)
}
