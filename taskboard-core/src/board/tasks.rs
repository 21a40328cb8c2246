//! Tasks: creation, changes, taking, rejecting, assigning, watching and
//! the audit log (the task rules of docs/decisions.md, section 5).

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};
use uuid::Uuid;

use super::fencing::{Allowed, Touch};
use super::labels::{label_ids, label_names};
use super::pages::{IndexList, ItemFn, List};
use super::{Actor, Board, Tx};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::{
    AuditAction, Change, LinkType, MemberStatus, MemberType, Rejected, Task, TaskAction, TaskStatus, Watchers,
};
use crate::records::{ActionRecord, LinkRecord, RecordWrites, Records, Render, TaskRecord};
use crate::storage::Direction;
use crate::storage::codec::{Key, decode};
use crate::storage::tables::{ACTIONS, ASSIGNEE_TASKS, STEPS, TASK_MESSAGES};
use crate::wire::{CursorKind, NewTask, Page, TaskPatch};

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

pub(super) fn audit(
    tx: &mut Tx<'_>,
    task: Uuid,
    actor: Uuid,
    action: AuditAction,
    changes: BTreeMap<String, Change>,
) -> Result<()> {
    let a = ActionRecord {
        id: Uuid::now_v7(),
        task_id: task,
        actor_id: actor,
        action,
        changes,
        created_at: tx.now,
    };
    tx.w.put_record(ACTIONS, &Key::new().uuid(task).uuid(a.id), &a)
}

pub(super) fn member_slug(r: &(impl Records + ?Sized), id: Option<Uuid>) -> Result<String> {
    Ok(match id {
        Some(id) => format!("@{}", r.member_ref(id)?.slug),
        None => "nobody".to_string(),
    })
}

