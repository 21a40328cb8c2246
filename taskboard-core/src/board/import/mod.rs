//! Imports from other trackers (docs/import.md): records already read
//! from their files are applied in one transaction, or, for a dry run,
//! applied and rolled back so the plan is exactly what an import does.
//!
//! A task remembers its origin (`external_ref`, indexed per project in
//! `EXTERNAL_REFS`), so importing again updates what differs and creates
//! only what is new. The source owns what it describes: the fields of a
//! record, its steps, and the links between tasks of the same source;
//! comments are only ever added.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::records::{
    ActionRecord, LinkRecord, MessageRecord, RecordWrites, Records, Render, StepRecord, TaskRecord,
};
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

mod people;

use super::labels::label_ids;
use super::tasks::{audit, check_parent};
use super::{Actor, Board, Tx};
use crate::error::{Error, ErrorKind, Result};
use crate::events::EventKind;
use crate::model::{AuditAction, AuthorType, Change, ExternalRef, LinkType, MemberType, task_key};
use crate::storage::codec::{Key, uuid_value};
use crate::storage::tables::{ACTIONS, EXTERNAL_REFS, STEPS, TASK_MESSAGES};
use crate::validate::LabelName;
use crate::wire::{ImportAction, ImportItem, ImportPlan, ImportRecord, ImportRequest, MAX_IMPORT_RECORDS};
use people::People;

/// Longest source id.
const MAX_EXTERNAL_ID: usize = 200;

impl Board {
    /// `POST /projects/{id}/import` (admins and owners).
    pub async fn import_tasks(
        &self,
        actor: &Actor,
        project_id: Uuid,
        req: ImportRequest,
    ) -> Result<ImportPlan> {
        actor.require_admin("import tasks")?;
        check_request(&req)?;
        let me = actor.id();
        let dry_run = req.dry_run;
        let kept: Arc<Mutex<Option<ImportPlan>>> = Arc::default();
        let stash = kept.clone();
        let result = self
            .write(move |tx| {
                let plan = apply(tx, me, project_id, &req)?;
                if req.dry_run {
                    *stash.lock().unwrap_or_else(|e| e.into_inner()) = Some(plan);
                    // Refusing the operation rolls every write of it back.
                    return Err(Error::conflict("dry run"));
                }
                Ok(plan)
            })
            .await;
        match result {
            Err(e) if dry_run && e.kind() == ErrorKind::Conflict => {
                kept.lock().unwrap_or_else(|e| e.into_inner()).take().ok_or(e)
            }
            other => other,
        }
    }
}

fn check_request(req: &ImportRequest) -> Result<()> {
    if req.records.len() > MAX_IMPORT_RECORDS {
        return Err(Error::invalid(
            "records",
            format!("at most {MAX_IMPORT_RECORDS} records per request, got {}", req.records.len()),
        ));
    }
    for (i, r) in req.records.iter().enumerate() {
        let bad = |field: &str, problem: &str| Error::invalid(&format!("records[{i}].{field}"), problem);
        let check_id = |field: &str, id: &str| {
            if id.trim().is_empty()
                || id.chars().count() > MAX_EXTERNAL_ID
                || id.chars().any(char::is_control)
            {
                Err(bad(field, "must be 1-200 characters without control characters"))
            } else {
                Ok(())
            }
        };
        check_id("id", &r.id)?;
        if let Some(p) = &r.parent {
            check_id("parent", p)?;
        }
        for (j, l) in r.links.iter().enumerate() {
            check_id(&format!("links[{j}].target"), &l.target)?;
        }
        for (j, c) in r.comments.iter().enumerate() {
            if c.content.trim().is_empty() {
                return Err(bad(&format!("comments[{j}].content"), "must not be empty"));
            }
        }
    }
    Ok(())
}

/// The task a source id names in a project, if imported before.
pub(crate) fn task_by_external_ref(
    r: &(impl Records + ?Sized),
    project: Uuid,
    source: &str,
    id: &str,
) -> Result<Option<Uuid>> {
    let key = Key::new().uuid(project).str0(source).str(id);
    match r.get(EXTERNAL_REFS, &key)? {
        Some(v) => Ok(Some(uuid_value(&v)?)),
        None => Ok(None),
    }
}

