//! Tasks, their links, labels, watchers, steps and audit log
//! (docs/rules.md, tasks), and global labels.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};
use uuid::Uuid;

use super::{Actor, Board, RenderedTask, Tx};
use crate::api::{LabelPatch, NewLabel, NewLink, NewTask, Page, StepPatch, TaskFilter, TaskPatch};
use crate::error::{Error, Result};
use crate::model::*;
use crate::records::*;
use crate::storage::codec::{Key, decode, uuid_suffix, uuid_value};
use crate::storage::tables::*;
use crate::storage::{Direction, KeyRange, ReadTxn, Scan};
use crate::validate::{LabelName, Title};

/// Collects `{field: {from, to}}` for the audit log.
#[derive(Default)]
struct Changes(BTreeMap<String, Change>);

impl Changes {
    fn note<T: serde::Serialize + PartialEq>(&mut self, field: &str, from: &T, to: &T) {
        if from != to {
            self.0.insert(
                field.to_string(),
                Change {
                    from: serde_json::to_value(from).unwrap_or(Value::Null),
                    to: serde_json::to_value(to).unwrap_or(Value::Null),
                },
            );
        }
    }
}

fn audit(
    tx: &mut Tx<'_>,
    task: Uuid,
    actor: Uuid,
    action: &str,
    changes: BTreeMap<String, Change>,
) -> Result<()> {
    let a = ActionRecord {
        id: Uuid::now_v7(),
        task_id: task,
        actor_id: actor,
        action: action.to_string(),
        changes,
        created_at: tx.now,
    };
    tx.w.put_record(ACTIONS, &Key::new().uuid(task).uuid(a.id), &a)
}

fn member_slug(r: &(impl Records + ?Sized), id: Option<Uuid>) -> Result<String> {
    Ok(match id {
        Some(id) => format!("@{}", r.member_ref(id)?.slug),
        None => "nobody".to_string(),
    })
}