/// Checks a new parent: it exists (404), is in the same project (422) and
/// is not the task or one of its descendants (422).
pub(super) fn check_parent(
    r: &(impl Records + ?Sized),
    task: Option<Uuid>,
    project: Uuid,
    parent: Uuid,
) -> Result<()> {
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

impl Board {
    /// `POST /tasks?project_id=…` (docs/rules.md, tasks: creating).
    pub async fn create_task(&self, actor: &Actor, project_id: Uuid, new: NewTask) -> Result<Task> {
        let creator = actor.id();
        self.write_as(actor.request(), move |tx| create_in(tx, creator, project_id, new)).await
    }

    /// Creates many tasks in one transaction, each by the rules of
    /// [`Board::create_task`] and in order: all of them, or none when one
    /// is refused. For imports and seeding, where one durable commit per
    /// task would be the cost.
    pub async fn create_tasks(
        &self,
        actor: &Actor,
        project_id: Uuid,
        new: Vec<NewTask>,
    ) -> Result<Vec<Task>> {
        let creator = actor.id();
        self.write_as(actor.request(), move |tx| {
            new.into_iter().map(|n| create_in(tx, creator, project_id, n)).collect()
        })
        .await
    }

    /// `PATCH /tasks/{id}` (docs/rules.md, requests and errors and tasks).
    pub async fn update_task(&self, actor: &Actor, id: Uuid, patch: TaskPatch) -> Result<Task> {
        let fence = actor.fence();
        let request = actor.request();
        let person = !actor.member.is_agent();
        let actor = actor.id();
        let touch = if !patch.status.is_absent() || !patch.assignee_id.is_absent() {
            Touch::Work
        } else {
            Touch::Fields
        };
        self.write_as(request, move |tx| {
            let old = tx.w.task_required(id)?;
            let allowed = fence.check(tx.w, &old, touch)?;
            let mut t = old.clone();
            if allowed == Allowed::EndingLease {
                t.lease = None;
            }
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
            if person {
                t.work.edited_at = Some(tx.now);
            }
            Board::save_task_change(tx, actor, &old, t, AuditAction::Updated)
        })
        .await
    }

    /// Writes a changed task with its audit entry, system messages for
    /// significant changes (docs/rules.md, tasks) and `task.updated`. A change
    /// that changes nothing writes nothing.
    pub(super) fn save_task_change(
        tx: &mut Tx<'_>,
        actor: Uuid,
        old: &TaskRecord,
        mut t: TaskRecord,
        action: AuditAction,
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
        let head = |t: &TaskRecord| t.work.changes.as_ref().map(|c| c.head_commit.clone());
        changes.note("head_commit", &head(old), &head(&t));
        changes.note("review", &old.work.review, &t.work.review);
        changes.note("merge_commit", &old.work.merge_commit, &t.work.merge_commit);
        t.end_lease_if_moved();
        if old.lease.is_some() && t.lease.map(|l| l.holder) != old.lease.map(|l| l.holder) {
            Board::end_live_run(
                tx,
                t.id,
                crate::runs::RunState::Cancelled,
                "the task was moved or reassigned",
            )?;
        }
        // A person's edit marks `edited_at` (board::retries), which alone
        // is no change.
        let work_changed = t.work.review != old.work.review
            || t.work.changes != old.work.changes
            || t.work.merge_commit != old.work.merge_commit
            || t.work.agent_id != old.work.agent_id
            || t.work.agent_rounds != old.work.agent_rounds;
        if changes.0.is_empty() && t.lease == old.lease && !work_changed {
            return tx.w.render_task(old);
        }
        let ended = ended_lease(tx, actor, old, &t, &mut changes.0)?;
        t.updated_at = tx.now;
        tx.w.put_task(Some(old), &t)?;
        let key = tx.w.task_key_of(&t)?;
        let who = member_slug(tx.w, Some(actor))?;
        let mut notes = Vec::new();
        match action {
            AuditAction::Take => notes.push(format!("{who} took {key}")),
            AuditAction::Assign => {
                notes.push(format!("{who} assigned {key} to {}", member_slug(tx.w, t.assignee_id)?))
            }
            _ => {
                if old.status != t.status {
                    notes.push(format!("{who} moved {key} from {} to {}", old.status, t.status));
                }
                if old.assignee_id != t.assignee_id && action != AuditAction::Reject {
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
        tx.emit_all(EventKind::TaskUpdated, &task)?;
        if old.status != TaskStatus::Done && t.status == TaskStatus::Done {
            Board::wake_dependents(tx, t.id)?;
        }
        for note in notes.into_iter().chain(ended) {
            Board::system_comment(tx, &t, actor, note)?;
        }
        Ok(task)
    }

    /// Deletes a task with its steps, links, comments and audit log;
    /// subtasks lose their parent (docs/rules.md, tasks).
    pub(crate) fn delete_task_in(tx: &mut Tx<'_>, t: &TaskRecord) -> Result<()> {
        let key = tx.w.task_key_of(t)?;
        Board::end_live_run(tx, t.id, crate::runs::RunState::Cancelled, "the task was deleted")?;
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
        tx.emit_all(EventKind::TaskDeleted, json!({"id": t.id, "key": key, "project_id": t.project_id}))
    }

    /// `DELETE /tasks/{id}`.
    pub async fn delete_task(&self, actor: &Actor, id: Uuid) -> Result<()> {
        let fence = actor.fence();
        self.write_as(actor.request(), move |tx| {
            let t = tx.w.task_required(id)?;
            fence.check(tx.w, &t, Touch::Work)?;
            Board::delete_task_in(tx, &t)
        })
        .await
    }

    /// `POST /tasks/{id}/take`: atomic; only an unassigned backlog or todo
    /// task can be taken (409 otherwise).
    pub async fn take(&self, actor: &Actor, id: Uuid) -> Result<Task> {
        self.take_leased(actor, id, None).await
    }

    /// A take, under a lease of `lease_seconds` when given.
    pub async fn take_leased(&self, actor: &Actor, id: Uuid, lease_seconds: Option<u32>) -> Result<Task> {
        let seconds = super::fencing::check_lease(lease_seconds)?;
        let fence = actor.fence();
        let me = actor.id();
        self.write_as(actor.request(), move |tx| {
            let old = tx.w.task_required(id)?;
            fence.check(tx.w, &old, Touch::Work)?;
            Board::take_in(tx, me, old, seconds)
        })
        .await
    }

    /// `POST /tasks/{id}/reject`: back to backlog, unassigned, with a
    /// system message giving the reason.
    pub async fn reject(&self, actor: &Actor, id: Uuid, reason: crate::validate::Reason) -> Result<Rejected> {
        let fence = actor.fence();
        let me = actor.id();
        self.write_as(actor.request(), move |tx| {
            let old = tx.w.task_required(id)?;
            fence.check(tx.w, &old, Touch::Work)?;
            let mut t = old.clone();
            t.status = TaskStatus::Backlog;
            t.assignee_id = None;
            t.lease = None;
            Board::end_live_run(tx, id, crate::runs::RunState::Cancelled, "the task was rejected")?;
            let key = tx.w.task_key_of(&old)?;
            let who = member_slug(tx.w, Some(me))?;
            let mut changes = Changes::default();
            changes.note("status", &old.status, &t.status);
            changes.note("assignee_id", &old.assignee_id, &t.assignee_id);
            changes.0.insert("reason".into(), Change { from: Value::Null, to: json!(reason.as_str()) });
            let ended = ended_lease(tx, me, &old, &t, &mut changes.0)?;
            t.updated_at = tx.now;
            tx.w.put_task(Some(&old), &t)?;
            audit(tx, id, me, AuditAction::Reject, changes.0)?;
            let task = tx.w.render_task(&t)?;
            tx.emit_all(EventKind::TaskUpdated, &task)?;
            Board::system_comment(tx, &t, me, format!("{who} rejected {key}: {reason}"))?;
            if let Some(note) = ended {
                Board::system_comment(tx, &t, me, note)?;
            }
            Ok(Rejected { ok: true, reason: reason.to_string() })
        })
        .await
    }

    /// `POST /tasks/{id}/assign`: an active member (404 otherwise); the
    /// status is left as it is.
    pub async fn assign(&self, actor: &Actor, id: Uuid, assignee: Uuid) -> Result<Task> {
        let fence = actor.fence();
        let me = actor.id();
        self.write_as(actor.request(), move |tx| {
            let old = tx.w.task_required(id)?;
            let allowed = fence.check(tx.w, &old, Touch::Work)?;
            tx.w.active_member(assignee)?;
            let mut t = old.clone();
            if allowed == Allowed::EndingLease {
                t.lease = None;
            }
            t.assignee_id = Some(assignee);
            t.add_watcher(assignee);
            Board::save_task_change(tx, me, &old, t, AuditAction::Assign)
        })
        .await
    }

    /// `POST /tasks/{id}/watch` and `DELETE …/watch`.
    pub async fn set_watching(&self, actor: &Actor, id: Uuid, watching: bool) -> Result<Watchers> {
        let me = actor.id();
        self.write_as(actor.request(), move |tx| {
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
                tx.emit_all(EventKind::TaskUpdated, &task)?;
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

    /// `GET /tasks/{id}/actions`: the audit log, oldest first.
    pub fn task_actions(&self, id: Uuid, page: Page) -> List<TaskAction> {
        self.index_list(actions_list(id), page, move |r| r.task_required(id).map(drop))
    }

    // ---- steps ------------------------------------------------------------
}

/// The body of task creation, inside the caller's transaction.
fn create_in(tx: &mut Tx<'_>, creator: Uuid, project_id: Uuid, new: NewTask) -> Result<Task> {
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
        lease: None,
        external_ref: None,
        title_fold: None,
        work: Default::default(),
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
    audit(tx, t.id, creator, AuditAction::Created, changes.0)?;
    let task = tx.w.render_task(&t)?;
    tx.emit_all(EventKind::TaskCreated, &task)?;
    let who = member_slug(tx.w, Some(creator))?;
    let text = format!("{who} created {}: {}", task.key, task.title);
    Board::system_comment(tx, &t, creator, text.clone())?;
    Board::system_message(tx, project.chat_id, creator, text)?;
    if let Some(a) = t.assignee_id.filter(|_| new.assignee_id.is_none()) {
        let text = format!("{} was assigned automatically to {}", task.key, member_slug(tx.w, Some(a))?);
        Board::system_comment(tx, &t, creator, text)?;
    }
    Ok(task)
}

/// A task's audit log, oldest first.
fn actions_list(task: Uuid) -> IndexList<impl ItemFn<TaskAction>> {
    IndexList::new(CursorKind::Actions, ACTIONS, task.as_bytes(), |r, _, v| {
        r.render_action(&decode::<ActionRecord>(v)?).map(Some)
    })
}

/// When `actor` ended another member's lease with this change: the audit
/// entry records it under `lease`, and the note for the task's comments.
pub(super) fn ended_lease(
    tx: &mut Tx<'_>,
    actor: Uuid,
    old: &TaskRecord,
    new: &TaskRecord,
    changes: &mut BTreeMap<String, Change>,
) -> Result<Option<String>> {
    let Some(l) = old.lease.filter(|l| l.holder != actor && new.lease.is_none()) else { return Ok(None) };
    changes
        .insert("lease".into(), Change { from: json!({"id": l.id, "holder_id": l.holder}), to: Value::Null });
    let key = tx.w.task_key_of(old)?;
    let who = member_slug(tx.w, Some(actor))?;
    let holder = member_slug(tx.w, Some(l.holder))?;
    Ok(Some(format!("{who} ended {holder}'s lease on {key}")))
}