/// A time-ordered id at `at`, so imported comments sort among the others
/// by the time they were written.
fn id_at(at: Timestamp) -> Uuid {
    let secs = at.as_second().max(0) as u64;
    let nanos = at.subsec_nanosecond().max(0) as u32;
    Uuid::new_v7(uuid::Timestamp::from_unix(uuid::NoContext, secs, nanos))
}

fn change(from: impl serde::Serialize, to: impl serde::Serialize) -> Change {
    Change {
        from: serde_json::to_value(from).unwrap_or(Value::Null),
        to: serde_json::to_value(to).unwrap_or(Value::Null),
    }
}

fn apply(tx: &mut Tx<'_>, me: Uuid, project_id: Uuid, req: &ImportRequest) -> Result<ImportPlan> {
    let mut project = tx.w.project_required(project_id)?;
    let source = req.source.as_str();
    let mut plan = ImportPlan { dry_run: req.dry_run, ..Default::default() };
    let mut people = People::new(req.create_members);
    let mut position = tx.w.max_position(project_id)?.map_or(0.0, f64::floor);

    // Pass 1: every record gets its task, so parents and links can name
    // records in any order.
    let mut seen = HashSet::new();
    // (record, task id, the task before the import for an existing one)
    let mut work: Vec<(&ImportRecord, Uuid, Option<TaskRecord>)> = Vec::new();
    let mut item_of: Vec<usize> = Vec::new();
    for r in &req.records {
        if !seen.insert(r.id.as_str()) {
            plan.items.push(skip(r, "the same id appears earlier in this import"));
            continue;
        }
        let labels = new_labels(tx, &r.labels, &mut plan.labels_created)?;
        let assignee = match &r.assignee {
            Some(a) => people.resolve(tx, a)?,
            None => None,
        };
        let existing = task_by_external_ref(tx.w, project_id, source, &r.id)?;
        let item = match existing.map(|id| tx.w.task_required(id)).transpose()? {
            Some(old) => {
                let id = old.id;
                work.push((r, id, Some(old)));
                ImportItem { task_id: Some(id), ..item(r, ImportAction::Unchanged) }
            }
            None => {
                project.task_counter += 1;
                position += 1.0;
                let created_at = r.created_at.unwrap_or(tx.now);
                let mut t = TaskRecord {
                    id: Uuid::now_v7(),
                    project_id,
                    number: project.task_counter,
                    title: r.title.to_string(),
                    description: r.description.as_ref().map(|d| d.to_string()),
                    kind: r.kind,
                    status: r.status,
                    priority: r.priority,
                    label_ids: labels,
                    assignee_id: assignee,
                    reviewer_id: None,
                    parent_id: None,
                    watcher_ids: vec![me],
                    position,
                    created_by: me,
                    created_at,
                    updated_at: r.closed_at.unwrap_or(created_at).max(created_at),
                    lease: None,
                    external_ref: Some(ExternalRef { source: source.to_string(), id: r.id.clone() }),
                    title_fold: None,
                    work: Default::default(),
                };
                if let Some(a) = assignee {
                    t.add_watcher(a);
                }
                tx.w.put_task(None, &t)?;
                let mut changes = BTreeMap::new();
                changes.insert("source".to_string(), change(Value::Null, format!("{source}:{}", r.id)));
                changes.insert("status".to_string(), change(Value::Null, r.status));
                record_action(tx, t.id, me, AuditAction::Imported, changes, created_at)?;
                if let Some(closed) = r.closed_at {
                    let mut changes = BTreeMap::new();
                    changes.insert("closed_at".to_string(), change(Value::Null, closed));
                    record_action(tx, t.id, me, AuditAction::Imported, changes, closed)?;
                }
                work.push((r, t.id, None));
                ImportItem {
                    task_id: Some(t.id),
                    key: Some(task_key(&project.slug, t.number)),
                    ..item(r, ImportAction::Create)
                }
            }
        };
        item_of.push(plan.items.len());
        plan.items.push(item);
    }
    tx.w.put_project_record(&project)?;

    // Pass 2: fields of existing tasks, parents, links, steps, comments.
    for (n, (r, id, old)) in work.iter().enumerate() {
        let it = &mut plan.items[item_of[n]];
        let mut unresolved = Vec::new();
        let parent = match &r.parent {
            Some(p) if *p == r.id => {
                it.notes.push("a task cannot be its own parent".into());
                None
            }
            Some(p) => match task_by_external_ref(tx.w, project_id, source, p)? {
                Some(pid) => match check_parent(tx.w, Some(*id), project_id, pid) {
                    Ok(()) => Some(pid),
                    Err(_) => {
                        it.notes.push(format!("parent {p} would make a cycle; left out"));
                        None
                    }
                },
                None => {
                    unresolved.push(p.clone());
                    None
                }
            },
            None => None,
        };
        let mut changed = Vec::new();
        let current = tx.w.task_required(*id)?;
        let mut t = current.clone();
        match old {
            Some(old) => {
                t.title = r.title.to_string();
                t.description = r.description.as_ref().map(|d| d.to_string());
                t.kind = r.kind;
                t.status = r.status;
                t.priority = r.priority;
                t.label_ids = label_ids(tx, &r.labels)?;
                t.assignee_id = match &r.assignee {
                    Some(a) => people.resolve(tx, a)?,
                    None => None,
                };
                if let Some(a) = t.assignee_id {
                    t.add_watcher(a);
                }
                // A parent not imported yet does not take away the one
                // the task has.
                if parent.is_some() || (r.parent.is_none() && old.parent_id.is_some()) {
                    t.parent_id = parent;
                }
                for (field, differs) in [
                    ("title", old.title != t.title),
                    ("description", old.description != t.description),
                    ("type", old.kind != t.kind),
                    ("status", old.status != t.status),
                    ("priority", old.priority != t.priority),
                    ("labels", old.label_ids != t.label_ids),
                    ("assignee", old.assignee_id != t.assignee_id),
                    ("parent", old.parent_id != t.parent_id),
                ] {
                    if differs {
                        changed.push(field.to_string());
                    }
                }
                if !changed.is_empty() {
                    Board::save_task_change(tx, me, old, t.clone(), AuditAction::Updated)?;
                }
            }
            None => {
                if parent.is_some() {
                    t.parent_id = parent;
                    tx.w.put_task(Some(&current), &t)?;
                }
            }
        }
        if sync_links(tx, *id, project_id, source, r, &mut unresolved, &mut it.notes)? {
            changed.push("links".into());
        }
        if sync_steps(tx, *id, r)? {
            changed.push("steps".into());
        }
        if add_comments(tx, me, *id, r)? {
            changed.push("comments".into());
        }
        it.unresolved = unresolved;
        if old.is_some() && !changed.is_empty() {
            it.action = ImportAction::Update;
            it.changes = changed;
            let mut changes = BTreeMap::new();
            changes.insert("source".to_string(), change(Value::Null, format!("{source}:{}", r.id)));
            changes.insert("fields".to_string(), change(Value::Null, &it.changes));
            record_action(tx, *id, me, AuditAction::Imported, changes, tx.now)?;
        }
    }

    // Events once every task is whole, and the keys of the answer.
    for (n, (_, id, old)) in work.iter().enumerate() {
        let it = &plan.items[item_of[n]];
        let t = tx.w.task_required(*id)?;
        match (old, it.action) {
            (None, _) => {
                let task = tx.w.render_task(&t)?;
                tx.emit_all(EventKind::TaskCreated, &task)?;
            }
            // `save_task_change` told of field changes; links, steps and
            // comments alone are told here.
            (Some(old), ImportAction::Update) if same_fields(old, &t) => {
                let task = tx.w.render_task(&t)?;
                tx.emit_all(EventKind::TaskUpdated, &task)?;
            }
            _ => {}
        }
        plan.items[item_of[n]].key = Some(task_key(&project.slug, t.number));
    }
    for it in &plan.items {
        match it.action {
            ImportAction::Create => plan.created += 1,
            ImportAction::Update => plan.updated += 1,
            ImportAction::Unchanged => plan.unchanged += 1,
            ImportAction::Skip => plan.skipped += 1,
        }
    }
    plan.members_created = people.created;
    plan.people_unmatched = people.unmatched;
    if plan.created + plan.updated > 0 {
        let who = super::tasks::member_slug(tx.w, Some(me))?;
        let text = format!(
            "{who} imported from {source}: {} created, {} updated, {} unchanged",
            plan.created, plan.updated, plan.unchanged
        );
        Board::system_message(tx, project.chat_id, me, text)?;
    }
    Ok(plan)
}

