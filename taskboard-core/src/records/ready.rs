//! Upkeep of the ready index and the lease index, in the transaction of
//! the write that changes what they depend on.
//!
//! A task is ready when nobody holds it, it is `todo` or `backlog`, it is
//! not an epic, its project is active and every task it depends on is
//! done. Its readiness therefore changes with the task itself, with the
//! status of what it depends on, with its dependency links and with its
//! project's status; each of those writes calls in here.

use super::{
    LeaseRecord, LinkRecord, LinkType, Priority, ProjectStatus, Records, TaskRecord, TaskStatus, TaskType,
    Uuid,
};
use crate::error::Result;
use crate::storage::WriteTxn;
use crate::storage::codec::Key;
use crate::storage::tables::{LEASES, PROJECT_READY_TASKS, READY_TASKS, TASK_NUMBER};

/// Ready order: urgent first (rank 0), todo before backlog, then
/// position and number.
fn order(k: Key, t: &TaskRecord) -> Vec<u8> {
    let priority = Priority::ALL.len() as u8 - 1 - (t.priority as u8);
    let status = u8::from(t.status != TaskStatus::Todo);
    k.u8(priority).u8(status).f64(t.position).u64(t.number).uuid(t.id).build()
}

/// The key of `t` in [`READY_TASKS`].
pub(crate) fn ready_key(t: &TaskRecord) -> Vec<u8> {
    order(Key::new(), t)
}

/// The key of `t` in [`PROJECT_READY_TASKS`].
pub(crate) fn project_ready_key(t: &TaskRecord) -> Vec<u8> {
    order(Key::new().uuid(t.project_id), t)
}

/// The key of a lease in [`LEASES`].
pub(crate) fn lease_key(task: Uuid, lease: &LeaseRecord) -> Vec<u8> {
    Key::new().u64(lease.expires_at.as_millisecond().max(0) as u64).uuid(task).build()
}

/// Whether `t` is ready, as it stands in `r`. A dependency that does not
/// exist (yet, during a restore) counts as open.
pub fn is_ready(r: &(impl Records + ?Sized), t: &TaskRecord) -> Result<bool> {
    if t.assignee_id.is_some()
        || !matches!(t.status, TaskStatus::Todo | TaskStatus::Backlog)
        || t.kind == TaskType::Epic
    {
        return Ok(false);
    }
    if r.project(t.project_id)?.is_none_or(|p| p.status != ProjectStatus::Active) {
        return Ok(false);
    }
    all_dependencies_done(r, t.id)
}

/// Whether every task `task` depends on is done.
pub fn all_dependencies_done(r: &(impl Records + ?Sized), task: Uuid) -> Result<bool> {
    for d in r.depends_on(task)? {
        if r.task(d)?.is_none_or(|d| d.status != TaskStatus::Done) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The tasks that depend on `task`: sources of its incoming depends-on
/// links and targets of its blocks links.
pub fn dependents(r: &(impl Records + ?Sized), task: Uuid) -> Result<Vec<Uuid>> {
    let mut out = Vec::new();
    for l in r.links_to(task)? {
        if l.link_type == LinkType::DependsOn && !out.contains(&l.source_id) {
            out.push(l.source_id);
        }
    }
    for l in r.links_from(task)? {
        if l.link_type == LinkType::Blocks && !out.contains(&l.target_id) {
            out.push(l.target_id);
        }
    }
    Ok(out)
}

/// Moves `old`'s index entries to `new`'s: the ready entries (removed,
/// then written again when `new` is ready) and the lease entry.
pub(crate) fn sync<W: WriteTxn + ?Sized>(
    w: &mut W,
    old: Option<&TaskRecord>,
    new: Option<&TaskRecord>,
) -> Result<()> {
    if let Some(old) = old {
        w.delete(READY_TASKS, &ready_key(old))?;
        w.delete(PROJECT_READY_TASKS, &project_ready_key(old))?;
        if let Some(l) = &old.lease
            && new.is_none_or(|n| n.lease.as_ref() != Some(l))
        {
            w.delete(LEASES, &lease_key(old.id, l))?;
        }
    }
    let Some(t) = new else { return Ok(()) };
    if let Some(l) = &t.lease {
        w.put(LEASES, &lease_key(t.id, l), &[])?;
    }
    if is_ready(w, t)? {
        w.put(READY_TASKS, &ready_key(t), t.project_id.as_bytes())?;
        w.put(PROJECT_READY_TASKS, &project_ready_key(t), &[])?;
    }
    let was_done = old.is_some_and(|o| o.status == TaskStatus::Done);
    if was_done != (t.status == TaskStatus::Done) {
        for d in dependents(w, t.id)? {
            refresh(w, d)?;
        }
    }
    Ok(())
}

/// Recomputes the ready entries of one task after something it depends
/// on changed.
pub(crate) fn refresh<W: WriteTxn + ?Sized>(w: &mut W, task: Uuid) -> Result<()> {
    let Some(t) = w.task(task)? else { return Ok(()) };
    w.delete(READY_TASKS, &ready_key(&t))?;
    w.delete(PROJECT_READY_TASKS, &project_ready_key(&t))?;
    if is_ready(w, &t)? {
        w.put(READY_TASKS, &ready_key(&t), t.project_id.as_bytes())?;
        w.put(PROJECT_READY_TASKS, &project_ready_key(&t), &[])?;
    }
    Ok(())
}

/// The task whose readiness a link decides, if any.
pub(crate) fn depender(l: &LinkRecord) -> Option<Uuid> {
    match l.link_type {
        LinkType::DependsOn => Some(l.source_id),
        LinkType::Blocks => Some(l.target_id),
        LinkType::RelatesTo => None,
    }
}

/// Recomputes every task of a project (its status changed).
pub(crate) fn refresh_project<W: WriteTxn + ?Sized>(w: &mut W, project: Uuid) -> Result<()> {
    for id in w.id_values_with_prefix(TASK_NUMBER, project.as_bytes())? {
        refresh(w, id)?;
    }
    Ok(())
}
