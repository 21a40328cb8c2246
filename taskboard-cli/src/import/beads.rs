//! beads: `.beads/issues.jsonl`, one issue per line as `bd` exports it
//! (the `Issue` type of steveyegge/beads, `internal/types/types.go`).

use std::io::BufRead;
use std::path::Path;

use serde::Deserialize;
use taskboard_core::api::{ImportComment, ImportLink};
use taskboard_core::model::{LinkType, Priority, TaskStatus};

use super::{
    Item, Read, description, display, kind_and_label, labels, malformed, record, status_from_words,
    time_field, title,
};

#[derive(Deserialize)]
struct Issue {
    id: String,
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    design: String,
    #[serde(default)]
    acceptance_criteria: String,
    #[serde(default)]
    notes: String,
    #[serde(default)]
    status: String,
    #[serde(default = "two")]
    priority: i64,
    #[serde(default)]
    issue_type: String,
    #[serde(default)]
    assignee: String,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    dependencies: Vec<Dependency>,
    #[serde(default)]
    comments: Vec<Comment>,
    created_at: Option<String>,
    closed_at: Option<String>,
    #[serde(default)]
    close_reason: String,
}

fn two() -> i64 {
    2
}

#[derive(Deserialize)]
struct Dependency {
    #[serde(default)]
    issue_id: String,
    depends_on_id: String,
    #[serde(rename = "type", default)]
    kind: String,
}

#[derive(Deserialize)]
struct Comment {
    #[serde(default)]
    author: String,
    text: String,
    created_at: Option<String>,
}

pub(super) fn read(path: &Path, each: &mut dyn FnMut(Item) -> Read<()>) -> Read<()> {
    let name = display(path);
    let file = std::fs::File::open(path).map_err(|e| malformed(&name, format!("cannot open: {e}")))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let mut line = String::new();
    let mut n = 0;
    loop {
        line.clear();
        n += 1;
        let read = reader.read_line(&mut line).map_err(|e| malformed(format!("{name}:{n}"), e))?;
        if read == 0 {
            return Ok(());
        }
        if line.trim().is_empty() {
            continue;
        }
        let place = format!("{name}:{n}");
        let issue: Issue = serde_json::from_str(&line).map_err(|e| malformed(&place, e))?;
        each(item(issue, place)?)?;
    }
}

fn item(i: Issue, place: String) -> Read<Item> {
    if i.status == "tombstone" {
        return Ok(Item::Skip { id: i.id, place, reason: "deleted in beads (tombstone)".into() });
    }
    let mut r = record(i.id.clone(), title(&place, &i.title)?);
    let mut text = i.description.trim().to_string();
    for (heading, body) in [
        ("Design", &i.design),
        ("Acceptance criteria", &i.acceptance_criteria),
        ("Notes", &i.notes),
        ("Close reason", &i.close_reason),
    ] {
        if !body.trim().is_empty() {
            text.push_str(&format!("\n\n## {heading}\n\n{}", body.trim()));
        }
    }
    r.description = description(&text);
    r.status = match i.status.as_str() {
        "" | "open" | "pinned" => TaskStatus::Todo,
        "in_progress" | "hooked" => TaskStatus::InProgress,
        "blocked" => TaskStatus::Todo,
        "deferred" => TaskStatus::Backlog,
        "closed" => TaskStatus::Done,
        // Custom statuses of a team: where the words put them.
        other => status_from_words(other),
    };
    r.priority = match i.priority {
        0 => Priority::Urgent,
        1 => Priority::High,
        2 => Priority::Medium,
        3 | 4 => Priority::Low,
        p => return Err(malformed(place, format!("priority: {p} is not 0-4"))),
    };
    let (kind, type_label) = kind_and_label(&i.issue_type);
    r.kind = kind;
    let mut names: Vec<String> = i.labels.clone();
    names.extend(type_label);
    if i.status == "blocked" {
        names.push("blocked".into());
    }
    r.labels = labels(names.iter().map(String::as_str));
    r.assignee = Some(i.assignee).filter(|a| !a.trim().is_empty());
    for d in &i.dependencies {
        if !d.issue_id.is_empty() && d.issue_id != i.id {
            continue;
        }
        match d.kind.as_str() {
            "parent-child" => r.parent = Some(d.depends_on_id.clone()),
            "blocks" | "conditional-blocks" | "waits-for" | "" => {
                r.links.push(ImportLink { link_type: LinkType::DependsOn, target: d.depends_on_id.clone() })
            }
            _ => r.links.push(ImportLink { link_type: LinkType::RelatesTo, target: d.depends_on_id.clone() }),
        }
    }
    for (j, c) in i.comments.iter().enumerate() {
        let Some(content) = description(&c.text) else { continue };
        let created_at = match &c.created_at {
            Some(t) => time_field(&place, &format!("comments[{j}].created_at"), t)?,
            None => None,
        };
        r.comments.push(ImportComment {
            author: Some(c.author.clone()).filter(|a| !a.trim().is_empty()),
            content,
            created_at,
        });
    }
    if let Some(t) = &i.created_at {
        r.created_at = time_field(&place, "created_at", t)?;
    }
    if let Some(t) = &i.closed_at {
        r.closed_at = time_field(&place, "closed_at", t)?;
    }
    Ok(Item::Record(r, place))
}
