//! Task Master: `.taskmaster/tasks/tasks.json`, tagged task lists
//! (`{"master": {"tasks": […], "metadata": …}, "feature-x": …}`) with
//! subtasks inside their tasks (eyaltoledano/claude-task-master). The
//! older untagged form (`{"tasks": […]}`) is read as the tag `master`.
//! Ids and dependencies are numbers or strings (`2`, `"2"`, `"2.1"`).
//!
//! The file is one JSON document, read whole: Task Master keeps a
//! project's tasks in it, hundreds rather than hundreds of thousands.

use std::path::Path;

use serde_json::Value;
use taskboard_core::api::ImportLink;
use taskboard_core::model::{LinkType, Priority, TaskStatus};

use super::{
    Item, Read, description, display, labels, malformed, priority_from_words, record, status_from_words,
    time_field, title,
};

pub(super) fn read(path: &Path, each: &mut dyn FnMut(Item) -> Read<()>) -> Read<()> {
    let name = display(path);
    let text = std::fs::read_to_string(path).map_err(|e| malformed(&name, format!("cannot read: {e}")))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| malformed(format!("{name}:{}", e.line()), e))?;
    let Value::Object(top) = doc else {
        return Err(malformed(&name, "expected an object of tags"));
    };
    let tags: Vec<(String, Value)> = if top.get("tasks").is_some_and(Value::is_array) {
        vec![("master".to_string(), Value::Object(top))]
    } else {
        top.into_iter().collect()
    };
    for (tag, list) in tags {
        let Some(tasks) = list.get("tasks").and_then(Value::as_array) else {
            return Err(malformed(format!("{name}: {tag}"), "a tag holds `tasks`, an array"));
        };
        for (i, t) in tasks.iter().enumerate() {
            let place = format!("{name}: {tag}.tasks[{i}]");
            let id = id_of(&place, t)?;
            each(task(&tag, &place, t, &id, None)?)?;
            let subtasks = t.get("subtasks").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
            for (j, s) in subtasks.iter().enumerate() {
                let place = format!("{place}.subtasks[{j}]");
                let sub = id_of(&place, s)?;
                each(task(&tag, &place, s, &format!("{id}.{sub}"), Some(&id))?)?;
            }
        }
    }
    Ok(())
}

fn id_of(place: &str, t: &Value) -> Read<String> {
    match t.get("id") {
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        _ => Err(malformed(place, "id: missing (a number or a string)")),
    }
}

fn text<'a>(t: &'a Value, field: &str) -> &'a str {
    t.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The source id of a task: its tag, then its id (`master/2.1`).
fn external(tag: &str, id: &str) -> String {
    format!("{tag}/{id}")
}

fn task(tag: &str, place: &str, t: &Value, id: &str, parent: Option<&str>) -> Read<Item> {
    let mut r = record(external(tag, id), title(place, text(t, "title"))?);
    let mut body = text(t, "description").trim().to_string();
    for (heading, field) in [("Details", "details"), ("Test strategy", "testStrategy")] {
        let v = text(t, field).trim();
        if !v.is_empty() {
            body.push_str(&format!("\n\n## {heading}\n\n{v}"));
        }
    }
    r.description = description(&body);
    let status = text(t, "status");
    r.status = match status {
        "pending" | "" => TaskStatus::Todo,
        "in-progress" => TaskStatus::InProgress,
        "review" => TaskStatus::Review,
        "done" | "cancelled" => TaskStatus::Done,
        "deferred" => TaskStatus::Backlog,
        "blocked" => TaskStatus::Todo,
        other => status_from_words(other),
    };
    r.priority = match text(t, "priority") {
        "" => Priority::Medium,
        p => priority_from_words(p)
            .ok_or_else(|| malformed(place, format!("priority: {p:?} is not high, medium or low")))?,
    };
    let mut names = Vec::new();
    if tag != "master" {
        names.push(tag.to_string());
    }
    if status == "cancelled" || status == "blocked" {
        names.push(status.to_string());
    }
    r.labels = labels(names.iter().map(String::as_str));
    r.parent = parent.map(|p| external(tag, p));
    let deps = t.get("dependencies").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    for d in deps {
        let dep = match d {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.trim().to_string(),
            other => return Err(malformed(place, format!("dependencies: {other} is not a task id"))),
        };
        // Inside a task, a bare number names a sibling subtask.
        let target = match parent {
            Some(p) if !dep.contains('.') => format!("{p}.{dep}"),
            _ => dep,
        };
        r.links.push(ImportLink { link_type: LinkType::DependsOn, target: external(tag, &target) });
    }
    for field in ["createdAt", "created"] {
        if let Some(s) = t.get(field).and_then(Value::as_str) {
            r.created_at = time_field(place, field, s)?;
        }
    }
    Ok(Item::Record(r, place.to_string()))
}