/// Label ids for names, creating the labels that do not exist yet with
/// the default colour (docs/rules.md, tasks).
fn label_ids(tx: &mut Tx<'_>, names: &[LabelName]) -> Result<Vec<Uuid>> {
    let mut ids = Vec::with_capacity(names.len());
    for name in names {
        let id = match tx.w.label_by_name(name)? {
            Some(l) => l.id,
            None => {
                let l = LabelRecord {
                    id: Uuid::now_v7(),
                    name: name.to_string(),
                    color: crate::validate::Color::DEFAULT.to_string(),
                };
                tx.w.put_label(None, &l)?;
                tx.emit_all("label.created", l.to_wire())?;
                l.id
            }
        };
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

fn label_names(r: &(impl Records + ?Sized), ids: &[Uuid]) -> Result<Vec<String>> {
    let mut names = Vec::with_capacity(ids.len());
    for &id in ids {
        if let Some(l) = r.label(id)? {
            names.push(l.name);
        }
    }
    Ok(names)
}

/// Checks a new parent: it exists (404), is in the same project (422) and
/// is not the task or one of its descendants (422).
fn check_parent(r: &(impl Records + ?Sized), task: Option<Uuid>, project: Uuid, parent: Uuid) -> Result<()> {
    let p = r.task(parent)?.ok_or_else(|| Error::not_found(format!("parent task {parent} not found")))?;
    if p.project_id != project {
        return Err(Error::invalid("parent_id", "the parent must be in the same project"));
    }
    let mut cursor = Some(p);
    let mut seen = HashSet::new();
    while let Some(t) = cursor {
        if Some(t.id) == task || !seen.insert(t.id) {
            return Err(Error::invalid("parent_id", "the parent would create a cycle"));
        }
        cursor = match t.parent_id {
            Some(id) => r.task(id)?,
            None => None,
        };
    }
    Ok(())
}

/// Whether `from` reaches `to` through depends-on edges.
fn depends_transitively(r: &(impl Records + ?Sized), from: Uuid, to: Uuid) -> Result<bool> {
    let mut stack = vec![from];
    let mut seen = HashSet::new();
    while let Some(node) = stack.pop() {
        if node == to {
            return Ok(true);
        }
        if seen.insert(node) {
            stack.extend(r.depends_on(node)?);
        }
    }
    Ok(false)
}

/// Auto-assignment (docs/rules.md, tasks): among active agents of the project
/// sharing a label with the task, the one with fewest open tasks, then
/// online before others, then the oldest.
fn auto_assignee(r: &(impl Records + ?Sized), project: Uuid, labels: &[String]) -> Result<Option<Uuid>> {
    if labels.is_empty() {
        return Ok(None);
    }
    let wanted: HashSet<String> = labels.iter().map(|l| l.to_lowercase()).collect();
    let mut best: Option<(usize, bool, jiff::Timestamp, Uuid)> = None;
    for id in r.project_member_ids(project)? {
        let Some(m) = r.member(id)? else { continue };
        if !m.is_active || m.kind != MemberType::Agent {
            continue;
        }
        if !m.agent_config.labels.iter().any(|l| wanted.contains(&l.to_lowercase())) {
            continue;
        }
        let mut open = 0;
        for tid in r.ids_with_prefix(ASSIGNEE_TASKS, id.as_bytes(), Direction::Forward)? {
            if r.task(tid)?.is_some_and(|t| t.status.is_open()) {
                open += 1;
            }
        }
        let key = (open, m.status != MemberStatus::Online, m.created_at, m.id);
        if best.as_ref().is_none_or(|b| key < *b) {
            best = Some(key);
        }
    }
    Ok(best.map(|b| b.3))
}

/// Tasks matching a filter, ordered by position then number. The most
/// selective index available serves the scan; the other filters are
/// checked on the records it yields.
pub(crate) fn query_tasks(r: &dyn ReadTxn, f: &TaskFilter) -> Result<Vec<TaskRecord>> {
    let label_id = match &f.label {
        Some(name) => match r.label_by_name(name)? {
            Some(l) => Some(l.id),
            None => return Ok(Vec::new()),
        },
        None => None,
    };
    let ids: Vec<Uuid> = if let (Some(p), Some(s)) = (f.project_id, f.status) {
        r.id_values_with_prefix(PROJECT_STATUS_TASKS, &Key::new().uuid(p).u8(s.index()))?
    } else if let Some(a) = f.assignee_id {
        r.ids_with_prefix(ASSIGNEE_TASKS, a.as_bytes(), Direction::Forward)?
    } else if let Some(parent) = f.parent_id {
        r.ids_with_prefix(SUBTASKS, parent.as_bytes(), Direction::Forward)?
    } else if let Some(l) = label_id {
        r.ids_with_prefix(LABEL_TASKS, l.as_bytes(), Direction::Forward)?
    } else if let Some(p) = f.project_id {
        r.id_values_with_prefix(PROJECT_TASKS, p.as_bytes())?
    } else if let Some(rv) = f.reviewer_id {
        r.ids_with_prefix(REVIEWER_TASKS, rv.as_bytes(), Direction::Forward)?
    } else if let Some(s) = f.status {
        r.ids_with_prefix(STATUS_TASKS, &[s.index()], Direction::Forward)?
    } else {
        let mut all = Vec::new();
        r.scan(TASKS, KeyRange::all(), Direction::Forward, &mut |k, _| {
            all.push(uuid_suffix(k)?);
            Ok(Scan::Continue)
        })?;
        all
    };
    let q = f.q.as_ref().map(|q| q.trim().to_lowercase()).filter(|q| !q.is_empty());
    let key_match = match &q {
        Some(q) => r.task_by_key(q)?.map(|t| t.id),
        None => None,
    };
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(t) = r.task(id)? else { continue };
        let keep = f.project_id.is_none_or(|p| t.project_id == p)
            && f.status.is_none_or(|s| t.status == s)
            && f.assignee_id.is_none_or(|a| t.assignee_id == Some(a))
            && f.reviewer_id.is_none_or(|a| t.reviewer_id == Some(a))
            && f.parent_id.is_none_or(|p| t.parent_id == Some(p))
            && f.kind.is_none_or(|k| t.kind == k)
            && f.priority.is_none_or(|p| t.priority == p)
            && label_id.is_none_or(|l| t.label_ids.contains(&l))
            && q.as_ref()
                .is_none_or(|q| key_match == Some(t.id) || t.title.to_lowercase().contains(q.as_str()));
        if keep {
            out.push(t);
        }
    }
    out.sort_by(|a, b| a.position.total_cmp(&b.position).then(a.number.cmp(&b.number)).then(a.id.cmp(&b.id)));
    Ok(out)
}

impl Board {
    /// `GET /tasks` (docs/rules.md, lists). Tasks rendered before and unchanged
    /// since come from the cache of rendered tasks.
    pub async fn list_tasks(&self, _actor: &Actor, filter: TaskFilter) -> Result<Vec<Task>> {
        filter.page.check()?;
        let generation = self.task_cache_generation();
        let board = self.clone();
        let (tasks, rendered) = self
            .read(move |r| {
                let records = filter.page.apply(query_tasks(r, &filter)?);
                let mut tasks = Vec::with_capacity(records.len());
                let mut rendered = Vec::new();
                for t in &records {
                    match board.cached_task(t.id) {
                        Some(task) => tasks.push(task),
                        None => {
                            let task = RenderedTask::new(r.render_task(t)?);
                            rendered.push(task.clone());
                            tasks.push(task);
                        }
                    }
                }
                Ok((tasks, rendered))
            })
            .await?;
        self.cache_tasks(generation, rendered);
        Ok(tasks.iter().map(|t| t.task.clone()).collect())
    }

    /// `GET /tasks/{id}`: from the cache of rendered tasks when it holds
    /// the task, without a storage read.
    pub async fn get_task(&self, actor: &Actor, id: Uuid) -> Result<Task> {
        Ok(self.rendered_task(actor, id).await?.task.clone())
    }

    /// `GET /tasks/{id}` as the JSON the API sends, serialised once per
    /// version of the task: the fast path for servers.
    pub async fn get_task_json(&self, actor: &Actor, id: Uuid) -> Result<Arc<str>> {
        Ok(self.rendered_task(actor, id).await?.json())
    }

    async fn rendered_task(&self, _actor: &Actor, id: Uuid) -> Result<Arc<RenderedTask>> {
        if let Some(task) = self.cached_task(id) {
            return Ok(task);
        }
        let generation = self.task_cache_generation();
        let task = RenderedTask::new(self.read(move |r| r.render_task(&r.task_required(id)?)).await?);
        self.cache_tasks(generation, [task.clone()]);
        Ok(task)
    }

    /// A task by id or key (`WEB-12`).
    pub async fn find_task(&self, _actor: &Actor, reference: &str) -> Result<Task> {
        let reference = reference.to_string();
        self.read(move |r| {
            let found = match reference.parse::<Uuid>() {
                Ok(id) => r.task(id)?,
                Err(_) => r.task_by_key(&reference)?,
            };
            let t = found.ok_or_else(|| Error::not_found(format!("task {reference} not found")))?;
            r.render_task(&t)
        })
        .await
    }

    /// `POST /tasks?project_id=…` (docs/rules.md, tasks: creating).
    pub async fn create_task(&self, actor: &Actor, project_id: Uuid, new: NewTask) -> Result<Task> {
        let creator = actor.id();
        self.write(move |tx| {
            let mut project = tx.w.project_required(project_id)?;
            if let Some(parent) = new.parent_id {
                check_parent(tx.w, None, project_id, parent)?;
            }
            if let Some(a) = new.assignee_id {
                tx.w.active_member(a)?;
            }
            if let Some(rv) = new.reviewer_id {
                tx.w.active_member(rv)?;
            }
            let mut depends_on = Vec::new();
            for &d in &new.depends_on {
                tx.w.task(d)?.ok_or_else(|| Error::not_found(format!("task {d} (depends_on) not found")))?;
                if !depends_on.contains(&d) {
                    depends_on.push(d);
                }
            }
            let labels = label_ids(tx, &new.labels)?;
            let position = tx.w.max_position(project_id)?.map_or(1.0, |p| p.floor() + 1.0);
            project.task_counter += 1;
            let mut t = TaskRecord {
                id: Uuid::now_v7(),
                project_id,
                number: project.task_counter,
                title: new.title.to_string(),
                description: new.description.map(String::from),
                kind: new.kind,
                status: new.status,
                priority: new.priority,
                label_ids: labels,
                assignee_id: new.assignee_id,
                reviewer_id: new.reviewer_id,
                parent_id: new.parent_id,
                watcher_ids: vec![creator],
                position,
                created_by: creator,
                created_at: tx.now,
                updated_at: tx.now,
            };
            if t.assignee_id.is_none() && project.auto_assign {
                let names = label_names(tx.w, &t.label_ids)?;
                t.assignee_id = auto_assignee(tx.w, project_id, &names)?;
            }
            if let Some(a) = t.assignee_id {
                t.add_watcher(a);
            }
            tx.w.put_project_record(&project)?;
            tx.w.put_task(None, &t)?;
            for target in depends_on {
                let link = LinkRecord {
                    id: Uuid::now_v7(),
                    source_id: t.id,
                    target_id: target,
                    link_type: LinkType::DependsOn,
                    created_at: tx.now,
                };
                tx.w.put_link(&link)?;
            }
            let mut changes = Changes::default();
            changes.note("status", &Value::Null, &json!(t.status));
            audit(tx, t.id, creator, "created", changes.0)?;
            let task = tx.w.render_task(&t)?;
            tx.emit_all("task.created", &task)?;
            let who = member_slug(tx.w, Some(creator))?;
            let text = format!("{who} created {}: {}", task.key, task.title);
            Board::system_message(tx, None, Some(t.id), creator, text.clone())?;
            Board::system_message(tx, Some(project.chat_id), None, creator, text)?;
            if let Some(a) = t.assignee_id.filter(|_| new.assignee_id.is_none()) {
                let text =
                    format!("{} was assigned automatically to {}", task.key, member_slug(tx.w, Some(a))?);
                Board::system_message(tx, None, Some(t.id), creator, text)?;
            }
            Ok(task)
        })
        .await
    }

    /// `PATCH /tasks/{id}` (docs/rules.md, requests and errors and tasks).
    pub async fn update_task(&self, actor: &Actor, id: Uuid, patch: TaskPatch) -> Result<Task> {
        let actor = actor.id();
        self.write(move |tx| {
            let old = tx.w.task_required(id)?;
            let mut t = old.clone();
            if let Some(title) = patch.title.value() {
                t.title = title.to_string();
            }
            if let Some(d) = patch.description.change() {
                t.description = d.map(String::from);
            }
            if let Some(k) = patch.kind.value() {
                t.kind = k;
            }
            if let Some(s) = patch.status.value() {
                t.status = s;
            }
            if let Some(p) = patch.priority.value() {
                t.priority = p;
            }
            // `labels` is not nullable: null leaves it unchanged
            // (docs/rules.md, requests and errors); an empty array clears it.
            if let Some(names) = patch.labels.value() {
                t.label_ids = label_ids(tx, &names)?;
            }
            if let Some(a) = patch.assignee_id.change() {
                if let Some(a) = a {
                    tx.w.active_member(a)?;
                    t.add_watcher(a);
                }
                t.assignee_id = a;
            }
            if let Some(rv) = patch.reviewer_id.change() {
                if let Some(rv) = rv {
                    tx.w.active_member(rv)?;
                }
                t.reviewer_id = rv;
            }
            if let Some(p) = patch.parent_id.change() {
                if let Some(p) = p {
                    check_parent(tx.w, Some(id), t.project_id, p)?;
                }
                t.parent_id = p;
            }
            if let Some(pos) = patch.position.value() {
                if !pos.is_finite() {
                    return Err(Error::invalid("position", "must be a finite number"));
                }
                t.position = pos;
            }
            Board::save_task_change(tx, actor, &old, t, "updated")
        })
        .await
    }

    /// Writes a changed task with its audit entry, system messages for
    /// significant changes (docs/rules.md, tasks) and `task.updated`. A change
    /// that changes nothing writes nothing.
    fn save_task_change(
        tx: &mut Tx<'_>,
        actor: Uuid,
        old: &TaskRecord,
        mut t: TaskRecord,
        action: &str,
    ) -> Result<Task> {
        let mut changes = Changes::default();
        changes.note("title", &old.title, &t.title);
        changes.note("description", &old.description, &t.description);
        changes.note("type", &old.kind, &t.kind);
        changes.note("status", &old.status, &t.status);
        changes.note("priority", &old.priority, &t.priority);
        if old.label_ids != t.label_ids {
            changes.note("labels", &label_names(tx.w, &old.label_ids)?, &label_names(tx.w, &t.label_ids)?);
        }
        changes.note("assignee_id", &old.assignee_id, &t.assignee_id);
        changes.note("reviewer_id", &old.reviewer_id, &t.reviewer_id);
        changes.note("parent_id", &old.parent_id, &t.parent_id);
        changes.note("position", &old.position, &t.position);
        changes.note("watcher_ids", &old.watcher_ids, &t.watcher_ids);
        if changes.0.is_empty() {
            return tx.w.render_task(old);
        }
        t.updated_at = tx.now;
        tx.w.put_task(Some(old), &t)?;
        let key = tx.w.task_key_of(&t)?;
        let who = member_slug(tx.w, Some(actor))?;
        let mut notes = Vec::new();
        match action {
            "take" => notes.push(format!("{who} took {key}")),
            "assign" => notes.push(format!("{who} assigned {key} to {}", member_slug(tx.w, t.assignee_id)?)),
            _ => {
                if old.status != t.status {
                    notes.push(format!("{who} moved {key} from {} to {}", old.status, t.status));
                }
                if old.assignee_id != t.assignee_id && action != "reject" {
                    notes.push(match t.assignee_id {
                        Some(_) => format!("{who} assigned {key} to {}", member_slug(tx.w, t.assignee_id)?),
                        None => format!("{who} unassigned {key}"),
                    });
                }
                if old.reviewer_id != t.reviewer_id {
                    notes.push(match t.reviewer_id {
                        Some(_) => {
                            format!("{who} asked {} to review {key}", member_slug(tx.w, t.reviewer_id)?)
                        }
                        None => format!("{who} removed the reviewer of {key}"),
                    });
                }
            }
        }
        audit(tx, t.id, actor, action, changes.0)?;
        // The new state first, then the comments about it, as on creation.
        let task = tx.w.render_task(&t)?;
        tx.emit_all("task.updated", &task)?;
        for note in notes {
            Board::system_message(tx, None, Some(t.id), actor, note)?;
        }
        Ok(task)
    }

    /// Deletes a task with its steps, links, comments and audit log;
    /// subtasks lose their parent (docs/rules.md, tasks).
    pub(crate) fn delete_task_in(tx: &mut Tx<'_>, t: &TaskRecord) -> Result<()> {
        let key = tx.w.task_key_of(t)?;
        for step in tx.w.steps(t.id)? {
            tx.w.delete(STEPS, &Key::new().uuid(t.id).uuid(step.id))?;
        }
        let mut links = tx.w.links_from(t.id)?;
        links.extend(tx.w.links_to(t.id)?);
        for l in links {
            tx.w.delete_link(&l)?;
        }
        for mid in tx.w.ids_with_prefix(TASK_MESSAGES, t.id.as_bytes(), Direction::Forward)? {
            if let Some(m) = tx.w.message(mid)? {
                let blobs = tx.w.delete_message(&m)?;
                tx.dead_blobs.extend(blobs);
            }
        }
        for aid in tx.w.ids_with_prefix(ACTIONS, t.id.as_bytes(), Direction::Forward)? {
            tx.w.delete(ACTIONS, &Key::new().uuid(t.id).uuid(aid))?;
        }
        for sub in tx.w.subtask_ids(t.id)? {
            if let Some(old) = tx.w.task(sub)? {
                let mut child = old.clone();
                child.parent_id = None;
                child.updated_at = tx.now;
                tx.w.put_task(Some(&old), &child)?;
            }
        }
        tx.w.delete_task_record(t)?;
        tx.emit_all("task.deleted", json!({"id": t.id, "key": key, "project_id": t.project_id}))
    }

    /// `DELETE /tasks/{id}`.
    pub async fn delete_task(&self, _actor: &Actor, id: Uuid) -> Result<()> {
        self.write(move |tx| {
            let t = tx.w.task_required(id)?;
            Board::delete_task_in(tx, &t)
        })
        .await
    }

    /// `POST /tasks/{id}/take`: atomic; only an unassigned backlog or todo
    /// task can be taken (409 otherwise).
    pub async fn take(&self, actor: &Actor, id: Uuid) -> Result<Task> {
        let me = actor.id();
        self.write(move |tx| {
            let old = tx.w.task_required(id)?;
            let key = tx.w.task_key_of(&old)?;
            if !matches!(old.status, TaskStatus::Backlog | TaskStatus::Todo) {
                return Err(Error::conflict(format!(
                    "{key} is {}; only backlog or todo tasks can be taken",
                    old.status
                )));
            }
            if let Some(a) = old.assignee_id {
                return Err(Error::conflict(format!(
                    "{key} is already assigned to {}",
                    member_slug(tx.w, Some(a))?
                )));
            }
            let mut t = old.clone();
            t.status = TaskStatus::InProgress;
            t.assignee_id = Some(me);
            t.add_watcher(me);
            Board::save_task_change(tx, me, &old, t, "take")
        })
        .await
    }

    /// `POST /tasks/{id}/reject`: back to backlog, unassigned, with a
    /// system message giving the reason.
    pub async fn reject(&self, actor: &Actor, id: Uuid, reason: crate::validate::Reason) -> Result<Rejected> {
        let me = actor.id();
        self.write(move |tx| {
            let old = tx.w.task_required(id)?;
            let mut t = old.clone();
            t.status = TaskStatus::Backlog;
            t.assignee_id = None;
            let key = tx.w.task_key_of(&old)?;
            let who = member_slug(tx.w, Some(me))?;
            let mut changes = Changes::default();
            changes.note("status", &old.status, &t.status);
            changes.note("assignee_id", &old.assignee_id, &t.assignee_id);
            changes.0.insert("reason".into(), Change { from: Value::Null, to: json!(reason.as_str()) });
            t.updated_at = tx.now;
            tx.w.put_task(Some(&old), &t)?;
            audit(tx, id, me, "reject", changes.0)?;
            let task = tx.w.render_task(&t)?;
            tx.emit_all("task.updated", &task)?;
            Board::system_message(tx, None, Some(id), me, format!("{who} rejected {key}: {reason}"))?;
            Ok(Rejected { ok: true, reason: reason.to_string() })
        })
        .await
    }

    /// `POST /tasks/{id}/assign`: an active member (404 otherwise); the
    /// status is left as it is.
    pub async fn assign(&self, actor: &Actor, id: Uuid, assignee: Uuid) -> Result<Task> {
        let me = actor.id();
        self.write(move |tx| {
            let old = tx.w.task_required(id)?;
            tx.w.active_member(assignee)?;
            let mut t = old.clone();
            t.assignee_id = Some(assignee);
            t.add_watcher(assignee);
            Board::save_task_change(tx, me, &old, t, "assign")
        })
        .await
    }

    /// `POST /tasks/{id}/watch` and `DELETE …/watch`.
    pub async fn set_watching(&self, actor: &Actor, id: Uuid, watching: bool) -> Result<Watchers> {
        let me = actor.id();
        self.write(move |tx| {
            let old = tx.w.task_required(id)?;
            let mut t = old.clone();
            if watching {
                t.add_watcher(me);
            } else {
                t.watcher_ids.retain(|w| *w != me);
            }
            if t.watcher_ids != old.watcher_ids {
                tx.w.put_task(Some(&old), &t)?;
                let task = tx.w.render_task(&t)?;
                tx.emit_all("task.updated", &task)?;
            }
            Ok(Watchers { ok: true, watcher_ids: t.watcher_ids })
        })
        .await
    }

    pub async fn watch(&self, actor: &Actor, id: Uuid) -> Result<Watchers> {
        self.set_watching(actor, id, true).await
    }

    pub async fn unwatch(&self, actor: &Actor, id: Uuid) -> Result<Watchers> {
        self.set_watching(actor, id, false).await
    }

    /// `POST /tasks/{id}/links` (docs/rules.md, tasks).
    pub async fn create_link(&self, _actor: &Actor, id: Uuid, new: NewLink) -> Result<TaskLink> {
        self.write(move |tx| {
            tx.w.task_required(id)?;
            if new.target_id == id {
                return Err(Error::bad_request("a task cannot be linked to itself"));
            }
            tx.w.task(new.target_id)?
                .ok_or_else(|| Error::not_found(format!("target task {} not found", new.target_id)))?;
            if tx
                .w
                .links_from(id)?
                .iter()
                .any(|l| l.target_id == new.target_id && l.link_type == new.link_type)
            {
                return Err(Error::conflict("this link already exists"));
            }
            let edge = match new.link_type {
                LinkType::DependsOn => Some((id, new.target_id)),
                LinkType::Blocks => Some((new.target_id, id)),
                LinkType::RelatesTo => None,
            };
            if let Some((depender, dependee)) = edge
                && depends_transitively(tx.w, dependee, depender)?
            {
                return Err(Error::invalid("target_id", "the link would create a dependency cycle"));
            }
            let l = LinkRecord {
                id: Uuid::now_v7(),
                source_id: id,
                target_id: new.target_id,
                link_type: new.link_type,
                created_at: tx.now,
            };
            tx.w.put_link(&l)?;
            let link = tx.w.render_link(&l)?;
            tx.emit_all("link.created", &link)?;
            Ok(link)
        })
        .await
    }

    /// `GET /tasks/{id}/links`: links from and to the task.
    pub async fn list_links(&self, _actor: &Actor, id: Uuid) -> Result<Vec<TaskLink>> {
        self.read(move |r| {
            r.task_required(id)?;
            let mut links = r.links_from(id)?;
            links.extend(r.links_to(id)?);
            links.sort_by_key(|l| l.id);
            links.iter().map(|l| r.render_link(l)).collect()
        })
        .await
    }

    /// `DELETE /tasks/{id}/links/{link_id}`.
    pub async fn delete_link(&self, _actor: &Actor, id: Uuid, link_id: Uuid) -> Result<()> {
        self.write(move |tx| {
            let l = tx.w.link(link_id)?.filter(|l| l.source_id == id || l.target_id == id);
            let l = l.ok_or_else(|| Error::not_found(format!("link {link_id} not found on task {id}")))?;
            tx.w.delete_link(&l)?;
            tx.emit_all(
                "link.deleted",
                json!({"id": l.id, "source_id": l.source_id, "target_id": l.target_id}),
            )
        })
        .await
    }

    /// `POST /tasks/{id}/labels/{label_id}` (idempotent) and `DELETE`.
    pub async fn set_task_label(&self, actor: &Actor, id: Uuid, label: Uuid, on: bool) -> Result<()> {
        let me = actor.id();
        self.write(move |tx| {
            let old = tx.w.task_required(id)?;
            tx.w.label(label)?.ok_or_else(|| Error::not_found(format!("label {label} not found")))?;
            let mut t = old.clone();
            if on && !t.label_ids.contains(&label) {
                t.label_ids.push(label);
            }
            if !on {
                t.label_ids.retain(|l| *l != label);
            }
            Board::save_task_change(tx, me, &old, t, "updated").map(|_| ())
        })
        .await
    }

    pub async fn add_task_label(&self, actor: &Actor, id: Uuid, label: Uuid) -> Result<()> {
        self.set_task_label(actor, id, label, true).await
    }

    pub async fn remove_task_label(&self, actor: &Actor, id: Uuid, label: Uuid) -> Result<()> {
        self.set_task_label(actor, id, label, false).await
    }

    /// `GET /tasks/{id}/actions`: the audit log, oldest first.
    pub async fn task_actions(&self, _actor: &Actor, id: Uuid) -> Result<Vec<TaskAction>> {
        self.read(move |r| {
            r.task_required(id)?;
            let mut out = Vec::new();
            r.scan(ACTIONS, KeyRange::prefix(id.as_bytes()), Direction::Forward, &mut |_, v| {
                out.push(decode::<ActionRecord>(v)?);
                Ok(Scan::Continue)
            })?;
            out.iter().map(|a| r.render_action(a)).collect()
        })
        .await
    }

    // ---- steps ------------------------------------------------------------

    /// `GET /tasks/{id}/steps`, by position.
    pub async fn list_steps(&self, _actor: &Actor, task: Uuid) -> Result<Vec<Step>> {
        self.read(move |r| {
            r.task_required(task)?;
            Ok(r.steps(task)?.iter().map(StepRecord::to_wire).collect())
        })
        .await
    }

    /// `POST /tasks/{id}/steps`: appended after the last step.
    pub async fn create_step(&self, _actor: &Actor, task: Uuid, title: Title) -> Result<Step> {
        self.write(move |tx| {
            tx.w.task_required(task)?;
            let position = tx.w.steps(task)?.last().map_or(1, |s| s.position + 1);
            let s = StepRecord {
                id: Uuid::now_v7(),
                task_id: task,
                title: title.to_string(),
                done: false,
                position,
            };
            tx.w.put_record(STEPS, &Key::new().uuid(task).uuid(s.id), &s)?;
            tx.emit_all("step.created", step_event(&s))?;
            Ok(s.to_wire())
        })
        .await
    }

    /// `PATCH /tasks/{id}/steps/{step_id}`.
    pub async fn update_step(
        &self,
        _actor: &Actor,
        task: Uuid,
        step: Uuid,
        patch: StepPatch,
    ) -> Result<Step> {
        self.write(move |tx| {
            tx.w.task_required(task)?;
            let mut s =
                tx.w.step(task, step)?
                    .ok_or_else(|| Error::not_found(format!("step {step} not found in task {task}")))?;
            let old = s.clone();
            if let Some(title) = patch.title.value() {
                s.title = title.to_string();
            }
            if let Some(done) = patch.done.value() {
                s.done = done;
            }
            if (s.title.as_str(), s.done) == (old.title.as_str(), old.done) {
                return Ok(s.to_wire());
            }
            tx.w.put_record(STEPS, &Key::new().uuid(task).uuid(s.id), &s)?;
            tx.emit_all("step.updated", step_event(&s))?;
            Ok(s.to_wire())
        })
        .await
    }

    /// `DELETE /tasks/{id}/steps/{step_id}`.
    pub async fn delete_step(&self, _actor: &Actor, task: Uuid, step: Uuid) -> Result<()> {
        self.write(move |tx| {
            tx.w.task_required(task)?;
            if !tx.w.delete(STEPS, &Key::new().uuid(task).uuid(step))? {
                return Err(Error::not_found(format!("step {step} not found in task {task}")));
            }
            tx.emit_all("step.deleted", json!({"id": step, "task_id": task}))
        })
        .await
    }

    // ---- labels -----------------------------------------------------------

    /// `GET /labels`, by name.
    pub async fn list_labels(&self, _actor: &Actor, page: Page) -> Result<Vec<Label>> {
        page.check()?;
        self.read(move |r| {
            let mut out = Vec::new();
            r.scan(LABEL_NAME, KeyRange::all(), Direction::Forward, &mut |_, v| {
                out.push(uuid_value(v)?);
                Ok(Scan::Continue)
            })?;
            let mut labels = Vec::with_capacity(out.len());
            for id in page.apply(out) {
                if let Some(l) = r.label(id)? {
                    labels.push(l.to_wire());
                }
            }
            Ok(labels)
        })
        .await
    }

    /// `POST /labels`: names are unique regardless of case (409).
    pub async fn create_label(&self, _actor: &Actor, new: NewLabel) -> Result<Label> {
        self.write(move |tx| {
            if tx.w.label_by_name(&new.name)?.is_some() {
                return Err(Error::conflict(format!("label {:?} already exists", new.name.as_str())));
            }
            let l = LabelRecord {
                id: Uuid::now_v7(),
                name: new.name.to_string(),
                color: new.color.as_str().to_string(),
            };
            tx.w.put_label(None, &l)?;
            tx.emit_all("label.created", l.to_wire())?;
            Ok(l.to_wire())
        })
        .await
    }

    /// `PATCH /labels/{id}`: a rename shows on every task at once, since
    /// tasks hold label ids.
    pub async fn update_label(&self, _actor: &Actor, id: Uuid, patch: LabelPatch) -> Result<Label> {
        self.write(move |tx| {
            let old = tx.w.label(id)?.ok_or_else(|| Error::not_found(format!("label {id} not found")))?;
            let mut l = old.clone();
            if let Some(name) = patch.name.value() {
                if let Some(other) = tx.w.label_by_name(&name)?
                    && other.id != id
                {
                    return Err(Error::conflict(format!("label {:?} already exists", name.as_str())));
                }
                l.name = name.to_string();
            }
            if let Some(color) = patch.color.value() {
                l.color = color.as_str().to_string();
            }
            tx.w.put_label(Some(&old), &l)?;
            tx.emit_all("label.updated", l.to_wire())?;
            Ok(l.to_wire())
        })
        .await
    }

    /// `DELETE /labels/{id}`: removed from every task too.
    pub async fn delete_label(&self, _actor: &Actor, id: Uuid) -> Result<()> {
        self.write(move |tx| {
            let l = tx.w.label(id)?.ok_or_else(|| Error::not_found(format!("label {id} not found")))?;
            for tid in tx.w.ids_with_prefix(LABEL_TASKS, id.as_bytes(), Direction::Forward)? {
                if let Some(old) = tx.w.task(tid)? {
                    let mut t = old.clone();
                    t.label_ids.retain(|x| *x != id);
                    tx.w.put_task(Some(&old), &t)?;
                }
            }
            tx.w.delete(LABEL_NAME, l.name.to_lowercase().as_bytes())?;
            tx.w.delete(LABELS, id.as_bytes())?;
            tx.emit_all("label.deleted", json!({"id": id, "name": l.name}))
        })
        .await
    }
}

fn step_event(s: &StepRecord) -> Value {
    json!({"id": s.id, "task_id": s.task_id, "title": s.title, "done": s.done, "position": s.position})
}