fn same_fields(a: &TaskRecord, b: &TaskRecord) -> bool {
    a.title == b.title
        && a.description == b.description
        && a.kind == b.kind
        && a.status == b.status
        && a.priority == b.priority
        && a.label_ids == b.label_ids
        && a.assignee_id == b.assignee_id
        && a.parent_id == b.parent_id
}

fn item(r: &ImportRecord, action: ImportAction) -> ImportItem {
    ImportItem {
        id: r.id.clone(),
        action,
        key: None,
        task_id: None,
        changes: Vec::new(),
        reason: None,
        unresolved: Vec::new(),
        notes: Vec::new(),
    }
}

fn skip(r: &ImportRecord, reason: &str) -> ImportItem {
    ImportItem { reason: Some(reason.to_string()), ..item(r, ImportAction::Skip) }
}

/// Label ids for names, noting the labels that are new.
fn new_labels(tx: &mut Tx<'_>, names: &[LabelName], created: &mut Vec<String>) -> Result<Vec<Uuid>> {
    for n in names {
        if tx.w.label_by_name(n)?.is_none() && !created.iter().any(|c| c.eq_ignore_ascii_case(n)) {
            created.push(n.to_string());
        }
    }
    label_ids(tx, names)
}

fn record_action(
    tx: &mut Tx<'_>,
    task: Uuid,
    actor: Uuid,
    action: AuditAction,
    changes: BTreeMap<String, Change>,
    at: Timestamp,
) -> Result<()> {
    if at == tx.now {
        return audit(tx, task, actor, action, changes);
    }
    let a = ActionRecord { id: id_at(at), task_id: task, actor_id: actor, action, changes, created_at: at };
    tx.w.put_record(ACTIONS, &Key::new().uuid(task).uuid(a.id), &a)
}

/// Makes the task's links to tasks of the same source those of the
/// record; links to other tasks are the board's own and stay.
fn sync_links(
    tx: &mut Tx<'_>,
    id: Uuid,
    project: Uuid,
    source: &str,
    r: &ImportRecord,
    unresolved: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<bool> {
    let mut wanted: Vec<(LinkType, Uuid)> = Vec::new();
    for l in &r.links {
        match task_by_external_ref(tx.w, project, source, &l.target)? {
            Some(target) if target == id => notes.push(format!("link to itself ({}) left out", l.target)),
            Some(target) => {
                if !wanted.contains(&(l.link_type, target)) {
                    wanted.push((l.link_type, target));
                }
            }
            None => unresolved.push(l.target.clone()),
        }
    }
    let mut changed = false;
    let mut have = Vec::new();
    for l in tx.w.links_from(id)? {
        let from_source =
            tx.w.task(l.target_id)?
                .and_then(|t| t.external_ref)
                .is_some_and(|e| e.source == source && !unresolved.contains(&e.id));
        if !from_source {
            continue;
        }
        if wanted.contains(&(l.link_type, l.target_id)) {
            have.push((l.link_type, l.target_id));
        } else {
            tx.w.delete_link(&l)?;
            tx.emit_all(
                EventKind::LinkDeleted,
                json!({"id": l.id, "source_id": l.source_id, "target_id": l.target_id}),
            )?;
            changed = true;
        }
    }
    for (link_type, target) in wanted {
        if have.contains(&(link_type, target)) {
            continue;
        }
        let edge = match link_type {
            LinkType::DependsOn => Some((id, target)),
            LinkType::Blocks => Some((target, id)),
            LinkType::RelatesTo => None,
        };
        if let Some((depender, dependee)) = edge
            && super::links::depends_transitively(tx.w, dependee, depender)?
        {
            let key = tx.w.task_key_of(&tx.w.task_required(target)?)?;
            notes.push(format!("{link_type} {key} would make a dependency cycle; left out"));
            continue;
        }
        let l = LinkRecord {
            id: Uuid::now_v7(),
            source_id: id,
            target_id: target,
            link_type,
            created_at: tx.now,
        };
        tx.w.put_link(&l)?;
        let link = tx.w.render_link(&l)?;
        tx.emit_all(EventKind::LinkCreated, &link)?;
        changed = true;
    }
    Ok(changed)
}

/// Makes the task's steps those of the record when they differ.
fn sync_steps(tx: &mut Tx<'_>, id: Uuid, r: &ImportRecord) -> Result<bool> {
    let have = tx.w.steps(id)?;
    let same = have.len() == r.steps.len()
        && have.iter().zip(&r.steps).all(|(h, w)| h.title == w.title.as_str() && h.done == w.done);
    if same {
        return Ok(false);
    }
    for s in &have {
        tx.w.delete(STEPS, &Key::new().uuid(id).uuid(s.id))?;
    }
    for (i, s) in r.steps.iter().enumerate() {
        let step = StepRecord {
            id: Uuid::now_v7(),
            task_id: id,
            title: s.title.to_string(),
            done: s.done,
            position: i as i64 + 1,
        };
        tx.w.put_record(STEPS, &Key::new().uuid(id).uuid(step.id), &step)?;
    }
    Ok(true)
}

/// Longest author name kept on an imported comment.
const MAX_IMPORTED_AUTHOR: usize = 200;

/// The author of an imported comment as its source wrote it, trimmed,
/// without control characters and at most 200 characters; `None` for a
/// source that names none.
fn imported_author(written: Option<&str>) -> Option<String> {
    let name: String =
        written?.trim().chars().filter(|c| !c.is_control()).take(MAX_IMPORTED_AUTHOR).collect();
    Some(name).filter(|n| !n.is_empty())
}

/// Adds the record's comments the task does not have yet (the same text
/// at the same time).
///
/// An imported comment is the importer's message (docs/decisions.md
/// 20.v): the source says who wrote it, not the board, so no member is
/// made to have written it, even one whose slug or email the source's
/// name matches (`owner@evil.example` is not the member `owner`). The
/// name as the source wrote it is kept beside the text, in
/// `imported_author`, for the board and the command line to show.
fn add_comments(tx: &mut Tx<'_>, me: Uuid, id: Uuid, r: &ImportRecord) -> Result<bool> {
    if r.comments.is_empty() {
        return Ok(false);
    }
    let mut have = HashSet::new();
    for mid in tx.w.ids_with_prefix(TASK_MESSAGES, id.as_bytes(), crate::storage::Direction::Forward)? {
        if let Some(m) = tx.w.message(mid)?
            && m.author_type != AuthorType::System
        {
            have.insert((m.created_at, m.content));
        }
    }
    let kind = match tx.w.member(me)?.map(|m| m.kind) {
        Some(MemberType::Agent) => AuthorType::Agent,
        _ => AuthorType::Human,
    };
    let mut added = false;
    for c in &r.comments {
        let at = c.created_at.unwrap_or(tx.now);
        let author = imported_author(c.author.as_deref());
        let content = c.content.to_string();
        // Builds before 20.u kept the name of an author no member matched
        // in the text; such a comment is the same comment.
        let earlier = author.as_ref().map(|a| format!("{a}:\n\n{content}"));
        if have.contains(&(at, content.clone())) || earlier.is_some_and(|e| have.contains(&(at, e))) {
            continue;
        }
        let m = MessageRecord {
            id: id_at(at),
            task_id: Some(id),
            author_id: Some(me),
            actor_id: Some(me),
            imported_author: author,
            ..MessageRecord::plain(at, kind, content.clone())
        };
        tx.w.put_message(&m)?;
        have.insert((at, content));
        added = true;
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_imported_author_is_kept_as_written_within_bounds() {
        use super::imported_author;
        assert_eq!(imported_author(Some(" owner@evil.example ")).as_deref(), Some("owner@evil.example"));
        assert_eq!(imported_author(Some("Ada\u{7}\nLovelace")).as_deref(), Some("AdaLovelace"));
        assert_eq!(imported_author(Some(&"x".repeat(300))).map(|a| a.len()), Some(200));
        assert_eq!(imported_author(Some("  ")), None);
        assert_eq!(imported_author(None), None);
    }

    #[test]
    fn slugs_of_names_and_emails() {
        assert_eq!(super::super::members::slug_base("Ada Lovelace", "imported"), "ada-lovelace");
        assert_eq!(super::super::members::slug_base("ada@example.com", "imported"), "ada");
        assert_eq!(super::super::members::slug_base("@@@", "imported"), "imported");
        assert_eq!(super::super::members::slug_base("Zoë O'Neil", "imported"), "zo-o-neil");
    }
}
